/*
 * An EVP caller that knows nothing of primeforge but its provider's name:
 * loads the provider, generates an RSA key through EVP_PKEY_keygen with a
 * "threads" parameter, signs and verifies with the default provider, and
 * cancels a second generation from the progress callback.
 *
 *   evp PROVIDER_DIR
 */
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/provider.h>

static int calls;

static int cancel_at_once(EVP_PKEY_CTX *ctx) {
    (void)ctx;
    calls++;
    return 0; /* 0 cancels */
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (!OSSL_PROVIDER_set_default_search_path(NULL, argv[1])) return 3;
    OSSL_PROVIDER *pf = OSSL_PROVIDER_load(NULL, "primeforge");
    OSSL_PROVIDER *def = OSSL_PROVIDER_load(NULL, "default");
    if (pf == NULL || def == NULL) {
        ERR_print_errors_fp(stderr);
        return 4;
    }
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", "provider=primeforge");
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0) {
        ERR_print_errors_fp(stderr);
        return 5;
    }
    unsigned int bits = 2048, threads = 2;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_uint("bits", &bits),
        OSSL_PARAM_construct_uint("threads", &threads),
        OSSL_PARAM_construct_end(),
    };
    EVP_PKEY *key = NULL;
    if (EVP_PKEY_CTX_set_params(ctx, params) <= 0 || EVP_PKEY_generate(ctx, &key) <= 0) {
        ERR_print_errors_fp(stderr);
        return 6;
    }
    printf("provider of the key manager: %s\n",
           OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(key)));
    printf("bits %d, security bits %d\n", EVP_PKEY_get_bits(key), EVP_PKEY_get_security_bits(key));

    /* Sign and verify with the default provider's RSA signature. */
    const unsigned char msg[] = "primeforge";
    unsigned char sig[512];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, "provider=default", key, NULL) <= 0 ||
        EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) <= 0) {
        ERR_print_errors_fp(stderr);
        return 7;
    }
    EVP_MD_CTX_free(md);
    md = EVP_MD_CTX_new();
    if (EVP_DigestVerifyInit_ex(md, NULL, "SHA256", NULL, "provider=default", key, NULL) <= 0 ||
        EVP_DigestVerify(md, sig, siglen, msg, sizeof(msg)) != 1) {
        ERR_print_errors_fp(stderr);
        return 8;
    }
    EVP_MD_CTX_free(md);
    printf("signature of %zu bytes verified\n", siglen);

    /* Export (EVP_PKEY_todata: our export) and import back into a fresh
     * primeforge key (EVP_PKEY_fromdata: our import), for a 2-prime and a
     * 3-prime key; the imported key signs what the original verifies. */
    for (unsigned int primes = 2; primes <= 3; primes++) {
        EVP_PKEY *src = key;
        if (primes == 3) {
            src = NULL;
            EVP_PKEY_CTX *c3 = EVP_PKEY_CTX_new_from_name(NULL, "RSA", "provider=primeforge");
            OSSL_PARAM p3[] = {OSSL_PARAM_construct_uint("bits", &bits),
                               OSSL_PARAM_construct_uint("primes", &primes), OSSL_PARAM_construct_end()};
            if (c3 == NULL || EVP_PKEY_keygen_init(c3) <= 0 || EVP_PKEY_CTX_set_params(c3, p3) <= 0 ||
                EVP_PKEY_generate(c3, &src) <= 0)
                return 11;
            EVP_PKEY_CTX_free(c3);
        }
        OSSL_PARAM *data = NULL;
        if (EVP_PKEY_todata(src, EVP_PKEY_KEYPAIR, &data) <= 0) {
            ERR_print_errors_fp(stderr);
            return 12;
        }
        EVP_PKEY_CTX *ic = EVP_PKEY_CTX_new_from_name(NULL, "RSA", "provider=primeforge");
        EVP_PKEY *imported = NULL;
        if (ic == NULL || EVP_PKEY_fromdata_init(ic) <= 0 ||
            EVP_PKEY_fromdata(ic, &imported, EVP_PKEY_KEYPAIR, data) <= 0) {
            ERR_print_errors_fp(stderr);
            return 13;
        }
        if (strcmp(OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(imported)), "primeforge") != 0) return 14;
        size_t len2 = sizeof(sig);
        md = EVP_MD_CTX_new();
        if (EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, "provider=default", imported, NULL) <= 0 ||
            EVP_DigestSign(md, sig, &len2, msg, sizeof(msg)) <= 0)
            return 15;
        EVP_MD_CTX_free(md);
        md = EVP_MD_CTX_new();
        if (EVP_DigestVerifyInit_ex(md, NULL, "SHA256", NULL, "provider=default", src, NULL) <= 0 ||
            EVP_DigestVerify(md, sig, len2, msg, sizeof(msg)) != 1)
            return 16;
        EVP_MD_CTX_free(md);
        printf("%u-prime key exported and imported back\n", primes);
        OSSL_PARAM_free(data);
        EVP_PKEY_free(imported);
        EVP_PKEY_CTX_free(ic);
        if (src != key) EVP_PKEY_free(src);
    }

    /* DH: parameters from our paramgen; key pairs from primeforge (on
     * those parameters, as a TLS server makes its ephemeral keys) and from
     * the default provider; derivation by the default provider, which gets
     * our keys through export. All three pairings agree. */
    {
        EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_from_name(NULL, "DH", "provider=primeforge");
        unsigned int pbits = 512;
        OSSL_PARAM pp[] = {OSSL_PARAM_construct_uint("pbits", &pbits), OSSL_PARAM_construct_end()};
        EVP_PKEY *dhparams = NULL;
        if (pc == NULL || EVP_PKEY_paramgen_init(pc) <= 0 || EVP_PKEY_CTX_set_params(pc, pp) <= 0 ||
            EVP_PKEY_paramgen(pc, &dhparams) <= 0) {
            ERR_print_errors_fp(stderr);
            return 17;
        }
        EVP_PKEY *a = NULL, *b = NULL;
        for (int i = 0; i < 2; i++) {
            EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_from_pkey(NULL, dhparams, "provider=primeforge");
            if (kc == NULL || EVP_PKEY_keygen_init(kc) <= 0 || EVP_PKEY_generate(kc, i ? &b : &a) <= 0) {
                ERR_print_errors_fp(stderr);
                return 18;
            }
            EVP_PKEY_CTX_free(kc);
        }
        if (strcmp(OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(a)), "primeforge") != 0)
            return 19;
        /* A key pair the default provider makes on the same parameters. */
        OSSL_PARAM *pdata = NULL;
        EVP_PKEY *defparams = NULL, *c = NULL;
        EVP_PKEY_CTX *fc = EVP_PKEY_CTX_new_from_name(NULL, "DH", "provider=default");
        if (EVP_PKEY_todata(dhparams, EVP_PKEY_KEY_PARAMETERS, &pdata) <= 0 || fc == NULL ||
            EVP_PKEY_fromdata_init(fc) <= 0 ||
            EVP_PKEY_fromdata(fc, &defparams, EVP_PKEY_KEY_PARAMETERS, pdata) <= 0) {
            ERR_print_errors_fp(stderr);
            return 21;
        }
        OSSL_PARAM_free(pdata);
        EVP_PKEY_CTX_free(fc);
        EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_from_pkey(NULL, defparams, "provider=default");
        if (kc == NULL || EVP_PKEY_keygen_init(kc) <= 0 || EVP_PKEY_generate(kc, &c) <= 0) {
            ERR_print_errors_fp(stderr);
            return 22;
        }
        EVP_PKEY_CTX_free(kc);
        EVP_PKEY *pairs[3][2] = {{a, b}, {a, c}, {c, b}};
        size_t agreed = 0;
        for (int i = 0; i < 3; i++) {
            unsigned char s1[64], s2[64];
            size_t l1 = sizeof(s1), l2 = sizeof(s2);
            EVP_PKEY_CTX *d1 = EVP_PKEY_CTX_new_from_pkey(NULL, pairs[i][0], "provider=default");
            EVP_PKEY_CTX *d2 = EVP_PKEY_CTX_new_from_pkey(NULL, pairs[i][1], "provider=default");
            /* Padded: an unpadded secret is one byte shorter once in 256. */
            if (d1 == NULL || d2 == NULL || EVP_PKEY_derive_init(d1) <= 0 || EVP_PKEY_CTX_set_dh_pad(d1, 1) <= 0 ||
                EVP_PKEY_derive_set_peer(d1, pairs[i][1]) <= 0 || EVP_PKEY_derive(d1, s1, &l1) <= 0 ||
                EVP_PKEY_derive_init(d2) <= 0 || EVP_PKEY_CTX_set_dh_pad(d2, 1) <= 0 ||
                EVP_PKEY_derive_set_peer(d2, pairs[i][0]) <= 0 ||
                EVP_PKEY_derive(d2, s2, &l2) <= 0 || l1 != l2 || memcmp(s1, s2, l1) != 0) {
                ERR_print_errors_fp(stderr);
                return 20;
            }
            agreed = l1;
            EVP_PKEY_CTX_free(d1);
            EVP_PKEY_CTX_free(d2);
        }
        /* Its PEM, by the default encoders. */
        BIO *mem = BIO_new(BIO_s_mem());
        if (mem == NULL || PEM_write_bio_PrivateKey(mem, a, NULL, NULL, 0, NULL, NULL) <= 0) {
            ERR_print_errors_fp(stderr);
            return 23;
        }
        BIO_free(mem);
        printf("DH: our parameters, key pairs from primeforge and default, %zu-byte shared secrets agreed\n",
               agreed);
        EVP_PKEY_free(a);
        EVP_PKEY_free(b);
        EVP_PKEY_free(c);
        EVP_PKEY_free(defparams);
        EVP_PKEY_free(dhparams);
        EVP_PKEY_CTX_free(pc);
    }

    /* A callback returning 0 cancels the generation. */
    EVP_PKEY *none = NULL;
    EVP_PKEY_CTX *ctx2 = EVP_PKEY_CTX_new_from_name(NULL, "RSA", "provider=primeforge");
    unsigned int big = 8192;
    OSSL_PARAM p2[] = {OSSL_PARAM_construct_uint("bits", &big), OSSL_PARAM_construct_end()};
    if (ctx2 == NULL || EVP_PKEY_keygen_init(ctx2) <= 0 || EVP_PKEY_CTX_set_params(ctx2, p2) <= 0) return 9;
    EVP_PKEY_CTX_set_cb(ctx2, cancel_at_once);
    int r = EVP_PKEY_generate(ctx2, &none);
    printf("cancelled: generate returned %d after %d callback call(s), key %s\n", r, calls,
           none == NULL ? "none" : "MADE");
    ERR_clear_error();
    EVP_PKEY_CTX_free(ctx2);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PROVIDER_unload(pf);
    OSSL_PROVIDER_unload(def);
    return (r <= 0 && none == NULL && calls >= 1) ? 0 : 10;
}
