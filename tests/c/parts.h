/* Shared by the C hosts of tests/leftovers.rs: writing a key's secret parts
 * where the test reads them. */
#ifndef PRIMEFORGE_TEST_PARTS_H
#define PRIMEFORGE_TEST_PARTS_H

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "primeforge.h"

/* Writes all `n` bytes, or returns -1. */
static int write_all(int fd, const void *p, size_t n) {
    const unsigned char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes p, q, d, dP, dQ, qInv of `key` to `path`, each as a 4-byte
 * native-endian length and the big-endian bytes (tests/leftovers.rs's
 * `components`). 0 on success, -1 on failure. */
static int write_parts(const pf_rsa_key *key, const char *path) {
    static const uint32_t parts[] = {PF_RSA_P, PF_RSA_Q, PF_RSA_D, PF_RSA_DP, PF_RSA_DQ, PF_RSA_QINV};
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    int bad = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && !bad; i++) {
        pf_buffer *b = NULL;
        if (pf_rsa_component(key, parts[i], &b) != PF_OK) {
            bad = 1;
            break;
        }
        uint32_t len = (uint32_t)pf_buffer_len(b);
        bad = write_all(fd, &len, sizeof len) != 0 || write_all(fd, pf_buffer_data(b), len) != 0;
        pf_buffer_free(b);
    }
    close(fd);
    return bad ? -1 : 0;
}

#endif
