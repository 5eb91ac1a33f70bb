/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_kv.c - tpx_kv_get (first match, NULL pairs skipped, "" kept) and
 * tpx_sat_add (saturates at UINT_MAX instead of wrapping). */
#include "common/kv.h"
#include "common/sat.h"

#include <criterion/criterion.h>
#include <limits.h>

Test(tpx_kv, first_match_wins_and_null_pairs_are_skipped)
{
    const struct topo_kv kv[] = {
        {NULL, "x"}, {"a", NULL}, {"a", "1"}, {"a", "2"}, {"e", ""},
    };

    cr_expect_str_eq(tpx_kv_get(kv, 5, "a"), "1");
    cr_expect_str_eq(tpx_kv_get(kv, 5, "e"), "");
    cr_expect_null(tpx_kv_get(kv, 5, "b"));
    cr_expect_null(tpx_kv_get(kv, 2, "a"));
    cr_expect_null(tpx_kv_get(NULL, 0, "a"));
}

Test(tpx_sat, adds_and_saturates_instead_of_wrapping)
{
    cr_expect_eq(tpx_sat_add(3, 4), 7);
    cr_expect_eq(tpx_sat_add(UINT_MAX - 1, 1), UINT_MAX);
    cr_expect_eq(tpx_sat_add(UINT_MAX - 1, 5), UINT_MAX);
    cr_expect_eq(tpx_sat_add(UINT_MAX, UINT_MAX), UINT_MAX);
}
