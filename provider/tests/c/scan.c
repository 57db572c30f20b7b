/*
 * What importing keys into the provider leaves behind: an RSA key and a DH
 * key pair made by the default provider are imported into primeforge with
 * EVP_PKEY_fromdata, exported back with EVP_PKEY_todata (wiped and freed,
 * as a careful host does), read through
 * EVP_PKEY_get_bn_param, and freed; then this process's readable memory
 * is scanned for 16-byte windows of the private parts (p, q, d, dP, dQ,
 * qInv, the DH private key), in both byte orders.
 *
 *   scan PROVIDER_DIR [control]
 *
 * The parts and the parameter buffers live in pages of their own that the
 * scan skips (and that are wiped before it). The scan first proves itself
 * on the live keys (their parts are in primeforge's secure memory, which
 * is readable to the process). With "control", nothing is imported into
 * primeforge: what the default provider and OpenSSL alone leave.
 * Exit 0: no window found after the free; 5: the live keys were not found
 * (the scan is broken); 6: windows found.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#define WINDOW 16
#define PAGE_BYTES (64 * 1024)

/* The private parts, big-endian: skipped by the scan. */
static unsigned char *vals;
static size_t val_len[8];
static int n_vals;
/* Native-endian parameter buffers: skipped by the scan, wiped before it. */
static unsigned char *bufs;
static size_t buf_used;
static unsigned char *scratch; /* the scan's own buffer */
#define CHUNK (1u << 20)

static void die(const char *what, int code) {
    fprintf(stderr, "scan: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(code);
}

static unsigned char *page(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap failed", 2);
    return p;
}

static void keep(const BIGNUM *bn) {
    int len = BN_num_bytes(bn);
    if (n_vals == 8 || len <= 0 || len > 1024) die("bad part", 2);
    BN_bn2bin(bn, vals + 1024 * n_vals);
    val_len[n_vals++] = (size_t)len;
}

/* A native-endian copy of `bn` for an OSSL_PARAM. */
static OSSL_PARAM bn_param(const char *key, const BIGNUM *bn) {
    int len = BN_num_bytes(bn);
    unsigned char *b = bufs + buf_used;
    if (len <= 0) len = 1;
    if (buf_used + (size_t)len > PAGE_BYTES || BN_bn2nativepad(bn, b, len) < 0) die("no room", 2);
    buf_used += (size_t)len;
    return OSSL_PARAM_construct_BN(key, b, (size_t)len);
}

static BIGNUM *get_bn(EVP_PKEY *k, const char *name) {
    BIGNUM *bn = NULL;
    if (EVP_PKEY_get_bn_param(k, name, &bn) <= 0) die(name, 3);
    return bn;
}

static int in_range(unsigned long lo, unsigned long hi, const void *p) {
    return (unsigned long)p >= lo && (unsigned long)p < hi;
}

/* Windows of every kept part found in readable private memory. */
static long scan(int verbose) {
    long found = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    int mem = open("/proc/self/mem", O_RDONLY);
    if (maps == NULL || mem < 0) die("cannot read /proc/self", 2);
    char line[512];
    /* In the skipped page: a needle on this stack would find itself. */
    unsigned char *needle = scratch + CHUNK + WINDOW;
    while (fgets(line, sizeof line, maps) != NULL) {
        unsigned long lo, hi;
        char perms[8] = {0};
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
        if (perms[0] != 'r' || strstr(line, "[vvar") || strstr(line, "[vsyscall") || strstr(line, ".so")) continue;
        if (in_range(lo, hi, vals) || in_range(lo, hi, bufs) || in_range(lo, hi, scratch)) continue;
        for (unsigned long at = lo; at < hi; at += CHUNK) {
            size_t want = hi - at < CHUNK + WINDOW ? hi - at : CHUNK + WINDOW;
            ssize_t got = pread(mem, scratch, want, (off_t)at);
            if (got <= 0) break;
            for (int s = 0; s < n_vals; s++) {
                const unsigned char *v = vals + 1024 * s;
                for (int rev = 0; rev < 2; rev++) {
                    for (size_t off = 0; off + WINDOW <= val_len[s]; off += WINDOW / 2) {
                        for (size_t i = 0; i < WINDOW; i++)
                            needle[i] = rev ? v[val_len[s] - 1 - (off + i)] : v[off + i];
                        const unsigned char *h = scratch, *m;
                        size_t left = (size_t)got;
                        while ((m = memmem(h, left, needle, WINDOW)) != NULL) {
                            found++;
                            if (verbose)
                                fprintf(stderr, "  part %d at %#lx in %s", s, at + (unsigned long)(m - scratch), line);
                            left -= (size_t)(m - h) + 1;
                            h = m + 1;
                        }
                    }
                }
            }
        }
    }
    memset(needle, 0, WINDOW);
    fclose(maps);
    close(mem);
    return found;
}

/* EVP_PKEY_get_bn_param copies the number through a buffer on its caller's
 * stack and leaves it there: wipe what lies below this frame, as a host
 * that reads private parts must. */
static void __attribute__((noinline)) scrub_stack(void) {
    volatile unsigned char pad[64 * 1024];
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = 0;
}

static EVP_PKEY *fromdata(const char *alg, int selection, OSSL_PARAM *params) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, alg, "provider=primeforge");
    EVP_PKEY *k = NULL;
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 || EVP_PKEY_fromdata(ctx, &k, selection, params) <= 0)
        die("EVP_PKEY_fromdata into primeforge failed", 4);
    if (strcmp(OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(k)), "primeforge") != 0) die("not ours", 4);
    EVP_PKEY_CTX_free(ctx);
    return k;
}

