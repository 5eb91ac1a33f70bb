/* SPDX-License-Identifier: Apache-2.0 */
/* common/parse.h - the one parser of durations and sizes that flags and config files take
 * ("10m", "1h30m", "256Mi"). libc only; pure and reentrant.
 *
 * Grammar (both share the number):
 *
 *   number   = [blanks] ["+"] digits                blanks: what isspace() takes
 *   digits   = digit {digit}
 *   duration = number {unit digits} [unit]          a part without a unit counts seconds
 *   unit     = "h" | "m" | "s"                      hours, minutes, seconds
 *   size     = number [suffix]
 *   suffix   = "k" | "K" | "M" | "G"                powers of 1000
 *            | "Ki" | "Mi" | "Gi"                   powers of 1024
 *
 * A duration is a sum of parts, each a number and its unit: "1h30m" is 5400 s, "90s" is 90 s,
 * "10m" is 600 s. Units may come in any order and repeat ("1m1m" is 120 s); the last part may
 * leave its unit out and then counts seconds ("1h30" is 3630 s, "600" is 600 s). Nothing may
 * follow the last part: no trailing blanks, no other units (no "d", "ms", "1.5h"), no minus sign.
 * This is the union of the two grammars topox had before (`topox serve` config durations and
 * `topox label --interval`), so every value either accepted still parses.
 *
 * Limits are the caller's: the parsers refuse only what does not fit in 64 bits, and accept 0.
 */
#ifndef TPX_COMMON_PARSE_H
#define TPX_COMMON_PARSE_H

#include <stdint.h>

#include "common/err.h"

/* Parse a duration into whole seconds. TPX_EINVAL for text outside the grammar (empty, NULL,
 * negative, an unknown unit, junk), TPX_ETOOBIG when the sum does not fit in 64 bits; *seconds is
 * left alone on failure. The message quotes the text. */
enum tpx_code tpx_parse_duration(const char *s, uint64_t *seconds, struct tpx_err *err);

/* Parse a size into bytes, with the same errors as tpx_parse_duration(). */
enum tpx_code tpx_parse_size(const char *s, uint64_t *bytes, struct tpx_err *err);

#endif
