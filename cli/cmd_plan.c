/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_plan.c - `topox plan`: a job manifest and a cluster (the live cluster, Node files, a
 * snapshot or a synthetic spec) -> pol_plan() through the same filter, score and commit as `topox
 * serve` -> a table and rack picture, JSON/YAML data, diagnosis records or SVG. Exit 0 placed, 3
 * rejected, 2 bad input.
 */
#include "cli/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/plan_live.h"
#include "common/buf.h"
#include "objects/cluster_load.h"
#include "objects/dra.h"
#include "objects/manifest.h"
#include "objects/schedfacts.h"
#include "cli/plan_render.h"
#include "objects/yamljson.h"
#include "policy/policy.h"
#include "topology/synthetic.h"

static const char usage_head[] =
    "usage: topox plan -f FILE... [--kubeconfig FILE] [--context NAME] [-n NAMESPACE]\n"
    "                  [--nodes FILE... [--pods FILE] | --snapshot FILE | --cluster SPEC]\n"
    "       topox plan --pending [-n NAMESPACE] [-l SELECTOR] [--snapshot FILE] [...]\n"
    "                  [-o table|json|yaml] [--record] [--svg FILE] [--explain-labels]\n"
    "\n"
    "Dry-run: place every pod of the job manifests on the cluster through the same filter, score\n"
    "and commit as `topox serve`, and print where each pod lands, a picture of the racks, the\n"
    "pipeline estimates per replica and the replicas that cannot be placed, with the reason.\n"
    "Without --nodes, --snapshot or --cluster it plans on the live cluster: it lists Nodes,\n"
    "bound Pods, ResourceSlices, ResourceClaims, DeviceClasses and PodGroups (read only; the\n"
    "ClusterRole topox-planner of manifests/planner-rbac.yaml grants exactly that).\n"
    "\n"
    "  -f, --filename FILE  job manifest, YAML or JSON, multi-document (repeatable; - is stdin):\n"
    "                       the kinds below, and Lists of them\n"
    "  --nodes FILE         Node objects as `kubectl get nodes -o json|yaml` prints them\n"
    "                       (repeatable)\n"
    "  --pods FILE          bound pods (`kubectl get pods -A -o json`): their accelerators are\n"
    "                       taken\n"
    "  --snapshot FILE      one List of Node, Pod, ResourceSlice, ResourceClaim, DeviceClass\n"
    "                       and PodGroup objects (`kubectl get nodes,pods,resourceslices,\n"
    "                       resourceclaims,deviceclasses -A -o json`): GPUs from DRA\n"
    "                       ResourceSlices, minus those allocated claims and bound pods hold\n"
    "  --cluster SPEC       a synthetic cluster instead (see `topox cluster --help`); \"example\"\n"
    "                       is 4 racks x 4 nodes x 8 GPUs on NVSwitch\n"
    "  --kubeconfig FILE    the live cluster's kubeconfig (default: $KUBECONFIG, then\n"
    "                       ~/.kube/config, then the pod's service account)\n"
    "  --context NAME       the kubeconfig context to use (default: its current-context)\n"
    "  -n, --namespace NS   namespace of the manifest's objects that name none (default: the\n"
    "                       context's namespace on the live cluster, else default)\n"
    "  --insecure           allow a plain http:// API server (refused otherwise)\n"
    "  --pending            plan the cluster's pending pods themselves, as they are (any\n"
    "                       operator's, once its pods exist): why is each pending, and where\n"
    "                       would it go; -n takes one namespace's, -f adds manifests\n"
    "  -l, --selector SEL   with --pending on the live cluster: only the pods with these labels\n"
    "                       (a label selector, sent to the API server)\n"
    "  -o, --output FMT     table (default), json or yaml\n"
    "  --record             with -o yaml/json: one diagnosis record per replica (model,\n"
    "                       hardware, parallelism, workload, utilization, status)\n"
    "  --svg FILE           also write the rack picture as SVG\n"
    "  --explain-labels     print which label key gave each node its domain, rack, block and\n"
    "                       zone (stdout with -o table, else stderr); -f is then optional\n"
    "  -h, --help           this text\n"
    "\n"
    "exit status: 0 every replica placed, 3 some rejected, 2 bad input or flag, 1 failure\n";

