/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_cli.c - the command table: help, usage errors (one wording for every
 * command), version, stdout errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

Test(cli, help_lists_every_command)
{
    static const char *const names[] = {"serve", "plan", "label", "cluster", "version", "help"};
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        cr_expect(strstr(r.out, names[i]) != NULL, "help lacks '%s':\n%s", names[i], r.out);
    run_result_release(&r);
}

Test(cli, help_command_shows_its_flags)
{
    static const char *const cmds[] = {"serve", "plan", "label", "cluster", "version"};

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        struct run_result r;
        char want[64];

        cr_assert_eq(run_topox((const char *[]){"help", cmds[i], NULL}, NULL, &r), 0);
        snprintf(want, sizeof(want), "usage: topox %s", cmds[i]);
        cr_expect_eq(r.status, 0, "help %s: %s", cmds[i], r.err);
        cr_expect(strstr(r.out, want) != NULL, "help %s:\n%s", cmds[i], r.out);
        run_result_release(&r);
    }
}

Test(cli, unknown_command_and_flag_exit_2_with_usage)
{
    const char *const *const cases[] = {
        (const char *[]){"frobnicate", NULL},
        (const char *[]){"--frobnicate", NULL},
        (const char *[]){"version", "--frobnicate", NULL},
        (const char *[]){"help", "frobnicate", NULL},
        (const char *[]){"--log-level", "loud", "version", NULL},
        (const char *[]){NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run_result r;

        cr_assert_eq(run_topox(cases[i], NULL, &r), 0);
        cr_expect_eq(r.status, 2, "case %zu: status %d", i, r.status);
        cr_expect(strstr(r.err, "usage") != NULL || strstr(r.err, "unknown") != NULL,
                  "case %zu: stderr says nothing useful: %s", i, r.err);
        cr_expect_eq(r.out_len, 0, "case %zu: usage errors go to stderr", i);
        run_result_release(&r);
    }
}

/* `topox CMD ARG` exits 2 with nothing on stdout and stderr starting with "topox CMD: " want. */
static void expect_usage_error(const char *cmd, const char *arg, const char *want)
{
    struct run_result r;
    char line[256];

    snprintf(line, sizeof(line), "topox %s: %s", cmd, want);
    cr_assert_eq(run_topox((const char *[]){cmd, arg, NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2, "%s %s", cmd, arg);
    cr_expect(strncmp(r.err, line, strlen(line)) == 0, "%s %s: want '%s', got: %s", cmd, arg, line,
              r.err);
    cr_expect_eq(r.out_len, 0, "%s %s", cmd, arg);
    run_result_release(&r);
}

/* Every command reads its flags the same way (cli/args.c): -h and --help on stdout with exit 0;
 * an unknown flag, a flag without its value, a value for a plain flag and an operand are named in
 * the same words, followed by a blank line and the usage, on stderr with exit 2. */
Test(cli, every_command_reports_usage_errors_in_the_same_words)
{
    static const struct {
        const char *cmd, *flag_with_value;
    } cmds[] = {{"serve", "--listen"},
                {"plan", "--output"},
                {"label", "--node"},
                {"cluster", "--spec"},
                {"version", NULL}};

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        const char *cmd = cmds[i].cmd;
        char want[128];
        struct run_result r;

        for (int h = 0; h < 2; h++) {
            cr_assert_eq(run_topox((const char *[]){cmd, h ? "-h" : "--help", NULL}, NULL, &r), 0);
            snprintf(want, sizeof(want), "usage: topox %s", cmd);
            cr_expect_eq(r.status, 0, "%s %s", cmd, h ? "-h" : "--help");
            cr_expect(strncmp(r.out, want, strlen(want)) == 0, "%s: %s", cmd, r.out);
            run_result_release(&r);
        }
        snprintf(want, sizeof(want), "unknown flag '--frobnicate'\n\nusage: topox %s", cmd);
        expect_usage_error(cmd, "--frobnicate", want);
        expect_usage_error(cmd, "-Z", "unknown flag '-Z'\n\n");
        expect_usage_error(cmd, "--help=yes", "'--help' takes no value\n\n");
        expect_usage_error(cmd, "stray", "unexpected argument 'stray'");
        if (cmds[i].flag_with_value) {
            snprintf(want, sizeof(want), "'%s' needs a value\n\n", cmds[i].flag_with_value);
            expect_usage_error(cmd, cmds[i].flag_with_value, want);
        }
    }
}

Test(cli, version_names_commit_and_five_libraries)
{
    static const char *const libs[] = {"libmicrohttpd", "jansson", "libcurl", "hwloc", "libyaml"};
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"version", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strncmp(r.out, "topox ", 6) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "(commit ") != NULL, "%s", r.out);
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        const char *p = strstr(r.out, libs[i]);
        cr_expect(p != NULL, "version lacks %s:\n%s", libs[i], r.out);
        /* a digit follows the name on the same line */
        if (p)
            cr_expect(strpbrk(p + strlen(libs[i]), "0123456789") < strchr(p, '\n'),
                      "%s has no version number", libs[i]);
    }
    run_result_release(&r);
}

Test(cli, write_error_on_stdout_exits_1)
{
    struct run_result r;

    /* /dev/full accepts the open and fails every write with ENOSPC. */
    cr_assert_eq(
        run_program("/bin/sh",
                    (const char *[]){"-c", "exec \"$0\" version >/dev/full", TOPOX_BIN, NULL}, NULL,
                    &r),
        0);
    cr_expect_eq(r.status, 1, "status %d, stderr %s", r.status, r.err);
    cr_expect(strstr(r.err, "write error") != NULL, "%s", r.err);
    run_result_release(&r);
}
