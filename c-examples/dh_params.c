/*
 * dh_params.c: generate Diffie-Hellman parameters (a safe prime) with
 * primeforge and write them as PKCS#3 PEM, like `openssl dhparam`.
 *
 *   dh_params [BITS [GENERATOR [THREADS [OUTFILE]]]]
 *       defaults: 2048, 2, 0 = all cores, stdout
 *
 * Prints the time and work counters to stderr. Most TLS servers are better
 * served by a named group: see pf_dh_named().
 */
#include <stdio.h>
#include <stdlib.h>

#include "primeforge.h"

int main(int argc, char **argv) {
    unsigned long bits = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    unsigned long generator = argc > 2 ? strtoul(argv[2], NULL, 10) : 2;
    unsigned long threads = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    const char *path = argc > 4 ? argv[4] : NULL;

    pf_stats stats = {0};
    pf_options opts = pf_options_default();
    opts.threads = (uint32_t)threads;
    opts.stats = &stats;

    pf_dh_params *params = NULL;
    pf_status st =
        pf_dh_generate_ex((uint32_t)bits, (uint32_t)generator, 0, &opts, &params);
    if (st != PF_OK) {
        fprintf(stderr, "dh_params: %s\n", pf_status_str(st));
        return 1;
    }

    pf_buffer *pem = NULL;
    st = pf_dh_export(params, PF_FORMAT_PKCS3_PEM, &pem);
    if (st != PF_OK) {
        fprintf(stderr, "dh_params: export: %s\n", pf_status_str(st));
        pf_dh_free(params);
        return 1;
    }

    /* Check our own output the way a server would check a file it loads. */
    uint32_t problems = 0;
    st = pf_dh_check(pf_buffer_data(pem), pf_buffer_len(pem), &problems);
    if (st != PF_OK || problems != 0) {
        fprintf(stderr, "dh_params: check: %s, problems 0x%x\n", pf_status_str(st),
                (unsigned)problems);
        pf_buffer_free(pem);
        pf_dh_free(params);
        return 1;
    }

    FILE *f = path ? fopen(path, "wb") : stdout;
    int rc = 0;
    if (f == NULL ||
        fwrite(pf_buffer_data(pem), 1, pf_buffer_len(pem), f) != pf_buffer_len(pem)) {
        perror("dh_params: write");
        rc = 1;
    }
    if (path && f) {
        fclose(f);
    }
    fprintf(stderr,
            "dh_params: %u-bit safe prime, g = %lu, in %.3f s; positions %llu, "
            "sieve survivors %llu, exponentiations %llu\n",
            (unsigned)pf_dh_bits(params), generator, (double)stats.elapsed_ns / 1e9,
            (unsigned long long)stats.candidates, (unsigned long long)stats.survivors,
            (unsigned long long)stats.exponentiations);

    pf_buffer_free(pem);
    pf_dh_free(params);
    return rc;
}
