/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_buf.c - growth, the hard cap, detach and release. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"

Test(tpx_buf, grows_and_stays_nul_terminated)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 1 << 20);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(tpx_buf_adds(&b, "0123456789", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(b.len, 10000);
    cr_expect_eq(b.data[b.len], '\0');
    cr_expect_eq(strncmp(b.data + 9990, "0123456789", 10), 0);
    tpx_buf_release(&b);
}

Test(tpx_buf, cap_is_enforced_without_partial_append)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 16);
    cr_assert_eq(tpx_buf_adds(&b, "0123456789", &err), TPX_OK);
    cr_expect_eq(tpx_buf_adds(&b, "0123456789", &err), TPX_ETOOBIG);
    cr_expect_eq(b.len, 10, "nothing of the refused chunk is kept");
    cr_expect_str_eq(b.data, "0123456789");
    cr_expect(strstr(err.msg, "16 bytes") != NULL, "%s", err.msg);
    tpx_buf_release(&b);
}

Test(tpx_buf, exactly_the_cap_fits)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 8);
    cr_expect_eq(tpx_buf_add(&b, "12345678", 8, &err), TPX_OK);
    cr_expect_eq(tpx_buf_add(&b, "9", 1, &err), TPX_ETOOBIG);
    cr_expect_str_eq(b.data, "12345678");
    tpx_buf_release(&b);
}

Test(tpx_buf, huge_request_does_not_overflow)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, (size_t)-1 / 2);
    cr_assert_eq(tpx_buf_add(&b, "x", 1, &err), TPX_OK);
    cr_expect_eq(tpx_buf_add(&b, "y", (size_t)-1, &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
}

Test(tpx_buf, addf_respects_cap)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 12);
    cr_expect_eq(tpx_buf_addf(&b, &err, "n=%d", 42), TPX_OK);
    cr_expect_str_eq(b.data, "n=42");
    cr_expect_eq(tpx_buf_addf(&b, &err, "%s", "much too long"), TPX_ETOOBIG);
    cr_expect_str_eq(b.data, "n=42");
    tpx_buf_release(&b);
}

Test(tpx_buf, detach_hands_over_and_release_twice_is_safe)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    size_t len = 99;
    char *s;

    tpx_buf_init(&b, 64);
    s = tpx_buf_detach(&b, &len);
    cr_assert_not_null(s);
    cr_expect_str_eq(s, "");
    cr_expect_eq(len, 0);
    free(s);
    tpx_buf_adds(&b, "abc", &err);
    s = tpx_buf_detach(&b, &len);
    cr_expect_str_eq(s, "abc");
    cr_expect_eq(len, 3);
    cr_expect_null(b.data);
    free(s);
    tpx_buf_release(&b);
    tpx_buf_release(&b);
}

Test(tpx_buf, reserve_then_put_within_the_cap)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 12);
    cr_assert_eq(tpx_buf_reserve(&b, 10, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(b.len, 0, "reserving appends nothing");
    tpx_buf_put(&b, "01234", 5);
    tpx_buf_put(&b, "56789", 5);
    cr_expect_str_eq(b.data, "0123456789");
    cr_expect_eq(tpx_buf_reserve(&b, 3, &err), TPX_ETOOBIG, "10 + 3 is past the cap of 12");
    cr_expect_eq(b.len, 10);
    cr_expect_eq(tpx_buf_reserve(&b, 2, &err), TPX_OK);
    tpx_buf_put(&b, "ab", 2);
    cr_expect_str_eq(b.data, "0123456789ab");
    tpx_buf_release(&b);
}

Test(tpx_buf, presize_allocates_exactly_and_keeps_the_cap)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 1000);
    cr_assert_eq(tpx_buf_presize(&b, 700, &err), TPX_OK);
    cr_expect_eq(b.alloc, 701);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(tpx_buf_presize(&b, 1001, &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
}

/* cap SIZE_MAX means "no limit": the capacity must not wrap to 0 bytes (it used to, so the first
 * append wrote past a 1-byte block), and a length of SIZE_MAX is still refused. */
Test(tpx_buf, no_cap_grows_like_any_other)
{
    static const char piece[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, SIZE_MAX);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(tpx_buf_add(&b, piece, sizeof(piece) - 1, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(b.len, 100 * (sizeof(piece) - 1));
    cr_expect_geq(b.alloc, b.len + 1);
    cr_expect_eq(b.data[b.len], '\0');
    cr_expect_eq(tpx_buf_reserve(&b, SIZE_MAX - b.len, &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
}
