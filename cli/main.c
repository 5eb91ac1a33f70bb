/* SPDX-License-Identifier: Apache-2.0 */
/* cli/main.c - process setup, the command table, exit status and the stdout check. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "cli/cmd.h"
#include "kube/client.h"

enum { CMD_NEEDS_CURL = 1 << 0 };

struct cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned flags;
    const char *summary;
};

static const struct cmd commands[] = {
    {"serve", cmd_serve, CMD_NEEDS_CURL, "run the kube-scheduler extender HTTP server"},
    {"plan", cmd_plan, 0, "dry-run a job manifest against a cluster and print the placement"},
    {"label", cmd_label, CMD_NEEDS_CURL, "discover this node's accelerator topology and label it"},
    {"cluster", cmd_cluster, 0, "print a synthetic cluster as a Kubernetes NodeList"},
    {"diagnose", cmd_diagnose, CMD_NEEDS_CURL,
     "judge a PP placement by its benchmark and GPU metrics"},
    {"simulate", cmd_simulate, 0, "replay group arrivals and departures and compare policies"},
    {"version", cmd_version, 0, "print the version, commit and library versions"},
};

static const size_t ncommands = sizeof(commands) / sizeof(commands[0]);

static void usage(FILE *f)
{
    fprintf(f, "usage: topox [--log-level LEVEL] COMMAND [ARGS]\n"
               "       topox help COMMAND\n\n"
               "topology-aware placement of large-model workloads on Kubernetes\n\n"
               "commands:\n");
    for (size_t i = 0; i < ncommands; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-9s %s\n", "help", "show a command's flags");
    fprintf(f,
            "\nglobal flags:\n"
            "  --log-level LEVEL  debug, info (default), warn, error or off; logs are JSON lines "
            "on stderr\n"
            "  -h, --help         this text\n");
}

static const struct cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < ncommands; i++) {
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    }
    return NULL;
}

static int run_cmd(const struct cmd *c, int argc, char **argv)
{
    struct tpx_err err = TPX_ERR_INIT;
    int status;

    if ((c->flags & CMD_NEEDS_CURL) && kube_global_init(&err) != TPX_OK) {
        fprintf(stderr, "topox: %s\n", err.msg);
        return CMD_FAILED;
    }
    status = c->fn(argc, argv);
    if (c->flags & CMD_NEEDS_CURL)
        kube_global_cleanup();
    return status;
}

static int dispatch(int argc, char **argv)
{
    const struct cmd *c;
    int i = 1;

    while (i < argc && argv[i][0] == '-') {
        const char *a = argv[i];
        const char *level = NULL;
        enum tpx_log_level lv;

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return CMD_OK;
        }
        if (strcmp(a, "--version") == 0)
            return cmd_version(1, (char *[]){(char *)"version", NULL});
        if (strcmp(a, "--log-level") == 0 && i + 1 < argc)
            level = argv[++i];
        else if (strncmp(a, "--log-level=", 12) == 0)
            level = a + 12;
        if (!level) {
            fprintf(stderr, "topox: unknown flag '%s'\n\n", a);
            usage(stderr);
            return CMD_USAGE;
        }
        if (!tpx_log_parse_level(level, &lv)) {
            fprintf(stderr, "topox: unknown log level '%s'\n", level);
            return CMD_USAGE;
        }
        tpx_log_set_level(lv);
        i++;
    }
    if (i >= argc) {
        usage(stderr);
        return CMD_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 >= argc) {
            usage(stdout);
            return CMD_OK;
        }
        c = find_cmd(argv[i + 1]);
        if (!c) {
            fprintf(stderr, "topox: unknown command '%s'\n\n", argv[i + 1]);
            usage(stderr);
            return CMD_USAGE;
        }
        return c->fn(2, (char *[]){(char *)c->name, (char *)"--help", NULL});
    }
    c = find_cmd(argv[i]);
    if (!c) {
        fprintf(stderr, "topox: unknown command '%s'\n\n", argv[i]);
        usage(stderr);
        return CMD_USAGE;
    }
    return run_cmd(c, argc - i, argv + i);
}

int main(int argc, char **argv)
{
    int status;

    /* A peer that closes its socket must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    status = dispatch(argc, argv);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("topox: write error on standard output");
        return CMD_FAILED;
    }
    return status;
}
