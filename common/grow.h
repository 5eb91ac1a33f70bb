/* SPDX-License-Identifier: Apache-2.0 */
/* common/grow.h - overflow-checked capacity doubling for arrays (git's ALLOC_GROW). */
#ifndef TPX_COMMON_GROW_H
#define TPX_COMMON_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Make the array *arrp (a T ** passed as void *) of *alloc elements of size bytes hold at least
 * need: the capacity doubles from 8 until it does. false when need * size overflows or realloc
 * fails; *arrp and *alloc are then unchanged (the old array is still the caller's). */
bool tpx_grow(void *arrp, size_t *alloc, size_t need, size_t size);

/* TPX_GROW(arr, alloc, need): true when arr (a T *) has room for need elements, growing it when
 * it has not. The common case, room already there, is one comparison and no call. need is
 * evaluated twice. */
#define TPX_GROW(arr, alloc, need)                                                                 \
    ((need) <= (alloc) || tpx_grow(&(arr), &(alloc), (need), sizeof(*(arr))))

#endif
