/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_utf8.c - well-formed lengths and cleaning with a byte limit. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/utf8.h"

Test(tpx_utf8, char_len_follows_the_unicode_table)
{
    static const struct {
        const char *in;
        size_t want;
    } cases[] = {
        {"a", 1},
        {"\xc3\xa9", 2},         /* é */
        {"\xe2\x82\xac", 3},     /* € */
        {"\xf0\x9f\x98\x80", 4}, /* 😀 */
        {"\xf4\x8f\xbf\xbf", 4}, /* U+10FFFF */
        {"\x80", 0},             /* stray continuation */
        {"\xc0\xaf", 0},         /* overlong '/' */
        {"\xc1\xbf", 0},         /* overlong */
        {"\xe0\x80\xaf", 0},     /* overlong 3-byte */
        {"\xed\xa0\x80", 0},     /* surrogate U+D800 */
        {"\xf0\x80\x80\xaf", 0}, /* overlong 4-byte */
        {"\xf4\x90\x80\x80", 0}, /* past U+10FFFF */
        {"\xf5\x80\x80\x80", 0}, /* bad lead */
        {"\xc3", 0},             /* cut short */
        {"\xe2\x82", 0},         /* cut short */
        {"\xe2\x28\xa1", 0},     /* bad continuation */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(tpx_utf8_char_len(cases[i].in, strlen(cases[i].in)), cases[i].want, "case %zu",
                     i);
    cr_expect_eq(tpx_utf8_char_len("\xe2\x82\xac", 2), 0, "n limits what is read");
}

Test(tpx_utf8, clean_replaces_bad_bytes_and_cuts_between_characters)
{
    static const struct {
        const char *in;
        size_t size;
        const char *want;
    } cases[] = {
        {"plain", 64, "plain"},
        {"plain", 4, "pla"},
        {"caf\xc3\xa9", 64, "caf\xc3\xa9"},
        {"caf\xc3\xa9", 5, "caf"}, /* é would not fit whole */
        {"caf\xc3\xa9", 6, "caf\xc3\xa9"},
        {"a\xff"
         "b",
         64,
         "a\xef\xbf\xbd"
         "b"},
        {"a\xff"
         "b",
         4, "a"}, /* U+FFFD is 3 bytes and would not fit with the NUL */
        {"\xe2\x82", 64, "\xef\xbf\xbd\xef\xbf\xbd"},
        {"x", 1, ""},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        size_t n = tpx_utf8_clean(out, cases[i].size, cases[i].in);
        cr_expect_str_eq(out, cases[i].want, "case %zu", i);
        cr_expect_eq(n, strlen(cases[i].want), "case %zu", i);
    }
}

Test(tpx_utf8, valid_len_stops_at_the_first_bad_byte)
{
    cr_expect_eq(tpx_utf8_valid_len("", 0), 0);
    cr_expect_eq(tpx_utf8_valid_len("long ascii text, more than eight", 32), 32);
    cr_expect_eq(tpx_utf8_valid_len("caf\xc3\xa9 and more ascii", 21), 21);
    cr_expect_eq(tpx_utf8_valid_len("abcdefgh\xff", 9), 8);
    cr_expect_eq(tpx_utf8_valid_len("ab\xc3", 3), 2, "cut inside a character");
    cr_expect_eq(tpx_utf8_valid_len("abcdefghijk\xed\xa0\x80", 14), 11, "a surrogate");
}
