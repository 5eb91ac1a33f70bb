/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_label.c - `topox label`: discover this node (hwloc) -> topox.io/... labels and the
 * topox.io/topology annotation -> merge PATCH of the own Node (or --dry-run to stdout); and
 * `--inventory FILE`: rack/block/nvlink-domain labels for every listed node. */
#include "cli/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "common/log.h"
#include "common/parse.h"
#include "objects/inventory.h"
#include "kube/bodies.h"
#include "objects/label_patch.h"
#include "topology/discover.h"

static const char usage_text[] =
    "usage: topox label [--dry-run] [-o labels|json] [--topology-xml FILE | --fsroot DIR]\n"
    "                   [--node NAME] [--interval DURATION] [--kubeconfig FILE] [--insecure]\n"
    "                   [--interconnect NAME] [--domain-size N]\n"
    "       topox label --inventory FILE [--nodes FILE] [--dry-run] [-o labels|json]\n"
    "\n"
    "Discover this node's accelerators, their interconnect and RDMA NICs with hwloc and publish\n"
    "them as topox.io/... node labels plus the topox.io/topology annotation (JSON). Only\n"
    "topox.io/... keys are touched; stale ones are removed; nothing is sent when nothing changed.\n"
    "\n"
    "  --dry-run            print what would be set instead of patching the Node\n"
    "  -o, --output FORMAT  labels (key=value lines, default) or json\n"
    "  --topology-xml FILE  read an `lstopo --of xml` export instead of this host\n"
    "  --fsroot DIR         read a captured Linux /sys and /proc tree (hwloc HWLOC_FSROOT)\n"
    "  --node NAME          the Node to patch (default: $NODE_NAME, from the downward API)\n"
    "  --interval DURATION  keep running, relabel every DURATION (e.g. 30s, 5m, 1h) until SIGTERM\n"
    "  --kubeconfig FILE    API server access (default: $KUBECONFIG, else in-cluster)\n"
    "  --insecure           allow a plain http:// API server (refused otherwise)\n"
    "  --interconnect NAME  say what hwloc cannot see: hccs, nvlink, nvswitch, xgmi or pcie\n"
    "                       (Ascend HCCS has no hwloc distance matrix)\n"
    "  --domain-size N      accelerators per fully connected set, split in PCI bus order\n"
    "                       (e.g. 4 for the two HCCS rings of an 8-NPU Atlas 800 9000)\n"
    "  --inventory FILE     YAML or .csv map node -> rack, block, nvlink-domain; sets\n"
    "                       topox.io/rack, topox.io/block, topox.io/nvlink-domain on every listed "
    "node\n"
    "  --nodes FILE         with --inventory: the cluster's nodes (kubectl get nodes -o "
    "json|yaml)\n"
    "                       instead of asking the API server\n"
    "  -h, --help           this text\n"
    "\n"
    "exit status: 0 done, 1 failed, 2 usage or unreadable input\n";

enum out_format { OUT_LABELS, OUT_JSON };

struct label_opts {
    bool dry_run;
    enum out_format format;
    enum topo_source_kind source;
    const char *path;
    const char *node;
    const char *kubeconfig;
    bool insecure; /* --insecure: allow an http:// API server */
    const char *inventory;
    const char *nodes;
    long interval_s;
    enum topo_fabric fabric; /* --interconnect; UNKNOWN: as discovered */
    unsigned domain_size;    /* --domain-size; 0: as discovered */
};

/* The longest --interval: 1000000h, the most `label` took before durations had one parser. */
#define INTERVAL_MAX_S (1000000ULL * 3600)

