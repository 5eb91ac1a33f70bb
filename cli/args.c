/* SPDX-License-Identifier: Apache-2.0 */
/* cli/args.c - getopt_long() the same way for every command (see args.h). */
#include "cli/args.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"

int cmd_args_usage_error(const struct cmd_args *a, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", a->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n%s", a->usage);
    return CMD_USAGE;
}

/* Whether the element getopt_long() stopped at is a long flag ("--name" or "--name=value") rather
 * than a short one. optopt is 0 for an unknown long flag and the option's val for a known one; a
 * "--" element with another optopt was left behind while getopt read a cluster of short flags in
 * the next element ("--dry-run -xo"). */
static int is_long(const struct cmd_args *a, const char *elem)
{
    size_t len;

    if (strncmp(elem, "--", 2) != 0 || !elem[2])
        return 0;
    if (optopt == 0)
        return 1;
    len = strcspn(elem + 2, "=");
    for (const struct option *o = a->longopts; o->name; o++) {
        if (o->val == optopt && strncmp(o->name, elem + 2, len) == 0)
            return 1; /* the name or an abbreviation of it, as getopt_long() takes them */
    }
    return 0;
}

/* Report the usage error getopt_long() returned as c (':' or '?'). */
static int flag_error(struct cmd_args *a, int c)
{
    const char *elem = optind > 0 && optind <= a->argc ? a->argv[optind - 1] : "";
    char flag[128];

    if (is_long(a, elem)) {
        snprintf(flag, sizeof(flag), "%.*s", (int)strcspn(elem, "="), elem);
        if (c == '?' && optopt != 0)
            return cmd_args_usage_error(a, "'%s' takes no value", flag);
    } else {
        snprintf(flag, sizeof(flag), "-%c", optopt);
    }
    if (c == ':')
        return cmd_args_usage_error(a, "'%s' needs a value", flag);
    return cmd_args_usage_error(a, "unknown flag '%s'", flag);
}

int cmd_args_next(struct cmd_args *a)
{
    int c;

    assert(a->optstring[0] == ':' && strchr(a->optstring, 'h'));
    if (!a->started) {
        a->started = 1;
        optind = 1;
        opterr = 0;
    }
    c = getopt_long(a->argc, a->argv, a->optstring, a->longopts, NULL);
    switch (c) {
    case 'h':
        fputs(a->usage, stdout);
        a->status = CMD_OK;
        return CMD_ARGS_EXIT;
    case ':':
    case '?':
        a->status = flag_error(a, c);
        return CMD_ARGS_EXIT;
    case -1:
        if (optind < a->argc) {
            a->status = cmd_args_usage_error(
                a, "unexpected argument '%s'%s%s%s", a->argv[optind], a->operands_hint ? " (" : "",
                a->operands_hint ? a->operands_hint : "", a->operands_hint ? ")" : "");
            return CMD_ARGS_EXIT;
        }
        return CMD_ARGS_END;
    default:
        return c;
    }
}
