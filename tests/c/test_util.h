/*
 * Helpers shared by the C test programs (test_main.c, test_hostile.c):
 * counted checks that are safe from any thread, error accessors that accept
 * NULL, a monotonic clock and a growable string buffer.
 *
 * Include after defining _POSIX_C_SOURCE and including the library header.
 */
#ifndef DSR_TEST_UTIL_H
#define DSR_TEST_UTIL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- checks */

static atomic_int g_checks, g_failures;

/* Counts one check; prints the first 60 failures with their place. */
static inline void check_impl(bool ok, const char *file, int line, const char *fmt, ...) {
    atomic_fetch_add(&g_checks, 1);
    if (ok) return;
    if (atomic_fetch_add(&g_failures, 1) >= 60) return;
    fprintf(stderr, "FAIL (%s:%d): ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
#define CHECK(cond, ...) check_impl((cond), __FILE__, __LINE__, __VA_ARGS__)

static inline const char *code_of(const dsr_error *e) { return e ? dsr_error_code(e) : "(no error object)"; }
static inline const char *msg_of(const dsr_error *e) { return e ? dsr_error_message(e) : "(no error object)"; }

/* Seconds on the monotonic clock. */
static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------- string buffer */

/* A NUL-terminated, growable byte buffer; zero-initialize, then sb_free. */
typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

static inline void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static inline void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static inline void sb_free(sbuf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#endif
