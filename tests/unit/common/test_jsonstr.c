/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_jsonstr.c - escapes, U+FFFD for invalid bytes, cuts between characters,
 * and the buffer cap. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/jsonstr.h"

Test(tpx_json, strings_are_escaped_and_valid_utf8)
{
    static const struct {
        const char *in;
        const char *want;
    } cases[] = {
        {"", "\"\""},
        {"gpu-node-7", "\"gpu-node-7\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"l1\nl2\r\t", "\"l1\\nl2\\r\\t\""},
        {"\x01\x1f", "\"\\u0001\\u001f\""},
        {"caf\xc3\xa9 \xe2\x82\xac", "\"caf\xc3\xa9 \xe2\x82\xac\""},
        {"bad\xff", "\"bad\xef\xbf\xbd\""},
        {"\xc3(", "\"\xef\xbf\xbd(\""},
        {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
        {"\x7f", "\"\x7f\""},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_buf b;
        struct tpx_err err = TPX_ERR_INIT;

        tpx_buf_init(&b, 1024);
        cr_assert_eq(tpx_json_str(&b, cases[i].in, &err), TPX_OK, "%s", err.msg);
        cr_expect_str_eq(b.data, cases[i].want, "case %zu", i);
        tpx_buf_release(&b);
    }
}

Test(tpx_json, max_cuts_only_between_characters)
{
    static const struct {
        const char *in;
        size_t max;
        const char *want;
    } cases[] = {
        {"abcdef", 3, "\"abc\""},
        {"abcdef", 0, "\"\""},
        {"abcdef", SIZE_MAX, "\"abcdef\""},
        {"ab\xc3\xa9", 3, "\"ab\""}, /* é is bytes 3-4: left out whole */
        {"ab\xc3\xa9", 4, "\"ab\xc3\xa9\""},
        {"a\xf0\x9f\x98\x80z", 4, "\"a\""},
        {"a\xf0\x9f\x98\x80z", 5, "\"a\xf0\x9f\x98\x80\""},
        {"a\nb", 2, "\"a\\n\""},
        {"a\xff"
         "b",
         2, "\"a\xef\xbf\xbd\""},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_buf b;
        struct tpx_err err = TPX_ERR_INIT;

        tpx_buf_init(&b, 1024);
        cr_assert_eq(tpx_json_str_max(&b, cases[i].in, cases[i].max, &err), TPX_OK);
        cr_expect_str_eq(b.data, cases[i].want, "case %zu", i);
        tpx_buf_release(&b);
    }
}

Test(tpx_json, escape_takes_counted_bytes_without_quotes)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 1024);
    cr_assert_eq(tpx_json_escape(&b, "a\0b\"", 4, &err), TPX_OK);
    cr_expect_str_eq(b.data, "a\\u0000b\\\"");
    tpx_buf_release(&b);
}

Test(tpx_json, the_cap_is_an_error)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 5);
    cr_expect_eq(tpx_json_str(&b, "abcd", &err), TPX_ETOOBIG);
    tpx_err_clear(&err);
    cr_expect_eq(tpx_json_str(&b, "a\nb", &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
}

Test(tpx_json, raw_clean_replaces_each_bad_byte_and_keeps_the_rest)
{
    struct tpx_buf out;
    struct tpx_err err = TPX_ERR_INIT;
    static const char in[] = "{\"a\":\"x\xff\xfey\",\"b\\\"\":\"caf\xc3\xa9\"}";

    tpx_buf_init(&out, 1 << 10);
    cr_assert_eq(tpx_json_raw_clean(&out, in, sizeof(in) - 1, &err), TPX_OK);
    cr_expect_str_eq(out.data, "{\"a\":\"x\xef\xbf\xbd\xef\xbf\xbdy\",\"b\\\"\":\"caf\xc3\xa9\"}");
    tpx_buf_release(&out);
}