/* The usage: usage_head, then the kinds plan reads, printed from objects/manifest_kinds.c's
 * table so that the list cannot drift from what plan reads. */
static const char *plan_usage(void)
{
    static char buf[8192];
    size_t used;

    if (buf[0])
        return buf;
    used = (size_t)snprintf(buf, sizeof(buf),
                            "%s\nKinds read (by API group and kind; docs/workloads.md):\n",
                            usage_head);
    for (size_t i = 0; i < obj_manifest_nkinds() && used < sizeof(buf); i++) {
        const struct obj_kind_row *k = obj_manifest_kind(i);
        int w = snprintf(buf + used, sizeof(buf) - used, "  %-22s %s%s\n", k->kind, k->version,
                         k->pods ? "" : " (no pods of its own)");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used < sizeof(buf))
        snprintf(
            buf + used, sizeof(buf) - used, "%s",
            "  any other kind that embeds a pod template (`template` or `*Template` holding\n"
            "  spec.containers): expanded generically, its pod count from the size fields\n"
            "  beside the template, every layout uncertain (placed as preferred), with a note\n");
    return buf;
}

#define MAX_FILES 64

struct plan_opts {
    const char *files[MAX_FILES];
    size_t nfiles;
    const char *nodes[MAX_FILES];
    size_t nnodes;
    const char *pods;
    const char *snapshot;
    const char *cluster;
    const char *output;
    const char *svg;
    const char *namespace;
    struct cmd_plan_live_opts live;
    bool pending; /* --pending: plan the cluster's pending pods themselves */
    bool use_live;
    bool record;
    bool explain;
};

