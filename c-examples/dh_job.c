/*
 * dh_job.c: generate Diffie-Hellman parameters in the background, the way
 * an event-loop server would: the generation runs on primeforge's threads
 * while this thread stays free, watching the job's file descriptor with
 * poll(2) next to its own (here: the terminal).
 *
 *   dh_job [BITS [TIMEOUT_MS [THREADS]]]
 *       defaults: 2048, 0 = no timeout, 0 = all cores
 *
 * Shows a progress line on stderr every 100 ms, cancels on a key press
 * (Enter, when stdin is a terminal) or when TIMEOUT_MS passes, and writes
 * the parameters as PKCS#3 PEM to stdout. Exit status: 0 done, 1 error,
 * 2 cancelled.
 */
#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "primeforge.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    unsigned long bits = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    double timeout_ms = argc > 2 ? strtod(argv[2], NULL) : 0.0;
    unsigned long threads = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    int watch_tty = isatty(STDIN_FILENO);

    pf_options opts = pf_options_default();
    opts.threads = (uint32_t)threads;

    pf_job *job = NULL;
    pf_status st = pf_dh_generate_start((uint32_t)bits, 2, 0, &opts, &job);
    if (st != PF_OK) {
        fprintf(stderr, "dh_job: %s\n", pf_status_str(st));
        return 1;
    }

    /* The event loop: the job's descriptor, and the terminal if there is one. */
    struct pollfd fds[2];
    fds[0].fd = pf_job_fd(job);
    fds[0].events = POLLIN;
    fds[1].fd = STDIN_FILENO;
    fds[1].events = POLLIN;
    nfds_t nfds = watch_tty ? 2 : 1;

    static const char spinner[] = "|/-\\";
    unsigned ticks = 0;
    int cancelled = 0;
    double start = now_ms();
    for (;;) {
        int n = poll(fds, nfds, 100);
        if (n < 0) {
            perror("dh_job: poll");
            break; /* pf_job_free below cancels and joins. */
        }
        pf_progress p;
        st = pf_job_poll(job, &p);
        if (st != PF_PENDING) {
            break; /* Ended: the descriptor is readable. */
        }
        fprintf(stderr, "\r%c %llu candidates, %llu tests, %.1f s ", spinner[ticks++ % 4],
                (unsigned long long)p.candidates, (unsigned long long)p.exponentiations,
                (double)p.elapsed_ns / 1e9);
        int key = watch_tty && n > 0 && (fds[1].revents & POLLIN);
        int late = timeout_ms > 0 && now_ms() - start >= timeout_ms;
        if ((key || late) && !cancelled) {
            /* Returns at once; the job ends soon with PF_ERR_CANCELLED. */
            pf_job_cancel(job);
            cancelled = 1;
            fprintf(stderr, "\ndh_job: cancelling (%s)\n", key ? "key press" : "timeout");
        }
    }
    fprintf(stderr, "\n");

    int rc = 1;
    pf_dh_params *params = NULL;
    st = pf_job_take_dh(job, &params);
    if (st == PF_OK) {
        pf_progress p;
        pf_job_poll(job, &p);
        pf_buffer *pem = NULL;
        st = pf_dh_export(params, PF_FORMAT_PKCS3_PEM, &pem);
        if (st == PF_OK) {
            fwrite(pf_buffer_data(pem), 1, pf_buffer_len(pem), stdout);
            fprintf(stderr, "dh_job: %lu-bit parameters in %.2f s (%llu candidates, %llu tests)\n",
                    bits, (double)p.elapsed_ns / 1e9, (unsigned long long)p.candidates,
                    (unsigned long long)p.exponentiations);
            rc = 0;
        } else {
            fprintf(stderr, "dh_job: export: %s\n", pf_status_str(st));
        }
        pf_buffer_free(pem);
        pf_dh_free(params);
    } else if (st == PF_ERR_CANCELLED) {
        fprintf(stderr, "dh_job: %s after %.0f ms\n", pf_status_str(st), now_ms() - start);
        rc = 2;
    } else {
        fprintf(stderr, "dh_job: %s\n", pf_status_str(st));
    }
    /* Joins every thread of the job (cancelling first if it still ran). */
    pf_job_free(job);
    return rc;
}
