/* Secrets in flight: what a core taken *during* a generation, a signal
 * handler's frame, a fork() from a signal handler and a small thread stack
 * see of primeforge's work (run by tests/leftovers.rs).
 *
 * The seed comes from a file the test wrote (read(2) straight into a page
 * excluded from core dumps), so the test knows every secret of the key:
 *
 *   inflight learn SEED OUT BITS
 *       generate RSA-BITS from SEED (2 threads) and write p, q, d, dP, dQ,
 *       qInv to OUT (each as a 4-byte length and big-endian bytes)
 *   inflight core DIR BITS THREADS HOW K
 *       in DIR: read DIR/seed, plant a control value (the inverted seed) in
 *       two vector registers of a parked thread, generate RSA-BITS from the
 *       seed on THREADS threads and abort() in the middle, leaving a core:
 *       HOW = callback: at the K-th progress report (from the callback);
 *       HOW = thread:   from another thread K microseconds after the start;
 *       HOW = job:      from the main thread K microseconds after
 *                       pf_rsa_generate_start, while the job runs;
 *       HOW = assembly: from another thread K microseconds after the last
 *                       prime was reported (the key assembly, the workers
 *                       parking, the caller waiting for them).
 *       Exits 3 without a core if the generation ended before the moment.
 *   inflight storm SEED SECRETS BITS THREADS
 *       a SIGUSR1 handler on an alternate stack (SA_ONSTACK, as Go's
 *       runtime installs) runs every 200 µs on the generating thread while
 *       RSA-BITS is made from SEED; afterwards the alternate stack and the
 *       thread's own stack are scanned for 16-byte windows of the seed and
 *       of p and q (from SECRETS, as `learn` writes them). A control run
 *       first: the same storm over a loop that keeps the inverted seed in
 *       vector registers must leave windows of it on the alternate stack.
 *   inflight forksig BITS
 *       a SIGALRM handler that fork()s (children _exit(7)) fires every
 *       2 ms during one-thread RSA-BITS generations; every child must exit 7.
 *   inflight smallstack
 *       every entry point, each on a fresh thread with a PTHREAD_STACK_MIN
 *       stack.
 *   inflight steps SEED PASS BITS
 *       the regions that tests/signal_frames.rs single-steps, each ended by
 *       a SIGSTOP the host sends itself (the tracer counts them): 1, the
 *       control (the seed loaded into two vector registers by this host,
 *       then cleared); 2, a seeded job on 2 threads, waited for and taken;
 *       3 and 4, seeded pf_rsa_generate_ex on 1 and 2 threads (with a
 *       progress callback); 5, an
 *       export encrypted with the passphrase read from PASS (32 bytes);
 *       6, its import; 7, pf_buffer_copy of the seed; 8, pf_rsa_component
 *       of p; 9, pf_rsa_check and the frees.
 *   inflight waits SEED PASS BITS ROUNDS
 *       what tests/signal_frames.rs traces at every system call of every
 *       thread: first the control (the inverted seed loaded into xmm8 and
 *       xmm9 around a getppid(2), then cleared); then ROUNDS times a
 *       seeded job on 2 threads (waited for and taken), and seeded
 *       pf_rsa_generate_ex on 1 and 2 threads with a progress callback
 *       (on 2 threads it sleeps 20 ms at each search's last event, so
 *       that the key assembly's hand-off to the pool always wakes the
 *       idle worker with a system call);
 *       each key is checked; the first is exported plain (PKCS#1 DER),
 *       encrypted with the passphrase read from PASS (PKCS#8 PEM, OpenSSH),
 *       imported back with it, and p is copied out; all is freed.
 *   inflight arena
 *       under an address-space limit too tight for the secret arena:
 *       pf_secure_memory_status says so, PF_RSA_SECURE_ARENA makes a
 *       generation fail with PF_ERR_SECURE_MEMORY (out untouched), one
 *       without it succeeds and is reported as a fallback. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parts.h"
#include "primeforge.h"

#define SEED_LEN 32
#define WINDOW 16

static void die(const char *what, int code) {
    fprintf(stderr, "inflight: %s (errno %d)\n", what, errno);
    exit(code);
}

/* A page left out of core dumps. */
static unsigned char *private_page(void) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap failed", 2);
    if (madvise(p, 4096, MADV_DONTDUMP) != 0) die("madvise failed", 2);
    return p;
}

