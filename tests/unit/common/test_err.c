/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_err.c - first error wins, prefixes, errno capture, truncation. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"

Test(tpx_err, first_error_wins)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(tpx_err_set(&err, TPX_EPARSE, "bad json at line %d", 3), TPX_EPARSE);
    cr_expect_eq(tpx_err_set(&err, TPX_EIO, "later failure"), TPX_EPARSE);
    cr_expect_eq(err.code, TPX_EPARSE);
    cr_expect_str_eq(err.msg, "bad json at line 3");
}

Test(tpx_err, prefix_adds_context_outermost_first)
{
    struct tpx_err err = TPX_ERR_INIT;

    tpx_err_set(&err, TPX_EAPI, "HTTP 403: forbidden");
    tpx_err_prefix(&err, "patch node '%s'", "gpu-7");
    tpx_err_prefix(&err, "label");
    cr_expect_str_eq(err.msg, "label: patch node 'gpu-7': HTTP 403: forbidden");
}

Test(tpx_err, prefix_without_error_is_noop)
{
    struct tpx_err err = TPX_ERR_INIT;

    tpx_err_prefix(&err, "context");
    cr_expect_eq(err.code, TPX_OK);
    cr_expect_str_eq(err.msg, "");
}

Test(tpx_err, errno_keeps_number_and_text)
{
    static const struct {
        int errnum;
        enum tpx_code want;
    } cases[] = {
        {ENOENT, TPX_ENOENT}, {ENOMEM, TPX_ENOMEM}, {EACCES, TPX_EIO}, {EEXIST, TPX_EEXIST}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        char want[300];

        tpx_err_errno(&err, cases[i].errnum, "open '%s'", "x.yaml");
        snprintf(want, sizeof(want), "open 'x.yaml': %s", strerror(cases[i].errnum));
        cr_expect_eq(err.code, cases[i].want, "case %zu", i);
        cr_expect_eq(err.sys_errno, cases[i].errnum, "case %zu", i);
        cr_expect_str_eq(err.msg, want, "case %zu", i);
    }
}

Test(tpx_err, long_messages_are_cut_not_overrun)
{
    struct tpx_err err = TPX_ERR_INIT;
    char big[1000];

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    tpx_err_set(&err, TPX_EINVAL, "%s", big);
    cr_expect_eq(strlen(err.msg), sizeof(err.msg) - 1);
    tpx_err_prefix(&err, "%s", "ctx");
    cr_expect_eq(strlen(err.msg), sizeof(err.msg) - 1);
    cr_expect(strncmp(err.msg, "ctx: aaa", 8) == 0);
}

Test(tpx_err, clear_allows_reuse_and_names_are_stable)
{
    struct tpx_err err = TPX_ERR_INIT;

    tpx_err_set(&err, TPX_EIO, "x");
    tpx_err_clear(&err);
    cr_expect_eq(tpx_err_set(&err, TPX_ETOOBIG, "y"), TPX_ETOOBIG);
    cr_expect_str_eq(tpx_code_name(TPX_EPARSE), "parse");
    cr_expect_str_eq(tpx_code_name((enum tpx_code)999), "unknown");
}
