/* What a core dump or a fork() child can learn of a key generated with
 * fresh OS randomness (run by tests/leftovers.rs).
 *
 * The host interposes getrandom(3) (it is linked with -rdynamic, and
 * primeforge looks getrandom up through the global scope), so it learns
 * every 32-byte seed the library draws. The captures live in one page of
 * their own, excluded from core dumps and skipped by the scans; the scans
 * prove themselves on an inverted copy of a seed that the host plants on
 * its heap (found inverted, never plain).
 *
 *   leftovers core DIR [T]     generate RSA-2048 on T threads (default 2; 1
 *                              runs on the calling thread), keep the key,
 *                              write DIR/seeds and DIR/secrets (p, q, d, dP,
 *                              dQ, qInv), then abort() in DIR (a core file)
 *   leftovers fork-during      fork while a generation runs on another
 *                              thread, at several moments, on 2 threads
 *                              and on 1 (the generating thread's own)
 *   leftovers fork-after       fork right after a generation finished on a
 *                              (joined) host thread, on 2 threads and on 1
 *
 * A fork child scans all of its readable private memory for any 16-byte
 * window of any captured seed, and checks that every use of a key and a
 * buffer made by the parent returns PF_ERR_FORKED (or 0/NULL for the
 * value-returning functions). Before that, a generation on 1024 threads
 * must leave no worker thread alive when it returns (status 7), and the
 * secret arena must be in use (status 8; also under an address-space
 * limit: PRIMEFORGE_TEST_RLIMIT_AS_KB=N runs the host under `ulimit -v N`).
 * Exit status 0 = nothing found, all checks passed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parts.h"
#include "primeforge.h"

#define MAX_SEEDS 64
#define SEED_LEN 32
#define WINDOW 16

static unsigned char *captured; /* MAX_SEEDS seeds, one page, DONTDUMP */
static volatile int n_captured;
static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;

/* The interposed getrandom: the real system call, plus a copy of every
 * 32-byte draw. */
ssize_t getrandom(void *buf, size_t len, unsigned int flags) {
    long r = syscall(SYS_getrandom, buf, len, flags);
    if (r == (long)SEED_LEN && len == SEED_LEN) {
        pthread_mutex_lock(&cap_lock);
        if (captured == NULL) {
            void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                madvise(p, 4096, MADV_DONTDUMP);
                captured = p;
            }
        }
        if (captured != NULL && n_captured < MAX_SEEDS) {
            memcpy(captured + SEED_LEN * n_captured, buf, SEED_LEN);
            n_captured++;
        }
        pthread_mutex_unlock(&cap_lock);
    }
    return (ssize_t)r;
}

static void die(const char *what, int code) {
    fprintf(stderr, "leftovers: %s\n", what);
    exit(code);
}

/* Exactly `threads` workers, also above the machine's cores. */
static pf_rsa_key *generate(uint32_t bits, uint32_t threads) {
    pf_options o = pf_options_default();
    o.threads = threads;
    o.flags = PF_THREADS_EXACT;
    pf_rsa_key *key = NULL;
    pf_status st = pf_rsa_generate_ex(bits, 65537, 2, &o, &key);
    if (st != PF_OK) die(pf_status_str(st), 2);
    return key;
}

/* ---- scanning this process's own memory (fork children) ---- */

static unsigned char *scratch; /* 1 MiB + WINDOW, skipped by the scan */
#define CHUNK (1u << 20)

static int in_range(uintptr_t lo, uintptr_t hi, const void *p) {
    return (uintptr_t)p >= lo && (uintptr_t)p < hi;
}

/* Counts places in this process's readable private memory (skipping the
 * capture page and the scratch area) where a WINDOW-byte window (at every
 * `stride`-th offset) of one of `n` byte strings occurs, XORed with `mask`, in the given byte order
 * (reversed = GMP's little-endian limbs). The strings and the needle live
 * in the skipped areas. */