static unsigned char *seed_page;

static void read_seed(const char *path) {
    seed_page = private_page();
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("cannot open the seed", 2);
    if (read(fd, seed_page, SEED_LEN) != SEED_LEN) die("short seed", 2);
    close(fd);
}

static pf_options seeded(uint32_t threads) {
    pf_options o = pf_options_default();
    o.threads = threads;
    o.seed = seed_page;
    o.seed_len = SEED_LEN;
    return o;
}

static int learn(const char *seed, const char *out, uint32_t bits) {
    read_seed(seed);
    pf_options o = seeded(2);
    pf_rsa_key *key = NULL;
    pf_status st = pf_rsa_generate_ex(bits, 65537, 2, &o, &key);
    if (st != PF_OK) die(pf_status_str(st), 2);
    if (write_parts(key, out) != 0) die("cannot write the secrets", 2);
    pf_rsa_free(key);
    return 0;
}

/* ---- core: abort in the middle of a generation ---- */

static atomic_int planted;
static atomic_int finished;

/* Loads the 32 bytes at `v` into two vector registers and parks in the
 * kernel for good, in a loop that touches no other vector register: a
 * core must show them in this thread's register notes (the scan's control). */
static void *park_with_control(void *v) {
#if defined(__x86_64__)
    __asm__ volatile("movdqu (%0), %%xmm8\n\t"
                     "movdqu 16(%0), %%xmm9\n\t"
                     "movl $1, (%1)\n\t"
                     "1: movl $34, %%eax\n\t" /* pause(2) */
                     "syscall\n\t"
                     "jmp 1b\n\t"
                     :
                     : "r"(v), "r"(&planted)
                     : "xmm8", "xmm9", "rax", "rcx", "r11", "memory");
#else
    (void)v;
    atomic_store(&planted, 2);
    for (;;) pause();
#endif
    return NULL;
}

static void plant_control(void) {
    unsigned char *inv = private_page();
    for (int i = 0; i < SEED_LEN; i++) inv[i] = (unsigned char)~seed_page[i];
    pthread_t t;
    if (pthread_create(&t, NULL, park_with_control, inv) != 0) die("pthread_create failed", 2);
    while (atomic_load(&planted) == 0) sched_yield();
    if (atomic_load(&planted) == 2) {
        fprintf(stderr, "inflight: no register control on this architecture\n");
        exit(4);
    }
}

static long abort_at_report;
static long reports;
static void name_threads_and_abort(void);

static int abort_in_callback(void *user, const pf_progress *ev) {
    (void)user;
    (void)ev;
    if (++reports == abort_at_report) name_threads_and_abort();
    return 0;
}

static void sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&t, NULL);
}

/* Writes "TID NAME" for every thread of this process to ./threads, then
 * aborts. */
static void name_threads_and_abort(void) {
    FILE *out = fopen("threads", "w");
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (out != NULL && d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[64] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t got = read(fd, name, sizeof name - 1);
        close(fd);
        fprintf(out, "%s %s", e->d_name, got > 0 ? name : "?\n");
    }
    if (d != NULL) closedir(d);
    if (out != NULL) fclose(out);
    abort();
}

static void *abort_later(void *arg) {
    sleep_us(*(long *)arg);
    if (!atomic_load(&finished)) name_threads_and_abort();
    return NULL;
}

static long assembly_delay;

static int abort_after_the_search(void *user, const pf_progress *ev) {
    (void)user;
    if (ev->primes_found == ev->primes_needed && abort_at_report == 0) {
        abort_at_report = 1;
        pthread_t t;
        if (pthread_create(&t, NULL, abort_later, &assembly_delay) != 0) die("pthread_create failed", 2);
    }
    return 0;
}

