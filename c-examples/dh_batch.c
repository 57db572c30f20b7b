/*
 * dh_batch.c: fill a pool of Diffie-Hellman parameter sets of one size (for
 * a server that rotates its DHE groups, or an OpenSSH moduli file) from one
 * primeforge batch: the sieve's set-up is shared by every prime, which
 * makes each one cheaper than a separate pf_dh_generate_ex call.
 *
 *   dh_batch [BITS [COUNT [THREADS]]]
 *       defaults: 2048, 4, 0 = all cores
 *
 * Writes COUNT PKCS#3 PEM blocks to stdout, each checked with pf_dh_check,
 * and the work of each search to stderr.
 */
#include <stdio.h>
#include <stdlib.h>

#include "primeforge.h"

int main(int argc, char **argv) {
    unsigned long bits = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    unsigned long count = argc > 2 ? strtoul(argv[2], NULL, 10) : 4;
    unsigned long threads = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;

    /* The batch takes only the seed from its options (none here: OS
     * randomness); each search takes threads, progress and stats. */
    pf_dh_batch *batch = NULL;
    pf_status st = pf_dh_batch_new((uint32_t)bits, 2, 0, (uint32_t)count, NULL, &batch);
    if (st != PF_OK) {
        fprintf(stderr, "dh_batch: %s: %s\n", pf_status_str(st), pf_last_error_message());
        return 1;
    }
    int rc = 0;
    for (unsigned long i = 0; i < count && rc == 0; i++) {
        pf_stats stats = {0};
        pf_options opts = pf_options_default();
        opts.threads = (uint32_t)threads;
        opts.stats = &stats;
        pf_dh_params *params = NULL;
        st = pf_dh_batch_next(batch, &opts, &params);
        if (st != PF_OK) {
            fprintf(stderr, "dh_batch: %s\n", pf_status_str(st));
            rc = 1;
            break;
        }
        pf_buffer *pem = NULL;
        uint32_t problems = 0;
        st = pf_dh_export(params, PF_FORMAT_PKCS3_PEM, &pem);
        if (st == PF_OK) {
            st = pf_dh_check(pf_buffer_data(pem), pf_buffer_len(pem), &problems);
        }
        if (st != PF_OK || problems != 0) {
            fprintf(stderr, "dh_batch: %s, problems 0x%x\n", pf_status_str(st),
                    (unsigned)problems);
            rc = 1;
        } else if (fwrite(pf_buffer_data(pem), 1, pf_buffer_len(pem), stdout) !=
                   pf_buffer_len(pem)) {
            perror("dh_batch: write");
            rc = 1;
        } else {
            fprintf(stderr,
                    "dh_batch: %lu of %lu: %u-bit safe prime in %.3f s, "
                    "exponentiations %llu\n",
                    i + 1, count, (unsigned)pf_dh_bits(params),
                    (double)stats.elapsed_ns / 1e9,
                    (unsigned long long)stats.exponentiations);
        }
        pf_buffer_free(pem);
        pf_dh_free(params);
    }
    pf_dh_batch_free(batch);
    return rc;
}