static int count_windows(const unsigned char *const *strs, const size_t *lens, int n, unsigned char mask,
                         int reversed, size_t stride, int verbose) {
    int found = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    int mem = open("/proc/self/mem", O_RDONLY);
    if (maps == NULL || mem < 0) die("cannot read /proc/self", 2);
    unsigned char *needle = scratch + CHUNK + WINDOW;
    char line[512];
    while (fgets(line, sizeof line, maps) != NULL) {
        unsigned long lo, hi;
        char perms[8] = {0};
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
        if (perms[0] != 'r' || perms[3] != 'p' || strstr(line, "[vvar") || strstr(line, "[vsyscall"))
            continue;
        if (in_range(lo, hi, captured) || in_range(lo, hi, scratch)) continue;
        for (unsigned long at = lo; at < hi; at += CHUNK) {
            size_t want = hi - at < CHUNK + WINDOW ? hi - at : CHUNK + WINDOW;
            ssize_t got = pread(mem, scratch, want, (off_t)at);
            if (got <= 0) break;
            for (int s = 0; s < n; s++) {
                for (size_t off = 0; off + WINDOW <= lens[s]; off += stride) {
                    for (int i = 0; i < WINDOW; i++) {
                        size_t j = reversed ? lens[s] - 1 - (off + (size_t)i) : off + (size_t)i;
                        needle[i] = strs[s][j] ^ mask;
                    }
                    const unsigned char *h = scratch;
                    size_t left = (size_t)got;
                    const unsigned char *m;
                    while ((m = memmem(h, left, needle, WINDOW)) != NULL) {
                        found++; /* overlapping windows of one copy count apart */
                        if (verbose)
                            fprintf(stderr, "  window of string %d at %#lx in %s", s,
                                    at + (unsigned long)(m - scratch), line);
                        left -= (size_t)(m - h) + 1;
                        h = m + 1;
                    }
                    memset(needle, 0, WINDOW);
                }
            }
        }
    }
    fclose(maps);
    close(mem);
    return found;
}

/* Windows of every captured seed at offsets 0, 8 and 16: any copy of 23
 * contiguous seed bytes contains one. With `mask` 0xFF, only the planted
 * inverted copy of the first seed is looked for (the scan's control). */
static int count_seed_windows(unsigned char mask) {
    const unsigned char *strs[MAX_SEEDS];
    size_t lens[MAX_SEEDS];
    int n = mask ? 1 : n_captured;
    for (int s = 0; s < n; s++) {
        strs[s] = captured + SEED_LEN * s;
        lens[s] = mask ? WINDOW : SEED_LEN;
    }
    return count_windows(strs, lens, n, mask, 0, 8, mask == 0 && getenv("LEFTOVERS_VERBOSE") != NULL);
}

/* Every use of an inherited key or buffer must say so. */
static int check_inherited(pf_rsa_key *key, pf_buffer *buf) {
    int bad = 0;
    pf_buffer *out = (pf_buffer *)(uintptr_t)0x1;
    if (pf_rsa_export(key, PF_FORMAT_PKCS8_DER, &out) != PF_ERR_FORKED) bad |= 1;
    if (pf_rsa_export(key, PF_FORMAT_SPKI_PEM, &out) != PF_ERR_FORKED) bad |= 2;
    if (pf_rsa_component(key, PF_RSA_P, &out) != PF_ERR_FORKED) bad |= 4;
    if (pf_rsa_component(key, PF_RSA_N, &out) != PF_ERR_FORKED) bad |= 8;
    if (out != (pf_buffer *)(uintptr_t)0x1) bad |= 16;
    if (pf_rsa_bits(key) != 0 || pf_rsa_primes(key) != 0) bad |= 32;
    if (pf_buffer_data(buf) != NULL || pf_buffer_data_mut(buf) != NULL) bad |= 64;
    if (pf_buffer_len(buf) != 0 || pf_buffer_locked(buf)) bad |= 128;
    if (pf_buffer_check(buf) != PF_ERR_FORKED) bad |= 256;
    pf_rsa_free(key);
    pf_buffer_free(buf);
    if (bad) fprintf(stderr, "leftovers: inherited objects misreported (mask %#x)\n", bad);
    return bad;
}

static void read_all(int fd, void *p, size_t n) {
    unsigned char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r <= 0) die("read failed", 2);
        c += r;
        n -= (size_t)r;
    }
}

