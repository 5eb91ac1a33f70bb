/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_help.c - `--help` tells the truth. For the real binary:
 *   - `topox --help` lists exactly the commands of main.c's table, and `topox help CMD` prints
 *     what `topox CMD --help` prints;
 *   - every long flag a command's source accepts (its getopt table; serve's also from
 *     extender/config.c's settings table) is in its --help, and every flag its --help shows is
 *     accepted: one shown with a value is refused without one ("needs a value"), one shown without
 *     a value is refused with one ("takes no value");
 *   - every default its --help states ("(default X)", "X (default)") is the default: the command
 *     run with `--flag=X` prints exactly what it prints without the flag.
 * Which kinds `plan -f` reads is not checked here (the kinds' list is objects/' to keep). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_FLAGS 96
#define MAX_CMDS 16

struct flag {
    char name[48];  /* without the dashes */
    bool value;     /* the help shows a value (METAVAR) */
    bool optional;  /* ... in brackets: --x[=BOOL] */
    char def[128];  /* the default the help states, "" when none or not a literal */
    char text[512]; /* the help text, continuation lines included */
};

static size_t help_flags(const char *help, struct flag *out, size_t max)
{
    regex_t re;
    regmatch_t m[5];
    size_t n = 0;

    /* "  -o, --output FMT  text" / "  --insecure-listen[=BOOL] text" / "  --dry-run  text" */
    cr_assert_eq(regcomp(&re,
                         "^  (-[a-zA-Z], )?--([a-z0-9-]+)(\\[=[A-Z]+\\]| [A-Z][A-Z_=:.|,]*)?( |$)",
                         REG_EXTENDED | REG_NEWLINE),
                 0);
    for (const char *l = help; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        char line[600];

        snprintf(line, sizeof(line), "%.*s", (int)len, l);
        if (regexec(&re, line, 5, m, 0) == 0) {
            struct flag *f;
            cr_assert_lt(n, max);
            f = &out[n++];
            memset(f, 0, sizeof(*f));
            snprintf(f->name, sizeof(f->name), "%.*s", (int)(m[2].rm_eo - m[2].rm_so),
                     line + m[2].rm_so);
            f->value = m[3].rm_so >= 0;
            f->optional = f->value && line[m[3].rm_so] == '[';
            snprintf(f->text, sizeof(f->text), "%s", line + m[0].rm_eo);
        } else if (n > 0 && strncmp(line, "    ", 4) == 0) {
            /* a continuation of the last flag's text */
            size_t used = strlen(out[n - 1].text);
            snprintf(out[n - 1].text + used, sizeof(out[n - 1].text) - used, " %s", line);
        } else if (n > 0 && len == 0) {
            break; /* the flags end at the first blank line after them */
        }
    }
    regfree(&re);
    return n;
}

/* The default a flag's text states as a literal value, into f->def (left "" otherwise):
 * "X (default" and "(default X)" / "(default: X;" where X ends with ) ; , or :. */
static void find_default(struct flag *f)
{
    regex_t before, after;
    regmatch_t m[3];
    char v[128] = "";

    cr_assert_eq(regcomp(&before, "([^ (]+) \\((the )?default[),]", REG_EXTENDED), 0);
    cr_assert_eq(regcomp(&after, "\\(default:? ([^ ]+)", REG_EXTENDED), 0);
    if (regexec(&before, f->text, 3, m, 0) == 0) {
        snprintf(v, sizeof(v), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), f->text + m[1].rm_so);
    } else if (regexec(&after, f->text, 3, m, 0) == 0) {
        size_t l;
        snprintf(v, sizeof(v), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), f->text + m[1].rm_so);
        l = strlen(v);
        /* a literal ends the phrase: "10s;", "false)", "0:"; "the context's ..." does not */
        if (l == 0 || !strchr(");,:", v[l - 1]))
            v[0] = '\0';
    }
    regfree(&before);
    regfree(&after);
    for (size_t l = strlen(v); l > 0 && strchr(");,:\"'", v[l - 1]); l--)
        v[l - 1] = '\0';
    if (v[0] == '"' || v[0] == '\'')
        memmove(v, v + 1, strlen(v));
    /* words that name no value: "none", "CPUs" (a count found at run time), $VARIABLES */
    if (strcmp(v, "none") == 0 || strcmp(v, "CPUs") == 0 || v[0] == '$' ||
        !isalnum((unsigned char)v[0]))
        v[0] = '\0';
    snprintf(f->def, sizeof(f->def), "%s", v);
}

/* The long flags a source file declares: getopt tables {"name", x_argument, ...} and
 * settings tables .flag = "name". */
