/* SPDX-License-Identifier: Apache-2.0 */
/* common/jsonstr.h - JSON string literals written into a capped buffer, always valid UTF-8. Libc
 * only: the writers that build JSON by hand (codec answers, log lines, label annotations) share
 * it, so every one escapes the same way. */
#ifndef TPX_COMMON_JSONSTR_H
#define TPX_COMMON_JSONSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

/*
 * Escaping: '"' and '\\' get a backslash; \n, \r and \t their short forms; other bytes below
 * 0x20 (NUL too, in the counted form) become \u00XX. Well-formed UTF-8 passes through as it is;
 * each byte that is not part of a well-formed character becomes U+FFFD. Failures are those of
 * tpx_buf_add() (TPX_ETOOBIG at the cap, TPX_ENOMEM); what was appended before then stays.
 */

/* Append the n bytes at s escaped, without quotes. */
enum tpx_code tpx_json_escape(struct tpx_buf *out, const char *s, size_t n, struct tpx_err *err);

/* Append the n bytes at s, JSON text as it came (a span of a request echoed back), with each byte
 * that is not part of well-formed UTF-8 replaced by U+FFFD. In JSON text that has been tokenized
 * such a byte can only stand inside a string, and U+FFFD is what Go's encoding/json decodes it
 * to (decode.go, unquoteBytes), so the answer says what kube-scheduler would read anyway. */
enum tpx_code tpx_json_raw_clean(struct tpx_buf *out, const char *s, size_t n, struct tpx_err *err);

/* Like tpx_json_str(), but take at most max bytes of s, cut only between characters: a character
 * that would cross max is left out whole. */
enum tpx_code tpx_json_str_max(struct tpx_buf *out, const char *s, size_t max, struct tpx_err *err);

/* Whether byte c is copied as it is: printable ASCII other than '"' and '\\'. */
static inline bool tpx_json_is_plain(unsigned char c)
{
    return (unsigned char)(c - 0x20) < 0x60 && c != '"' && c != '\\';
}

/* Length of s when it needs no escaping at all (every Kubernetes object name), else SIZE_MAX.
 * Inline, for writers that fuse it with their own tpx_buf_reserve() on a hot path. */
static inline size_t tpx_json_plain_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    for (; *p; p++) {
        if (!tpx_json_is_plain(*p))
            return SIZE_MAX;
    }
    return (size_t)(p - (const unsigned char *)s);
}

/* Append the C string s as a quoted JSON string. A string that needs no escaping costs one scan
 * and one copy (inline: this is the answer writers' inner loop). */
static inline enum tpx_code tpx_json_str(struct tpx_buf *out, const char *s, struct tpx_err *err)
{
    size_t plain = tpx_json_plain_len(s);

    if (plain == SIZE_MAX)
        return tpx_json_str_max(out, s, SIZE_MAX, err);
    if (tpx_buf_reserve(out, plain + 2, err) != TPX_OK)
        return err->code;
    tpx_buf_put(out, "\"", 1);
    tpx_buf_put(out, s, plain);
    tpx_buf_put(out, "\"", 1);
    return TPX_OK;
}

#endif
