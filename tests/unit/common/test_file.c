/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_file.c - whole reads, the cap, a missing file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"

static char path[64];

static void write_tmp(const char *text)
{
    FILE *f;
    int fd;

    snprintf(path, sizeof(path), "/tmp/tpx_file_XXXXXX");
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(tpx_file, reads_within_the_cap_and_refuses_over_it)
{
    static const struct {
        const char *text;
        size_t cap;
        enum tpx_code want;
    } cases[] = {
        {"", 10, TPX_OK},
        {"hello\n", 10, TPX_OK},
        {"0123456789", 10, TPX_OK},
        {"0123456789x", 10, TPX_ETOOBIG},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        char *data = (char *)"unset";
        size_t len = 99;

        write_tmp(cases[i].text);
        cr_expect_eq(tpx_read_file(path, cases[i].cap, &data, &len, &err), cases[i].want,
                     "case %zu: %s", i, err.msg);
        if (cases[i].want == TPX_OK) {
            cr_expect_str_eq(data, cases[i].text, "case %zu", i);
            cr_expect_eq(len, strlen(cases[i].text));
        } else {
            cr_expect_null(data);
            cr_expect_eq(len, 0);
            cr_expect(strstr(err.msg, path) != NULL, "%s", err.msg);
        }
        free(data);
        unlink(path);
    }
}

Test(tpx_file, a_missing_file_is_an_error_naming_it)
{
    struct tpx_err err = TPX_ERR_INIT;
    char *data;
    size_t len;

    cr_expect_neq(tpx_read_file("/nonexistent/tpx", 10, &data, &len, &err), TPX_OK);
    cr_expect_null(data);
    cr_expect(strstr(err.msg, "cannot open '/nonexistent/tpx'") != NULL, "%s", err.msg);
}
