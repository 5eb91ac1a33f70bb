/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_parse.c - the duration and size grammar of common/parse.h: units, sums,
 * the forms both old grammars took, and what is refused (empty, negative, junk, overflow). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "common/parse.h"

struct parse_case {
    const char *s;
    enum tpx_code want;
    uint64_t v;
};

static void run_cases(enum tpx_code (*parse)(const char *, uint64_t *, struct tpx_err *),
                      const char *what, const struct parse_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct tpx_err err = TPX_ERR_INIT;
        uint64_t v = 12345;
        enum tpx_code rc = parse(cases[i].s, &v, &err);

        cr_expect_eq(rc, cases[i].want, "%s '%s': %s", what, cases[i].s, err.msg);
        if (cases[i].want == TPX_OK)
            cr_expect_eq(v, cases[i].v, "%s '%s'", what, cases[i].s);
        else
            cr_expect_eq(v, 12345, "%s '%s' changed the output on failure", what, cases[i].s);
    }
}

Test(tpx_parse, durations)
{
    static const struct parse_case cases[] = {
        /* units and sums */
        {"90s", TPX_OK, 90},
        {"10m", TPX_OK, 600},
        {"1h", TPX_OK, 3600},
        {"1h30m", TPX_OK, 5400},
        {"1h30m15s", TPX_OK, 5415},
        {"600", TPX_OK, 600},
        {"0", TPX_OK, 0},
        {"0s", TPX_OK, 0},
        {"007m", TPX_OK, 420},
        /* what the serve config grammar took: a bare last part, repeats, any order */
        {"1h30", TPX_OK, 3630},
        {"1m1m", TPX_OK, 120},
        {"10s5", TPX_OK, 15},
        {"5s1h", TPX_OK, 3605},
        /* what `topox label --interval` took through strtol(): blanks and a plus sign */
        {" 30s", TPX_OK, 30},
        {"\t5m", TPX_OK, 300},
        {"+5m", TPX_OK, 300},
        {"1000000h", TPX_OK, 3600000000ULL},
        /* the largest that fits, and one more */
        {"18446744073709551615", TPX_OK, UINT64_MAX},
        {"18446744073709551616", TPX_ETOOBIG, 0},
        {"5124095576030431h", TPX_OK, 5124095576030431ULL * 3600},
        {"5124095576030432h", TPX_ETOOBIG, 0},
        {"18446744073709551615s1s", TPX_ETOOBIG, 0},
        {"99999999999999999999999999h", TPX_ETOOBIG, 0},
        /* empty, negative, unknown units, junk */
        {NULL, TPX_EINVAL, 0},
        {"", TPX_EINVAL, 0},
        {" ", TPX_EINVAL, 0},
        {"+", TPX_EINVAL, 0},
        {"-5s", TPX_EINVAL, 0},
        {"-0", TPX_EINVAL, 0},
        {"+-5", TPX_EINVAL, 0},
        {"m", TPX_EINVAL, 0},
        {"h5", TPX_EINVAL, 0},
        {"10x", TPX_EINVAL, 0},
        {"1d", TPX_EINVAL, 0},
        {"100ms", TPX_EINVAL, 0},
        {"1.5h", TPX_EINVAL, 0},
        {"5 m", TPX_EINVAL, 0},
        {"5m ", TPX_EINVAL, 0},
        {"5mm", TPX_EINVAL, 0},
        {"1h 30m", TPX_EINVAL, 0},
        {"0x10", TPX_EINVAL, 0},
        {"soon", TPX_EINVAL, 0},
    };

    run_cases(tpx_parse_duration, "duration", cases, sizeof(cases) / sizeof(cases[0]));
}

Test(tpx_parse, sizes)
{
    static const struct parse_case cases[] = {
        /* units */
        {"1000", TPX_OK, 1000},
        {"0", TPX_OK, 0},
        {"2k", TPX_OK, 2000},
        {"2K", TPX_OK, 2000},
        {"2Ki", TPX_OK, 2048},
        {"64M", TPX_OK, 64000000},
        {"256Mi", TPX_OK, 268435456},
        {"3G", TPX_OK, 3000000000ULL},
        {"1Gi", TPX_OK, 1073741824},
        {" +1Ki", TPX_OK, 1024},
        /* overflow: a number times its unit must not wrap around to a small size (17179869185Gi
         * is 2^64 + 1Gi) */
        {"18446744073709551615", TPX_OK, UINT64_MAX},
        {"18446744073709551616", TPX_ETOOBIG, 0},
        {"17179869183Gi", TPX_OK, 17179869183ULL << 30},
        {"17179869184Gi", TPX_ETOOBIG, 0},
        {"17179869185Gi", TPX_ETOOBIG, 0},
        {"18446744074G", TPX_ETOOBIG, 0},
        /* empty, negative, unknown units, junk */
        {NULL, TPX_EINVAL, 0},
        {"", TPX_EINVAL, 0},
        {"-1", TPX_EINVAL, 0},
        {"Mi", TPX_EINVAL, 0},
        {"12Q", TPX_EINVAL, 0},
        {"1Ti", TPX_EINVAL, 0},
        {"1m", TPX_EINVAL, 0},
        {"1ki", TPX_EINVAL, 0},
        {"1MiB", TPX_EINVAL, 0},
        {"1 Mi", TPX_EINVAL, 0},
        {"1Mi ", TPX_EINVAL, 0},
        {"1.5Gi", TPX_EINVAL, 0},
        {"1Mi1Ki", TPX_EINVAL, 0},
    };

    run_cases(tpx_parse_size, "size", cases, sizeof(cases) / sizeof(cases[0]));
}

Test(tpx_parse, messages_quote_the_text)
{
    struct tpx_err err = TPX_ERR_INIT;
    uint64_t v;

    cr_assert_eq(tpx_parse_duration("10x", &v, &err), TPX_EINVAL);
    cr_expect_str_eq(err.msg, "'10x' is not a duration (like 90s, 10m or 1h30m)");
    tpx_err_clear(&err);
    cr_assert_eq(tpx_parse_size("99999999999Gi", &v, &err), TPX_ETOOBIG);
    cr_expect_str_eq(err.msg, "'99999999999Gi' is too large a size");
}