static int core_mode(const char *dir, uint32_t bits, uint32_t threads, const char *how, long k) {
    if (chdir(dir) != 0) die("chdir failed", 2);
    read_seed("seed");
    plant_control();
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &r);
    pf_options o = seeded(threads);
    pf_rsa_key *key = NULL;
    if (strcmp(how, "callback") == 0) {
        abort_at_report = k;
        o.progress = abort_in_callback;
        if (pf_rsa_generate_ex(bits, 65537, 2, &o, &key) != PF_OK) die("generation failed", 2);
    } else if (strcmp(how, "thread") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, abort_later, &k) != 0) die("pthread_create failed", 2);
        if (pf_rsa_generate_ex(bits, 65537, 2, &o, &key) != PF_OK) die("generation failed", 2);
        atomic_store(&finished, 1);
    } else if (strcmp(how, "assembly") == 0) {
        assembly_delay = k;
        o.progress = abort_after_the_search;
        if (pf_rsa_generate_ex(bits, 65537, 2, &o, &key) != PF_OK) die("generation failed", 2);
        atomic_store(&finished, 1);
    } else if (strcmp(how, "job") == 0) {
        pf_job *job = NULL;
        if (pf_rsa_generate_start(bits, 65537, 2, &o, &job) != PF_OK) die("start failed", 2);
        sleep_us(k);
        if (pf_job_poll(job, NULL) == PF_PENDING) name_threads_and_abort();
        pf_job_free(job);
    } else {
        die("unknown HOW", 2);
    }
    pf_rsa_free(key);
    return 3; /* the generation ended first: no core */
}

/* ---- storm: SA_ONSTACK handlers during a generation ---- */

#define ALT_SIZE (256 * 1024)
#define LOG_SIZE (64u << 20)
static unsigned char *alt;
static unsigned char *frames; /* every handler's frame, as the kernel wrote it */
static atomic_size_t logged;
static atomic_long handled;
static atomic_int storming;
static pthread_t target;

/* Counts, and copies its own signal frame (from here to the top of the
 * alternate stack) into the log: a later frame overwrites an earlier one
 * on the alternate stack, the log keeps them all. */
static void on_usr1(int sig) {
    (void)sig;
    unsigned char here = 0;
    size_t n = (size_t)(alt + ALT_SIZE - &here);
    size_t at = atomic_load(&logged);
    if (n < ALT_SIZE && at + n <= LOG_SIZE) {
        memcpy(frames + at, &here, n);
        atomic_store(&logged, at + n);
    }
    atomic_fetch_add(&handled, 1);
}

static void *stormer(void *arg) {
    (void)arg;
    while (atomic_load(&storming)) {
        pthread_kill(target, SIGUSR1);
        sleep_us(200);
    }
    return NULL;
}

static unsigned char (*secrets)[4096];
static size_t secret_len[8];
static int n_secrets;

static void read_secrets(const char *path) {
    secrets = (void *)mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((void *)secrets == MAP_FAILED) die("mmap failed", 2);
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("cannot open the secrets", 2);
    uint32_t len;
    while (n_secrets < 2 && read(fd, &len, sizeof len) == (ssize_t)sizeof len) {
        if (len > 4096 || read(fd, secrets[n_secrets], len) != (ssize_t)len) die("bad secrets file", 2);
        secret_len[n_secrets++] = len;
    }
    close(fd);
}

/* Windows (every byte offset, both byte orders) of `s` XOR `mask` found in
 * [lo, hi). */
static long count_in(const unsigned char *lo, const unsigned char *hi, const unsigned char *s, size_t len,
                     unsigned char mask) {
    long found = 0;
    unsigned char needle[WINDOW];
    for (int rev = 0; rev < 2; rev++) {
        for (size_t off = 0; off + WINDOW <= len; off++) {
            for (size_t i = 0; i < WINDOW; i++) {
                size_t j = rev ? len - 1 - (off + i) : off + i;
                needle[i] = s[j] ^ mask;
            }
            const unsigned char *h = lo;
            const unsigned char *m;
            while (h < hi && (m = memmem(h, (size_t)(hi - h), needle, WINDOW)) != NULL) {
                found++;
                h = m + 1;
            }
        }
    }
    memset(needle, 0, sizeof needle);
    return found;
}

/* Every secret window on the alternate stack and on this thread's stack
 * below the current frame. */
