/*
 * fips186_params.c: generate FIPS 186-4 domain parameters (DSA, and X9.42
 * DH as SP 800-56A uses them) with primeforge, like `openssl genpkey
 * -genparam -algorithm DHX` or `openssl dsaparam`, and show what makes
 * them verifiable.
 *
 *   fips186_params [PBITS [QBITS [THREADS [dsa|x942 [OUTFILE]]]]]
 *       defaults: 2048, 0 = OpenSSL's choice (224 for 2048), 0 = all
 *       cores, x942, stdout
 *
 * X9.42 output carries the seed and counter; DSA output cannot, so the
 * seed, counter, hash and generator index are printed to stderr either
 * way. The output is then checked as a loader would check a file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "primeforge.h"

static const char *hash_name(uint32_t h) {
    switch (h) {
    case PF_HASH_SHA1: return "SHA-1";
    case PF_HASH_SHA224: return "SHA-224";
    case PF_HASH_SHA256: return "SHA-256";
    case PF_HASH_SHA384: return "SHA-384";
    case PF_HASH_SHA512: return "SHA-512";
    case PF_HASH_SHA512_224: return "SHA-512/224";
    case PF_HASH_SHA512_256: return "SHA-512/256";
    default: return "unknown";
    }
}

int main(int argc, char **argv) {
    unsigned long pbits = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    unsigned long qbits = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    unsigned long threads = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    int dsa = argc > 4 && strcmp(argv[4], "dsa") == 0;
    const char *path = argc > 5 ? argv[5] : NULL;

    pf_stats stats = {0};
    pf_options opts = pf_options_default();
    opts.threads = (uint32_t)threads;
    opts.stats = &stats;
    pf_dh_fips186 req = pf_dh_fips186_default((uint32_t)pbits);
    req.qbits = (uint32_t)qbits;

    pf_dh_params *params = NULL;
    pf_status st = pf_dh_generate_fips186(&req, &opts, &params);
    if (st != PF_OK) {
        fprintf(stderr, "fips186_params: %s: %s\n", pf_status_str(st),
                pf_last_error_message());
        return 1;
    }

    pf_buffer *seed = NULL;
    uint32_t counter = 0, hash = 0;
    int32_t gindex = -1;
    st = pf_dh_fips186_info(params, &seed, &counter, &hash, &gindex);
    pf_buffer *out = NULL;
    if (st == PF_OK)
        st = pf_dh_export(params, dsa ? PF_FORMAT_DSA_PEM : PF_FORMAT_X942_PEM, &out);
    if (st != PF_OK) {
        fprintf(stderr, "fips186_params: %s\n", pf_status_str(st));
        pf_buffer_free(seed);
        pf_dh_free(params);
        return 1;
    }
    fprintf(stderr, "fips186_params: %u-bit p in %.3f s (%llu candidates); seed ",
            (unsigned)pf_dh_bits(params), (double)stats.elapsed_ns / 1e9,
            (unsigned long long)stats.candidates);
    for (size_t i = 0; i < pf_buffer_len(seed); i++)
        fprintf(stderr, "%02x", pf_buffer_data(seed)[i]);
    fprintf(stderr, ", counter %u, %s, gindex %d\n", (unsigned)counter, hash_name(hash),
            (int)gindex);

    /* Check the output as a loader would: what could be verified? */
    uint32_t problems = 0, verified = 0;
    st = pf_dh_check_ex(pf_buffer_data(out), pf_buffer_len(out), &problems, &verified);
    if (st != PF_OK || problems != 0) {
        fprintf(stderr, "fips186_params: check: %s, problems 0x%x\n", pf_status_str(st),
                (unsigned)problems);
        pf_buffer_free(out);
        pf_buffer_free(seed);
        pf_dh_free(params);
        return 1;
    }
    fprintf(stderr, "fips186_params: verified:%s%s%s\n",
            (verified & PF_DH_VERIFIED_SEED) ? " [p and q from the seed, A.1.1.3]" : "",
            (verified & PF_DH_VERIFIED_G_CANONICAL) ? " [canonical g, A.2.4]" : "",
            (verified & PF_DH_VERIFIED_G_ORDER) ? " [g of order q, A.2.2]" : "");

    FILE *f = path ? fopen(path, "wb") : stdout;
    int rc = 0;
    if (f == NULL ||
        fwrite(pf_buffer_data(out), 1, pf_buffer_len(out), f) != pf_buffer_len(out)) {
        perror("fips186_params: write");
        rc = 1;
    }
    if (path && f)
        fclose(f);
    pf_buffer_free(out);
    pf_buffer_free(seed);
    pf_dh_free(params);
    return rc;
}