static int parse(int argc, char **argv, struct plan_opts *o)
{
    enum {
        OPT_NODES = 256,
        OPT_PODS,
        OPT_CLUSTER,
        OPT_RECORD,
        OPT_SVG,
        OPT_EXPLAIN,
        OPT_SNAPSHOT,
        OPT_KUBECONFIG,
        OPT_CONTEXT,
        OPT_INSECURE,
        OPT_PENDING
    };
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"nodes", required_argument, NULL, OPT_NODES},
        {"pods", required_argument, NULL, OPT_PODS},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"snapshot", required_argument, NULL, OPT_SNAPSHOT},
        {"output", required_argument, NULL, 'o'},
        {"record", no_argument, NULL, OPT_RECORD},
        {"svg", required_argument, NULL, OPT_SVG},
        {"explain-labels", no_argument, NULL, OPT_EXPLAIN},
        {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
        {"context", required_argument, NULL, OPT_CONTEXT},
        {"namespace", required_argument, NULL, 'n'},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"pending", no_argument, NULL, OPT_PENDING},
        {"selector", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cmd_args a = {
        "topox plan", plan_usage(), ":f:o:n:l:h", opts, argc, argv, "manifests go after -f", 0, 0};
    int ch;

    memset(o, 0, sizeof(*o));
    o->output = "table";
    while ((ch = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (ch) {
        case CMD_ARGS_EXIT:
            return a.status == CMD_OK ? -1 : a.status;
        case 'f':
            if (o->nfiles == MAX_FILES)
                goto too_many;
            o->files[o->nfiles++] = optarg;
            break;
        case OPT_NODES:
            if (o->nnodes == MAX_FILES)
                goto too_many;
            o->nodes[o->nnodes++] = optarg;
            break;
        case OPT_PODS:
            o->pods = optarg;
            break;
        case OPT_CLUSTER:
            o->cluster = optarg;
            break;
        case OPT_SNAPSHOT:
            o->snapshot = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        case OPT_RECORD:
            o->record = true;
            break;
        case OPT_SVG:
            o->svg = optarg;
            break;
        case OPT_EXPLAIN:
            o->explain = true;
            break;
        case OPT_KUBECONFIG:
            o->live.kubeconfig = optarg;
            break;
        case OPT_CONTEXT:
            o->live.context = optarg;
            break;
        case 'n':
            o->namespace = optarg;
            break;
        case OPT_INSECURE:
            o->live.insecure = true;
            break;
        case OPT_PENDING:
            o->pending = true;
            break;
        case 'l':
            o->live.selector = optarg;
            break;
        }
    }
    if (strcmp(o->output, "table") != 0 && strcmp(o->output, "json") != 0 &&
        strcmp(o->output, "yaml") != 0) {
        fprintf(stderr, "topox plan: -o '%s': use table, json or yaml\n", o->output);
        return CMD_USAGE;
    }
    if ((o->nnodes > 0) + (o->cluster != NULL) + (o->snapshot != NULL) > 1) {
        fprintf(stderr,
                "topox plan: give one of --nodes FILE, --snapshot FILE or --cluster SPEC (or "
                "none: the live cluster)\n%s",
                plan_usage());
        return CMD_USAGE;
    }
    o->use_live = !o->nnodes && !o->cluster && !o->snapshot;
    if (!o->use_live && (o->live.kubeconfig || o->live.context || o->live.insecure)) {
        fprintf(stderr, "topox plan: --kubeconfig, --context and --insecure read the live "
                        "cluster; they do not go with --nodes, --snapshot or --cluster\n");
        return CMD_USAGE;
    }
    if (o->pods && !o->nnodes) {
        fprintf(stderr, "topox plan: --pods goes with --nodes\n");
        return CMD_USAGE;
    }
    if (o->pending && !o->use_live && !o->snapshot) {
        fprintf(stderr, "topox plan: --pending plans the pods of a cluster: the live one, or "
                        "--snapshot FILE\n");
        return CMD_USAGE;
    }
    if (o->live.selector && (!o->pending || !o->use_live)) {
        fprintf(stderr, "topox plan: -l selects the live cluster's pending pods: it goes with "
                        "--pending\n");
        return CMD_USAGE;
    }
    o->live.pending = o->pending && o->use_live;
    o->live.pending_ns = o->namespace;
    if (o->nfiles == 0 && !o->explain && !o->pending) {
        fprintf(stderr, "topox plan: give a job manifest with -f FILE\n%s", plan_usage());
        return CMD_USAGE;
    }
    if (o->record && strcmp(o->output, "table") == 0)
        o->output = "yaml";
    return CMD_OK;
too_many:
    fprintf(stderr, "topox plan: more than %d files\n", MAX_FILES);
    return CMD_USAGE;
}

/* A synthetic cluster, with the label explanation its generated labels give. */
static enum tpx_code load_synthetic(const char *spec, struct obj_cluster_load_result *out,
                                    struct tpx_err *err)
{
    size_t n;

    memset(out, 0, sizeof(*out));
    out->cluster = topo_cluster_synthetic(spec, err);
    if (!out->cluster) {
        tpx_err_prefix(err, "--cluster '%s'", spec);
        return err->code;
    }
    n = topo_cluster_node_count(out->cluster);
    out->explain = calloc(n ? n : 1, sizeof(*out->explain));
    out->meta = calloc(n ? n : 1, sizeof(*out->meta));
    if (!out->explain || !out->meta)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        struct topo_kv kv[16];
        char storage[16][64];
        size_t nl = topo_synthetic_node_labels(out->cluster, i, kv, storage, 16);
        struct topo_node_info info;

        memset(&info, 0, sizeof(info));
        info.name = topo_cluster_node(out->cluster, i)->name;
        if (topo_labels_decode(NULL, kv, nl, NULL, 0, &info, &out->explain[i], err) != TPX_OK ||
            obj_node_meta_from_labels(info.name, kv, nl, &out->meta[i], err) != TPX_OK)
            return err->code;
        out->nmeta = i + 1;
    }
    out->nwarnings = topo_labels_hygiene(out->cluster, &out->warnings);
    return TPX_OK;
}

/* A snapshot's documents (a file's, or what cmd_plan_live_read() listed): its DRA objects, then the
 * Nodes with their DRA devices. */
static enum tpx_code load_snapshot_docs(const struct obj_yaml_docs *d, const char *name,
                                        struct obj_dra *dra, struct obj_cluster_load_result *out,
                                        struct tpx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (obj_dra_add_docs(dra, d->docs, d->n, err) != TPX_OK) {
        tpx_err_prefix(err, "%s", name);
        return err->code;
    }
    obj_dra_finish(dra);
    return obj_cluster_load_snapshot(d->docs, d->n, name, NULL, dra, out, err);
}