static size_t source_flags(const char *path, char names[][48], size_t n, size_t max)
{
    char *src = read_file(path, NULL);
    regex_t re;
    regmatch_t m[5];

    cr_assert_not_null(src, "cannot read %s", path);
    cr_assert_eq(regcomp(&re,
                         "(\\{\"([a-z0-9-]+)\", *(no|required|optional)_argument|\\.flag = "
                         "\"([a-z0-9-]+)\")",
                         REG_EXTENDED),
                 0);
    for (const char *p = src; regexec(&re, p, 5, m, 0) == 0; p += m[0].rm_eo) {
        const regmatch_t *g = m[2].rm_so >= 0 ? &m[2] : &m[4];

        cr_assert_lt(n, max);
        snprintf(names[n++], 48, "%.*s", (int)(g->rm_eo - g->rm_so), p + g->rm_so);
    }
    regfree(&re);
    free(src);
    return n;
}

/* The commands `topox --help` lists (without "help"). */
static size_t listed_commands(char names[][32])
{
    struct run_result r;
    const char *p;
    size_t n = 0;

    cr_assert_eq(run_topox((const char *[]){"--help", NULL}, NULL, &r), 0);
    cr_assert_eq(r.status, 0);
    p = strstr(r.out, "\ncommands:\n");
    cr_assert_not_null(p, "%s", r.out);
    for (p = p + 11; *p == ' '; p = strchr(p, '\n') + 1) {
        char name[32];
        if (sscanf(p, " %31s", name) == 1 && strcmp(name, "help") != 0)
            snprintf(names[n++], 32, "%s", name);
    }
    run_result_release(&r);
    return n;
}

Test(help, top_level_lists_the_command_table)
{
    char listed[MAX_CMDS][32];
    size_t n = listed_commands(listed);
    char *main_c = read_file(TPX_SOURCE_DIR "/cli/main.c", NULL);
    regex_t re;
    regmatch_t m[2];
    size_t in_table = 0;

    cr_assert_not_null(main_c);
    cr_assert_eq(regcomp(&re, "\\{\"([a-z]+)\", cmd_", REG_EXTENDED), 0);
    for (const char *p = main_c; regexec(&re, p, 2, m, 0) == 0; p += m[0].rm_eo) {
        char name[32];
        bool found = false;
        snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), p + m[1].rm_so);
        for (size_t i = 0; i < n; i++)
            found = found || strcmp(listed[i], name) == 0;
        cr_expect(found, "command '%s' of main.c's table is not in `topox --help`", name);
        in_table++;
    }
    cr_expect_eq(in_table, n, "`topox --help` lists %zu commands, the table has %zu", n, in_table);
    regfree(&re);
    free(main_c);
}

Test(help, each_commands_help_is_its_own_and_help_CMD_says_the_same)
{
    char listed[MAX_CMDS][32];
    size_t n = listed_commands(listed);

    for (size_t i = 0; i < n; i++) {
        struct run_result a, b;
        char head[64];

        cr_assert_eq(run_topox((const char *[]){listed[i], "--help", NULL}, NULL, &a), 0);
        cr_assert_eq(run_topox((const char *[]){"help", listed[i], NULL}, NULL, &b), 0);
        cr_expect_eq(a.status, 0, "%s --help: %s", listed[i], a.err);
        snprintf(head, sizeof(head), "usage: topox %s", listed[i]);
        cr_expect_eq(strncmp(a.out, head, strlen(head)), 0, "%s --help starts: %.60s", listed[i],
                     a.out);
        cr_expect_str_eq(a.out, b.out, "`topox help %s` differs from `topox %s --help`", listed[i],
                         listed[i]);
        run_result_release(&a);
        run_result_release(&b);
    }
}

/* The sources whose flags command `cmd` accepts. */
static size_t flags_of_source(const char *cmd, char names[][48], size_t max)
{
    char path[512];
    size_t n;

    snprintf(path, sizeof(path), "%s/cli/cmd_%s.c", TPX_SOURCE_DIR, cmd);
    n = source_flags(path, names, 0, max);
    if (strcmp(cmd, "serve") == 0)
        n = source_flags(TPX_SOURCE_DIR "/extender/config.c", names, n, max);
    return n;
}

static void help_of(const char *cmd, struct run_result *r)
{
    cr_assert_eq(run_topox((const char *[]){cmd, "--help", NULL}, NULL, r), 0);
    cr_assert_eq(r->status, 0);
}

