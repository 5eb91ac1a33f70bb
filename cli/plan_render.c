/* SPDX-License-Identifier: Apache-2.0 */
/* cli/plan_render.c - plan -> table + rack picture, JSON data, diagnosis records, SVG. */
#include "cli/plan_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/estimate.h"
#include "topology/fabric.h"

/* Picture limits, so a 10 000-node cluster still prints a readable page. */
#define PIC_RACKS_MAX 48
#define PIC_NODES_MAX 16
#define PIC_ACCEL_MAX 16
#define LEGEND_MAX 62

char cmd_plan_symbol(size_t r)
{
    static const char sym[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

    return r < sizeof(sym) - 1 ? sym[r] : '*';
}

static size_t global_replica(const struct cmd_plan_view *v, size_t job, size_t replica)
{
    return v->manifest->jobs[job].first_replica + replica;
}

/* The accelerators pod `pod` of global replica g asks for. */
static unsigned pod_accel(const struct cmd_plan_view *v, size_t g, size_t pod)
{
    size_t i = v->manifest->replica_first_pod[g] + pod;
    return i < v->manifest->npods ? v->manifest->wl[i].accel_per_pod : 0;
}

static const char *accel_word(const struct cmd_plan_view *v)
{
    const struct pol_workload *w = v->manifest->npods ? &v->manifest->wl[0] : NULL;

    return pol_accel_word(w && w->resource[0] ? w->resource : NULL);
}

/* Per node: one character per accelerator: replica symbols, then '#' (others), '.' (free) or '-'
 * (free but the node takes no pods). Caller frees the array and each string. */
static char **gpu_map(const struct cmd_plan_view *v, struct tpx_err *err)
{
    size_t n = topo_cluster_node_count(v->cluster);
    char **map = calloc(n ? n : 1, sizeof(*map));
    unsigned *ours = calloc(n ? n : 1, sizeof(*ours));

    if (!map || !ours)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        unsigned a = topo_cluster_node(v->cluster, i)->accel_alloc;
        map[i] = calloc(a + 1, 1);
        if (!map[i])
            goto oom;
    }
    for (size_t p = 0; p < v->plan->npods; p++) {
        const struct pol_plan_pod *pp = &v->plan->pods[p];
        size_t node = pp->where.node;
        size_t g = global_replica(v, pp->job, pp->replica);
        /* a pod without accelerators takes no GPU cell (its ranks are 0-0 all the same) */
        unsigned cnt =
            pod_accel(v, g, pp->pod) ? pp->where.rank_last - pp->where.rank_first + 1 : 0;
        unsigned a;
        char s = cmd_plan_symbol(g);

        if (node >= n)
            continue;
        a = topo_cluster_node(v->cluster, node)->accel_alloc;
        for (unsigned k = 0; k < cnt && ours[node] < a; k++)
            map[node][ours[node]++] = s;
    }
    for (size_t i = 0; i < n; i++) {
        const struct topo_node_info *ni = topo_cluster_node(v->cluster, i);
        unsigned fr = pol_ledger_node_free(v->ledger, i);
        unsigned k = ours[i];
        unsigned others = ni->accel_alloc > fr + ours[i] ? ni->accel_alloc - fr - ours[i] : 0;

        for (unsigned o = 0; o < others && k < ni->accel_alloc; o++)
            map[i][k++] = '#';
        while (k < ni->accel_alloc)
            map[i][k++] = ni->unschedulable ? '-' : '.';
    }
    free(ours);
    return map;
oom:
    if (map) {
        for (size_t i = 0; i < n; i++)
            free(map[i]);
    }
    free(map);
    free(ours);
    tpx_err_set(err, TPX_ENOMEM, "plan: out of memory");
    return NULL;
}

static void map_free(char **map, size_t n)
{
    if (!map)
        return;
    for (size_t i = 0; i < n; i++)
        free(map[i]);
    free(map);
}

/* Which cost dominates a replica, by the estimates: "bubble", "stage imbalance", "inter-stage
 * transfer" or "balanced" when each is under 5 %. Transfer is a coarse guess: 2 % per stage
 * boundary that crosses nodes, a share that shrinks as micro-batches overlap it. */
