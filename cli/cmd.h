/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd.h - the subcommands of `topox` (git's builtin.h).
 *
 * Adding a command:
 *   1. write cli/cmd_NAME.c with `int cmd_NAME(int argc, char **argv)`; argv[0] is "NAME";
 *   2. it reads its flags with cmd_args_next() (cli/args.h), which answers -h/--help on stdout with
 *      exit 0 and reports unknown flags, missing values and operands with the usage on stderr and
 *      exit 2, in the same words for every command; a bad value is exit 2 too;
 *   3. it returns the exit status (0 done, 1 failed, 2 usage, other values as its help says) and
 *      never calls exit(): main() checks stdout for write errors after it returns;
 *   4. add it to the table in main.c and to cli/CMakeLists.txt;
 *   5. add an integration test under tests/integration/ that runs it.
 */
#ifndef TPX_CLI_CMD_H
#define TPX_CLI_CMD_H

int cmd_serve(int argc, char **argv);
int cmd_label(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_version(int argc, char **argv);

/* Exit statuses shared by the commands. */
enum { CMD_OK = 0, CMD_FAILED = 1, CMD_USAGE = 2, CMD_REJECTED = 3 };

#endif
