/* SPDX-License-Identifier: Apache-2.0 */
/* common/utf8.h - UTF-8 checks for text that leaves as JSON (jansson refuses invalid UTF-8, and a
 * cut inside a character makes it invalid). Pure functions: cannot fail, thread-safe. */
#ifndef TPX_COMMON_UTF8_H
#define TPX_COMMON_UTF8_H

#include <stddef.h>

/* U+FFFD REPLACEMENT CHARACTER, which stands in for each invalid byte. */
#define TPX_UTF8_REPLACEMENT "\xef\xbf\xbd"

/* Length (1 to 4) of the well-formed UTF-8 character at p, looking at no more than n bytes, or 0
 * when p does not start one: a stray continuation byte, an overlong form, a surrogate, a value
 * past U+10FFFF, or a sequence cut short. n must be at least 1. ASCII, NUL included, is 1. */
size_t tpx_utf8_char_len(const char *p, size_t n);

/* Copy the C string src into dst (size bytes, size >= 1) as valid UTF-8: each invalid byte becomes
 * U+FFFD, and when the result would not fit, it is cut before the first character that does not
 * fit whole, so the output never ends inside a character. Always NUL-terminated. Returns the
 * bytes written, the NUL not counted. dst and src must not overlap. */
size_t tpx_utf8_clean(char *dst, size_t size, const char *src);

/* Length of the longest well-formed UTF-8 prefix of the n bytes at s: n when all of it is. ASCII
 * runs are checked eight bytes at a time. */
size_t tpx_utf8_valid_len(const char *s, size_t n);

#endif
