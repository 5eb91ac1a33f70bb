/* SPDX-License-Identifier: Apache-2.0 */
/* common/str.h - a bounded copy of a C string into a fixed array. Pure: cannot fail, thread-safe.
 */
#ifndef TPX_COMMON_STR_H
#define TPX_COMMON_STR_H

#include <stddef.h>

/* Copy src (NULL reads as "") into dst of cap bytes (cap >= 1), cut to cap - 1 bytes byte-wise,
 * always NUL-terminated. For keys and text that stay bytes; text that leaves as JSON and may be
 * cut inside a character takes tpx_utf8_clean() instead. Returns the bytes written, the NUL not
 * counted. dst and src must not overlap. */
size_t tpx_str_copy(char *dst, size_t cap, const char *src);

#endif
