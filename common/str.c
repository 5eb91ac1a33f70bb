/* SPDX-License-Identifier: Apache-2.0 */
/* common/str.c - see str.h. */
#include "common/str.h"

#include <string.h>

size_t tpx_str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
    return n;
}
