/*
 * rsa_keygen.c: generate an RSA key with primeforge and write it as PKCS#8
 * PEM.
 *
 *   rsa_keygen [BITS [THREADS [OUTFILE]]]    (defaults: 2048, 0 = all cores, stdout)
 *
 * Prints the time and work counters to stderr.
 */
#include <stdio.h>
#include <stdlib.h>

#include "primeforge.h"

static int on_progress(void *user_data, const pf_progress *ev) {
    unsigned *calls = user_data;
    (*calls)++;
    (void)ev;
    return 0; /* continue */
}

int main(int argc, char **argv) {
    unsigned long bits = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    unsigned long threads = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    const char *path = argc > 3 ? argv[3] : NULL;

    unsigned calls = 0;
    pf_stats stats = {0};
    pf_options opts = pf_options_default();
    opts.threads = (uint32_t)threads;
    opts.progress = on_progress;
    opts.user_data = &calls;
    opts.stats = &stats;

    pf_rsa_key *key = NULL;
    pf_status st = pf_rsa_generate_ex((uint32_t)bits, 65537, 2, &opts, &key);
    if (st != PF_OK) {
        fprintf(stderr, "rsa_keygen: %s\n", pf_status_str(st));
        return 1;
    }

    pf_buffer *pem = NULL;
    st = pf_rsa_export(key, PF_FORMAT_PKCS8_PEM, &pem);
    if (st != PF_OK) {
        fprintf(stderr, "rsa_keygen: export: %s\n", pf_status_str(st));
        pf_rsa_free(key);
        return 1;
    }

    FILE *f = path ? fopen(path, "wb") : stdout;
    int rc = 0;
    if (f == NULL ||
        fwrite(pf_buffer_data(pem), 1, pf_buffer_len(pem), f) != pf_buffer_len(pem)) {
        perror("rsa_keygen: write");
        rc = 1;
    }
    if (path && f) {
        fclose(f);
    }
    fprintf(stderr,
            "rsa_keygen: %u-bit key in %.3f s; candidates %llu, survivors %llu, "
            "exponentiations %llu, progress calls %u\n",
            (unsigned)pf_rsa_bits(key), (double)stats.elapsed_ns / 1e9,
            (unsigned long long)stats.candidates, (unsigned long long)stats.survivors,
            (unsigned long long)stats.exponentiations, calls);

    pf_buffer_free(pem);
    pf_rsa_free(key);
    return rc;
}