static long scan_stacks(unsigned char mask, const char *what) {
    long hits = 0;
    pthread_attr_t a;
    void *stack_lo;
    size_t stack_size;
    if (pthread_getattr_np(pthread_self(), &a) != 0) die("pthread_getattr_np failed", 2);
    pthread_attr_getstack(&a, &stack_lo, &stack_size);
    pthread_attr_destroy(&a);
    unsigned char here = 0;
    const unsigned char *top = (const unsigned char *)&here - 256;
    for (int s = -1; s < n_secrets; s++) {
        const unsigned char *v = s < 0 ? seed_page : secrets[s];
        size_t len = s < 0 ? SEED_LEN : secret_len[s];
        if (mask && s >= 0) continue;
        long on_alt = count_in(alt, alt + ALT_SIZE, v, len, mask) + count_in(frames, frames + atomic_load(&logged), v, len, mask);
        /* The thread's stack below this frame, within the resident part the
         * kernel maps (the lowest pages may never have been touched). */
        long on_own = count_in((const unsigned char *)stack_lo + 4096 * 2, top, v, len, mask);
        if (on_alt || on_own)
            fprintf(stderr, "inflight: %s: %s %d: %ld windows on the alternate stack, %ld on the thread's stack\n",
                    what, s < 0 ? "seed" : "prime", s, on_alt, on_own);
        hits += on_alt + on_own;
    }
    return hits;
}

/* The control: a loop that keeps the inverted seed in vector registers
 * while the storm runs. */
static void control_loop(void) {
    unsigned char *inv = private_page();
    for (int i = 0; i < SEED_LEN; i++) inv[i] = (unsigned char)~seed_page[i];
    long before = atomic_load(&handled);
#if defined(__x86_64__)
    while (atomic_load(&handled) < before + 20) {
        __asm__ volatile("movdqu (%0), %%xmm8\n\t"
                         "movdqu 16(%0), %%xmm9\n\t"
                         "mov $200000, %%ecx\n\t"
                         "1: dec %%ecx\n\t"
                         "jnz 1b\n\t"
                         :
                         : "r"(inv)
                         : "xmm8", "xmm9", "rcx", "memory");
    }
    __asm__ volatile("pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9" ::: "xmm8", "xmm9");
#endif
    memset(inv, 0, SEED_LEN);
}

static pthread_t storm_thread;

static void storm_on(void) {
    atomic_store(&storming, 1);
    if (pthread_create(&storm_thread, NULL, stormer, NULL) != 0) die("pthread_create failed", 2);
}

static void storm_off(void) {
    atomic_store(&storming, 0);
    pthread_join(storm_thread, NULL);
}

