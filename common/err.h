/* SPDX-License-Identifier: Apache-2.0 */
/* common/err.h - error codes and the error struct every fallible function fills. */
#ifndef TPX_COMMON_ERR_H
#define TPX_COMMON_ERR_H

#include <stdarg.h>

enum tpx_code {
    TPX_OK = 0,
    TPX_EINVAL,   /* bad argument or invalid input value */
    TPX_EPARSE,   /* malformed JSON, YAML, XML or flag syntax */
    TPX_ENOMEM,   /* allocation failed */
    TPX_ETOOBIG,  /* a capped buffer or count was exceeded */
    TPX_EIO,      /* read, write or network failure */
    TPX_ENOENT,   /* something named was not found */
    TPX_EEXIST,   /* duplicate name */
    TPX_EAPI,     /* an HTTP peer answered with a non-2xx status; see http_status */
    TPX_ENOTSUP,  /* valid request we cannot serve */
    TPX_ETIMEOUT, /* a deadline passed */
};

/*
 * The first failure wins: once code != TPX_OK, tpx_err_set() ignores later calls, so the innermost
 * cause is what the user reads. Callers add context with tpx_err_prefix(). Fits on the stack;
 * nothing inside is heap-allocated, so there is nothing to release.
 */
struct tpx_err {
    enum tpx_code code;
    int sys_errno;    /* errno captured by tpx_err_errno(), else 0 */
    long http_status; /* with TPX_EAPI: the peer's HTTP status, else 0 */
    char msg[512];    /* lower case, no final period, NUL-terminated */
};

#define TPX_ERR_INIT                                                                               \
    {                                                                                              \
        TPX_OK, 0, 0,                                                                              \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }

/* Record code and a printf-style message unless an error is already recorded. Returns err->code
 * (the recorded one, which may be older). Cannot fail; long messages are cut at the buffer. */
enum tpx_code tpx_err_set(struct tpx_err *err, enum tpx_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like tpx_err_set(), then appends ": strerror(errnum)" and keeps errnum. */
enum tpx_code tpx_err_errno(struct tpx_err *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepend "context: " to a recorded message. No-op when no error is recorded. */
void tpx_err_prefix(struct tpx_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Forget the recorded error, so the struct can be reused. */
void tpx_err_clear(struct tpx_err *err);

/* Stable lower-case name of a code ("parse", "io", ...), for logs. Never NULL. */
const char *tpx_code_name(enum tpx_code code);

#endif
