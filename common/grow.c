/* SPDX-License-Identifier: Apache-2.0 */
/* common/grow.c - the slow half of TPX_GROW(). */
#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool tpx_grow(void *arrp, size_t *alloc, size_t need, size_t size)
{
    size_t n = *alloc ? *alloc : 8;
    void *old;
    void *p;

    if (need <= *alloc)
        return true;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    if (size && n > SIZE_MAX / size)
        return false;
    memcpy(&old, arrp, sizeof(old)); /* arrp is a T **: every object pointer is a void * here */
    p = realloc(old, n * size);
    if (!p)
        return false;
    memcpy(arrp, &p, sizeof(p));
    *alloc = n;
    return true;
}