/* In the child: 0 if clean, 3 if a seed window was found, 4 if inherited
 * objects were misreported, 5 if the planted control was not found, 6 if a
 * window of the key's p or q (sent by the parent once its generation is
 * done) was found. */
static int child_checks(pf_rsa_key *kept, pf_buffer *kept_buf, int from_parent) {
    int copies = count_seed_windows(0);
    int control = count_seed_windows(0xFF);
    /* p and q of the key that was being made when the parent forked. */
    const unsigned char *pq[2];
    size_t lens[2];
    unsigned char *store = scratch + CHUNK + WINDOW + 64;
    for (int i = 0; i < 2; i++) {
        uint32_t len = 0;
        read_all(from_parent, &len, sizeof len);
        if (len > 1024) die("bad length from the parent", 2);
        read_all(from_parent, store, len);
        pq[i] = store;
        lens[i] = len;
        store += len;
    }
    int verbose = getenv("LEFTOVERS_VERBOSE") != NULL;
    /* Windows at every 16th byte: any copy of 31 contiguous bytes of p or
     * q contains one. */
    int primes = count_windows(pq, lens, 2, 0, 0, WINDOW, verbose) + count_windows(pq, lens, 2, 0, 1, WINDOW, verbose);
    int bad = check_inherited(kept, kept_buf);
    if (copies) fprintf(stderr, "leftovers: %d copies of a seed in the child\n", copies);
    if (primes) fprintf(stderr, "leftovers: %d windows of p or q in the child\n", primes);
    if (!control) fprintf(stderr, "leftovers: planted control not found: the scan is broken\n");
    return copies ? 3 : primes ? 6 : bad ? 4 : !control ? 5 : 0;
}

/* Forks; then `finish` is called in the parent (it joins the generation
 * thread, if any) and p and q of `*key` are sent to the child. */
static int fork_and_check(pf_rsa_key *kept, pf_buffer *kept_buf, pthread_t *gen, pf_rsa_key **key) {
    int fds[2];
    if (pipe(fds) != 0) die("pipe failed", 2);
    pid_t pid = fork();
    if (pid < 0) die("fork failed", 2);
    if (pid == 0) {
        close(fds[1]);
        _exit(child_checks(kept, kept_buf, fds[0]));
    }
    close(fds[0]);
    if (gen != NULL) pthread_join(*gen, NULL);
    for (uint32_t part = PF_RSA_P; part <= PF_RSA_Q; part++) {
        pf_buffer *b = NULL;
        if (pf_rsa_component(*key, part, &b) != PF_OK) die("pf_rsa_component failed", 2);
        uint32_t len = (uint32_t)pf_buffer_len(b);
        if (write_all(fds[1], &len, sizeof len) != 0 || write_all(fds[1], pf_buffer_data(b), len) != 0)
            die("write failed", 2);
        pf_buffer_free(b);
    }
    close(fds[1]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) die("waitpid failed", 2);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

struct job {
    uint32_t bits, threads;
    pf_rsa_key *key;
};

static void *run_job(void *arg) {
    struct job *j = arg;
    j->key = generate(j->bits, j->threads);
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* An inverted copy of the first seed on the heap: the scans must find it. */
static unsigned char *plant_control(void) {
    unsigned char *c = malloc(SEED_LEN);
    if (c == NULL || n_captured == 0) die("no seed captured: is getrandom interposed?", 2);
    for (int i = 0; i < SEED_LEN; i++) c[i] = (unsigned char)(captured[i] ^ 0xFF);
    return c;
}

/* Threads of this process named primeforge-* (the library's workers). */
static int library_threads(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) die("cannot list /proc/self/task", 2);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[32] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t got = read(fd, name, sizeof name - 1);
        close(fd);
        if (got > 0 && strncmp(name, "primeforge-", 11) == 0) n++;
    }
    closedir(d);
    return n;
}

static int limited; /* running under an address-space limit */