static enum tpx_code load_snapshot(const char *path, struct obj_yaml_docs *d, struct obj_dra *dra,
                                   struct obj_cluster_load_result *out, struct tpx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (obj_yaml_load_file(path, OBJ_CLUSTER_MAX_FILE, d, err) != TPX_OK)
        return err->code;
    return load_snapshot_docs(d, strcmp(path, "-") == 0 ? "<stdin>" : path, dra, out, err);
}

static void plan_note(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "topox plan: note: %s\n", line);
}

/* The live cluster as a snapshot of one List document in *d, named after the server in name. */
static enum tpx_code load_live(const struct plan_opts *o, struct obj_yaml_docs *d, char **ns,
                               char *name, size_t len, struct obj_dra *dra, json_t **pending,
                               struct obj_cluster_load_result *out, struct tpx_err *err)
{
    struct cmd_plan_live live;

    memset(out, 0, sizeof(*out));
    if (cmd_plan_live_read(&o->live, &live, plan_note, NULL, err) != TPX_OK)
        return err->code;
    d->docs = malloc(sizeof(*d->docs));
    if (!d->docs) {
        cmd_plan_live_release(&live);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    d->docs[0] = live.list;
    d->n = 1;
    live.list = NULL;
    snprintf(name, len, "%s", live.server);
    *ns = live.namespace;
    live.namespace = NULL;
    *pending = live.pending;
    live.pending = NULL;
    cmd_plan_live_release(&live);
    return load_snapshot_docs(d, name, dra, out, err);
}

/* Give every object of doc that names no namespace (List items included) namespace ns, as
 * `kubectl apply -n` does; cluster-scoped kinds (Cluster*) keep none. */
static void default_namespace(json_t *doc, const char *ns)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    json_t *md = json_object_get(doc, "metadata");
    json_t *items = json_object_get(doc, "items");
    size_t i;
    json_t *it;

    if (json_is_array(items) && kind && strstr(kind, "List")) {
        json_array_foreach(items, i, it) default_namespace(it, ns);
        return;
    }
    if (!kind || strncmp(kind, "Cluster", 7) == 0 || !json_is_object(md) ||
        json_string_value(json_object_get(md, "namespace")))
        return;
    json_object_set_new(md, "namespace", json_string(ns));
}

static enum tpx_code add_manifest(struct obj_manifest *m, const char *path, const char *ns,
                                  struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};

    if (!ns)
        return obj_manifest_add_file(m, path, err);
    if (obj_yaml_load_file(path, (size_t)64 << 20, &d, err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < d.n; i++)
        default_namespace(d.docs[i], ns);
    return obj_manifest_add_docs(m, &d, strcmp(path, "-") == 0 ? "<stdin>" : path, err);
}

/* The live cluster's PodGroups in namespace ns, for the job's pods that name a PodGroup its
 * manifest lacks (the manifest's own come first and win). */
static enum tpx_code add_cluster_podgroups(struct obj_manifest *m, const struct obj_yaml_docs *snap,
                                           const char *ns, const char *name, struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};
    json_t *items = json_object_get(snap->docs[0], "items");
    size_t i, n = 0;
    json_t *it;

    json_array_foreach(items, i, it)
    {
        const char *k = json_string_value(json_object_get(it, "kind"));
        const char *in =
            json_string_value(json_object_get(json_object_get(it, "metadata"), "namespace"));
        n += k && strcmp(k, "PodGroup") == 0 && in && strcmp(in, ns) == 0;
    }
    if (n == 0)
        return TPX_OK;
    d.docs = calloc(n, sizeof(*d.docs));
    if (!d.docs)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    json_array_foreach(items, i, it)
    {
        const char *k = json_string_value(json_object_get(it, "kind"));
        const char *in =
            json_string_value(json_object_get(json_object_get(it, "metadata"), "namespace"));
        if (k && strcmp(k, "PodGroup") == 0 && in && strcmp(in, ns) == 0)
            d.docs[d.n++] = json_incref(it);
    }
    return obj_manifest_add_docs(m, &d, name, err);
}

