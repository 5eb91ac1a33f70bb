/* SPDX-License-Identifier: Apache-2.0 */
/* cli/args.h - the one way every command line is read, topox's commands and topox-drive alike:
 * getopt_long() with a leading ':' in the optstring, so that a missing value is reported here;
 * -h/--help on stdout with exit 0; unknown flags, missing values and operands reported in one
 * wording, with the usage, on stderr with exit 2. cli-level code: nothing below cli/ includes it.
 *
 *     struct cmd_args a = {"topox plan", usage, ":f:o:h", longopts, argc, argv};
 *     while ((c = cmd_args_next(&a)) != CMD_ARGS_END) {
 *         switch (c) {
 *         case CMD_ARGS_EXIT:
 *             return a.status;
 *         case 'f': ...
 *         }
 *     }
 */
#ifndef TPX_CLI_ARGS_H
#define TPX_CLI_ARGS_H

#include <getopt.h>

struct cmd_args {
    const char *prog;              /* "topox plan": starts every message */
    const char *usage;             /* --help prints it on stdout; usage errors on stderr */
    const char *optstring;         /* getopt_long()'s: starts with ':' and has 'h' */
    const struct option *longopts; /* has {"help", no_argument, NULL, 'h'} */
    int argc;
    char **argv;
    const char *operands_hint; /* said after "unexpected argument 'X'" ("manifests go after -f"),
                                  or NULL */
    int status;                /* after CMD_ARGS_EXIT: what the command returns (0 or 2) */
    int started;               /* set by the first cmd_args_next() */
};

/* cmd_args_next() results besides an option's character or val. */
enum { CMD_ARGS_END = -1, CMD_ARGS_EXIT = -2 };

/* The next option, as getopt_long() returns it (optarg set when it takes a value). The first call
 * resets getopt (optind = 1, opterr = 0). Handles these itself and then returns CMD_ARGS_EXIT with
 * a->status set:
 *   -h, --help                   the usage on stdout; status 0
 *   an unknown flag              "PROG: unknown flag '--x'"
 *   a flag without its value     "PROG: '--x' needs a value"
 *   a value for a plain flag     "PROG: '--x' takes no value"
 *   an operand after the flags   "PROG: unexpected argument 'x'"
 * each followed by a blank line and the usage on stderr; status 2. CMD_ARGS_END after the last
 * flag. Not reentrant: getopt's state is global. */
int cmd_args_next(struct cmd_args *a);

/* "PROG: message", a blank line and the usage on stderr, for a bad value of a known flag. Returns
 * 2, the usage exit status. */
int cmd_args_usage_error(const struct cmd_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