static int fork_modes(int during) {
    scratch = mmap(NULL, CHUNK + WINDOW + 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED) die("mmap failed", 2);
    /* Every worker is joined before a call returns, even 1024 of them
     * (whose stacks do not fit under an address-space limit). */
    if (!limited) pf_rsa_free(generate(512, 1024));
    int left = library_threads();
    if (left != 0) {
        fprintf(stderr, "leftovers: %d worker threads alive after the call returned\n", left);
        return 7;
    }
    uint32_t secure = 0;
    if (pf_secure_memory_status(&secure) != PF_OK || !(secure & PF_SECURE_ARENA)) {
        fprintf(stderr, "leftovers: the secret arena is not in use (status bits %#x)\n", secure);
        return 8;
    }
    pf_rsa_key *kept = generate(1024, 2);
    pf_buffer *kept_buf = NULL;
    if (pf_buffer_new(64, &kept_buf) != PF_OK) die("pf_buffer_new failed", 2);
    memset(pf_buffer_data_mut(kept_buf), 0x5A, 64);
    unsigned char *control = plant_control();
    static const long delays[] = {0, 1, 2, 4, 8, 14, 20, 30, 45, 65, 90};
    int worst = 0;
    for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
        /* Every other run on one thread: the work is then done on the
         * generating thread itself, on a private stack. */
        struct job j = {during ? 3072 : 2048, i % 2 ? 1 : 2, NULL};
        pthread_t t;
        if (pthread_create(&t, NULL, run_job, &j) != 0) die("pthread_create failed", 2);
        if (during) {
            sleep_ms(delays[i]);
        } else {
            pthread_join(t, NULL);
        }
        int r = fork_and_check(kept, kept_buf, during ? &t : NULL, &j.key);
        pf_rsa_free(j.key);
        fprintf(stderr, "leftovers: fork %s (%ld ms, %u thread(s)): child status %d\n",
                during ? "during" : "after", during ? delays[i] : 0L, j.threads, r);
        if (r > worst) worst = r;
    }
    free(control);
    pf_rsa_free(kept);
    pf_buffer_free(kept_buf);
    return worst;
}

static int core_mode(const char *dir, uint32_t threads) {
    if (chdir(dir) != 0) die("chdir failed", 2);
    pf_rsa_key *key = generate(2048, threads);
    unsigned char *control = plant_control();
    if (write_parts(key, "secrets") != 0) die("cannot write secrets", 2);
    int fd = open("seeds", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write_all(fd, captured, (size_t)SEED_LEN * (size_t)n_captured) != 0) die("cannot write seeds", 2);
    close(fd);
    /* A host's next steps after generating: report, then (here) crash with
     * the key still alive. With lazy binding, printf's first call runs the
     * dynamic loader's resolver, which saves the vector registers. */
    printf("generated a %u-bit key\n", pf_rsa_bits(key));
    fflush(stdout);
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &r);
    (void)control;
    abort();
}

/* PRIMEFORGE_TEST_RLIMIT_AS_KB=N: run under `ulimit -v N`. */
static void limit_address_space(void) {
    const char *kb = getenv("PRIMEFORGE_TEST_RLIMIT_AS_KB");
    if (kb == NULL) return;
    struct rlimit r = {(rlim_t)atol(kb) * 1024, (rlim_t)atol(kb) * 1024};
    if (setrlimit(RLIMIT_AS, &r) != 0) die("setrlimit(RLIMIT_AS) failed", 2);
    limited = 1;
}

int main(int argc, char **argv) {
    limit_address_space();
    /* The interposer is instrumentation, not the host under test: it
     * copies every seed through the vector registers, and with lazy
     * binding its own first calls would run the loader's resolver with the
     * seed in them. Bind those calls before any seed exists. */
    pthread_mutex_lock(&cap_lock);
    pthread_mutex_unlock(&cap_lock);
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) die("mmap failed", 2);
    madvise(page, 4096, MADV_DONTDUMP);
    munmap(page, 4096);
    if (argc >= 3 && strcmp(argv[1], "core") == 0)
        return core_mode(argv[2], argc >= 4 ? (uint32_t)atoi(argv[3]) : 2);
    if (argc >= 2 && strcmp(argv[1], "fork-during") == 0) return fork_modes(1);
    if (argc >= 2 && strcmp(argv[1], "fork-after") == 0) return fork_modes(0);
    fprintf(stderr, "usage: leftovers core DIR | fork-during | fork-after\n");
    return 2;
}
