/* SPDX-License-Identifier: Apache-2.0 */
/* common/jsonstr.c - runs of bytes that need nothing are copied in one piece. */
#include "common/jsonstr.h"

#include <stdint.h>
#include <string.h>

#include "common/utf8.h"

/* The escape for the ASCII byte c (not plain) into esc; returns its length. */
static size_t escape_ascii(unsigned char c, char esc[6])
{
    static const char hex[] = "0123456789abcdef";

    esc[0] = '\\';
    switch (c) {
    case '"':
    case '\\':
        esc[1] = (char)c;
        return 2;
    case '\n':
        esc[1] = 'n';
        return 2;
    case '\r':
        esc[1] = 'r';
        return 2;
    case '\t':
        esc[1] = 't';
        return 2;
    default:
        memcpy(esc + 1, "u00", 3);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

/* Escape the n bytes at s, taking no character that would end past max bytes. */
static enum tpx_code escape_max(struct tpx_buf *out, const char *s, size_t n, size_t max,
                                struct tpx_err *err)
{
    size_t lim = max < n ? max : n;
    const char *run = s;
    size_t i = 0;

    while (i < lim) {
        unsigned char c = (unsigned char)s[i];
        char esc[6];
        const char *rep = esc;
        size_t rlen;

        if (tpx_json_is_plain(c)) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t clen = tpx_utf8_char_len(s + i, n - i);

            if (clen && i + clen > lim)
                break; /* a whole character that would cross max: leave it out */
            if (clen) {
                i += clen; /* well-formed: part of the run */
                continue;
            }
            rep = TPX_UTF8_REPLACEMENT;
            rlen = 3;
        } else {
            rlen = escape_ascii(c, esc);
        }
        if (s + i > run && tpx_buf_add(out, run, (size_t)(s + i - run), err) != TPX_OK)
            return err->code;
        if (tpx_buf_add(out, rep, rlen, err) != TPX_OK)
            return err->code;
        i++;
        run = s + i;
    }
    if (s + i > run && tpx_buf_add(out, run, (size_t)(s + i - run), err) != TPX_OK)
        return err->code;
    return TPX_OK;
}

enum tpx_code tpx_json_escape(struct tpx_buf *out, const char *s, size_t n, struct tpx_err *err)
{
    return escape_max(out, s, n, SIZE_MAX, err);
}

enum tpx_code tpx_json_str_max(struct tpx_buf *out, const char *s, size_t max, struct tpx_err *err)
{
    if (tpx_buf_add(out, "\"", 1, err) != TPX_OK)
        return err->code;
    if (escape_max(out, s, strlen(s), max, err) != TPX_OK)
        return err->code;
    return tpx_buf_add(out, "\"", 1, err);
}

enum tpx_code tpx_json_raw_clean(struct tpx_buf *out, const char *s, size_t n, struct tpx_err *err)
{
    for (;;) {
        size_t ok = tpx_utf8_valid_len(s, n);

        if (ok && tpx_buf_add(out, s, ok, err) != TPX_OK)
            return err->code;
        if (ok == n)
            return TPX_OK;
        if (tpx_buf_add(out, TPX_UTF8_REPLACEMENT, 3, err) != TPX_OK)
            return err->code;
        s += ok + 1;
        n -= ok + 1;
    }
}
