/* OpenSSL's own FIPS 186-4 validation of domain parameters, for tests.
 *
 * usage: ffc_openssl P Q G SEED COUNTER GINDEX DIGEST [pq]
 *   numbers and the seed in hex; GINDEX -1 when g is not canonical;
 *   DIGEST an OpenSSL name ("SHA2-256"), or "-" for OpenSSL's default;
 *   "pq" validates p and q only (A.1.1.3), not g.
 *
 * Builds a DSA key object from the parameters with their seed, counter
 * and index (EVP_PKEY_fromdata), then runs EVP_PKEY_param_check: OpenSSL's
 * default provider then re-runs FIPS 186-4 A.1.1.3 on the seed and
 * counter (ossl_ffc_params_FIPS186_4_validate) and, with an index, A.2.4
 * on g. Prints "valid" or "invalid" and exits 0 either way; 2 on misuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

static BIGNUM *hex_bn(const char *s) {
    BIGNUM *b = NULL;
    if (BN_hex2bn(&b, s) == 0) {
        fprintf(stderr, "bad hex: %s\n", s);
        exit(2);
    }
    return b;
}

int main(int argc, char **argv) {
    if (argc != 8 && !(argc == 9 && strcmp(argv[8], "pq") == 0)) {
        fprintf(stderr, "usage: ffc_openssl P Q G SEED COUNTER GINDEX DIGEST [pq]\n");
        return 2;
    }
    int validate_g = argc == 8;
    BIGNUM *p = hex_bn(argv[1]), *q = hex_bn(argv[2]), *g = hex_bn(argv[3]);
    long seed_len = 0;
    unsigned char *seed = OPENSSL_hexstr2buf(argv[4], &seed_len);
    if (seed == NULL) {
        fprintf(stderr, "bad seed hex\n");
        return 2;
    }
    int counter = atoi(argv[5]);
    int gindex = atoi(argv[6]);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    int ok = bld != NULL && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_P, p) &&
             OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_Q, q) &&
             OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_G, g) &&
             OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_FFC_SEED, seed,
                                              (size_t)seed_len) &&
             OSSL_PARAM_BLD_push_int(bld, OSSL_PKEY_PARAM_FFC_PCOUNTER, counter) &&
             OSSL_PARAM_BLD_push_int(bld, OSSL_PKEY_PARAM_FFC_GINDEX, gindex) &&
             OSSL_PARAM_BLD_push_int(bld, OSSL_PKEY_PARAM_FFC_VALIDATE_PQ, 1) &&
             OSSL_PARAM_BLD_push_int(bld, OSSL_PKEY_PARAM_FFC_VALIDATE_G, validate_g);
    if (ok && strcmp(argv[7], "-") != 0)
        ok = OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_FFC_DIGEST, argv[7], 0);
    OSSL_PARAM *params = ok ? OSSL_PARAM_BLD_to_param(bld) : NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "DSA", NULL);
    EVP_PKEY *pkey = NULL;
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEY_PARAMETERS, params) <= 0) {
        ERR_print_errors_fp(stderr);
        fprintf(stderr, "could not build the key object\n");
        return 2;
    }
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    int r = check != NULL ? EVP_PKEY_param_check(check) : -1;
    if (r != 1)
        ERR_print_errors_fp(stderr);
    printf("%s\n", r == 1 ? "valid" : "invalid");
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_free(pkey);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    OPENSSL_free(seed);
    BN_free(p);
    BN_free(q);
    BN_free(g);
    return 0;
}