static int storm(const char *seed, const char *secrets_path, uint32_t bits, uint32_t threads) {
    read_seed(seed);
    read_secrets(secrets_path);
    alt = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    frames = mmap(NULL, LOG_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (alt == MAP_FAILED || frames == MAP_FAILED) die("mmap failed", 2);
    stack_t ss = {.ss_sp = alt, .ss_size = ALT_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) die("sigaltstack failed", 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) die("sigaction failed", 2);
    target = pthread_self();
    storm_on();
    control_loop();
    storm_off();
    long control = scan_stacks(0xFF, "control");
    memset(alt, 0, ALT_SIZE);
    atomic_store(&logged, 0);
    long during = atomic_load(&handled);
    long hits = 0;
    for (int round = 0; round < 3; round++) {
        pf_options o = seeded(threads);
        pf_rsa_key *key = NULL;
        storm_on();
        pf_status st = pf_rsa_generate_ex(bits, 65537, 2, &o, &key);
        storm_off();
        if (st != PF_OK) die(pf_status_str(st), 2);
        pf_rsa_free(key);
        hits += scan_stacks(0, "after the call");
        atomic_store(&logged, 0);
    }
    printf("control windows %ld, handlers %ld during the control and %ld during the generations, secret windows %ld\n",
           control, during, atomic_load(&handled) - during, hits);
    return control == 0 ? 5 : hits ? 6 : 0;
}

/* ---- forksig: fork() from a signal handler during a generation ---- */

#define MAX_CHILDREN 16
static pid_t children[MAX_CHILDREN];
static atomic_int n_children;

static void fork_in_handler(int sig) {
    (void)sig;
    int i = atomic_load(&n_children);
    if (i >= MAX_CHILDREN) return;
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    if (pid > 0) {
        children[i] = pid;
        atomic_store(&n_children, i + 1);
    }
}

static int forksig(uint32_t bits) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fork_in_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0) die("sigaction failed", 2);
    struct itimerval every = {{0, 2000}, {0, 2000}};
    for (int i = 0; i < 4 && atomic_load(&n_children) < MAX_CHILDREN; i++) {
        setitimer(ITIMER_REAL, &every, NULL);
        pf_options o = pf_options_default();
        o.threads = 1;
        pf_rsa_key *key = NULL;
        pf_status st = pf_rsa_generate_ex(bits, 65537, 2, &o, &key);
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        if (st != PF_OK) die(pf_status_str(st), 2);
        pf_rsa_free(key);
    }
    int bad = 0, n = atomic_load(&n_children);
    for (int i = 0; i < n; i++) {
        int status = 0;
        while (waitpid(children[i], &status, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) {
            fprintf(stderr, "inflight: child %d: %s %d\n", i, WIFSIGNALED(status) ? "signal" : "status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            bad++;
        }
    }
    printf("%d children forked from the handler, %d failed\n", n, bad);
    return n == 0 ? 5 : bad ? 6 : 0;
}

/* ---- smallstack: every entry point on a PTHREAD_STACK_MIN thread ---- */

static pf_rsa_key *small_key;
static pf_buffer *small_pem;
static pf_dh_params *small_dh;
static pf_buffer *small_dh_pem;

static void expect(const char *what, pf_status st) {
    if (st != PF_OK) {
        fprintf(stderr, "inflight: %s: %s\n", what, pf_status_str(st));
        exit(2);
    }
}

static void *small_steps(void *arg) {
    int step = (int)(intptr_t)arg;
    pf_options o = pf_options_default();
    pf_buffer *b = NULL;
    uint32_t problems = 0;
    switch (step) {
    case 0:
        o.threads = 1;
        expect("pf_rsa_generate_ex, 1 thread", pf_rsa_generate_ex(2048, 65537, 2, &o, &small_key));
        break;
    case 1: {
        pf_rsa_key *k = NULL;
        o.threads = 2;
        expect("pf_rsa_generate_ex, 2 threads", pf_rsa_generate_ex(1024, 65537, 3, &o, &k));
        pf_rsa_free(k);
        break;
    }
    case 2:
        expect("pf_rsa_check", pf_rsa_check(small_key, &problems));
        break;
    case 3:
        expect("pf_rsa_export", pf_rsa_export(small_key, PF_FORMAT_PKCS8_PEM, &small_pem));
        break;
    case 4:
        expect("pf_rsa_export_encrypted",
               pf_rsa_export_encrypted(small_key, PF_FORMAT_PKCS8_PEM, (const uint8_t *)"pw", 2, PF_KDF_PBKDF2_SHA256, &b));
        break;
    case 5: {
        pf_rsa_key *k = NULL;
        expect("pf_rsa_import", pf_rsa_import(pf_buffer_data(small_pem), pf_buffer_len(small_pem), NULL, 0, &k));
        pf_rsa_free(k);
        break;
    }
    case 6:
        expect("pf_rsa_component", pf_rsa_component(small_key, PF_RSA_QINV, &b));
        break;
    case 7:
        o.threads = 1;
        expect("pf_dh_generate_ex, 1 thread", pf_dh_generate_ex(512, 2, 0, &o, &small_dh));
        break;
    case 8: {
        pf_dh_params *d = NULL;
        o.threads = 2;
        expect("pf_dh_generate_ex, 2 threads", pf_dh_generate_ex(1024, 2, 0, &o, &d));
        pf_dh_free(d);
        break;
    }
    case 9:
        expect("pf_dh_export", pf_dh_export(small_dh, PF_FORMAT_PKCS3_PEM, &small_dh_pem));
        break;
    case 10:
        expect("pf_dh_check", pf_dh_check(pf_buffer_data(small_dh_pem), pf_buffer_len(small_dh_pem), &problems));
        break;
    case 11: {
        pf_dh_params *d = NULL;
        expect("pf_dh_import", pf_dh_import(pf_buffer_data(small_dh_pem), pf_buffer_len(small_dh_pem), &d));
        pf_dh_free(d);
        break;
    }
    case 12: {
        pf_dh_params *d = NULL;
        expect("pf_dh_named", pf_dh_named(PF_DH_FFDHE2048, &d));
        pf_dh_free(d);
        break;
    }
    case 13: {
        pf_job *job = NULL;
        pf_rsa_key *k = NULL;
        o.threads = 1;
        expect("pf_rsa_generate_start", pf_rsa_generate_start(1024, 65537, 2, &o, &job));
        expect("pf_job_wait", pf_job_wait(job, UINT64_MAX));
        expect("pf_job_take_rsa", pf_job_take_rsa(job, &k));
        pf_job_free(job);
        pf_rsa_free(k);
        break;
    }
    case 14: {
        pf_dh_batch *batch = NULL;
        pf_dh_params *d = NULL;
        o.threads = 1;
        expect("pf_dh_batch_new", pf_dh_batch_new(512, 2, 0, 2, &o, &batch));
        expect("pf_dh_batch_next", pf_dh_batch_next(batch, &o, &d));
        pf_dh_free(d);
        pf_dh_batch_free(batch);
        break;
    }
    default:
        return (void *)1;
    }
    pf_buffer_free(b);
    return NULL;
}

static int smallstack(void) {
    size_t size = PTHREAD_STACK_MIN;
    for (int step = 0;; step++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        if (pthread_attr_setstacksize(&a, size) != 0) die("pthread_attr_setstacksize failed", 2);
        pthread_t t;
        if (pthread_create(&t, &a, small_steps, (void *)(intptr_t)step) != 0) die("pthread_create failed", 2);
        pthread_attr_destroy(&a);
        void *r = NULL;
        pthread_join(t, &r);
        if (r != NULL) break;
        fprintf(stderr, "inflight: step %d passed on a %zu-byte stack\n", step, size);
    }
    pf_rsa_free(small_key);
    pf_buffer_free(small_pem);
    pf_dh_free(small_dh);
    pf_buffer_free(small_dh_pem);
    printf("every entry point ran on a %zu-byte stack\n", size);
    return 0;
}

/* ---- arena: the secret arena refused by an address-space limit ---- */

static long vm_size_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
    if (f != NULL) fclose(f);
    return kb;
}

