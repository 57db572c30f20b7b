/*
 * key_check.c: read an existing RSA private key, check it, and optionally
 * write it again encrypted under a new passphrase.
 *
 *   key_check IN [OUT]
 *
 * IN is any RSA private key primeforge reads: PKCS#1, PKCS#8 or encrypted
 * PKCS#8, PEM-encrypted ("Proc-Type: 4,ENCRYPTED") or OpenSSH, in PEM or
 * DER. Its passphrase, if any, comes from the environment variable
 * KEY_PASSIN (never from the command line, where `ps` would show it).
 *
 * With OUT, the key is written there as encrypted PKCS#8 PEM under the
 * passphrase in KEY_PASSOUT (scrypt; KEY_KDF=pbkdf2 for PBKDF2-SHA256),
 * readable by `openssl pkey -passin env:KEY_PASSOUT`.
 *
 * Exit status: 0 if the key is consistent (it may still fall short of
 * FIPS 186-5, which is reported), 2 if it is not, 1 on any error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "primeforge.h"

/* Reads a whole file into a malloc'ed buffer. Returns NULL on error. */
static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) {
            break;
        }
        if (cap > (1u << 24)) { /* no key file is 32 MiB */
            errno = EFBIG;
        }
        uint8_t *bigger = cap <= (1u << 24) ? realloc(buf, cap * 2) : NULL;
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    if (buf != NULL && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* The library's message for the failed call: the status text and, where
 * it knows more, what was wrong ("decode error: ..."). Read it right after
 * the call, on the same thread. */
static void report(const char *what) {
    fprintf(stderr, "key_check: %s: %s\n", what, pf_last_error_message());
}

static const struct {
    uint32_t bit;
    const char *text;
} PROBLEMS[] = {
    {PF_RSA_CHECK_MODULUS_TOO_LARGE, "modulus too large"},
    {PF_RSA_CHECK_MODULUS_TOO_SMALL, "modulus too small"},
    {PF_RSA_CHECK_TOO_MANY_PRIMES, "too many primes"},
    {PF_RSA_CHECK_COMPONENT_TOO_LARGE, "a component is too large"},
    {PF_RSA_CHECK_BAD_PUBLIC_EXPONENT, "bad public exponent"},
    {PF_RSA_CHECK_N_NOT_PRODUCT, "n is not the product of the primes"},
    {PF_RSA_CHECK_PRIME_NOT_PRIME, "a prime is not prime"},
    {PF_RSA_CHECK_BAD_PRIVATE_EXPONENT, "bad private exponent"},
    {PF_RSA_CHECK_BAD_CRT_EXPONENT, "bad CRT exponent"},
    {PF_RSA_CHECK_BAD_CRT_COEFFICIENT, "bad CRT coefficient"},
    {PF_RSA_CHECK_FIPS_SIZE, "FIPS 186-5: size"},
    {PF_RSA_CHECK_FIPS_EXPONENT, "FIPS 186-5: public exponent"},
    {PF_RSA_CHECK_FIPS_PRIMES, "FIPS 186-5: primes"},
    {PF_RSA_CHECK_FIPS_PRIVATE_EXPONENT, "FIPS 186-5: private exponent"},
};

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: key_check IN [OUT]\n");
        return 1;
    }
    const char *passin = getenv("KEY_PASSIN");
    size_t len = 0;
    uint8_t *data = read_file(argv[1], &len);
    if (data == NULL) {
        perror("key_check: read");
        return 1;
    }

    pf_rsa_key *key = NULL;
    pf_status st = pf_rsa_import(data, len, (const uint8_t *)passin,
                                 passin ? strlen(passin) : 0, &key);
    /* The input may hold an unencrypted key: wipe it before it is freed. */
    volatile uint8_t *wipe = data;
    for (size_t i = 0; i < len; i++) {
        wipe[i] = 0;
    }
    free(data);
    if (st != PF_OK) {
        report(argv[1]);
        return 1;
    }

    uint32_t problems = 0;
    st = pf_rsa_check(key, &problems);
    if (st != PF_OK) {
        report("check");
        pf_rsa_free(key);
        return 1;
    }
    printf("key_check: %u-bit RSA key, %u primes: %s\n", pf_rsa_bits(key), pf_rsa_primes(key),
           (problems & ~PF_RSA_CHECK_FIPS_MASK) ? "INCONSISTENT"
           : problems                           ? "consistent, not FIPS 186-5"
                                                : "consistent, meets FIPS 186-5");
    for (size_t i = 0; i < sizeof PROBLEMS / sizeof PROBLEMS[0]; i++) {
        if (problems & PROBLEMS[i].bit) {
            printf("  %s\n", PROBLEMS[i].text);
        }
    }

    uint32_t secure = 0;
    if (pf_secure_memory_status(&secure) == PF_OK) {
        printf("key_check: secret limbs %s\n",
               (secure & PF_SECURE_FALLBACK) ? "partly on the C heap (arena unavailable or full)"
               : (secure & PF_SECURE_ARENA)  ? "in the wiped, undumpable arena"
                                             : "on the C heap (no arena)");
    }

    int rc = (problems & ~PF_RSA_CHECK_FIPS_MASK) ? 2 : 0;
    if (argc == 3 && rc == 0) {
        const char *passout = getenv("KEY_PASSOUT");
        const char *kdf_name = getenv("KEY_KDF");
        uint32_t kdf = kdf_name && strcmp(kdf_name, "pbkdf2") == 0 ? PF_KDF_PBKDF2_SHA256
                                                                    : PF_KDF_SCRYPT;
        if (passout == NULL || *passout == '\0') {
            fprintf(stderr, "key_check: set KEY_PASSOUT to the new passphrase\n");
            pf_rsa_free(key);
            return 1;
        }
        pf_buffer *pem = NULL;
        st = pf_rsa_export_encrypted(key, PF_FORMAT_PKCS8_PEM, (const uint8_t *)passout,
                                     strlen(passout), kdf, &pem);
        if (st != PF_OK) {
            report("export");
            pf_rsa_free(key);
            return 1;
        }
        FILE *f = fopen(argv[2], "wb");
        if (f == NULL ||
            fwrite(pf_buffer_data(pem), 1, pf_buffer_len(pem), f) != pf_buffer_len(pem)) {
            perror("key_check: write");
            rc = 1;
        }
        if (f != NULL && fclose(f) != 0) {
            perror("key_check: close");
            rc = 1;
        }
        pf_buffer_free(pem);
        if (rc == 0) {
            printf("key_check: wrote %s (encrypted PKCS#8)\n", argv[2]);
        }
    }
    pf_rsa_free(key);
    return rc;
}