static const char *dominant(const struct pol_plan_estimate *e, double *transfer)
{
    double b = e->bubble >= 0 ? e->bubble : pol_bubble(e->pp, 4);
    double im = e->stage_imbalance > 0 ? e->stage_imbalance : 0;
    double t = 0;

    if (e->pp > 1 && e->nodes > 1)
        t = 0.02 * (double)(e->pp - 1);
    if (transfer)
        *transfer = t;
    if (b < 0.05 && im < 0.05 && t < 0.05)
        return "balanced";
    if (b >= im && b >= t)
        return "bubble";
    if (im >= t)
        return "stage imbalance";
    return "inter-stage transfer";
}

static const char *find_reject(const struct cmd_plan_view *v, size_t job, size_t replica)
{
    for (size_t i = 0; i < v->plan->nrejected; i++) {
        if (v->plan->rejected[i].job == job && v->plan->rejected[i].replica == replica)
            return v->plan->rejected[i].reason;
    }
    return NULL;
}

/* "FILE:LINE" where the rejected replica's parallelism is written. */
static void replica_source(const struct cmd_plan_view *v, const struct pol_plan_reject *r,
                           char *out, size_t len)
{
    obj_manifest_replica_source(v->manifest, v->manifest->jobs[r->job].first_replica + r->replica,
                                out, len);
}

/* --- table -------------------------------------------------------------------------------------
 */

static int width_of(const char *s, int w)
{
    int l = (int)strlen(s);
    return l > w ? l : w;
}

static enum tpx_code render_rows(const struct cmd_plan_view *v, struct tpx_buf *out,
                                 struct tpx_err *err)
{
    int wr = 7, wp = 3, wn = 4, wd = 6, wk = 4;
    char rep[POL_KEY_MAX + 16];