static int arena(void) {
    long kb = vm_size_kb();
    if (kb < 0) die("no VmSize", 2);
    /* 48 MiB more than now: less than one arena segment (64 MiB). */
    struct rlimit r = {(rlim_t)(kb + 48 * 1024) * 1024, (rlim_t)(kb + 48 * 1024) * 1024};
    if (setrlimit(RLIMIT_AS, &r) != 0) die("setrlimit failed", 2);
    uint32_t bits = 0xFFFF;
    expect("pf_secure_memory_status", pf_secure_memory_status(&bits));
    if (bits != 0) {
        fprintf(stderr, "inflight: status %#x under the limit, 0 expected\n", bits);
        return 5;
    }
    pf_options o = pf_options_default();
    o.threads = 1;
    o.flags = PF_RSA_SECURE_ARENA;
    pf_rsa_key *key = (pf_rsa_key *)(uintptr_t)0x1;
    pf_status st = pf_rsa_generate_ex(1024, 65537, 2, &o, &key);
    const char *why = pf_last_error_message();
    if (st != PF_ERR_SECURE_MEMORY || key != (pf_rsa_key *)(uintptr_t)0x1 || strstr(why, "RLIMIT_AS") == NULL) {
        fprintf(stderr, "inflight: with PF_RSA_SECURE_ARENA: %s (%s)\n", pf_status_str(st), why);
        return 6;
    }
    o.flags = 0;
    key = NULL;
    expect("pf_rsa_generate_ex without the flag", pf_rsa_generate_ex(1024, 65537, 2, &o, &key));
    pf_rsa_free(key);
    expect("pf_secure_memory_status", pf_secure_memory_status(&bits));
    if (bits != PF_SECURE_FALLBACK) {
        fprintf(stderr, "inflight: status %#x after the fallback, PF_SECURE_FALLBACK expected\n", bits);
        return 7;
    }
    printf("refused with: %s\n", why);
    return 0;
}


/* ---- steps: regions a tracer single-steps ---- */

#include <sys/syscall.h>

/* The end of a region: a SIGSTOP to this thread, sent without a libc
 * wrapper that would change the signal mask around it. */
static void mark(void) { syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGSTOP); }

/* The control: the seed in two vector registers, then cleared. */
static void control_region(void) {
#if defined(__x86_64__)
    __asm__ volatile("movdqu (%0), %%xmm6\n\t"
                     "movdqu 16(%0), %%xmm7\n\t"
                     "nop\n\t"
                     "pxor %%xmm6, %%xmm6\n\t"
                     "pxor %%xmm7, %%xmm7\n\t"
                     :
                     : "r"(seed_page)
                     : "xmm6", "xmm7", "memory");
#endif
}