static int pod_order(const void *x, const void *y)
{
    const json_t *mx = json_object_get(*(json_t *const *)x, "metadata");
    const json_t *my = json_object_get(*(json_t *const *)y, "metadata");
    const char *nx = json_string_value(json_object_get(mx, "namespace"));
    const char *ny = json_string_value(json_object_get(my, "namespace"));
    int c = strcmp(nx ? nx : "", ny ? ny : "");

    if (c)
        return c;
    nx = json_string_value(json_object_get(mx, "name"));
    ny = json_string_value(json_object_get(my, "name"));
    /* digit runs as numbers (glibc's strverscmp): "sts-2" before "sts-10", a LeaderWorkerSet's
     * leader `<lws>-<g>` before its workers `<lws>-<g>-<w>` */
    return strverscmp(nx ? nx : "", ny ? ny : "");
}

/* --pending: the cluster's pending pods as the job (each as it is, its status dropped), from the
 * live LIST (pending) or the snapshot's Pods without a node, of namespace ns when given. */
static enum tpx_code add_pending(struct obj_manifest *m, json_t *pending,
                                 const struct obj_yaml_docs *snap, const char *ns, const char *name,
                                 struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};
    json_t *from = pending ? pending : json_object_get(snap->n ? snap->docs[0] : NULL, "items");
    size_t i;
    json_t *it;

    d.docs = calloc(json_array_size(from) + 1, sizeof(*d.docs));
    if (!d.docs)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    json_array_foreach(from, i, it)
    {
        const json_t *md = json_object_get(it, "metadata");
        const char *k = json_string_value(json_object_get(it, "kind"));
        const char *in = json_string_value(json_object_get(md, "namespace"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(it, "status"), "phase"));
        json_t *pod;

        if (!k || strcmp(k, "Pod") != 0 ||
            json_string_value(json_object_get(json_object_get(it, "spec"), "nodeName")) ||
            (phase && strcmp(phase, "Pending") != 0) || (ns && (!in || strcmp(in, ns) != 0)))
            continue;
        pod = json_deep_copy(it);
        if (!pod) {
            obj_yaml_docs_release(&d);
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        }
        json_object_del(pod, "status");
        d.docs[d.n++] = pod;
    }
    if (d.n == 0) {
        obj_yaml_docs_release(&d);
        return tpx_err_set(err, TPX_ENOENT, "%s: no pending pods%s%s", name, ns ? " in " : "",
                           ns ? ns : "");
    }
    /* the pods of one group one after another, a leader first (objects/manifest.c joins them) */
    qsort(d.docs, d.n, sizeof(*d.docs), pod_order);
    return obj_manifest_add_docs(m, &d, name, err);
}

/* The DRA side of the job: claim demand of the templates, ComputeDomain groups. */
static enum tpx_code manifest_dra(struct obj_manifest *m, struct obj_dra *dra, struct tpx_err *err)
{
    for (size_t f = 0; f < m->nfiles; f++) {
        if (obj_dra_add_docs(dra, m->files[f].docs, m->files[f].n, err) != TPX_OK) {
            tpx_err_prefix(err, "%s", m->fnames[f]);
            return err->code;
        }
    }
    if (!dra->finished)
        obj_dra_finish(dra);
    return obj_dra_manifest_demand(dra, m, plan_note, NULL, err);
}

static void print_explain(FILE *f, const struct obj_cluster_load_result *cl)
{
    size_t n = topo_cluster_node_count(cl->cluster);
    int w = 4;

    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(topo_cluster_node(cl->cluster, i)->name);
        w = l > w ? l : w;
    }
    fprintf(f, "%-*s  %-40s  %-40s  %-40s  %-40s  %s\n", w, "NODE", "DOMAIN KEY", "RACK KEY",
            "BLOCK KEY", "ZONE KEY", "NOTE");
    for (size_t i = 0; i < n; i++) {
        const struct topo_label_explain *e = &cl->explain[i];
        const char *note = topo_labels_explain_note(cl->cluster, i, e);
        fprintf(f, "%-*s", w, topo_cluster_node(cl->cluster, i)->name);
        for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++)
            fprintf(f, "  %-40s", e->key[lv] ? e->key[lv] : "-");
        fprintf(f, "  %s\n", note ? note : "-");
    }
    if (n)
        fputc('\n', f);
}

static enum tpx_code write_file(const char *path, const struct tpx_buf *b, struct tpx_err *err)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return tpx_err_errno(err, errno, "cannot open '%s'", path);
    if (fwrite(b->data, 1, b->len, f) != b->len) {
        fclose(f);
        return tpx_err_set(err, TPX_EIO, "cannot write '%s'", path);
    }
    if (fclose(f) != 0)
        return tpx_err_set(err, TPX_EIO, "cannot write '%s'", path);
    return TPX_OK;
}

