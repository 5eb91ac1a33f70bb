/* SPDX-License-Identifier: Apache-2.0 */
/* common/err.c - first-error-wins message helpers; no allocation, cannot fail. */
#include "common/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void vformat(char *dst, size_t size, const char *fmt, va_list ap)
{
    if (vsnprintf(dst, size, fmt, ap) < 0)
        dst[0] = '\0';
}

/* Append src to err->msg with a bounded copy: the message is cut at the buffer, never overrun. */
static void append(struct tpx_err *err, const char *src)
{
    size_t used = strlen(err->msg);
    size_t room = sizeof(err->msg) - used - 1;
    size_t n = strlen(src);

    if (n > room)
        n = room;
    memcpy(err->msg + used, src, n);
    err->msg[used + n] = '\0';
}

enum tpx_code tpx_err_set(struct tpx_err *err, enum tpx_code code, const char *fmt, ...)
{
    va_list ap;

    if (err->code != TPX_OK)
        return err->code;
    err->code = code;
    va_start(ap, fmt);
    vformat(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return err->code;
}

enum tpx_code tpx_err_errno(struct tpx_err *err, int errnum, const char *fmt, ...)
{
    va_list ap;

    if (err->code != TPX_OK)
        return err->code;
    switch (errnum) {
    case ENOMEM:
        err->code = TPX_ENOMEM;
        break;
    case ENOENT:
        err->code = TPX_ENOENT;
        break;
    case EEXIST:
        err->code = TPX_EEXIST;
        break;
    default:
        err->code = TPX_EIO;
        break;
    }
    err->sys_errno = errnum;
    va_start(ap, fmt);
    vformat(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    append(err, ": ");
    append(err, strerror(errnum));
    return err->code;
}

void tpx_err_prefix(struct tpx_err *err, const char *fmt, ...)
{
    char head[sizeof(err->msg)];
    char tail[sizeof(err->msg)];
    va_list ap;

    if (err->code == TPX_OK)
        return;
    va_start(ap, fmt);
    vformat(head, sizeof(head), fmt, ap);
    va_end(ap);
    memcpy(tail, err->msg, sizeof(tail));
    err->msg[0] = '\0';
    append(err, head);
    append(err, ": ");
    append(err, tail);
}

void tpx_err_clear(struct tpx_err *err)
{
    err->code = TPX_OK;
    err->sys_errno = 0;
    err->http_status = 0;
    err->msg[0] = '\0';
}

const char *tpx_code_name(enum tpx_code code)
{
    switch (code) {
    case TPX_OK:
        return "ok";
    case TPX_EINVAL:
        return "invalid";
    case TPX_EPARSE:
        return "parse";
    case TPX_ENOMEM:
        return "nomem";
    case TPX_ETOOBIG:
        return "toobig";
    case TPX_EIO:
        return "io";
    case TPX_ENOENT:
        return "notfound";
    case TPX_EEXIST:
        return "exists";
    case TPX_EAPI:
        return "api";
    case TPX_ENOTSUP:
        return "notsupported";
    case TPX_ETIMEOUT:
        return "timeout";
    }
    return "unknown";
}