static int parse_opts(int argc, char **argv, struct label_opts *o)
{
    enum {
        O_DRY = 256,
        O_XML,
        O_FSROOT,
        O_NODE,
        O_INTERVAL,
        O_KUBECONFIG,
        O_INSECURE,
        O_INVENTORY,
        O_NODES,
        O_INTERCONNECT,
        O_DOMAIN_SIZE
    };
    static const struct option longopts[] = {
        {"dry-run", no_argument, NULL, O_DRY},
        {"output", required_argument, NULL, 'o'},
        {"topology-xml", required_argument, NULL, O_XML},
        {"fsroot", required_argument, NULL, O_FSROOT},
        {"node", required_argument, NULL, O_NODE},
        {"interval", required_argument, NULL, O_INTERVAL},
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"insecure", no_argument, NULL, O_INSECURE},
        {"inventory", required_argument, NULL, O_INVENTORY},
        {"nodes", required_argument, NULL, O_NODES},
        {"interconnect", required_argument, NULL, O_INTERCONNECT},
        {"domain-size", required_argument, NULL, O_DOMAIN_SIZE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cmd_args a = {"topox label", usage_text, ":ho:", longopts, argc, argv, NULL, 0, 0};
    struct tpx_err err = TPX_ERR_INIT;
    uint64_t interval;
    int c;

    memset(o, 0, sizeof(*o));
    while ((c = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (c) {
        case CMD_ARGS_EXIT:
            return a.status == CMD_OK ? -1 : a.status;
        case O_DRY:
            o->dry_run = true;
            break;
        case 'o':
            if (strcmp(optarg, "labels") == 0)
                o->format = OUT_LABELS;
            else if (strcmp(optarg, "json") == 0)
                o->format = OUT_JSON;
            else
                return cmd_args_usage_error(&a, "unknown output format '%s' (labels or json)",
                                            optarg);
            break;
        case O_XML:
        case O_FSROOT:
            if (o->path)
                return cmd_args_usage_error(&a, "%s",
                                            "--topology-xml and --fsroot exclude each other");
            o->source = c == O_XML ? TOPO_SOURCE_XML : TOPO_SOURCE_FSROOT;
            o->path = optarg;
            break;
        case O_NODE:
            o->node = optarg;
            break;
        case O_INTERVAL:
            if (tpx_parse_duration(optarg, &interval, &err) != TPX_OK || interval == 0 ||
                interval > INTERVAL_MAX_S)
                return cmd_args_usage_error(&a, "bad --interval '%s' (e.g. 30s, 5m, 1h)", optarg);
            o->interval_s = (long)interval;
            break;
        case O_KUBECONFIG:
            o->kubeconfig = optarg;
            break;
        case O_INSECURE:
            o->insecure = true;
            break;
        case O_INVENTORY:
            o->inventory = optarg;
            break;
        case O_NODES:
            o->nodes = optarg;
            break;
        case O_INTERCONNECT:
            if (!topo_fabric_parse(optarg, &o->fabric) || o->fabric == TOPO_FABRIC_UNKNOWN)
                return cmd_args_usage_error(
                    &a,
                    "unknown --interconnect '%s' (hccs, nvlink, nvswitch, xgmi or "
                    "pcie)",
                    optarg);
            break;
        case O_DOMAIN_SIZE: {
            char *end = NULL;
            unsigned long v;

            errno = 0;
            v = strtoul(optarg, &end, 10);
            if (errno || !end || *end || end == optarg || v == 0 || v > 1024 || optarg[0] == '-')
                return cmd_args_usage_error(&a, "bad --domain-size '%s' (a count from 1 to 1024)",
                                            optarg);
            o->domain_size = (unsigned)v;
            break;
        }
        }
    }
    if (o->inventory && (o->path || o->interval_s || o->fabric || o->domain_size))
        return cmd_args_usage_error(&a, "%s",
                                    "--inventory takes no --topology-xml, --fsroot, --interval, "
                                    "--interconnect or --domain-size");
    if (o->nodes && !o->inventory)
        return cmd_args_usage_error(&a, "%s", "--nodes goes with --inventory");
    if (!o->node)
        o->node = getenv("NODE_NAME");
    if (!o->inventory && !o->dry_run && (!o->node || !*o->node))
        return cmd_args_usage_error(&a, "%s",
                                    "no node to label: pass --node NAME or set NODE_NAME "
                                    "(or use --dry-run)");
    return 0;
}

static void fail_line(const struct tpx_err *err)
{
    fprintf(stderr, "topox label: %s\n", err->msg);
}

/* ---- discovery mode ---- */

struct discovered {
    struct topo_label_set labels;
    char *annotation; /* malloc'd JSON text */
};

static enum tpx_code discover(const struct label_opts *o, struct discovered *out,
                              struct tpx_err *err)
{
    struct topo_discovery d;
    struct tpx_buf b;

    out->annotation = NULL;
    if (topo_discover(o->source, o->path, &d, err) != TPX_OK ||
        ((o->fabric != TOPO_FABRIC_UNKNOWN || o->domain_size) &&
         topo_discovery_override(&d, o->fabric, o->domain_size, err) != TPX_OK)) {
        topo_discovery_release(&d);
        return err->code;
    }
    topo_discovery_labels(&d, &out->labels);
    tpx_buf_init(&b, 256 * 1024); /* the API server's limit on all annotations of an object */
    if (topo_discovery_annotation(&d, topo_hwloc_version(), &b, err) == TPX_OK) {
        out->annotation = tpx_buf_detach(&b, NULL);
        if (!out->annotation)
            tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    tpx_buf_release(&b);
    topo_discovery_release(&d);
    return err->code;
}

static void print_discovered(const struct label_opts *o, const struct discovered *ds,
                             const char *node)
{
    if (o->format == OUT_LABELS) {
        for (size_t i = 0; i < ds->labels.n; i++)
            printf("%s=%s\n", ds->labels.v[i].key, ds->labels.v[i].value);
        printf("annotation %s=%s\n", TOPO_ANNOTATION_TOPOLOGY, ds->annotation);
        return;
    }
    {
        json_t *root = json_object();
        json_t *labels = json_object();
        json_t *ann = json_object();
        json_t *topo = json_loads(ds->annotation, 0, NULL);
        char *text;

        for (size_t i = 0; i < ds->labels.n; i++)
            json_object_set_new(labels, ds->labels.v[i].key, json_string(ds->labels.v[i].value));
        json_object_set_new(ann, TOPO_ANNOTATION_TOPOLOGY, json_string(ds->annotation));
        json_object_set_new(root, "node", node ? json_string(node) : json_null());
        json_object_set_new(root, "labels", labels);
        json_object_set_new(root, "annotations", ann);
        json_object_set_new(root, "topology", topo ? topo : json_null());
        text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(root);
    }
}

/* The Node's labels and topology annotation from the API server. */
static enum tpx_code get_node(struct kube_client *k, const char *node, struct obj_nodelist *out,
                              struct tpx_err *err)
{
    char path[512];
    json_t *doc = NULL;

    memset(out, 0, sizeof(*out));
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    if (kube_get_json(k, path, &doc, err) != TPX_OK) {
        tpx_err_prefix(err, "get node '%s'", node);
        return err->code;
    }
    obj_nodelist_add_json(out, doc, path, err);
    json_decref(doc);
    return err->code;
}

static enum tpx_code patch_one(struct kube_client *k, const struct obj_label_scope *scope,
                               const struct obj_node_entry *cur, const struct obj_kv *want,
                               size_t n_want, const char *annotation, struct obj_label_diff *diff,
                               struct tpx_err *err)
{
    char *body = NULL;

    if (obj_label_patch_build(scope, cur->labels, cur->n_labels, want, n_want,
                              TOPO_ANNOTATION_TOPOLOGY, cur->topology, annotation, &body, diff,
                              err) != TPX_OK) {
        tpx_err_prefix(err, "patch node '%s'", cur->name);
        return err->code;
    }
    if (body && k)
        kube_patch_node(k, cur->name, body, err); /* its message names the node already */
    free(body);
    return err->code;
}

static struct kube_client *kube_open(const struct label_opts *o, struct tpx_err *err)
{
    struct kube_config cfg;
    struct kube_client *k = NULL;

    memset(&cfg, 0, sizeof(cfg));
    if (kube_config_load(o->kubeconfig, &cfg, err) == TPX_OK &&
        kube_config_check_scheme(&cfg, o->insecure, "--insecure", err) == TPX_OK)
        k = kube_client_new(&cfg, err);
    kube_config_release(&cfg);
    if (!k)
        tpx_err_prefix(err, "kubernetes API");
    return k;
}

static enum tpx_code label_once(const struct label_opts *o, struct kube_client *k, const char *node,
                                struct tpx_err *err)
{
    struct discovered ds;
    struct obj_nodelist cur;
    struct obj_kv want[TOPO_LABELS_MAX];
    struct obj_label_diff diff;

    if (discover(o, &ds, err) != TPX_OK) {
        free(ds.annotation);
        return err->code;
    }
    if (o->dry_run) {
        print_discovered(o, &ds, node);
        free(ds.annotation);
        return TPX_OK;
    }
    for (size_t i = 0; i < ds.labels.n; i++)
        want[i] = (struct obj_kv){ds.labels.v[i].key, ds.labels.v[i].value};
    if (get_node(k, node, &cur, err) == TPX_OK && cur.n == 1 &&
        patch_one(k, obj_label_scope_discovery(), &cur.nodes[0], want, ds.labels.n, ds.annotation,
                  &diff, err) == TPX_OK) {
        TPX_LOG(TPX_INFO, "node labelled", TPX_S("node", node), TPX_I("set", diff.set),
                TPX_I("removed", diff.removed), TPX_I("unchanged", diff.unchanged),
                TPX_I("annotation", diff.annotation));
        printf("node %s: %zu labels set, %zu removed, %zu unchanged%s\n", node, diff.set,
               diff.removed, diff.unchanged, diff.annotation ? ", annotation updated" : "");
        fflush(stdout);
    }
    obj_nodelist_release(&cur);
    free(ds.annotation);
    return err->code;
}

/* Wait up to seconds for SIGTERM/SIGINT (blocked by the caller). true when one came. */
static bool wait_signal(const sigset_t *set, long seconds)
{
    struct timespec ts = {seconds, 0};

    for (;;) {
        int s = sigtimedwait(set, NULL, &ts);

        if (s > 0)
            return true;
        if (errno == EAGAIN)
            return false;
        /* EINTR: another signal; waiting again restarts the interval, which is harmless. */
    }
}

static int run_discovery(const struct label_opts *o)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct kube_client *k = NULL;
    const char *node = o->node; /* parse_opts() made sure there is one unless --dry-run */
    sigset_t set;
    int status = CMD_OK;

    if (!o->dry_run) {
        k = kube_open(o, &err);
        if (!k) {
            fail_line(&err);
            return CMD_FAILED;
        }
    }
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (o->interval_s)
        sigprocmask(SIG_BLOCK, &set, NULL);
    for (;;) {
        tpx_err_clear(&err);
        if (label_once(o, k, node, &err) != TPX_OK) {
            /* Unreadable input is the user's to fix (exit 2); anything else is a failure. In a
             * loop, a failed round is logged and retried at the next interval. */
            status = (err.code == TPX_EPARSE || err.code == TPX_ENOENT || err.code == TPX_EINVAL)
                         ? CMD_USAGE
                         : CMD_FAILED;
            if (o->interval_s && status == CMD_FAILED)
                TPX_LOG(TPX_WARN, "label failed", TPX_S("node", node ? node : ""),
                        TPX_S("code", tpx_code_name(err.code)), TPX_S("err", err.msg));
            else
                fail_line(&err);
        } else {
            status = CMD_OK;
        }
        if (!o->interval_s || status == CMD_USAGE)
            break;
        if (wait_signal(&set, o->interval_s)) {
            status = CMD_OK;
            break;
        }
    }
    kube_client_free(k);
    return status;
}

/* ---- inventory mode ---- */

static int run_inventory(const struct label_opts *o)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_inventory inv;
    struct obj_nodelist nodes;
    struct kube_client *k = NULL;
    bool have_nodes = false;
    json_t *report = json_object();
    json_t *rows = json_array();
    json_t *missing_cluster = json_array();
    json_t *missing_inv = json_array();
    size_t patched = 0;
    int status = CMD_OK;

    memset(&nodes, 0, sizeof(nodes));
    if (obj_inventory_load(o->inventory, &inv, &err) != TPX_OK) {
        fail_line(&err);
        status = CMD_USAGE;
        goto out;
    }
    if (o->nodes) {
        if (obj_nodelist_load(o->nodes, &nodes, &err) != TPX_OK) {
            fail_line(&err);
            status = CMD_USAGE;
            goto out;
        }
        have_nodes = true;
    }
    if (!o->dry_run || !have_nodes) {
        if (o->dry_run && !have_nodes) {
            /* Dry run without --nodes: print the wanted labels only, no comparison. */
        } else {
            json_t *doc = NULL;

            k = kube_open(o, &err);
            if (!k || kube_get_json(k, "/api/v1/nodes", &doc, &err) != TPX_OK ||
                (!have_nodes && obj_nodelist_add_json(&nodes, doc, "/api/v1/nodes", &err))) {
                json_decref(doc);
                fail_line(&err);
                status = CMD_FAILED;
                goto out;
            }
            json_decref(doc);
            have_nodes = true;
        }
    }
    for (size_t i = 0; i < inv.n; i++) {
        const struct obj_inventory_row *r = &inv.rows[i];
        const struct obj_node_entry *cur = have_nodes ? obj_nodelist_find(&nodes, r->node) : NULL;
        struct obj_kv want[3];
        size_t nw = obj_inventory_row_labels(r, want);
        json_t *row = json_object();
        json_t *labels = json_object();
        struct obj_label_diff diff = {0};

        for (size_t j = 0; j < nw; j++)
            json_object_set_new(labels, want[j].key, json_string(want[j].value));
        json_object_set_new(row, "node", json_string(r->node));
        json_object_set_new(row, "labels", labels);
        if (have_nodes && !cur) {
            json_array_append_new(missing_cluster, json_string(r->node));
            json_object_set_new(row, "in_cluster", json_false());
        } else if (cur) {
            if (patch_one(o->dry_run ? NULL : k, obj_label_scope_inventory(), cur, want, nw, NULL,
                          &diff, &err) != TPX_OK) {
                fail_line(&err);
                status = CMD_FAILED;
                json_decref(row);
                goto out;
            }
            json_object_set_new(row, "in_cluster", json_true());
            json_object_set_new(row, "changed", json_boolean(diff.set || diff.removed));
            if (diff.set || diff.removed)
                patched++;
        }
        json_array_append_new(rows, row);
        if (o->format == OUT_LABELS) {
            printf("%s", r->node);
            for (size_t j = 0; j < nw; j++)
                printf(" %s=%s", want[j].key, want[j].value);
            if (have_nodes)
                printf(cur ? ((diff.set || diff.removed)
                                  ? (o->dry_run ? " (would change)" : " (changed)")
                                  : " (unchanged)")
                           : " (not in the cluster)");
            printf("\n");
        }
    }
    for (size_t i = 0; have_nodes && i < nodes.n; i++) {
        if (!obj_inventory_find(&inv, nodes.nodes[i].name)) {
            json_array_append_new(missing_inv, json_string(nodes.nodes[i].name));
            if (o->format == OUT_LABELS)
                printf("# %s: in the cluster, not in the inventory\n", nodes.nodes[i].name);
        }
    }
    if (o->format == OUT_JSON) {
        char *text;

        json_object_set(report, "nodes", rows);
        if (have_nodes) {
            json_object_set(report, "not_in_cluster", missing_cluster);
            json_object_set(report, "not_in_inventory", missing_inv);
        }
        json_object_set_new(report, "dry_run", json_boolean(o->dry_run));
        text = json_dumps(report, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (text)
            printf("%s\n", text);
        free(text);
    }
    if (json_array_size(missing_cluster) || json_array_size(missing_inv))
        fprintf(stderr,
                "topox label: %zu inventory nodes are not in the cluster, %zu cluster "
                "nodes are not in the inventory\n",
                json_array_size(missing_cluster), json_array_size(missing_inv));
    if (!o->dry_run)
        TPX_LOG(TPX_INFO, "inventory applied", TPX_I("nodes", inv.n), TPX_I("changed", patched));
out:
    json_decref(report);
    json_decref(rows);
    json_decref(missing_cluster);
    json_decref(missing_inv);
    kube_client_free(k);
    obj_nodelist_release(&nodes);
    obj_inventory_release(&inv);
    return status;
}

int cmd_label(int argc, char **argv)
{
    struct label_opts o;
    int rc = parse_opts(argc, argv, &o);

    if (rc < 0)
        return CMD_OK; /* --help */
    if (rc > 0)
        return rc;
    if (o.inventory)
        return run_inventory(&o);
    return run_discovery(&o);
}
