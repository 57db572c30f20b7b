/* The OpenSSL provider's overhead, measured without the randomness of
 * prime search: for each of N seeds, the same generation (same seed, same
 * thread count, hence the same candidates and the same work) through
 * EVP_PKEY_keygen/EVP_PKEY_paramgen with the provider's test-only `seed`
 * parameter and through pf_rsa_generate_ex/pf_dh_generate_ex, interleaved.
 * Prints mean, median and standard deviation of each and the ratio of the
 * means (issue 18: the provider path within 5 % of the C API).
 *
 *   cc -O2 -std=c11 -Iinclude bench/c/provider_vs_capi.c -lcrypto \
 *      target/release/libprimeforge.so -lm -o /tmp/pvc
 *   /tmp/pvc MODULE_DIR rsa|dh BITS THREADS SEEDS
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "primeforge.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, double *v, int n) {
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) sum += v[i];
    double mean = sum / n;
    for (int i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
    qsort(v, (size_t)n, sizeof(double), cmp);
    printf("  %-22s mean %.4f s  median %.4f s  sd %.4f s\n", name, mean, v[n / 2],
           n > 1 ? sqrt(sq / (n - 1)) : 0.0);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s MODULE_DIR rsa|dh BITS THREADS SEEDS\n", argv[0]);
        return 2;
    }
    int rsa = strcmp(argv[2], "rsa") == 0;
    unsigned bits = (unsigned)atoi(argv[3]), threads = (unsigned)atoi(argv[4]);
    int n = atoi(argv[5]);
    OSSL_PROVIDER_set_default_search_path(NULL, argv[1]);
    if (OSSL_PROVIDER_load(NULL, "primeforge") == NULL || OSSL_PROVIDER_load(NULL, "default") == NULL) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    double *tp = calloc((size_t)n, sizeof(double)), *tc = calloc((size_t)n, sizeof(double));
    double sp = 0, sc = 0;
    for (int i = 0; i < n; i++) {
        unsigned char seed[32];
        char hex[65];
        for (int j = 0; j < 32; j++) {
            seed[j] = (unsigned char)(j * 29 + i * 7 + 1);
            snprintf(hex + 2 * j, 3, "%02x", seed[j]);
        }
        /* Alternate which goes first. */
        for (int k = 0; k < 2; k++) {
            int provider = (k + i) % 2 == 0;
            double t0 = now();
            if (provider) {
                EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, rsa ? "RSA" : "DH", "provider=primeforge");
                OSSL_PARAM p[] = {
                    OSSL_PARAM_construct_uint(rsa ? "bits" : "pbits", &bits),
                    OSSL_PARAM_construct_uint("threads", &threads),
                    OSSL_PARAM_construct_utf8_string("seed", hex, 0),
                    OSSL_PARAM_construct_end(),
                };
                EVP_PKEY *key = NULL;
                int ok = c != NULL &&
                         (rsa ? EVP_PKEY_keygen_init(c) : EVP_PKEY_paramgen_init(c)) > 0 &&
                         EVP_PKEY_CTX_set_params(c, p) > 0 &&
                         (rsa ? EVP_PKEY_generate(c, &key) : EVP_PKEY_paramgen(c, &key)) > 0;
                if (!ok) {
                    ERR_print_errors_fp(stderr);
                    return 1;
                }
                EVP_PKEY_free(key);
                EVP_PKEY_CTX_free(c);
                tp[i] = now() - t0;
                sp += tp[i];
            } else {
                struct pf_options o = pf_options_default();
                o.threads = threads;
                o.seed = seed;
                o.seed_len = 32;
                pf_status st;
                if (rsa) {
                    pf_rsa_key *key = NULL;
                    st = pf_rsa_generate_ex(bits, 65537, 2, &o, &key);
                    pf_rsa_free(key);
                } else {
                    pf_dh_params *dh = NULL;
                    st = pf_dh_generate_ex(bits, 2, 0, &o, &dh);
                    pf_dh_free(dh);
                }
                if (st != PF_OK) return 1;
                tc[i] = now() - t0;
                sc += tc[i];
            }
        }
    }
    printf("%s-%u, %u thread(s), %d seeds, each seed through both paths (same work):\n",
           rsa ? "RSA" : "DH", bits, threads, n);
    report("provider (EVP)", tp, n);
    report("C API", tc, n);
    printf("  provider / C API, ratio of means: %.4f\n", sp / sc);
    free(tp);
    free(tc);
    return 0;
}
