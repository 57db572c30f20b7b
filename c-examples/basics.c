/*
 * basics.c: version check, status texts and secure buffers through the C API.
 *
 * Build by hand:  make -C c-examples basics   (after cargo build --release)
 * Prints one line per check and "basics: ok" at the end; exits non-zero on
 * the first failed check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "primeforge.h"

static int failures = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

int main(void) {
    /* The library and the header this program was compiled with agree. */
    const char *version = pf_version();
    CHECK(version != NULL);
    CHECK(strcmp(version, PRIMEFORGE_VERSION_STRING) == 0);
    printf("version %s (header %d.%d.%d)\n", version, PRIMEFORGE_VERSION_MAJOR,
           PRIMEFORGE_VERSION_MINOR, PRIMEFORGE_VERSION_PATCH);

    /* Every status has static text; unknown values get a generic one. */
    for (uint32_t s = PF_OK; s <= PF_ERR_FORKED; s++) {
        const char *text = pf_status_str(s);
        CHECK(text != NULL && text[0] != '\0');
        printf("status %u: %s\n", (unsigned)s, text);
    }
    CHECK(pf_status_str(0xFFFFFFFFu) != NULL);
    printf("status 4294967295: %s\n", pf_status_str(0xFFFFFFFFu));

    /* NULL out-parameter is refused with a clear status. */
    CHECK(pf_buffer_new(16, NULL) == PF_ERR_NULL_ARGUMENT);

    /* Buffers from 0 bytes to 1 MiB: zero-filled, writable, wiped on free. */
    const size_t sizes[] = {0, 1, 32, 4095, 4096, 4097, 65536, 1u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        pf_buffer *buf = NULL;
        pf_status st = pf_buffer_new(sizes[i], &buf);
        CHECK(st == PF_OK);
        if (st != PF_OK) {
            continue;
        }
        CHECK(pf_buffer_len(buf) == sizes[i]);
        CHECK(pf_buffer_data(buf) != NULL);
        uint8_t *p = pf_buffer_data_mut(buf);
        size_t zeros = 0;
        for (size_t j = 0; j < sizes[i]; j++) {
            zeros += p[j] == 0;
        }
        CHECK(zeros == sizes[i]);
        memset(p, 0xAB, sizes[i]);
        CHECK(pf_buffer_check(buf) == PF_OK);
        printf("buffer %zu bytes: locked=%s\n", sizes[i],
               pf_buffer_locked(buf) ? "yes" : "no");
        pf_buffer_free(buf);
    }

    /* The free functions accept NULL; accessors tolerate it. */
    pf_buffer_free(NULL);
    CHECK(pf_buffer_len(NULL) == 0);
    CHECK(pf_buffer_data(NULL) == NULL);
    CHECK(!pf_buffer_locked(NULL));
    CHECK(pf_buffer_check(NULL) == PF_ERR_NULL_ARGUMENT);

    /* PF_RSA_FIPS refuses, before any work, what would not meet FIPS
     * 186-5 (here: under 2048 bits); *out stays untouched. */
    pf_options opts = pf_options_default();
    opts.flags = PF_RSA_FIPS;
    pf_rsa_key *key = NULL;
    CHECK(pf_rsa_generate_ex(1024, 65537, 2, &opts, &key) == PF_ERR_INVALID_ARGUMENT);
    CHECK(key == NULL);
    printf("PF_RSA_FIPS refuses RSA-1024: %s\n",
           pf_status_str(PF_ERR_INVALID_ARGUMENT));

    if (failures != 0) {
        fprintf(stderr, "basics: %d check(s) failed\n", failures);
        return 1;
    }
    printf("basics: ok\n");
    return 0;
}
