/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_cluster.c - `topox cluster`: print a synthetic cluster as the NodeList kubectl would
 * print, to save, edit and feed back with `topox plan --nodes`. */
#include "cli/cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "common/buf.h"
#include "objects/cluster_load.h"
#include "objects/yamljson.h"
#include "topology/synthetic.h"

static const char usage[] =
    "usage: topox cluster [--spec SPEC] [-o json|yaml]\n"
    "\n"
    "Print a synthetic cluster as a Kubernetes NodeList (kind List, items of kind Node with\n"
    "labels, status.allocatable/capacity and a Ready condition). Save it, edit it, and feed it\n"
    "back with `topox plan --nodes FILE`.\n"
    "\n"
    "  -s, --spec SPEC    comma-separated key=value pairs, or \"example\" (the default):\n"
    "                     racks=N nodes-per-rack=N gpus-per-node=N interconnect=KIND\n"
    "                     resource=NAME domain-nodes=N domains-per-node=N blocks=N zones=N\n"
    "                     used=N rdma-nics=N no-rdma-racks=K\n"
    "                     example = " TOPO_SYNTHETIC_EXAMPLE "\n"
    "  -o, --output FMT   json (default) or yaml\n"
    "  -h, --help         this text\n"
    "\n"
    "exit status: 0 printed, 1 failed, 2 bad flag or spec\n";

int cmd_cluster(int argc, char **argv)
{
    static const struct option opts[] = {
        {"spec", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *spec = "example";
    const char *fmt = "json";
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = NULL;
    json_t *list = NULL;
    struct cmd_args a = {"topox cluster", usage, ":s:o:h", opts, argc, argv, NULL, 0, 0};
    int status = CMD_FAILED;
    int ch;

    while ((ch = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (ch) {
        case CMD_ARGS_EXIT:
            return a.status;
        case 's':
            spec = optarg;
            break;
        case 'o':
            fmt = optarg;
            break;
        }
    }
    if (strcmp(fmt, "json") != 0 && strcmp(fmt, "yaml") != 0) {
        fprintf(stderr, "topox cluster: -o '%s': use json or yaml\n", fmt);
        return CMD_USAGE;
    }
    c = topo_cluster_synthetic(spec, &err);
    if (!c) {
        fprintf(stderr, "topox cluster: --spec '%s': %s\n", spec, err.msg);
        return CMD_USAGE;
    }
    if (obj_cluster_to_nodelist(c, topo_synthetic_node_labels, &list, &err) != TPX_OK)
        goto out;
    if (strcmp(fmt, "json") == 0) {
        if (json_dumpf(list, stdout, JSON_INDENT(2)) != 0) {
            tpx_err_set(&err, TPX_EIO, "cannot write the node list");
            goto out;
        }
        fputc('\n', stdout);
    } else {
        struct tpx_buf b;
        tpx_buf_init(&b, (size_t)512 << 20);
        if (obj_yaml_dump(list, &b, &err) != TPX_OK) {
            tpx_buf_release(&b);
            goto out;
        }
        fwrite(b.data, 1, b.len, stdout);
        tpx_buf_release(&b);
    }
    status = CMD_OK;
out:
    if (status != CMD_OK)
        fprintf(stderr, "topox cluster: %s\n", err.msg);
    json_decref(list);
    topo_cluster_free(c);
    return status;
}
