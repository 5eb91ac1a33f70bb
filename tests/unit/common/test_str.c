/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_str.c - tpx_str_copy: whole, cut at cap - 1, NULL, a one-byte array. */
#include "common/str.h"

#include <criterion/criterion.h>
#include <string.h>

Test(tpx_str, copies_whole_and_cuts_at_cap_minus_one)
{
    char dst[6];

    memset(dst, 'x', sizeof(dst));
    cr_expect_eq(tpx_str_copy(dst, sizeof(dst), "abc"), 3);
    cr_expect_str_eq(dst, "abc");
    cr_expect_eq(tpx_str_copy(dst, sizeof(dst), "abcdef"), 5);
    cr_expect_str_eq(dst, "abcde");
    cr_expect_eq(tpx_str_copy(dst, sizeof(dst), "abcde"), 5);
    cr_expect_str_eq(dst, "abcde");
}

Test(tpx_str, null_and_one_byte_arrays_give_the_empty_string)
{
    char dst[4] = "zzz";
    char one[1] = {'q'};

    cr_expect_eq(tpx_str_copy(dst, sizeof(dst), NULL), 0);
    cr_expect_str_eq(dst, "");
    cr_expect_eq(tpx_str_copy(one, sizeof(one), "abc"), 0);
    cr_expect_eq(one[0], '\0');
}