/* The certainty rule: a layout read from engine flags that are unknown or do not add up is
 * planned as preferred (never rejected for it); say so once per job, with where each size was
 * read. Exit status stays 0 for it. */
static void warn_uncertain(const struct obj_manifest *m)
{
    static const char *const sizes[POL_NSIZES] = {"tp", "pp", "dp", "ep"};

    for (size_t j = 0; j < m->njobs; j++) {
        const struct obj_manifest_job *job = &m->jobs[j];
        size_t nunc = 0, first = 0;
        const struct pol_workload *w = NULL;

        for (size_t r = job->first_replica; r < job->first_replica + job->nreplicas; r++) {
            const struct pol_workload *x = &m->wl[m->replica_first_pod[r]];
            if (x->has_intent && !x->layout.certain && nunc++ == 0) {
                w = x;
                first = m->replica_first_pod[r];
            }
        }
        if (!w)
            continue;
        fprintf(stderr,
                "topox plan: warning: %s %s '%s': layout not certain (%s), %zu of %zu "
                "replica%s placed as preferred (score only); read: %s\n",
                job->source, job->kind, job->name, w->layout.why, nunc, job->nreplicas,
                job->nreplicas == 1 ? "" : "s", w->layout.read[0] ? w->layout.read : "-");
        for (size_t k = 0; k < POL_NSIZES; k++) {
            const struct pol_size_origin *o = &w->layout.origin[k];
            char where[POL_KEY_MAX + 16];
            if (o->src == POL_SRC_DEFAULT || o->src == POL_SRC_DERIVED)
                continue;
            obj_manifest_value_source(m, first, o->argi,
                                      o->src == POL_SRC_ANNOTATION ? o->what : NULL, where,
                                      sizeof(where));
            fprintf(stderr, "topox plan: warning:   %s: %s: %s %s%s%s\n", sizes[k], where,
                    o->what ? o->what : "?", o->unknown ? "(unknown)" : wl_src_name(o->src),
                    o->via ? " via " : "", o->via ? o->via : "");
        }
    }
}

/* Traffic, not the word "tp" (docs/workloads.md): a MoE layout (EP, DP-attention) whose TP or EP
 * group spans pods, or a dense one whose owner allowed it (topox.io/cross-node-tp), is placed in
 * the tightest scope; say so once per job. */
static void warn_cross_node(const struct obj_manifest *m)
{
    for (size_t j = 0; j < m->njobs; j++) {
        const struct obj_manifest_job *job = &m->jobs[j];

        for (size_t r = job->first_replica; r < job->first_replica + job->nreplicas; r++) {
            const struct pol_workload *w = &m->wl[m->replica_first_pod[r]];
            if (!pol_workload_spans_nodes(w))
                continue;
            fprintf(stderr,
                    "topox plan: warning: %s %s '%s': replica %zu: tp %u, ep %u%s over pods of "
                    "%u %s: %s crosses nodes; placed in one NVLink domain where one holds it, "
                    "else in one rack on RDMA nodes\n",
                    job->source, job->kind, job->name, r - job->first_replica, w->tp, w->layout.ep,
                    w->layout.dp_attention ? " with DP-attention" : "", w->accel_per_pod,
                    pol_accel_word(w->resource),
                    wl_layout_dense(&w->layout)
                        ? "its every-layer all-reduce (topox.io/cross-node-tp: allow)"
                        : "its EP all-to-all and the dense layers' all-reduce");
            break;
        }
    }
}

/* Everything a plan needs and makes, from the inputs to pol_plan(); released by
 * plan_state_release(). */
struct plan_state {
    struct obj_cluster_load_result cl;
    struct obj_manifest m;
    struct pol_plan_result res;
    struct pol_ledger *l;
    struct obj_yaml_docs snap;
    struct obj_dra dra;
    struct obj_admission adm; /* kube-scheduler's filters, per pod */
    char live_name[256];      /* what the live cluster's objects are read as, for messages */
    char *live_ns;            /* the kubeconfig context's namespace, owned */
    json_t *pending;          /* --pending on the live cluster: its pending Pods, owned */
    bool planned;             /* pol_plan() ran: res, l and m are the plan */
};

