/* SPDX-License-Identifier: Apache-2.0 */
/* common/buf.h - growable byte buffer with a hard cap, always NUL-terminated (curl's dynbuf). */
#ifndef TPX_COMMON_BUF_H
#define TPX_COMMON_BUF_H

#include <stddef.h>

#include "common/err.h"

/*
 * Caller-allocated. data is NULL until the first add, then owned by the buffer until
 * tpx_buf_release() or tpx_buf_detach(). len never exceeds cap; data[len] is always '\0'.
 * Not thread-safe: one owner at a time.
 */
struct tpx_buf {
    char *data;
    size_t len;
    size_t alloc;
    size_t cap; /* most bytes it may ever hold, the NUL not counted */
};

/* Empty buffer that refuses to grow past cap bytes. Cannot fail (allocates nothing). */
void tpx_buf_init(struct tpx_buf *b, size_t cap);

/* Append n bytes. TPX_ETOOBIG when len + n would pass the cap (nothing is appended: never a silent
 * truncation), TPX_ENOMEM when allocation fails. */
enum tpx_code tpx_buf_add(struct tpx_buf *b, const void *p, size_t n, struct tpx_err *err);

/* Make room for n more bytes (and the NUL) without appending anything, so a caller can append
 * many small pieces with tpx_buf_put() after one check. Same failure rules as tpx_buf_add(). */
enum tpx_code tpx_buf_reserve(struct tpx_buf *b, size_t n, struct tpx_err *err);

/* Allocate room for exactly n more bytes (and the NUL) now, when the buffer has less: for a body
 * whose size is announced, read then without regrowth or slack. Same failure rules as
 * tpx_buf_add(); later growth doubles from there as usual. */
enum tpx_code tpx_buf_presize(struct tpx_buf *b, size_t n, struct tpx_err *err);

/* Append n bytes into room that tpx_buf_reserve() made (the caller guarantees it). Cannot fail. */
static inline void tpx_buf_put(struct tpx_buf *b, const void *p, size_t n)
{
    __builtin_memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Append a NUL-terminated string. */
enum tpx_code tpx_buf_adds(struct tpx_buf *b, const char *s, struct tpx_err *err);

/* Append printf output, same failure rules as tpx_buf_add(). */
enum tpx_code tpx_buf_addf(struct tpx_buf *b, struct tpx_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Forget the contents but keep the memory. */
void tpx_buf_reset(struct tpx_buf *b);

/* Hand the contents to the caller (free() them; never NULL: an empty buffer gives ""), or NULL when
 * allocating that empty string fails. The buffer is left empty and reusable. *len_out may be NULL.
 */
char *tpx_buf_detach(struct tpx_buf *b, size_t *len_out);

/* Free the contents. Safe to call twice. */
void tpx_buf_release(struct tpx_buf *b);

#endif
