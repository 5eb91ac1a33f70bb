/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_backoff.c - doubling, the cap, and the jitter window. */
#include <criterion/criterion.h>
#include <limits.h>

#include "common/backoff.h"

Test(tpx_backoff, doubles_to_the_cap_without_jitter)
{
    static const struct {
        unsigned long base, max;
        unsigned attempt;
        unsigned long want;
    } cases[] = {
        {250, 5000, 0, 250},    {250, 5000, 1, 500},
        {250, 5000, 4, 4000},   {250, 5000, 5, 5000},
        {250, 5000, 100, 5000}, {0, 5000, 3, 0},
        {900, 500, 0, 500},     {1, ULONG_MAX, 200, ULONG_MAX},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_backoff b;

        tpx_backoff_init(&b, cases[i].base, cases[i].max, false);
        cr_expect_eq(tpx_backoff_ms(&b, cases[i].attempt), cases[i].want, "case %zu", i);
    }
}

Test(tpx_backoff, jitter_stays_in_half_to_three_halves)
{
    struct tpx_backoff b;
    bool varied = false;
    unsigned long first;

    tpx_backoff_init(&b, 100, 30000, true);
    first = tpx_backoff_ms(&b, 3);
    for (int i = 0; i < 1000; i++) {
        unsigned long ms = tpx_backoff_ms(&b, 3); /* 800 before jitter */
        cr_assert(ms >= 400 && ms < 1200, "%lu", ms);
        varied |= ms != first;
    }
    cr_expect(varied);
}