/* Exports `k` (todata, get_bn_param) the way a host reads a key back. */
static void read_back(EVP_PKEY *k, const char *priv) {
    OSSL_PARAM *out = NULL;
    if (EVP_PKEY_todata(k, EVP_PKEY_KEYPAIR, &out) <= 0) die("EVP_PKEY_todata failed", 4);
    /* OSSL_PARAM_clear_free is OpenSSL 3.2's: wipe, then free. */
    for (OSSL_PARAM *q = out; q->key != NULL; q++)
        if (q->data != NULL) OPENSSL_cleanse(q->data, q->data_size);
    OSSL_PARAM_free(out);
    if (priv != NULL) BN_clear_free(get_bn(k, priv));
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int control = argc > 2 && strcmp(argv[2], "control") == 0;
    vals = page(8 * 1024);
    bufs = page(PAGE_BYTES);
    scratch = page(CHUNK + 2 * WINDOW);
    if (!OSSL_PROVIDER_set_default_search_path(NULL, argv[1])) return 3;
    OSSL_PROVIDER *pf = OSSL_PROVIDER_load(NULL, "primeforge");
    OSSL_PROVIDER *def = OSSL_PROVIDER_load(NULL, "default");
    if (pf == NULL || def == NULL) die("cannot load the providers", 3);

    /* An RSA key and a DH key pair from the default provider. */
    EVP_PKEY *rsa0 = EVP_PKEY_Q_keygen(NULL, "provider=default", "RSA", (size_t)2048);
    EVP_PKEY_CTX *dctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", "provider=default");
    EVP_PKEY *dh0 = NULL;
    OSSL_PARAM group[] = {OSSL_PARAM_construct_utf8_string("group", (char *)"ffdhe2048", 0), OSSL_PARAM_construct_end()};
    if (rsa0 == NULL || dctx == NULL || EVP_PKEY_keygen_init(dctx) <= 0 || EVP_PKEY_CTX_set_params(dctx, group) <= 0 ||
        EVP_PKEY_generate(dctx, &dh0) <= 0)
        die("the default provider's keys", 3);
    EVP_PKEY_CTX_free(dctx);
    static const char *const rsa_names[] = {"n", "e", "d", "rsa-factor1", "rsa-factor2",
                                            "rsa-exponent1", "rsa-exponent2", "rsa-coefficient1"};
    OSSL_PARAM rp[9];
    for (int i = 0; i < 8; i++) {
        BIGNUM *bn = get_bn(rsa0, rsa_names[i]);
        if (i >= 2) keep(bn);
        rp[i] = bn_param(rsa_names[i], bn);
        BN_clear_free(bn);
    }
    rp[8] = OSSL_PARAM_construct_end();
    static const char *const dh_names[] = {"p", "g", "pub", "priv"};
    OSSL_PARAM dp[5];
    for (int i = 0; i < 4; i++) {
        BIGNUM *bn = get_bn(dh0, dh_names[i]);
        if (i == 3) keep(bn);
        dp[i] = bn_param(dh_names[i], bn);
        BN_clear_free(bn);
    }
    dp[4] = OSSL_PARAM_construct_end();
    EVP_PKEY_free(rsa0);
    EVP_PKEY_free(dh0);
    scrub_stack();

    long live = 0;
    if (!control) {
        EVP_PKEY *rsa = fromdata("RSA", EVP_PKEY_KEYPAIR, rp);
        EVP_PKEY *dh = fromdata("DH", EVP_PKEY_KEYPAIR, dp);
        read_back(rsa, NULL); /* RSA's parts are exported, not gettable */
        read_back(dh, "priv");
        scrub_stack();
        memset(bufs, 0, PAGE_BYTES);
        live = scan(0);
        EVP_PKEY_free(rsa);
        EVP_PKEY_free(dh);
    }
    memset(bufs, 0, PAGE_BYTES);
    long after = scan(getenv("SCAN_VERBOSE") != NULL);
    printf("%s: %ld windows of the private parts while the keys lived, %ld after they were freed\n",
           control ? "control (no import)" : "imported", live, after);
    OSSL_PROVIDER_unload(pf);
    OSSL_PROVIDER_unload(def);
    if (!control && live == 0) return 5;
    return after ? 6 : 0;
}
