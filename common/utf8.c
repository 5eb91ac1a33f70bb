/* SPDX-License-Identifier: Apache-2.0 */
/* common/utf8.c - well-formedness after Unicode 15, table 3-7 (the ranges jansson accepts). */
#include "common/utf8.h"

#include <stdint.h>
#include <string.h>

size_t tpx_utf8_char_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    size_t len;

    if (p[0] < 0x80)
        return 1;
    if (p[0] < 0xc2 || p[0] > 0xf4)
        return 0; /* continuation byte, overlong 2-byte lead, or past U+10FFFF */
    if (p[0] < 0xe0) {
        len = 2;
    } else if (p[0] < 0xf0) {
        len = 3;
        if (p[0] == 0xe0)
            lo = 0xa0; /* overlong */
        else if (p[0] == 0xed)
            hi = 0x9f; /* surrogates */
    } else {
        len = 4;
        if (p[0] == 0xf0)
            lo = 0x90; /* overlong */
        else if (p[0] == 0xf4)
            hi = 0x8f; /* past U+10FFFF */
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    }
    return len;
}

size_t tpx_utf8_clean(char *dst, size_t size, const char *src)
{
    size_t out = 0;
    size_t left = strlen(src);

    while (left > 0) {
        size_t n = tpx_utf8_char_len(src, left);
        const char *piece = n ? src : TPX_UTF8_REPLACEMENT;
        size_t plen = n ? n : 3;

        if (plen > size - 1 - out)
            break;
        memcpy(dst + out, piece, plen);
        out += plen;
        src += n ? n : 1;
        left -= n ? n : 1;
    }
    dst[out] = '\0';
    return out;
}

size_t tpx_utf8_valid_len(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        uint64_t w;
        size_t clen;

        if (n - i >= 8) {
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        clen = tpx_utf8_char_len(s + i, n - i);
        if (!clen)
            return i;
        i += clen;
    }
    return n;
}
