/* SPDX-License-Identifier: Apache-2.0 */
/* common/buf.c - capped growable buffer: doubling growth, never past the cap. */
#include "common/buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tpx_buf_init(struct tpx_buf *b, size_t cap)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap = cap;
}

/* Make room for `more` bytes plus the NUL: the capacity doubles, or becomes exactly what is
 * needed when `exact`. */
static enum tpx_code grow(struct tpx_buf *b, size_t more, bool exact, struct tpx_err *err)
{
    size_t need;
    size_t want;
    char *p;

    /* the NUL needs a byte too, so SIZE_MAX itself is never reachable (cap may be SIZE_MAX: no
     * limit but the address space) */
    if (more > b->cap || b->len > b->cap - more || b->len + more == (size_t)-1)
        return tpx_err_set(err, TPX_ETOOBIG, "buffer limit of %zu bytes exceeded", b->cap);
    need = b->len + more + 1;
    if (need <= b->alloc)
        return TPX_OK;
    want = exact ? need : b->alloc ? b->alloc : 256;
    while (want < need)
        want = want > ((size_t)-1) / 2 ? need : want * 2;
    if (b->cap != (size_t)-1 && want > b->cap + 1)
        want = b->cap + 1;
    p = realloc(b->data, want);
    if (!p)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory growing a buffer to %zu bytes", want);
    b->data = p;
    b->alloc = want;
    return TPX_OK;
}

enum tpx_code tpx_buf_reserve(struct tpx_buf *b, size_t n, struct tpx_err *err)
{
    return grow(b, n, false, err);
}

enum tpx_code tpx_buf_presize(struct tpx_buf *b, size_t n, struct tpx_err *err)
{
    return grow(b, n, true, err);
}

enum tpx_code tpx_buf_add(struct tpx_buf *b, const void *p, size_t n, struct tpx_err *err)
{
    if (grow(b, n, false, err) != TPX_OK)
        return err->code;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return TPX_OK;
}

enum tpx_code tpx_buf_adds(struct tpx_buf *b, const char *s, struct tpx_err *err)
{
    return tpx_buf_add(b, s, strlen(s), err);
}

enum tpx_code tpx_buf_addf(struct tpx_buf *b, struct tpx_err *err, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return tpx_err_set(err, TPX_EINVAL, "bad format string '%s'", fmt);
    if (grow(b, (size_t)n, false, err) != TPX_OK)
        return err->code;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return TPX_OK;
}

void tpx_buf_reset(struct tpx_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *tpx_buf_detach(struct tpx_buf *b, size_t *len_out)
{
    char *p = b->data;
    size_t len = b->len;

    if (!p) {
        p = calloc(1, 1);
        len = 0;
    }
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    if (len_out)
        *len_out = len;
    return p;
}

void tpx_buf_release(struct tpx_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
}