Test(help, every_flag_the_code_accepts_is_in_the_help_and_back)
{
    char listed[MAX_CMDS][32];
    size_t n = listed_commands(listed);

    for (size_t c = 0; c < n; c++) {
        const char *cmd = listed[c];
        struct run_result h;
        struct flag *fl = calloc(MAX_FLAGS, sizeof(*fl));
        char src[MAX_FLAGS][48];
        size_t nf, ns;

        cr_assert_not_null(fl);
        help_of(cmd, &h);
        nf = help_flags(h.out, fl, MAX_FLAGS);
        ns = flags_of_source(cmd, src, MAX_FLAGS);
        for (size_t s = 0; s < ns; s++) {
            bool shown = false;
            for (size_t i = 0; i < nf; i++)
                shown = shown || strcmp(fl[i].name, src[s]) == 0;
            cr_expect(shown, "`topox %s` accepts --%s, its --help does not show it", cmd, src[s]);
        }
        for (size_t i = 0; i < nf; i++) {
            struct run_result r;
            char flag[64], eq[80], want[96];
            bool known = false;

            for (size_t s = 0; s < ns; s++)
                known = known || strcmp(fl[i].name, src[s]) == 0;
            cr_expect(known, "`topox %s --help` shows --%s, which its source does not declare", cmd,
                      fl[i].name);
            snprintf(flag, sizeof(flag), "--%s", fl[i].name);
            snprintf(eq, sizeof(eq), "--%s=x", fl[i].name);
            if (strcmp(fl[i].name, "help") == 0 || fl[i].optional)
                continue;
            /* shown with a value: refused without one; shown without: refused with one */
            cr_assert_eq(run_topox((const char *[]){cmd, fl[i].value ? flag : eq, NULL}, NULL, &r),
                         0);
            snprintf(want, sizeof(want), fl[i].value ? "'%s' needs a value" : "'%s' takes no value",
                     flag);
            cr_expect(r.status == 2 && strstr(r.err, want),
                      "`topox %s %s`: the help shows it %s a value, but it answered %d: %.200s",
                      cmd, fl[i].value ? flag : eq, fl[i].value ? "with" : "without", r.status,
                      r.err);
            run_result_release(&r);
        }
        free(fl);
        run_result_release(&h);
    }
}

/* A run of each command whose output depends on its flags' defaults and on nothing else. */
static const char *const *base_run(const char *cmd)
{
    static const char *const serve[] = {"serve", "--print-config", NULL};
    static const char *const plan[] = {
        "plan",      "-f",      TPX_SOURCE_DIR "/manifests/examples/vllm-lws-tp8-pp2.yaml",
        "--cluster", "example", NULL};
    static const char *const cluster[] = {"cluster", NULL};
    static const char *const simulate[] = {
        "simulate",   "--cluster",        "racks=2,nodes-per-rack=2",
        "--generate", "groups=6,gpus=32", NULL};
    static const char *const label[] = {"label", "--dry-run", "--topology-xml",
                                        TPX_FIXTURES "/hwloc/nvidia-dgx2h-16xV100-12nvswitch.xml",
                                        NULL};

    return strcmp(cmd, "serve") == 0      ? serve
           : strcmp(cmd, "plan") == 0     ? plan
           : strcmp(cmd, "cluster") == 0  ? cluster
           : strcmp(cmd, "simulate") == 0 ? simulate
           : strcmp(cmd, "label") == 0    ? label
                                          : NULL;
}

Test(help, every_stated_default_is_the_default, .timeout = 300)
{
    char listed[MAX_CMDS][32];
    size_t n = listed_commands(listed);
    size_t checked = 0;

    for (size_t c = 0; c < n; c++) {
        const char *const *base = base_run(listed[c]);
        struct run_result h, b;
        struct flag *fl;
        size_t nf, nb = 0;
        const char *args[32];

        if (!base)
            continue; /* version: no flags */
        fl = calloc(MAX_FLAGS, sizeof(*fl));
        cr_assert_not_null(fl);
        help_of(listed[c], &h);
        nf = help_flags(h.out, fl, MAX_FLAGS);
        while (base[nb])
            nb++;
        cr_assert_eq(run_topox(base + 0, NULL, &b), 0);
        cr_assert_eq(b.status, 0, "topox %s: %s", listed[c], b.err);
        for (size_t i = 0; i < nf; i++) {
            struct run_result r;
            char kv[256];

            find_default(&fl[i]);
            if (!fl[i].def[0])
                continue;
            snprintf(kv, sizeof(kv), "--%s=%s", fl[i].name, fl[i].def);
            memcpy(args, base, nb * sizeof(*args));
            args[nb] = kv;
            args[nb + 1] = NULL;
            cr_assert_eq(run_topox(args, NULL, &r), 0);
            cr_expect(r.status == b.status && strcmp(r.out, b.out) == 0,
                      "`topox %s` says --%s defaults to '%s', but `%s` changes what it prints "
                      "(exit %d): %.300s",
                      listed[c], fl[i].name, fl[i].def, kv, r.status, r.err);
            checked++;
            run_result_release(&r);
        }
        run_result_release(&b);
        run_result_release(&h);
        free(fl);
    }
    /* the defaults serve, plan, cluster and simulate state are found and tried */
    cr_expect_geq(checked, 25, "only %zu stated defaults were found", checked);
}
