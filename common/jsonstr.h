/* SPDX-License-Identifier: Apache-2.0 */
/* common/jsonstr.h - JSON string literals written into a capped buffer, always valid UTF-8. Libc
 * only: the writers that build JSON by hand (codec answers, log lines, label annotations) share
 * it, so every one escapes the same way. */
#ifndef TPX_COMMON_JSONSTR_H
#define TPX_COMMON_JSONSTR_H

#include <stddef.h>

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

/* Append the C string s as a quoted JSON string. A string that needs no escaping (every
 * Kubernetes object name) costs one scan and one copy. */
enum tpx_code tpx_json_str(struct tpx_buf *out, const char *s, struct tpx_err *err);

/* Like tpx_json_str(), but take at most max bytes of s, cut only between characters: a character
 * that would cross max is left out whole. */
enum tpx_code tpx_json_str_max(struct tpx_buf *out, const char *s, size_t max, struct tpx_err *err);

#endif