static void plan_state_init(struct plan_state *s)
{
    memset(s, 0, sizeof(*s));
    obj_manifest_init(&s->m);
    obj_dra_init(&s->dra);
}

static void plan_state_release(struct plan_state *s)
{
    pol_plan_result_release(&s->res);
    pol_ledger_free(s->l);
    obj_admission_release(&s->adm);
    obj_manifest_release(&s->m);
    obj_cluster_load_release(&s->cl);
    obj_dra_release(&s->dra);
    obj_yaml_docs_release(&s->snap);
    free(s->live_ns);
    json_decref(s->pending);
}

/* The cluster, the manifests and pol_plan(): the same steps for `plan` and `diagnose -f`.
 * CMD_OK (planned unless there were no manifests), CMD_USAGE for bad input, CMD_FAILED; err
 * says why. */
static int plan_run(const struct plan_opts *o, struct plan_state *s, struct tpx_err *err)
{
    const char *ns;

    if (o->use_live) {
        if (load_live(o, &s->snap, &s->live_ns, s->live_name, sizeof(s->live_name), &s->dra,
                      &s->pending, &s->cl, err) != TPX_OK)
            /* the cluster, not the input, failed: exit 1 (the flags were fine) */
            return err->code == TPX_EPARSE || err->code == TPX_EINVAL ? CMD_USAGE : CMD_FAILED;
    } else if (o->cluster    ? load_synthetic(o->cluster, &s->cl, err) != TPX_OK
               : o->snapshot ? load_snapshot(o->snapshot, &s->snap, &s->dra, &s->cl, err) != TPX_OK
                             : obj_cluster_load(o->nodes, o->nnodes, NULL, &s->cl, err) != TPX_OK)
        return CMD_USAGE;
    ns = o->namespace ? o->namespace : s->live_ns;
    for (size_t i = 0; i < s->cl.nwarnings; i++)
        fprintf(stderr, "topox plan: warning: %s\n", s->cl.warnings[i]);
    if (o->explain)
        print_explain(strcmp(o->output, "table") == 0 ? stdout : stderr, &s->cl);
    if (o->nfiles == 0 && !o->pending)
        return CMD_OK;
    if (o->pending && add_pending(&s->m, s->pending, &s->snap, o->namespace,
                                  o->use_live ? s->live_name : o->snapshot, err) != TPX_OK)
        return err->code == TPX_ENOENT ? CMD_FAILED : CMD_USAGE;
    for (size_t i = 0; i < o->nfiles; i++) {
        if (add_manifest(&s->m, o->files[i], ns, err) != TPX_OK)
            return CMD_USAGE;
    }
    if (o->use_live &&
        add_cluster_podgroups(&s->m, &s->snap, ns ? ns : "default", s->live_name, err) != TPX_OK)
        return CMD_USAGE;
    if (manifest_dra(&s->m, &s->dra, err) == TPX_OK)
        obj_manifest_finish(&s->m, err);
    /* the notes of reading and of finishing (a PodGroup the manifest lacks, ...) */
    for (size_t i = 0; i < s->m.nnotes; i++)
        fprintf(stderr, "topox plan: note: %s\n", s->m.notes[i]);
    if (err->code != TPX_OK ||
        obj_dra_manifest_domains(&s->dra, &s->m, plan_note, NULL, err) != TPX_OK)
        return CMD_USAGE;
    warn_uncertain(&s->m);
    warn_cross_node(&s->m);
    s->l = pol_ledger_new(s->cl.cluster, err);
    if (!s->l)
        return CMD_FAILED;
    if (o->pods && obj_cluster_apply_pods(s->l, o->pods, NULL, NULL, err) != TPX_OK)
        return CMD_USAGE;
    if ((o->snapshot || o->use_live) &&
        obj_cluster_apply_snapshot(s->l, s->snap.docs, s->snap.n,
                                   o->use_live ? s->live_name : o->snapshot, NULL, &s->dra, NULL,
                                   err) != TPX_OK)
        return CMD_USAGE;
    /* kube-scheduler's filters (nodeSelector, node affinity, taints, nodeName) before topox's */
    if (s->cl.meta && obj_manifest_admit(&s->m, s->cl.meta, s->cl.nmeta, o->cluster != NULL,
                                         &s->adm, err) != TPX_OK)
        return CMD_USAGE;
    if (s->adm.note[0])
        fprintf(stderr, "topox plan: note: %s\n", s->adm.note);
    if (s->adm.ert_note[0])
        fprintf(stderr, "topox plan: note: %s\n", s->adm.ert_note);
    if (pol_plan(s->l, s->m.pol_jobs, s->m.njobs, time(NULL), &s->res, err) != TPX_OK)
        return CMD_FAILED;
    obj_dra_reword_rejects(&s->m, &s->res);
    s->planned = true;
    return CMD_OK;
}

