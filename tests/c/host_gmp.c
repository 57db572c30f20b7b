/*
 * host_gmp.c: a host program that uses the system's own libgmp with its own
 * memory functions, and primeforge (whose GMP is private and statically
 * linked) in the same process. Neither may disturb the other.
 */
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "primeforge.h"

static unsigned long host_allocs = 0;

static void *host_alloc(size_t n) {
    host_allocs++;
    return malloc(n);
}
static void *host_realloc(void *p, size_t old, size_t n) {
    (void)old;
    host_allocs++;
    return realloc(p, n);
}
static void host_free(void *p, size_t n) {
    (void)n;
    free(p);
}

static int fail(const char *what) {
    printf("host_gmp: FAIL: %s\n", what);
    return 1;
}

int main(void) {
    mp_set_memory_functions(host_alloc, host_realloc, host_free);

    mpz_t a;
    mpz_init_set_str(a, "123456789012345678901234567890123456789", 10);
    mpz_mul(a, a, a);
    unsigned long before = host_allocs;
    if (before == 0) return fail("the host allocator was not used by the host's GMP");

    /* primeforge does heavy GMP work of its own ... */
    pf_rsa_key *key = NULL;
    if (pf_rsa_generate(1024, 2, &key) != PF_OK) return fail("pf_rsa_generate");
    pf_dh_params *dh = NULL;
    if (pf_dh_generate(512, 2, 2, &dh) != PF_OK) return fail("pf_dh_generate");

    /* ... without calling the host's functions ... */
    if (host_allocs != before) return fail("primeforge's GMP used the host's allocator");

    /* ... and without replacing them. */
    void *(*af)(size_t);
    void *(*rf)(void *, size_t, size_t);
    void (*ff)(void *, size_t);
    mp_get_memory_functions(&af, &rf, &ff);
    if (af != host_alloc || rf != host_realloc || ff != host_free)
        return fail("the host's GMP memory functions were replaced");

    /* The host's GMP still works. */
    mpz_t b;
    mpz_init(b);
    mpz_sqrt(b, a);
    char *s = mpz_get_str(NULL, 10, b);
    int ok = strcmp(s, "123456789012345678901234567890123456789") == 0;
    host_free(s, strlen(s) + 1);
    if (!ok) return fail("host GMP arithmetic");
    if (host_allocs == before) return fail("the host allocator stopped being used");

    pf_dh_free(dh);
    pf_rsa_free(key);
    mpz_clears(a, b, NULL);
    printf("host_gmp: ok (%s, system GMP %s)\n", pf_version(), gmp_version);
    return 0;
}