static long step_reports;

static int count_reports(void *user, const pf_progress *ev) {
    (void)user;
    (void)ev;
    step_reports++;
    return 0;
}

/* count_reports, and at a search's last event (every prime found) a
 * 20 ms sleep: the pool's idle worker is asleep by then, so the key
 * assembly's hand-off of its other half must wake it with a system call
 * (what a secret left in the registers before that hand-off shows at). */
static int sleepy_reports(void *user, const pf_progress *ev) {
    count_reports(user, ev);
    if (ev->primes_found == ev->primes_needed) {
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return 0;
}

static int steps(const char *seed, const char *pass_path, uint32_t bits) {
    read_seed(seed);
    unsigned char *pass = private_page();
    int fd = open(pass_path, O_RDONLY);
    if (fd < 0 || read(fd, pass, SEED_LEN) != SEED_LEN) die("cannot read the passphrase", 2);
    close(fd);
    /* The generations call back (host code runs with signals deliverable,
     * between the library's secret steps). */
    pf_options one = seeded(1), two = seeded(2), job_opts = seeded(2);
    one.progress = count_reports;
    two.progress = count_reports;
    pf_rsa_key *key = NULL, *k1 = NULL, *k2 = NULL, *imported = NULL;
    pf_job *job = NULL;
    pf_buffer *pem = NULL, *copy = NULL, *p = NULL;
    uint32_t problems = 0;
    mark();
    control_region();
    mark();
    expect("pf_rsa_generate_start", pf_rsa_generate_start(bits, 65537, 2, &job_opts, &job));
    expect("pf_job_wait", pf_job_wait(job, UINT64_MAX));
    expect("pf_job_take_rsa", pf_job_take_rsa(job, &key));
    pf_job_free(job);
    mark();
    expect("pf_rsa_generate_ex, 1 thread", pf_rsa_generate_ex(bits, 65537, 2, &one, &k1));
    mark();
    expect("pf_rsa_generate_ex, 2 threads", pf_rsa_generate_ex(bits, 65537, 2, &two, &k2));
    mark();
    expect("pf_rsa_export_encrypted",
           pf_rsa_export_encrypted(key, PF_FORMAT_PKCS8_PEM, pass, SEED_LEN, PF_KDF_PBKDF2_SHA256, &pem));
    mark();
    expect("pf_rsa_import", pf_rsa_import(pf_buffer_data(pem), pf_buffer_len(pem), pass, SEED_LEN, &imported));
    mark();
    expect("pf_buffer_copy", pf_buffer_copy(seed_page, SEED_LEN, &copy));
    mark();
    expect("pf_rsa_component", pf_rsa_component(key, PF_RSA_P, &p));
    mark();
    expect("pf_rsa_check", pf_rsa_check(imported, &problems));
    if ((problems & ~PF_RSA_CHECK_FIPS_MASK) != 0) die("the imported key has problems", 2);
    pf_buffer_free(p);
    pf_buffer_free(copy);
    pf_buffer_free(pem);
    pf_rsa_free(imported);
    pf_rsa_free(k2);
    pf_rsa_free(k1);
    pf_rsa_free(key);
    mark();
    if (step_reports == 0) die("no progress report", 2);
    return 0;
}

/* Every thread of the library enters the kernel with no secret in a
 * register: the tracer stops each at each system call. The control is
 * this host's own: the inverted seed in two vector registers at a
 * getppid(2). */
static int waits(const char *seed, const char *pass_path, uint32_t bits, long rounds) {
    read_seed(seed);
    unsigned char *pass = private_page();
    int fd = open(pass_path, O_RDONLY);
    if (fd < 0 || read(fd, pass, SEED_LEN) != SEED_LEN) die("cannot read the passphrase", 2);
    close(fd);
#if defined(__x86_64__)
    unsigned char *inv = private_page();
    for (int i = 0; i < SEED_LEN; i++) inv[i] = (unsigned char)~seed_page[i];
    __asm__ volatile("movdqu (%0), %%xmm8\n\t"
                     "movdqu 16(%0), %%xmm9\n\t"
                     "movl $110, %%eax\n\t" /* getppid(2) */
                     "syscall\n\t"
                     "pxor %%xmm8, %%xmm8\n\t"
                     "pxor %%xmm9, %%xmm9\n\t"
                     :
                     : "r"(inv)
                     : "xmm8", "xmm9", "rax", "rcx", "r11", "memory");
    memset(inv, 0, SEED_LEN);
#endif
    pf_options one = seeded(1), two = seeded(2), job_opts = seeded(2);
    one.progress = count_reports;
    two.progress = sleepy_reports;
    for (long r = 0; r < rounds; r++) {
        pf_rsa_key *key = NULL, *k1 = NULL, *k2 = NULL;
        pf_job *job = NULL;
        uint32_t problems = 0;
        expect("pf_rsa_generate_start", pf_rsa_generate_start(bits, 65537, 2, &job_opts, &job));
        expect("pf_job_wait", pf_job_wait(job, UINT64_MAX));
        expect("pf_job_take_rsa", pf_job_take_rsa(job, &key));
        pf_job_free(job);
        expect("pf_rsa_generate_ex, 1 thread", pf_rsa_generate_ex(bits, 65537, 2, &one, &k1));
        expect("pf_rsa_generate_ex, 2 threads", pf_rsa_generate_ex(bits, 65537, 2, &two, &k2));
        pf_buffer *der = NULL, *pem = NULL, *ssh = NULL, *p = NULL;
        pf_rsa_key *imported = NULL, *from_ssh = NULL;
        expect("pf_rsa_export", pf_rsa_export(key, PF_FORMAT_PKCS1_DER, &der));
        expect("pf_rsa_export_encrypted",
               pf_rsa_export_encrypted(key, PF_FORMAT_PKCS8_PEM, pass, SEED_LEN, PF_KDF_PBKDF2_SHA256, &pem));
        expect("pf_rsa_export_openssh", pf_rsa_export_openssh(key, "waits", pass, SEED_LEN, 0, &ssh));
        expect("pf_rsa_import", pf_rsa_import(pf_buffer_data(pem), pf_buffer_len(pem), pass, SEED_LEN, &imported));
        expect("pf_rsa_import of OpenSSH",
               pf_rsa_import(pf_buffer_data(ssh), pf_buffer_len(ssh), pass, SEED_LEN, &from_ssh));
        expect("pf_rsa_component", pf_rsa_component(imported, PF_RSA_P, &p));
        pf_buffer_free(p);
        pf_buffer_free(ssh);
        pf_buffer_free(pem);
        pf_buffer_free(der);
        pf_rsa_free(from_ssh);
        pf_rsa_free(imported);
        pf_rsa_key *keys[3] = {key, k1, k2};
        for (int i = 0; i < 3; i++) {
            expect("pf_rsa_check", pf_rsa_check(keys[i], &problems));
            if ((problems & ~PF_RSA_CHECK_FIPS_MASK) != 0) die("a key has problems", 2);
            pf_rsa_free(keys[i]);
        }
    }
    if (step_reports == 0) die("no progress report", 2);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "learn") == 0) return learn(argv[2], argv[3], (uint32_t)atoi(argv[4]));
    if (argc == 7 && strcmp(argv[1], "core") == 0)
        return core_mode(argv[2], (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]), argv[5], atol(argv[6]));
    if (argc == 6 && strcmp(argv[1], "storm") == 0)
        return storm(argv[2], argv[3], (uint32_t)atoi(argv[4]), (uint32_t)atoi(argv[5]));
    if (argc == 3 && strcmp(argv[1], "forksig") == 0) return forksig((uint32_t)atoi(argv[2]));
    if (argc == 2 && strcmp(argv[1], "smallstack") == 0) return smallstack();
    if (argc == 2 && strcmp(argv[1], "arena") == 0) return arena();
    if (argc == 6 && strcmp(argv[1], "waits") == 0)
        return waits(argv[2], argv[3], (uint32_t)atoi(argv[4]), atol(argv[5]));
    if (argc == 5 && strcmp(argv[1], "steps") == 0) return steps(argv[2], argv[3], (uint32_t)atoi(argv[4]));
    fprintf(stderr, "usage: see the comment at the top of inflight.c\n");
    return 2;
}