    for (size_t i = 0; i < v->plan->npods; i++) {
        const struct pol_plan_pod *p = &v->plan->pods[i];
        snprintf(rep, sizeof(rep), "%s #%zu", v->manifest->jobs[p->job].name, p->replica);
        wr = width_of(rep, wr);
        wp = width_of(p->pod_name, wp);
        wn = width_of(p->where.node_name ? p->where.node_name : "", wn);
        wd = width_of(p->where.domain ? p->where.domain : "", wd);
        wk = width_of(p->where.rack ? p->where.rack : "", wk);
    }
    if (tpx_buf_addf(out, err, "%-*s  %-*s  %5s  %-9s  %-*s  %-*s  %s\n", wr, "REPLICA", wp, "POD",
                     "STAGE", "RANKS", wn, "NODE", wd, "DOMAIN", "RACK") != TPX_OK)
        return err->code;
    for (size_t i = 0; i < v->plan->npods; i++) {
        const struct pol_plan_pod *p = &v->plan->pods[i];
        char ranks[32];
        snprintf(rep, sizeof(rep), "%s #%zu", v->manifest->jobs[p->job].name, p->replica);
        if (pod_accel(v, global_replica(v, p->job, p->replica), p->pod))
            snprintf(ranks, sizeof(ranks), "%u-%u", p->where.rank_first, p->where.rank_last);
        else
            snprintf(ranks, sizeof(ranks), "-"); /* no accelerators: no ranks */
        if (tpx_buf_addf(out, err, "%-*s  %-*s  %5u  %-9s  %-*s  %-*s  %s\n", wr, rep, wp,
                         p->pod_name, p->where.stage, ranks, wn,
                         p->where.node_name ? p->where.node_name : "-", wd,
                         p->where.domain ? p->where.domain : "-",
                         p->where.rack ? p->where.rack : "-") != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

static enum tpx_code render_picture(const struct cmd_plan_view *v, char **map, struct tpx_buf *out,
                                    struct tpx_err *err)
{
    size_t nr = topo_cluster_rack_count(v->cluster);
    int wname = 4;

    const char *first = NULL;
    bool mixed = false;

    for (size_t i = 0, n = topo_cluster_node_count(v->cluster); i < n && !mixed; i++) {
        const char *res = topo_cluster_node(v->cluster, i)->resource;
        if (res && !first)
            first = res;
        mixed = res && strcmp(res, first) != 0;
    }
    for (size_t r = 0; r < nr && r < PIC_RACKS_MAX; r++)
        wname = width_of(topo_cluster_rack_name(v->cluster, r), wname);
    if (tpx_buf_addf(out, err,
                     "\nracks (one line per rack, one cell per node, one character per %s:\n"
                     "       a replica's symbol, '.' free, '#' used by others, '-' node takes no "
                     "pods)\n",
                     strcmp(accel_word(v), "NPUs") == 0 ? "NPU" : "GPU") != TPX_OK)
        return err->code;
    for (size_t r = 0; r < nr && r < PIC_RACKS_MAX; r++) {
        size_t nn;
        const size_t *nodes = topo_cluster_rack_nodes(v->cluster, r, &nn);

        if (tpx_buf_addf(out, err, "  %-*s ", wname, topo_cluster_rack_name(v->cluster, r)) !=
            TPX_OK)
            return err->code;
        for (size_t k = 0; k < nn && k < PIC_NODES_MAX; k++) {
            const char *m = map[nodes[k]];
            size_t l = strlen(m);
            if (tpx_buf_addf(out, err, " [%.*s%s]", (int)(l > PIC_ACCEL_MAX ? PIC_ACCEL_MAX : l), m,
                             l > PIC_ACCEL_MAX ? "+" : "") != TPX_OK)
                return err->code;
        }
        if (nn > PIC_NODES_MAX && tpx_buf_addf(out, err, " +%zu nodes", nn - PIC_NODES_MAX))
            return err->code;
        if (nn > 0 &&
            tpx_buf_addf(out, err, "   %s..%s", topo_cluster_node(v->cluster, nodes[0])->name,
                         topo_cluster_node(v->cluster, nodes[nn - 1])->name) != TPX_OK)
            return err->code;
        /* a fleet of several vendors: each rack says whose devices its cells are */
        for (size_t k = 0, said = 0; mixed && k < nn && said < 3; k++) {
            const char *res = topo_cluster_node(v->cluster, nodes[k])->resource;
            bool seen = !res;
            for (size_t q = 0; q < k && !seen; q++) {
                const char *o = topo_cluster_node(v->cluster, nodes[q])->resource;
                seen = o && strcmp(o, res) == 0;
            }
            if (!seen && tpx_buf_addf(out, err, "%s%s", said++ ? ", " : "   ", res) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_adds(out, "\n", err) != TPX_OK)
            return err->code;
    }
    if (nr > PIC_RACKS_MAX && tpx_buf_addf(out, err, "  ... %zu more racks\n", nr - PIC_RACKS_MAX))
        return err->code;
    /* legend: placed replicas */
    if (tpx_buf_adds(out, "legend:", err) != TPX_OK)
        return err->code;
    for (size_t g = 0, shown = 0; g < v->manifest->nreplicas && shown < LEGEND_MAX; g++) {
        size_t job = 0;
        while (job + 1 < v->manifest->njobs && v->manifest->jobs[job + 1].first_replica <= g)
            job++;
        if (find_reject(v, job, g - v->manifest->jobs[job].first_replica))
            continue;
        if (tpx_buf_addf(out, err, "%s%c %s #%zu", shown % 4 == 0 ? "\n  " : "   ",
                         cmd_plan_symbol(g), v->manifest->jobs[job].name,
                         g - v->manifest->jobs[job].first_replica) != TPX_OK)
            return err->code;
        shown++;
    }
    return tpx_buf_adds(out, "\n", err);
}

/* The replica's first pod's workload (what its layout was read from). */
static const struct pol_workload *replica_wl(const struct cmd_plan_view *v,
                                             const struct pol_plan_estimate *e)
{
    size_t g = global_replica(v, e->job, e->replica);
    size_t first = v->manifest->replica_first_pod[g];

    return first + e->lead < v->manifest->npods ? &v->manifest->wl[first + e->lead] : NULL;
}

/* "      ep 16, layout certain; traffic: EP all-to-all, 16 ranks, inside ..." */
static enum tpx_code render_layout(const struct cmd_plan_view *v, const struct pol_plan_estimate *e,
                                   struct tpx_buf *out, struct tpx_err *err)
{
    const struct pol_workload *w = replica_wl(v, e);

    if (tpx_buf_addf(out, err, "      ep %u, layout %s", e->ep,
                     e->certain                           ? "certain"
                     : w && w->has_intent && w->preferred ? "uncertain (placed as preferred)"
                     : w && w->has_intent ? "uncertain (its group held in its scope)"
                                          : "uncertain (no topology intent)") != TPX_OK)
        return err->code;
    if (w && w->layout.engine && w->layout.engine[0] &&
        tpx_buf_addf(out, err, " from %s flags", w->layout.engine) != TPX_OK)
        return err->code;
    for (size_t t = 0; t < e->ntraffic; t++) {
        char text[POL_KEY_MAX];
        pol_traffic_text(&e->traffic[t], text, sizeof(text));
        if (tpx_buf_addf(out, err, "%s%s", t == 0 ? "; traffic: " : "; ", text) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "\n", err);
}

static enum tpx_code render_estimates(const struct cmd_plan_view *v, struct tpx_buf *out,
                                      struct tpx_err *err)
{
    if (tpx_buf_adds(out, "\nestimates (per replica):\n", err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < v->plan->nestimates; i++) {
        const struct pol_plan_estimate *e = &v->plan->estimates[i];
        char bubble[160];
        char imb[96];

        if (find_reject(v, e->job, e->replica))
            continue;
        if (e->pp <= 1)
            snprintf(bubble, sizeof(bubble), "no pipeline bubble (pp 1)");
        else if (e->bubble >= 0)
            snprintf(bubble, sizeof(bubble), "bubble %.1f%% at %u micro-batches", e->bubble * 100.0,
                     e->num_ubatches);
        else
            snprintf(bubble, sizeof(bubble),
                     "bubble %.0f%% / %.0f%% / %.1f%% / %.1f%% at 1 / 4 / 8 / 32 micro-batches "
                     "(set topox.io/num-ubatches)",
                     pol_bubble(e->pp, 1) * 100, pol_bubble(e->pp, 4) * 100,
                     pol_bubble(e->pp, 8) * 100, pol_bubble(e->pp, 32) * 100);
        if (e->stage_imbalance >= 0)
            snprintf(imb, sizeof(imb), "stage imbalance %.1f%% (%u layers over %u stages)",
                     e->stage_imbalance * 100.0, e->model_layers, e->pp);
        else
            snprintf(imb, sizeof(imb), "stage imbalance unknown (set topox.io/model-layers)");
        if (tpx_buf_addf(
                out, err,
                "  %s #%zu: tp %u x pp %u x dp %u = %u %s on %u node%s; TP groups on %s%s\n"
                "      %s; %s; dominant cost: %s\n",
                v->manifest->jobs[e->job].name, e->replica, e->tp, e->pp, e->dp, e->accel,
                accel_word(v), e->nodes, e->nodes == 1 ? "" : "s", topo_fabric_name(e->tp_fabric),
                e->tp_cross_node  ? " and over RDMA between nodes (no domain holds one)"
                : e->tp_multinode ? " (multi-node domain)"
                                  : " (inside one node)",
                bubble, imb, dominant(e, NULL)) != TPX_OK)
            return err->code;
        if (render_layout(v, e, out, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

enum tpx_code cmd_plan_render_table(const struct cmd_plan_view *v, struct tpx_buf *out,
                                    struct tpx_err *err)
{
    size_t n = topo_cluster_node_count(v->cluster);
    char **map;
    enum tpx_code rc;

    if (render_rows(v, out, err) != TPX_OK)
        return err->code;
    map = gpu_map(v, err);
    if (!map)
        return err->code;
    rc = render_picture(v, map, out, err);
    map_free(map, n);
    if (rc != TPX_OK || render_estimates(v, out, err) != TPX_OK)
        return err->code;
    if (v->plan->nrejected &&
        tpx_buf_addf(out, err, "\nrejected (%zu):\n", v->plan->nrejected) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < v->plan->nrejected; i++) {
        const struct pol_plan_reject *r = &v->plan->rejected[i];
        char where[POL_KEY_MAX + 16];

        replica_source(v, r, where, sizeof(where));
        if (tpx_buf_addf(out, err, "  %s #%zu (%s): %s\n", v->manifest->jobs[r->job].name,
                         r->replica, where, r->reason) != TPX_OK)
            return err->code;
    }
    return tpx_buf_addf(out, err, "\n%zu of %zu replicas placed, %zu rejected\n",
                        v->manifest->nreplicas - v->plan->nrejected, v->manifest->nreplicas,
                        v->plan->nrejected);
}

/* --- data --------------------------------------------------------------------------------------
 */

static json_t *num_or_null(double x, bool known)
{
    return known ? json_real((double)(long long)(x * 10000.0 + 0.5) / 10000.0) : json_null();
}

static json_t *count_or_null(unsigned long x)
{
    return x ? json_integer((json_int_t)x) : json_null();
}

static json_t *estimate_base(const struct cmd_plan_view *v, const struct pol_plan_estimate *e);
static json_t *traffic_of(const struct pol_plan_estimate *e);

/* [first, last] of a pod's ranks, or null for a pod without accelerators (it holds none). */
static json_t *ranks_of(const struct cmd_plan_view *v, const struct pol_plan_pod *p)
{
    if (!pod_accel(v, global_replica(v, p->job, p->replica), p->pod))
        return json_null();
    return json_pack("[i,i]", (json_int_t)p->where.rank_first, (json_int_t)p->where.rank_last);
}

/* pods[]: {pod, stage, node, ranks} of a placed replica, so that a record alone joins measured
 * series to stages (`topox diagnose --plan`). */
static json_t *pods_of(const struct cmd_plan_view *v, const struct pol_plan_estimate *e)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr && i < v->plan->npods; i++) {
        const struct pol_plan_pod *p = &v->plan->pods[i];
        json_t *o;
        if (p->job != e->job || p->replica != e->replica)
            continue;
        o = json_pack("{s:s, s:i, s:s?, s:o}", "pod", p->pod_name, "stage",
                      (json_int_t)p->where.stage, "node", p->where.node_name, "ranks",
                      ranks_of(v, p));
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *record_of(const struct cmd_plan_view *v, const struct pol_plan_estimate *e)
{
    size_t g = global_replica(v, e->job, e->replica);
    size_t first = v->manifest->replica_first_pod[g];
    struct wl_engine_info ei;
    const char *precision;
    double transfer;
    const char *dom = dominant(e, &transfer);
    const char *rej = find_reject(v, e->job, e->replica);

    json_t *rec;

    obj_manifest_engine_info(v->manifest, first, &ei);
    precision = ei.quantization[0] ? ei.quantization : ei.dtype[0] ? ei.dtype : "unknown";
    rec = json_pack(
        "{s:s, s:i, s:{s:o, s:s}, s:{s:i, s:i, s:s}, s:{s:i, s:i, s:o}, s:{s:o, s:o, s:o},"
        " s:{s:o, s:o, s:o}, s:s, s:o}",
        "replica", v->manifest->jobs[e->job].name, "index", (json_int_t)e->replica, "model",
        "layers", count_or_null(e->model_layers), "precision", precision, "hardware", "card_count",
        (json_int_t)e->accel, "node_count", (json_int_t)e->nodes, "interconnect",
        topo_fabric_name(e->tp_fabric), "parallelism", "pipeline_parallel_size", (json_int_t)e->pp,
        "tensor_parallel_size", (json_int_t)e->tp, "num_ubatches", count_or_null(e->num_ubatches),
        "workload", "input_len", count_or_null(ei.input_len ? ei.input_len : ei.max_model_len),
        "output_len", count_or_null(ei.output_len), "max_num_seqs", count_or_null(ei.max_num_seqs),
        "utilization", "bubble_ratio_est",
        num_or_null(e->bubble >= 0 ? e->bubble : pol_bubble(e->pp, 4), e->pp > 0),
        "stage_imbalance", num_or_null(e->stage_imbalance, e->stage_imbalance >= 0),
        "inter_stage_transfer_est", num_or_null(transfer, true), "status", rej ? "rejected" : dom,
        "rejected", rej ? json_string(rej) : json_null());
    if (rec) {
        json_t *par = json_object_get(rec, "parallelism");
        if (json_object_set_new(par, "data_parallel_size", json_integer(e->dp)) != 0 ||
            json_object_set_new(par, "expert_parallel_size", json_integer(e->ep)) != 0 ||
            json_object_set_new(par, "certain", json_boolean(e->certain)) != 0 ||
            json_object_set_new(rec, "traffic", traffic_of(e)) != 0 ||
            json_object_set_new(rec, "pods", pods_of(v, e)) != 0) {
            json_decref(rec);
            return NULL;
        }
    }
    return rec;
}

static json_t *placement_of(const struct cmd_plan_view *v, const struct pol_plan_pod *p)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:o, s:s?, s:s?, s:s?}", "pod", p->pod_name, "job",
                     v->manifest->jobs[p->job].name, "replica", (json_int_t)p->replica, "stage",
                     (json_int_t)p->where.stage, "ranks", ranks_of(v, p), "node",
                     p->where.node_name, "domain", p->where.domain, "rack", p->where.rack);
}

static const char *level_name(enum pol_traffic_level l)
{
    static const char *const names[] = {"node", "nvlink-domain", "rack", "wider"};
    return (unsigned)l < 4 ? names[l] : "wider";
}

/* traffic[]: {kind, ranks, level, where, text} per class of traffic of a placed replica. */
static json_t *traffic_of(const struct pol_plan_estimate *e)
{
    json_t *arr = json_array();

    for (size_t t = 0; arr && t < e->ntraffic; t++) {
        char text[POL_KEY_MAX];
        json_t *o;
        pol_traffic_text(&e->traffic[t], text, sizeof(text));
        o = json_pack("{s:s, s:i, s:s, s:s?, s:s}", "kind",
                      wl_traffic_kind_name(e->traffic[t].kind), "ranks",
                      (json_int_t)e->traffic[t].ranks, "level", level_name(e->traffic[t].level),
                      "where", e->traffic[t].where, "text", text);
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* Where each size of the replica's layout came from: {tp: {source, what}, ...}. */
static json_t *sources_of(const struct cmd_plan_view *v, const struct pol_plan_estimate *e)
{
    static const char *const sizes[POL_NSIZES] = {"tp", "pp", "dp", "ep"};
    const struct pol_workload *w = replica_wl(v, e);
    json_t *o = json_object();

    for (size_t k = 0; w && o && k < POL_NSIZES; k++) {
        const struct pol_size_origin *so = &w->layout.origin[k];
        json_t *one = json_pack("{s:s, s:s?, s:s?, s:b}", "source", wl_src_name(so->src), "what",
                                so->what, "via", so->via, "unknown", so->unknown);
        if (!one || json_object_set_new(o, sizes[k], one) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *estimate_of(const struct cmd_plan_view *v, const struct pol_plan_estimate *e)
{
    json_t *o = estimate_base(v, e);
    const struct pol_workload *w = replica_wl(v, e);

    if (o &&
        (json_object_set_new(o, "ep", json_integer(e->ep)) != 0 ||
         json_object_set_new(o, "certain", json_boolean(e->certain)) != 0 ||
         json_object_set_new(o, "engine",
                             json_string(w && w->layout.engine ? w->layout.engine : "")) != 0 ||
         json_object_set_new(o, "sources", sources_of(v, e)) != 0 ||
         (!e->certain && e->why && json_object_set_new(o, "uncertain", json_string(e->why)) != 0) ||
         json_object_set_new(o, "traffic", traffic_of(e)) != 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *estimate_base(const struct cmd_plan_view *v, const struct pol_plan_estimate *e)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:b, s:o, s:o, s:o, s:o, s:s}",
                     "job", v->manifest->jobs[e->job].name, "replica", (json_int_t)e->replica, "tp",
                     (json_int_t)e->tp, "pp", (json_int_t)e->pp, "dp", (json_int_t)e->dp,
                     "accelerators", (json_int_t)e->accel, "nodes", (json_int_t)e->nodes,
                     "interconnect", topo_fabric_name(e->tp_fabric), "tp_multinode",
                     e->tp_multinode, "bubble", num_or_null(e->bubble, e->bubble >= 0),
                     "num_ubatches", count_or_null(e->num_ubatches), "stage_imbalance",
                     num_or_null(e->stage_imbalance, e->stage_imbalance >= 0), "model_layers",
                     count_or_null(e->model_layers), "dominant", dominant(e, NULL));
}

static bool append(json_t *arr, json_t *v)
{
    return v && json_array_append_new(arr, v) == 0;
}

enum tpx_code cmd_plan_to_json(const struct cmd_plan_view *v, bool record, json_t **out,
                               struct tpx_err *err)
{
    json_t *pl = json_array();
    json_t *rj = json_array();
    json_t *es = json_array();
    json_t *notes = json_array();
    json_t *recs = json_array();
    bool ok = pl && rj && es && notes && recs;

    *out = NULL;
    for (size_t i = 0; ok && i < v->plan->npods; i++)
        ok = append(pl, placement_of(v, &v->plan->pods[i]));
    for (size_t i = 0; ok && i < v->plan->nrejected; i++) {
        const struct pol_plan_reject *r = &v->plan->rejected[i];
        char where[POL_KEY_MAX + 16];

        replica_source(v, r, where, sizeof(where));
        ok = append(rj, json_pack("{s:s, s:i, s:s, s:s}", "job", v->manifest->jobs[r->job].name,
                                  "replica", (json_int_t)r->replica, "reason", r->reason, "source",
                                  where));
    }
    for (size_t i = 0; ok && i < v->plan->nestimates; i++) {
        ok = append(es, estimate_of(v, &v->plan->estimates[i]));
        if (ok && record)
            ok = append(recs, record_of(v, &v->plan->estimates[i]));
    }
    for (size_t i = 0; ok && i < v->manifest->nnotes; i++)
        ok = append(notes, json_string(v->manifest->notes[i]));
    if (ok && record) {
        *out = recs;
        recs = NULL;
    } else if (ok) {
        *out = json_pack("{s:{s:i, s:i, s:i, s:i}, s:O, s:O, s:O, s:O}", "summary", "replicas",
                         (json_int_t)v->manifest->nreplicas, "placed",
                         (json_int_t)(v->manifest->nreplicas - v->plan->nrejected), "rejected",
                         (json_int_t)v->plan->nrejected, "pods", (json_int_t)v->plan->npods,
                         "placements", pl, "rejected", rj, "estimates", es, "notes", notes);
    }
    json_decref(pl);
    json_decref(rj);
    json_decref(es);
    json_decref(notes);
    json_decref(recs);
    if (!*out)
        return tpx_err_set(err, TPX_ENOMEM, "plan: out of memory");
    return TPX_OK;
}

/* --- svg ---------------------------------------------------------------------------------------
 */

static const char *colour(char c)
{
    static const char *const pal[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                      "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                      "#9c755f", "#86bc86", "#d37295", "#499894"};
    const char *p;
    static const char sym[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ*";

    if (c == '.')
        return "#ffffff";
    if (c == '#')
        return "#9e9e9e";
    if (c == '-')
        return "#f4cccc";
    p = strchr(sym, c);
    return pal[(size_t)(p ? p - sym : 0) % (sizeof(pal) / sizeof(pal[0]))];
}

/* XML-escape s into out. */
static enum tpx_code add_xml(struct tpx_buf *out, const char *s, struct tpx_err *err)
{
    for (; *s; s++) {
        const char *rep = NULL;
        if (*s == '<')
            rep = "&lt;";
        else if (*s == '>')
            rep = "&gt;";
        else if (*s == '&')
            rep = "&amp;";
        else if (*s == '"')
            rep = "&quot;";
        if (rep ? tpx_buf_adds(out, rep, err) : tpx_buf_add(out, s, 1, err))
            return err->code;
    }
    return TPX_OK;
}

enum tpx_code cmd_plan_render_svg(const struct cmd_plan_view *v, struct tpx_buf *out,
                                  struct tpx_err *err)
{
    const int sq = 12, gap = 2, colw_min = 160, rowh = 18, top = 40;
    size_t n = topo_cluster_node_count(v->cluster);
    size_t nr = topo_cluster_rack_count(v->cluster);
    size_t maxnodes = 0;
    unsigned maxaccel = 0;
    char **map;
    int colw;
    int height;
    int width;
    size_t nlegend = 0;

    if (nr > PIC_RACKS_MAX)
        nr = PIC_RACKS_MAX;
    for (size_t r = 0; r < nr; r++) {
        size_t nn;
        topo_cluster_rack_nodes(v->cluster, r, &nn);
        if (nn > maxnodes)
            maxnodes = nn;
    }
    if (maxnodes > 64)
        maxnodes = 64;
    for (size_t i = 0; i < n; i++) {
        if (topo_cluster_node(v->cluster, i)->accel_alloc > maxaccel)
            maxaccel = topo_cluster_node(v->cluster, i)->accel_alloc;
    }
    if (maxaccel > 32)
        maxaccel = 32;
    for (size_t g = 0; g < v->manifest->nreplicas && g < LEGEND_MAX; g++)
        nlegend++;
    colw = 90 + (int)maxaccel * (sq + gap);
    if (colw < colw_min)
        colw = colw_min;
    width = 20 + (int)nr * (colw + 20);
    if (width < 420)
        width = 420;
    height = top + (int)maxnodes * rowh + 40 + (int)(nlegend + 3) * rowh;
    map = gpu_map(v, err);
    if (!map)
        return err->code;
    if (tpx_buf_addf(out, err,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                     "font-family=\"monospace\" font-size=\"11\">\n"
                     "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n"
                     "<text x=\"20\" y=\"20\" font-size=\"14\">topox plan: %zu of %zu replicas "
                     "placed</text>\n",
                     width, height, v->manifest->nreplicas - v->plan->nrejected,
                     v->manifest->nreplicas) != TPX_OK)
        goto fail;
    for (size_t r = 0; r < nr; r++) {
        size_t nn;
        const size_t *nodes = topo_cluster_rack_nodes(v->cluster, r, &nn);
        int x0 = 20 + (int)r * (colw + 20);

        if (tpx_buf_addf(out, err,
                         "<g class=\"rack\"><text x=\"%d\" y=\"%d\" font-weight=\"bold\">", x0,
                         top - 4) != TPX_OK ||
            add_xml(out, topo_cluster_rack_name(v->cluster, r), err) != TPX_OK ||
            tpx_buf_adds(out, "</text>\n", err) != TPX_OK)
            goto fail;
        for (size_t k = 0; k < nn && k < maxnodes; k++) {
            const char *m = map[nodes[k]];
            int y = top + (int)k * rowh;
            if (tpx_buf_addf(out, err, "<text x=\"%d\" y=\"%d\">", x0, y + sq) != TPX_OK ||
                add_xml(out, topo_cluster_node(v->cluster, nodes[k])->name, err) != TPX_OK ||
                tpx_buf_adds(out, "</text>", err) != TPX_OK)
                goto fail;
            for (size_t a = 0; m[a] && a < maxaccel; a++) {
                if (tpx_buf_addf(out, err,
                                 "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                                 "stroke=\"#555\"/>",
                                 x0 + 90 + (int)a * (sq + gap), y + 2, sq, sq,
                                 colour(m[a])) != TPX_OK)
                    goto fail;
            }
            if (tpx_buf_adds(out, "\n", err) != TPX_OK)
                goto fail;
        }
        if (tpx_buf_adds(out, "</g>\n", err) != TPX_OK)
            goto fail;
    }
    {
        int y = top + (int)maxnodes * rowh + 30;
        static const struct {
            char c;
            const char *what;
        } fixed[] = {{'.', "free"}, {'#', "used by others"}, {'-', "node takes no pods"}};
        for (size_t f = 0; f < 3; f++, y += rowh) {
            if (tpx_buf_addf(out, err,
                             "<rect x=\"20\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                             "stroke=\"#555\"/><text x=\"40\" y=\"%d\">%s</text>\n",
                             y - sq + 2, sq, sq, colour(fixed[f].c), y, fixed[f].what) != TPX_OK)
                goto fail;
        }
        for (size_t g = 0; g < nlegend; g++, y += rowh) {
            size_t job = 0;
            while (job + 1 < v->manifest->njobs && v->manifest->jobs[job + 1].first_replica <= g)
                job++;
            if (tpx_buf_addf(out, err,
                             "<rect x=\"20\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                             "stroke=\"#555\"/><text x=\"40\" y=\"%d\">%c ",
                             y - sq + 2, sq, sq, colour(cmd_plan_symbol(g)), y,
                             cmd_plan_symbol(g)) != TPX_OK ||
                add_xml(out, v->manifest->jobs[job].name, err) != TPX_OK ||
                tpx_buf_addf(out, err, " #%zu%s</text>\n", g - v->manifest->jobs[job].first_replica,
                             find_reject(v, job, g - v->manifest->jobs[job].first_replica)
                                 ? " (rejected)"
                                 : "") != TPX_OK)
                goto fail;
        }
    }
    if (tpx_buf_adds(out, "</svg>\n", err) != TPX_OK)
        goto fail;
    map_free(map, n);
    return TPX_OK;
fail:
    map_free(map, n);
    return err->code;
}