int cmd_plan_records(const char *const *files, size_t nfiles, const char *const *nodes,
                     size_t nnodes, const char *cluster, json_t **out, struct tpx_err *err)
{
    struct plan_opts o;
    struct plan_state s;
    struct cmd_plan_view view;
    int status;

    memset(&o, 0, sizeof(o));
    if (nfiles > MAX_FILES || nnodes > MAX_FILES) {
        tpx_err_set(err, TPX_EINVAL, "more than %d files", MAX_FILES);
        return CMD_USAGE;
    }
    memcpy(o.files, files, nfiles * sizeof(*files));
    o.nfiles = nfiles;
    if (nnodes)
        memcpy(o.nodes, nodes, nnodes * sizeof(*nodes));
    o.nnodes = nnodes;
    o.cluster = cluster;
    o.output = "json";
    o.record = true;
    plan_state_init(&s);
    status = plan_run(&o, &s, err);
    if (status == CMD_OK && s.planned) {
        view = (struct cmd_plan_view){s.cl.cluster, s.l, &s.m, &s.res};
        if (cmd_plan_to_json(&view, true, out, err) != TPX_OK)
            status = CMD_FAILED;
    }
    plan_state_release(&s);
    return status;
}

int cmd_plan(int argc, char **argv)
{
    struct plan_opts o;
    struct plan_state ps;
    struct tpx_err err = TPX_ERR_INIT;
    struct tpx_buf out;
    struct cmd_plan_view view;
    int status;

    status = parse(argc, argv, &o);
    if (status != CMD_OK)
        return status < 0 ? CMD_OK : status;
    plan_state_init(&ps);
    tpx_buf_init(&out, (size_t)1 << 30);
    status = plan_run(&o, &ps, &err);
    if (status != CMD_OK || !ps.planned)
        goto out;
    status = CMD_FAILED;
    view = (struct cmd_plan_view){ps.cl.cluster, ps.l, &ps.m, &ps.res};
    if (strcmp(o.output, "table") == 0) {
        if (cmd_plan_render_table(&view, &out, &err) != TPX_OK)
            goto out;
    } else {
        json_t *data = NULL;
        if (cmd_plan_to_json(&view, o.record, &data, &err) != TPX_OK)
            goto out;
        if (strcmp(o.output, "json") == 0) {
            char *s = json_dumps(data, JSON_INDENT(2));
            if (!s || tpx_buf_adds(&out, s, &err) != TPX_OK || tpx_buf_adds(&out, "\n", &err)) {
                tpx_err_set(&err, TPX_ENOMEM, "out of memory");
                free(s);
                json_decref(data);
                goto out;
            }
            free(s);
        } else if (o.record) {
            /* one YAML document per replica: the form operators keep */
            size_t i;
            json_t *rec;
            json_array_foreach(data, i, rec)
            {
                if (tpx_buf_adds(&out, "---\n", &err) != TPX_OK ||
                    obj_yaml_dump(rec, &out, &err) != TPX_OK) {
                    json_decref(data);
                    goto out;
                }
            }
        } else if (obj_yaml_dump(data, &out, &err) != TPX_OK) {
            json_decref(data);
            goto out;
        }
        json_decref(data);
    }
    fwrite(out.data, 1, out.len, stdout);
    if (o.svg) {
        tpx_buf_reset(&out);
        if (cmd_plan_render_svg(&view, &out, &err) != TPX_OK || write_file(o.svg, &out, &err))
            goto out;
    }
    status = ps.res.nrejected ? CMD_REJECTED : CMD_OK;
out:
    if (err.code != TPX_OK)
        fprintf(stderr, "topox plan: %s\n", err.msg);
    tpx_buf_release(&out);
    plan_state_release(&ps);
    return status;
}
