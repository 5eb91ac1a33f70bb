/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_grow.c - doubling, no call when there is room, overflow refused. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/grow.h"

Test(tpx_grow, capacity_doubles_from_eight)
{
    static const struct {
        size_t need;
        size_t alloc; /* after */
    } steps[] = {{0, 0}, {1, 8}, {8, 8}, {9, 16}, {40, 64}, {64, 64}, {65, 128}, {1000, 1024}};
    int *arr = NULL;
    size_t alloc = 0;

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        cr_assert(TPX_GROW(arr, alloc, steps[i].need), "step %zu", i);
        cr_expect_eq(alloc, steps[i].alloc, "step %zu", i);
        if (steps[i].need)
            arr[steps[i].need - 1] = 1; /* ASan checks the room is there */
    }
    free(arr);
}

Test(tpx_grow, overflow_leaves_the_array_alone)
{
    uint64_t *arr = NULL;
    size_t alloc = 0;

    cr_assert(TPX_GROW(arr, alloc, 3));
    cr_expect_not(TPX_GROW(arr, alloc, SIZE_MAX / 4));
    cr_expect_eq(alloc, 8);
    cr_expect_not_null(arr);
    free(arr);
}
