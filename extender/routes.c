/* SPDX-License-Identifier: Apache-2.0 */
/* extender/routes.c - the extender's verbs and the operational endpoints. */
#include "extender/routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/jsonstr.h"
#include "common/log.h"
#include "extender/cpumembers.h"
#include "tpx_version.h"

/* Hand a buffer to the response. */
static void give(struct ext_http_resp *rp, unsigned status, struct tpx_buf *b, const char *ctype)
{
    rp->status = status;
    rp->body = tpx_buf_detach(b, &rp->len);
    rp->content_type = ctype;
    if (!rp->body) {
        rp->status = 500;
        rp->len = 0;
    }
}

static void text(struct ext_http_resp *rp, unsigned status, const char *json)
{
    rp->status = status;
    rp->body = strdup(json);
    rp->len = rp->body ? strlen(rp->body) : 0;
}

/* {"error":"msg"} with status. */
static void error_json(struct ext_http_resp *rp, unsigned status, const char *msg)
{
    struct tpx_buf b;
    struct tpx_err e = TPX_ERR_INIT;

    tpx_buf_init(&b, 64 * 1024);
    if (tpx_buf_adds(&b, "{\"error\":", &e) == TPX_OK && tpx_json_str(&b, msg, &e) == TPX_OK &&
        tpx_buf_adds(&b, "}", &e) == TPX_OK) {
        give(rp, status, &b, NULL);
        return;
    }
    tpx_buf_release(&b);
    text(rp, status, "{\"error\":\"internal error\"}");
}

/* A reason histogram as a JSON object for the decision log: reasons are shared strings, so the
 * pointer identifies them. */
static char *reason_histogram(const struct ext_state_verdicts *v)
{
    const char *seen[16];
    size_t count[16], n = 0, other = 0;
    struct tpx_buf b;
    struct tpx_err e = TPX_ERR_INIT;

    /* every node passing (v->nfit == v->n) leaves nothing to count */
    for (size_t i = 0; v && v->nfit < v->n && i < v->n; i++) {
        size_t k;
        if (v->verdict[i] == POL_FIT)
            continue;
        for (k = 0; k < n && seen[k] != v->reason[i]; k++)
            ;
        if (k == n && n < 16) {
            seen[n] = v->reason[i];
            count[n++] = 0;
        }
        if (k < n)
            count[k]++;
        else
            other++;
    }
    tpx_buf_init(&b, 64 * 1024);
    tpx_buf_adds(&b, "{", &e);
    for (size_t k = 0; k < n; k++) {
        if (k)
            tpx_buf_adds(&b, ",", &e);
        tpx_json_str(&b, seen[k] ? seen[k] : "", &e);
        tpx_buf_addf(&b, &e, ":%zu", count[k]);
    }
    if (other)
        tpx_buf_addf(&b, &e, "%s\"other\":%zu", n ? "," : "", other);
    tpx_buf_adds(&b, "}", &e);
    if (e.code != TPX_OK) {
        tpx_buf_release(&b);
        return NULL;
    }
    return tpx_buf_detach(&b, NULL);
}

static void count_verdicts(struct ext_routes *r, const struct ext_state_verdicts *v)
{
    const char *last = NULL;
    enum pol_verdict lastv = POL_FIT;
    size_t run = 0;

    ext_metrics_verdict(r->metrics, "fit", NULL, v->nfit);
    if (v->nfit == v->n)
        return; /* no reason to count */
    /* runs of equal reasons are common (5 000 nodes, a handful of reasons) */
    for (size_t i = 0; i <= v->n; i++) {
        bool end = i == v->n;
        if (!end && v->verdict[i] == POL_FIT)
            continue;
        if (!end && v->reason[i] == last && v->verdict[i] == lastv) {
            run++;
            continue;
        }
        if (run)
            ext_metrics_verdict(r->metrics,
                                strcmp(last, EXT_UNKNOWN_NODE_REASON) == 0 ? "unknown"
                                : lastv == POL_UNRESOLVABLE                ? "unresolvable"
                                                                           : "fail",
                                last, run);
        if (end)
            break;
        last = v->reason[i];
        lastv = v->verdict[i];
        run = 1;
    }
}

static void log_decision(const char *verb, const struct ext_codec_pod *pod, size_t in, size_t out,
                         const struct ext_state_verdicts *v, double t0, const char *error)
{
    char *hist;

    if (TPX_INFO < tpx_log_level)
        return;
    hist = reason_histogram(v);
    TPX_LOG(
        TPX_INFO, "decision", TPX_S("verb", verb), TPX_S("pod", pod && pod->name ? pod->name : ""),
        TPX_S("ns", pod && pod->ns ? pod->ns : ""),
        TPX_S("group", pod && pod->wl.has_intent ? pod->wl.group : ""),
        TPX_B("intent", pod && pod->wl.has_intent), TPX_I("nodes_in", in), TPX_I("nodes_out", out),
        TPX_RAW("reasons", hist ? hist : "{}"), TPX_S("err", error ? error : ""),
        TPX_I("dur_us", (long long)((tpx_mono_s() - t0) * 1e6)));
    free(hist);
}

/* Which state a filter or prioritize reads (issue 12, item 4: only topox decides what state
 * changes). Node objects in a request never change the watch-fed cache: with a cluster loaded
 * they only name the candidates, and the cache says what each node is; without one (no --nodes,
 * --cluster or watch), they make a throwaway state for this request alone, *tmp (free it with
 * ext_state_free()). Names mode ignores Nodes altogether. */
static struct ext_state *request_state(struct ext_routes *r, const struct ext_codec_args *a,
                                       struct ext_state **tmp, struct tpx_err *e)
{
    struct topo_node_info *infos = NULL;
    size_t n = 0;

    *tmp = NULL;
    if (!a->full_nodes || ext_state_has_cluster(r->state))
        return r->state;
    *tmp = ext_state_new(60, e);
    if (!*tmp)
        return NULL;
    if (ext_codec_node_infos(a, &r->opts, &infos, &n, e) != TPX_OK ||
        ext_state_upsert_nodes(*tmp, infos, n, NULL, e) != TPX_OK) {
        free(infos);
        ext_state_free(*tmp);
        *tmp = NULL;
        return NULL;
    }
    free(infos);
    return *tmp;
}

/* A pod with intent that no node can take: one Warning per group and reason (binder.c dedupes).
 * The reason is the most frequent one (reasons are shared strings: the pointer identifies them);
 * nodes topox does not know do not count. */
static void warn_rejected(struct ext_routes *r, const struct ext_codec_pod *pod,
                          const struct ext_state_verdicts *v, const char *fixed)
{
    const char *seen[16];
    size_t count[16], n = 0, best = 0;

    if (!r->binder || !pod->ns || !pod->name)
        return;
    for (size_t i = 0; !fixed && v && i < v->n; i++) {
        size_t k;

        if (v->verdict[i] == POL_FIT || !v->reason[i] ||
            strcmp(v->reason[i], EXT_UNKNOWN_NODE_REASON) == 0)
            continue;
        for (k = 0; k < n && seen[k] != v->reason[i]; k++)
            ;
        if (k == n && n < 16) {
            seen[n] = v->reason[i];
            count[n++] = 0;
        }
        if (k < n && ++count[k] > count[best])
            best = k;
    }
    if (!fixed && n == 0)
        return;
    ext_binder_rejected(r->binder, pod->ns, pod->name, pod->uid, pod->wl.group,
                        fixed ? fixed : seen[best]);
}

/* The status for a request that did not decode: a node name that is not one is 400, too many
 * candidates 413 (issue 12, items 3 and 6); malformed JSON keeps the verb's usual answer. */
static unsigned decode_status(const struct tpx_err *e, unsigned otherwise)
{
    if (e->code == TPX_EINVAL)
        return 400;
    if (e->code == TPX_ETOOBIG)
        return 413;
    return otherwise;
}

static const char *uncertain_action(enum pol_uncertain u)
{
    return u == POL_UNCERTAIN_REJECT ? "reject" : u == POL_UNCERTAIN_IGNORE ? "ignore" : "prefer";
}

/* The certainty rule (docs/workloads.md): a layout read from engine flags that are unknown or do
 * not add up is placed as the `uncertain` setting says (preferred by default: never rejected for
 * a layout reason). Once per group: a log line with what was read, the metric, a Warning Event. */
static void apply_uncertain(struct ext_routes *r, struct ext_codec_pod *pod, bool note)
{
    const struct pol_layout *lay = &pod->wl.layout;
    const char *key = pod->wl.group[0] ? pod->wl.group : pod->uid;
    char msg[512];

    if (pod->infer_failed || pod->wl.accel_per_pod == 0)
        return;
    if (lay->certain) {
        /* the layout read from flags, once per group */
        if (note && lay->read[0] &&
            ext_metrics_layout_seen(r->metrics, key, true, uncertain_action(r->uncertain)))
            TPX_LOG(TPX_INFO, "layout", TPX_S("group", pod->wl.display), TPX_S("read", lay->read),
                    TPX_I("tp", pod->wl.tp), TPX_I("pp", pod->wl.pp), TPX_I("dp", pod->wl.dp),
                    TPX_I("ep", lay->ep));
        return;
    }
    pol_workload_uncertain(&pod->wl, r->uncertain);
    if (!note || !ext_metrics_layout_seen(r->metrics, key, false, uncertain_action(r->uncertain)))
        return;
    if (!lay->read[0]) {
        /* nothing was read at all (no engine flag, no annotation): a data-parallel world, by
         * design and not by a fault of the pod's, so counted and logged, but no Warning */
        TPX_LOG(TPX_INFO, "data-parallel layout", TPX_S("group", pod->wl.display),
                TPX_S("why", lay->why), TPX_B("held", pod->wl.dp_world && !pod->wl.preferred));
        return;
    }
    snprintf(msg, sizeof(msg), "layout not certain (%s): %s; %s", lay->why, lay->read,
             r->uncertain == POL_UNCERTAIN_REJECT   ? "judged as written (uncertain: reject)"
             : r->uncertain == POL_UNCERTAIN_IGNORE ? "placed without topology (uncertain: ignore)"
                                                    : "placed as preferred, scored only");
    TPX_LOG(TPX_WARN, "uncertain layout", TPX_S("pod", pod->name ? pod->name : ""),
            TPX_S("group", pod->wl.display), TPX_S("read", lay->read), TPX_S("why", lay->why),
            TPX_S("action", uncertain_action(r->uncertain)));
    if (r->binder && pod->ns && pod->name)
        ext_binder_uncertain(r->binder, pod->ns, pod->name, pod->uid, pod->wl.group, msg);
}

/* A group's members that ask for no accelerator take no slot and no rank: one is remembered at
 * its own filter (the watch remembers those it sees bound), and its group's accelerator members
 * count only themselves (pol_workload_skip_members). Before the uncertain setting: a layout that
 * counted such a member no longer adds up. */
static void cpu_members(struct ext_routes *r, struct ext_codec_pod *pod)
{
    double now = tpx_mono_s();

    if (pod->infer_failed)
        return;
    ext_cpu_members_note(r->cpu_members, &pod->wl, pod->uid, now, false);
    ext_cpu_members_skip(r->cpu_members, &pod->wl, now);
}

/* Traffic, not the word "tp" (docs/workloads.md): a group whose TP or EP group spans pods because
 * it is MoE traffic (EP, DP-attention) or its owner allowed it is placed in the tightest scope;
 * once per group, a log line and a Warning Event say so. */
static void note_cross_node(struct ext_routes *r, const struct ext_codec_pod *pod)
{
    const struct pol_workload *wl = &pod->wl;
    char msg[512];

    if (pod->infer_failed || !pol_workload_spans_nodes(wl))
        return;
    snprintf(msg, sizeof(msg),
             "tp %u, ep %u%s over pods of %u %s: %s crosses nodes; placed in one NVLink domain "
             "where one holds it, else in one rack on RDMA nodes (read: %.200s)",
             wl->tp, wl->layout.ep, wl->layout.dp_attention ? " with DP-attention" : "",
             wl->accel_per_pod, pol_accel_word(wl->resource),
             wl_layout_dense(&wl->layout) ? "its every-layer all-reduce (topox.io/cross-node-tp: "
                                            "allow)"
                                          : "its EP all-to-all and the dense layers' all-reduce",
             wl->layout.read);
    if (r->binder && pod->ns && pod->name &&
        ext_binder_cross_node(r->binder, pod->ns, pod->name, pod->uid, wl->group, msg))
        TPX_LOG(TPX_INFO, "cross-node parallelism", TPX_S("group", wl->display),
                TPX_S("message", msg));
}

/* What a filter answer reads while it is sent (ext_codec_filter_stream): freed by its release. */
struct filter_hold {
    struct ext_codec_args a;
    struct ext_state_verdicts v;
    enum pol_verdict *all;
    const char **why;
    struct ext_state *tmp;
};

static void filter_hold_free(void *p)
{
    struct filter_hold *h = p;

    free(h->all);
    free(h->why);
    ext_state_verdicts_release(&h->v);
    ext_state_free(h->tmp);
    ext_codec_args_release(&h->a);
    free(h);
}

static size_t filter_stream_read(void *ctx, size_t pos, char *buf, size_t max)
{
    return ext_codec_filter_stream_read(ctx, pos, buf, max);
}

static void filter_stream_done(void *ctx)
{
    ext_codec_filter_stream_free(ctx); /* and, through its release, the filter_hold */
}

/* A 200 answer of len bytes written by gen as it is sent; gen_free(ctx) when done with it. */
static void streamed(struct ext_http_resp *rp, size_t (*gen)(void *, size_t, char *, size_t),
                     void (*gen_free)(void *), void *ctx, size_t len)
{
    rp->status = 200;
    rp->gen = gen;
    rp->gen_free = gen_free;
    rp->gen_ctx = ctx;
    rp->gen_len = len;
}

/* The answer to a filter that was decided: streamed (no answer buffer: issue 14), the stream then
 * owning h; or, when that cannot be set up, written into b (h stays the caller's). */
static enum tpx_code filter_answer(struct filter_hold *h, const enum pol_verdict *verdict,
                                   const char *const *reason, struct tpx_buf *b,
                                   struct ext_http_resp *rp, struct tpx_err *e)
{
    struct ext_codec_filter_stream *f;
    size_t len;

    f = ext_codec_filter_stream_new(&h->a, verdict, reason, filter_hold_free, h, &len, e);
    if (!f) {
        tpx_err_clear(e);
        return ext_codec_filter_result(&h->a, verdict, reason, b, e);
    }
    streamed(rp, filter_stream_read, filter_stream_done, f, len);
    return TPX_OK;
}

/* Issue 20, item 2 (smaller filter answers). Where any node passes, kube-scheduler goes on with
 * those and reads no filter status, unless a later extender then drops every node
 * (findNodesThatPassExtenders, then schedulePod's FitError: k8s.io/kubernetes v1.37.2,
 * pkg/scheduler/schedule_one.go). A node left out of the answer reads as
 * UnschedulableAndUnresolvable, just as FailedAndUnresolvableNodes says, so preemption sees the
 * same candidates; only the reason's text is not sent. For a later member of a held group that
 * is every node outside its rack: at 2,000 nodes a list of ~1,400 names and reasons that
 * kube-scheduler decoded into a map and a status each. FailedNodes (room that eviction could
 * make) stay listed. */
static void omit_unresolvable(struct ext_state_verdicts *v)
{
    if (v->nfit == 0 || !v->verdict)
        return;
    for (size_t i = 0; i < v->n; i++) {
        if (v->verdict[i] == POL_UNRESOLVABLE)
            v->verdict[i] = EXT_VERDICT_OMIT;
    }
}

static unsigned do_filter(struct ext_routes *r, const struct ext_http_req *rq,
                          struct ext_http_resp *rp)
{
    double t0 = tpx_mono_s();
    struct filter_hold *h = calloc(1, sizeof(*h));
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_buf b;
    struct ext_state *st = NULL;
    const enum pol_verdict *verdict = NULL;
    const char *const *reason = NULL;
    struct ext_codec_args *a;
    struct ext_state_verdicts *v;
    size_t nout;

    tpx_buf_init(&b, r->max_response);
    if (!h) {
        text(rp, 200, "{\"Error\":\"out of memory\"}");
        return 200;
    }
    a = &h->a;
    v = &h->v;
    if (ext_codec_decode_args(rq->body, rq->body_len, &r->opts, a, &e) != TPX_OK) {
        unsigned status = decode_status(&e, 200);

        free(h);
        TPX_LOG(TPX_WARN, "bad filter request", TPX_S("err", e.msg));
        ext_codec_filter_error(e.msg, &b, &e);
        give(rp, status, &b, NULL);
        return status;
    }
    cpu_members(r, &a->pod);
    apply_uncertain(r, &a->pod, true);
    note_cross_node(r, &a->pod);
    if (a->pod.infer_failed) {
        /* DESIGN.md filter rule 1: an unreadable intent rejects every node, with the reason */
        h->all = malloc((a->nnames ? a->nnames : 1) * sizeof(*h->all));
        h->why = malloc((a->nnames ? a->nnames : 1) * sizeof(*h->why));
        if (!h->all || !h->why) {
            tpx_err_set(&e, TPX_ENOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < a->nnames; i++) {
            h->all[i] = POL_UNRESOLVABLE;
            h->why[i] = a->pod.msg;
        }
        verdict = h->all;
        reason = h->why;
        nout = 0;
        if (a->nnames)
            warn_rejected(r, &a->pod, NULL, a->pod.msg);
    } else if (a->pod.wl.has_intent) {
        if (a->pod.wl.group[0] && a->pod.wl.group_size > 1) /* its cycle runs: no node for now */
            ext_nominator_filtered(r->nominator, a->pod.uid);
        ext_state_remember_pod(r->state, a->pod.uid, a->pod.ns, a->pod.name, &a->pod.wl,
                               time(NULL));
        st = request_state(r, a, &h->tmp, &e);
        if (!st || ext_state_filter_res(st, &a->pod.wl, (const char *const *)a->names, a->nnames,
                                        st == r->state ? a->resolution : NULL, time(NULL), v,
                                        &e) != TPX_OK)
            goto fail;
        verdict = v->verdict;
        reason = v->reason;
        nout = v->nfit;
        count_verdicts(r, v);
        /* No nomination here, though a gang's filter may have held its whole room: its members
         * are nominated once their cycle is over (the nominator's sweep, when still pending).
         * kube-scheduler 1.37 filters every member in one gang cycle, so a nomination landing
         * now helps no one and makes the scheduler count each nominee on its node while its
         * mates are filtered (bench/scheduler, 2,000 nodes: TopoxGang 26.5-27.3 pods/s with
         * these nominations, 33.0-33.2 without). A group seen waiting before its cycle was held
         * and nominated then (ext_nominator_hold_waiting). */
        if (v->n > v->nunknown && v->nfit == 0)
            warn_rejected(r, &a->pod, v, NULL);
    } else {
        nout = a->nnames; /* no intent: every node passes untouched */
        ext_metrics_verdict(r->metrics, "fit", NULL, a->nnames);
        /* but its accelerators count once it is bound: without a watch, this is the only place
         * topox learns what the pod requests (a bind carries no resources) */
        if (a->pod.wl.accel_per_pod > 0)
            ext_state_remember_pod(r->state, a->pod.uid, a->pod.ns, a->pod.name, &a->pod.wl,
                                   time(NULL));
        else
            ext_state_note_filtered(r->state, a->pod.uid, a->pod.ns, a->pod.name, time(NULL));
    }
    log_decision("filter", &a->pod, a->nnames, nout, verdict == v->verdict ? v : NULL, t0, NULL);
    if (verdict && verdict == v->verdict && r->lean_filter) {
        ext_held_narrow(r->held, st, a->pod.uid, &a->pod.wl, (const char *const *)a->names,
                        a->nnames, v, tpx_mono_s());
        omit_unresolvable(v);
    }
    if (filter_answer(h, verdict, reason, &b, rp, &e) != TPX_OK)
        goto fail;
    if (rp->gen) { /* the stream reads h until it is sent, then frees it */
        tpx_buf_release(&b);
        return 200;
    }
    give(rp, 200, &b, NULL);
    filter_hold_free(h);
    return 200;
fail:
    log_decision("filter", &a->pod, a->nnames, 0, NULL, t0, e.msg);
    tpx_buf_reset(&b);
    {
        struct tpx_err e2 = TPX_ERR_INIT;
        ext_codec_filter_error(e.msg, &b, &e2);
    }
    give(rp, 200, &b, NULL);
    filter_hold_free(h);
    return 200;
}

/* What a prioritize answer reads while it is sent (ext_codec_prio_stream): freed by its release. */
struct prio_hold {
    struct ext_codec_args a;
    int *scores;
};

static void prio_hold_free(void *p)
{
    struct prio_hold *h = p;

    free(h->scores);
    ext_codec_args_release(&h->a);
    free(h);
}

static size_t prio_stream_read(void *ctx, size_t pos, char *buf, size_t max)
{
    return ext_codec_priorities_stream_read(ctx, pos, buf, max);
}

static void prio_stream_done(void *ctx)
{
    ext_codec_priorities_stream_free(ctx); /* and, through its release, the prio_hold */
}

/* The answer to a prioritize that was scored: streamed (no answer buffer: issue 14), the stream
 * then owning h; or, when that cannot be set up, written into b (h stays the caller's). The cap
 * on a response holds either way. */
static enum tpx_code prio_answer(struct ext_routes *r, struct prio_hold *h, struct tpx_buf *b,
                                 struct ext_http_resp *rp, struct tpx_err *e)
{
    struct ext_codec_prio_stream *f;
    size_t len;

    f = ext_codec_priorities_stream_new(&h->a, h->scores, r->max_response, prio_hold_free, h, &len,
                                        e);
    if (!f && e->code == TPX_ETOOBIG)
        return e->code;
    if (!f) {
        tpx_err_clear(e);
        return ext_codec_priorities_plain((const char *const *)h->a.names, h->a.plain, h->scores,
                                          h->a.nnames, b, e);
    }
    streamed(rp, prio_stream_read, prio_stream_done, f, len);
    return TPX_OK;
}

static unsigned do_prioritize(struct ext_routes *r, const struct ext_http_req *rq,
                              struct ext_http_resp *rp)
{
    double t0 = tpx_mono_s();
    struct prio_hold *h = calloc(1, sizeof(*h));
    struct ext_codec_args *a;
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_buf b;
    struct ext_state *st = NULL, *tmp = NULL;

    if (!h) {
        error_json(rp, 500, "out of memory");
        return 500;
    }
    a = &h->a;
    tpx_buf_init(&b, r->max_response);
    if (ext_codec_decode_args(rq->body, rq->body_len, &r->opts, a, &e) != TPX_OK) {
        unsigned status = decode_status(&e, 400);

        free(h);
        TPX_LOG(TPX_WARN, "bad prioritize request", TPX_S("err", e.msg));
        error_json(rp, status, e.msg);
        return status;
    }
    cpu_members(r, &a->pod);
    apply_uncertain(r, &a->pod, false);
    h->scores = calloc(a->nnames ? a->nnames : 1, sizeof(*h->scores));
    if (!h->scores) {
        tpx_err_set(&e, TPX_ENOMEM, "out of memory");
        goto fail;
    }
    if (a->pod.wl.has_intent && !a->pod.infer_failed) {
        st = request_state(r, a, &tmp, &e);
        if (!st || ext_state_score_res(st, &a->pod.wl, (const char *const *)a->names, a->nnames,
                                       st == r->state ? a->resolution : NULL, time(NULL), h->scores,
                                       &e) != TPX_OK)
            goto fail;
    }
    ext_state_free(tmp);
    tmp = NULL;
    if (prio_answer(r, h, &b, rp, &e) != TPX_OK)
        goto fail;
    log_decision("prioritize", &a->pod, a->nnames, a->nnames, NULL, t0, NULL);
    if (rp->gen) { /* the stream reads h until it is sent, then frees it */
        tpx_buf_release(&b);
        return 200;
    }
    give(rp, 200, &b, NULL);
    prio_hold_free(h);
    return 200;
fail:
    /* prioritize has no Error field: a non-200 status is the only way to say it failed */
    log_decision("prioritize", &a->pod, a->nnames, 0, NULL, t0, e.msg);
    tpx_buf_release(&b);
    error_json(rp, 500, e.msg);
    ext_state_free(tmp);
    prio_hold_free(h);
    return 500;
}

/* The pod table is full: a filter's pod is then not remembered, since only bound pods are left
 * (the table's own LRU evicts every other kind first). */
static bool pods_full(struct ext_state *st)
{
    struct ext_state_pod_stats ps;

    ext_state_pod_stats(st, &ps);
    return ps.entries >= ps.max;
}

static unsigned do_bind(struct ext_routes *r, const struct ext_http_req *rq,
                        struct ext_http_resp *rp)
{
    double t0 = tpx_mono_s();
    struct ext_codec_bind_args ba;
    struct ext_state_bind_out where;
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_buf b;
    bool rolled_back = false, api_failed = false;

    tpx_buf_init(&b, 1024 * 1024);
    memset(&where, 0, sizeof(where));
    if (ext_codec_decode_bind(rq->body, rq->body_len, &ba, &e) != TPX_OK) {
        TPX_LOG(TPX_WARN, "bad bind request", TPX_S("err", e.msg));
    } else if (r->bind_mode == EXT_BIND_API && !r->binder) {
        tpx_err_set(&e, TPX_ENOTSUP,
                    "bind mode 'api' needs the Kubernetes API (--kubeconfig, $KUBECONFIG or "
                    "in-cluster), which this server was started without");
    } else if (!ext_state_was_filtered(r->state, ba.pod_uid, time(NULL)) && pods_full(r->state)) {
        /* issue 21, item 3: the filter could not remember it; say so, not "not filtered" */
        tpx_err_set(&e, TPX_ETOOBIG,
                    "pod '%s/%s' (uid '%s') could not be remembered at filter time: pod table "
                    "full of bound pods (podTableSize); refusing to bind it",
                    ba.pod_ns ? ba.pod_ns : "", ba.pod_name ? ba.pod_name : "", ba.pod_uid);
    } else if (!ext_state_was_filtered(r->state, ba.pod_uid, time(NULL))) {
        /* issue 12, item 4: only a pod this process decided on is booked (or bound) */
        tpx_err_set(&e, TPX_EINVAL,
                    "pod '%s/%s' (uid '%s') was not filtered by this topox within the "
                    "reservation TTL; refusing to bind it",
                    ba.pod_ns ? ba.pod_ns : "", ba.pod_name ? ba.pod_name : "", ba.pod_uid);
    } else if (r->bind_mode == EXT_BIND_API && ext_state_is_foreign(r->state, ba.pod_uid)) {
        tpx_err_set(&e, TPX_EINVAL,
                    "pod '%s/%s' (uid '%s') is not for scheduler '%s' according to the watch; "
                    "refusing to create its Binding",
                    ba.pod_ns ? ba.pod_ns : "", ba.pod_name ? ba.pod_name : "", ba.pod_uid,
                    r->scheduler_name ? r->scheduler_name : "");
    } else if (ext_state_bind(r->state, ba.pod_uid, ba.pod_name, ba.node, time(NULL), &where, &e) ==
                   TPX_OK &&
               r->bind_mode == EXT_BIND_API) {
        /* The placement is recorded first, so a filter racing this bind already sees it taken;
         * if the API server says no, it is taken back so no capacity leaks. The rest of its
         * group is held from here: its members are nominated now, not after the Binding's
         * round trip, while kube-scheduler is already taking the next pods from its queue (a
         * hold taken back lapses, and the nominator clears what it set for it). */
        if (where.intent) {
            ext_nominator_bound(r->nominator, ba.pod_uid);
            ext_nominator_touch(r->nominator, where.group);
        }
        if (ext_binder_bind(r->binder, ba.pod_ns, ba.pod_name, ba.pod_uid, ba.node, &where, &e) !=
            TPX_OK) {
            api_failed = true;
            /* ...unless the watch reported the pod bound meanwhile (a 409 from a racing
             * binder): then the API server's placement stands. */
            if (!where.already && ba.pod_uid)
                rolled_back = ext_state_unbind(r->state, ba.pod_uid);
        } else {
            ext_binder_placed(r->binder, ba.pod_ns, ba.pod_name, ba.pod_uid, &where);
        }
    }
    /* a bind refused or failed is kube-scheduler's pod sent back to its queue: said at warn, so
     * the default level keeps why (bench/scheduler counted refusals it could not explain) */
    TPX_LOG(e.code == TPX_OK ? TPX_INFO : TPX_WARN, "decision", TPX_S("verb", "bind"),
            TPX_S("pod", ba.pod_name ? ba.pod_name : ""), TPX_S("ns", ba.pod_ns ? ba.pod_ns : ""),
            TPX_S("node", ba.node ? ba.node : ""), TPX_S("group", where.group),
            TPX_S("rack", where.rack), TPX_S("domain", where.domain), TPX_I("stage", where.stage),
            TPX_B("known", where.known), TPX_B("api", r->bind_mode == EXT_BIND_API),
            TPX_B("rolled_back", rolled_back), TPX_S("err", e.msg),
            TPX_I("dur_us", (long long)((tpx_mono_s() - t0) * 1e6)));
    ext_metrics_bind(r->metrics, e.code == TPX_OK ? EXT_METRICS_BIND_BOUND
                                 : api_failed     ? EXT_METRICS_BIND_FAILED
                                                  : EXT_METRICS_BIND_REFUSED);
    ext_codec_bind_args_release(&ba);
    {
        struct tpx_err e2 = TPX_ERR_INIT;
        ext_codec_bind_result(e.code == TPX_OK ? "" : e.msg, &b, &e2);
    }
    give(rp, 200, &b, NULL);
    return 200;
}

/* A request the codec refused: 413 when over a cap, 503 when out of memory, else 400; the
 * message is never empty. */
static unsigned refused_status(const struct tpx_err *e)
{
    return e->code == TPX_ETOOBIG ? 413 : e->code == TPX_ENOMEM ? 503 : 400;
}

static unsigned do_preempt(struct ext_routes *r, const struct ext_http_req *rq,
                           struct ext_http_resp *rp)
{
    double t0 = tpx_mono_s();
    struct ext_codec_preempt_args pa;
    struct ext_state_verdicts v;
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_buf b;
    bool *keep = NULL;
    unsigned status = 200;

    memset(&v, 0, sizeof(v));
    tpx_buf_init(&b, r->max_response);
    if (ext_codec_decode_preempt(rq->body, rq->body_len, &r->opts, &pa, &e) != TPX_OK) {
        if (!e.msg[0])
            tpx_err_set(&e, e.code, "ExtenderPreemptionArgs could not be read");
        TPX_LOG(TPX_WARN, "bad preempt request", TPX_S("err", e.msg));
        status = refused_status(&e);
        error_json(rp, status, e.msg);
        return status;
    }
    cpu_members(r, &pa.pod);
    apply_uncertain(r, &pa.pod, false);
    keep = calloc(pa.n ? pa.n : 1, sizeof(*keep));
    if (!keep) {
        tpx_err_set(&e, TPX_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < pa.n; i++)
        keep[i] = !pa.pod.infer_failed;
    /* keep only nodes where the topology rules could let the preemptor fit once victims go:
     * POL_FAIL (capacity) yes, POL_UNRESOLVABLE (wrong rack or domain) no */
    if (pa.pod.wl.has_intent && !pa.pod.infer_failed) {
        if (ext_state_filter(r->state, &pa.pod.wl, pa.names, pa.n, time(NULL), &v, &e) != TPX_OK)
            goto fail;
        for (size_t i = 0; i < pa.n; i++)
            keep[i] = v.verdict[i] != POL_UNRESOLVABLE;
    }
    if (ext_codec_preempt_result(&pa, keep, &b, &e) != TPX_OK)
        goto fail;
    log_decision("preempt", &pa.pod, pa.n, pa.n, v.verdict ? &v : NULL, t0, NULL);
    give(rp, 200, &b, NULL);
    goto out;
fail:
    log_decision("preempt", &pa.pod, pa.n, 0, NULL, t0, e.msg);
    tpx_buf_release(&b);
    status = e.code == TPX_ENOMEM ? 503 : 500;
    error_json(rp, status, e.msg);
out:
    free(keep);
    ext_state_verdicts_release(&v);
    ext_codec_preempt_args_release(&pa);
    return status;
}

struct render_ctx {
    struct tpx_buf *b;
    struct tpx_err *e;
    bool debug;
};

static void render(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct render_ctx *rc = ctx;

    if (rc->debug)
        ext_codec_debug_state(l, pods_seen, rc->b, rc->e);
    else
        ext_metrics_render_ledger(l, pods_seen, rc->b, rc->e);
}

/* The binder's counters in Prometheus text (nothing without an API server). */
static void render_binder(struct ext_binder *bd, struct tpx_buf *b, struct tpx_err *e)
{
    struct ext_binder_stats st;

    if (!bd)
        return;
    ext_binder_get_stats(bd, &st);
    tpx_buf_addf(b, e,
                 "# HELP topox_api_binds_total Binding POSTs to the API server, by result.\n"
                 "# TYPE topox_api_binds_total counter\n"
                 "topox_api_binds_total{result=\"ok\"} %lu\n"
                 "topox_api_binds_total{result=\"error\"} %lu\n"
                 "# HELP topox_events_total Events on pods, by what became of them.\n"
                 "# TYPE topox_events_total counter\n"
                 "topox_events_total{result=\"sent\"} %lu\n"
                 "topox_events_total{result=\"retried\"} %lu\n"
                 "topox_events_total{result=\"dropped\"} %lu\n"
                 "topox_events_total{result=\"deduplicated\"} %lu\n"
                 "# HELP topox_events_queued Events waiting to be sent.\n"
                 "# TYPE topox_events_queued gauge\n"
                 "topox_events_queued %zu\n",
                 st.binds, st.bind_failures, st.events_sent, st.events_retried, st.events_dropped,
                 st.warnings_deduped, st.events_queued);
}

/* The nominator's counters in Prometheus text (nothing without --nominate). */
static void render_nominator(struct ext_nominator *n, struct tpx_buf *b, struct tpx_err *e)
{
    struct ext_nominator_stats st;

    if (!n)
        return;
    ext_nominator_get_stats(n, &st);
    tpx_buf_addf(b, e,
                 "# HELP topox_nominations_total status.nominatedNodeName PATCHes on pending "
                 "members of held groups, by result: set, cleared (their hold went), failed.\n"
                 "# TYPE topox_nominations_total counter\n"
                 "topox_nominations_total{result=\"set\"} %lu\n"
                 "topox_nominations_total{result=\"cleared\"} %lu\n"
                 "topox_nominations_total{result=\"failed\"} %lu\n"
                 "# HELP topox_waiting_group_holds_total Groups whose room was held while they "
                 "waited in kube-scheduler's queue, before any member's cycle "
                 "(holdWaitingGroups).\n"
                 "# TYPE topox_waiting_group_holds_total counter\n"
                 "topox_waiting_group_holds_total %lu\n",
                 st.set, st.cleared, st.failed, st.waiting_holds);
}

/* The pod table's size and what it has forgotten, in Prometheus text. */
static void render_pod_table(struct ext_state *st, struct tpx_buf *b, struct tpx_err *e)
{
    struct ext_state_pod_stats ps;

    ext_state_pod_stats(st, &ps);
    tpx_buf_addf(b, e,
                 "# HELP topox_pod_table_entries Pods remembered between filter and bind.\n"
                 "# TYPE topox_pod_table_entries gauge\n"
                 "topox_pod_table_entries %zu\n"
                 "# HELP topox_pod_table_size The pod table's bound (podTableSize).\n"
                 "# TYPE topox_pod_table_size gauge\n"
                 "topox_pod_table_size %zu\n"
                 "# HELP topox_pod_table_evictions_total Filtered, unbound pods forgotten, by "
                 "why: the table was full, their namespace held podTableNamespaceMax, or they "
                 "were older than an hour; or, bound without a watch (record mode), their booking "
                 "was among the oldest when bookings filled half the table.\n"
                 "# TYPE topox_pod_table_evictions_total counter\n"
                 "topox_pod_table_evictions_total{reason=\"full\"} %lu\n"
                 "topox_pod_table_evictions_total{reason=\"namespace\"} %lu\n"
                 "topox_pod_table_evictions_total{reason=\"expired\"} %lu\n"
                 "# HELP topox_pod_table_refusals_total Filters not remembered: the table held "
                 "only bound pods.\n"
                 "# TYPE topox_pod_table_refusals_total counter\n"
                 "topox_pod_table_refusals_total %lu\n",
                 ps.entries, ps.max, ps.evicted_full, ps.evicted_namespace, ps.expired, ps.refused);
}

static unsigned do_get(struct ext_routes *r, const char *path, struct ext_http_resp *rp)
{
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_buf b;
    const char *why = NULL;

    if (strcmp(path, "/healthz") == 0) {
        text(rp, 200, "{\"status\":\"ok\"}");
        return 200;
    }
    if (strcmp(path, "/readyz") == 0) {
        bool ok = ext_state_ready(r->state, &why);
        tpx_buf_init(&b, 4096);
        tpx_buf_adds(
            &b,
            ok ? "{\"status\":\"ready\",\"reason\":" : "{\"status\":\"not ready\",\"reason\":", &e);
        tpx_json_str(&b, why, &e);
        tpx_buf_adds(&b, "}", &e);
        give(rp, ok ? 200 : 503, &b, NULL);
        return ok ? 200 : 503;
    }
    if (strcmp(path, "/version") == 0) {
        text(rp, 200, "{\"version\":\"" TPX_VERSION "\",\"commit\":\"" TPX_GIT_COMMIT "\"}");
        return 200;
    }
    if (strcmp(path, "/metrics") == 0) {
        struct render_ctx rc = {&b, &e, false};
        tpx_buf_init(&b, 64 * 1024 * 1024);
        ext_metrics_render(r->metrics, &b, &e);
        ext_state_read(r->state, render, &rc);
        render_pod_table(r->state, &b, &e);
        render_binder(r->binder, &b, &e);
        render_nominator(r->nominator, &b, &e);
        if (e.code != TPX_OK) {
            tpx_buf_release(&b);
            error_json(rp, 500, e.msg);
            return 500;
        }
        give(rp, 200, &b, "text/plain; version=0.0.4; charset=utf-8");
        return 200;
    }
    if (strcmp(path, "/debug/state") == 0) {
        struct render_ctx rc = {&b, &e, true};
        tpx_buf_init(&b, 256 * 1024 * 1024);
        ext_state_expire(r->state, time(NULL)); /* as /metrics counts them: expired ones gone */
        if (!ext_state_read(r->state, render, &rc)) {
            tpx_buf_release(&b);
            text(rp, 503, "{\"error\":\"no cluster loaded\"}");
            return 503;
        }
        if (e.code != TPX_OK) {
            tpx_buf_release(&b);
            error_json(rp, 500, e.msg);
            return 500;
        }
        give(rp, 200, &b, NULL);
        return 200;
    }
    return 0;
}

/* The verb named by the last path segment ("/filter", "/v1/filter"). */
static enum ext_metrics_verb verb_of(const char *path)
{
    static const char *const verbs[] = {"filter", "prioritize", "bind", "preempt"};
    const char *last = strrchr(path, '/');

    last = last ? last + 1 : path;
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(last, verbs[i]) == 0)
            return (enum ext_metrics_verb)i;
    }
    return EXT_METRICS_VERB_OTHER;
}

/* What only the admin listener serves when there is one. */
static bool is_admin_path(const char *p)
{
    return strcmp(p, "/metrics") == 0 || strcmp(p, "/debug/state") == 0;
}

/* The GET paths served on this listener: all of them on the main one without --admin-listen. */
static bool is_get_path(const struct ext_routes *r, const char *p, bool admin)
{
    if (is_admin_path(p))
        return admin || !r->admin_elsewhere;
    return strcmp(p, "/healthz") == 0 || strcmp(p, "/readyz") == 0 || strcmp(p, "/version") == 0;
}

static unsigned do_get_or_405(struct ext_routes *r, const struct ext_http_req *rq,
                              struct ext_http_resp *rp)
{
    if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
        text(rp, 405, "{\"error\":\"method not allowed; use GET\"}");
        rp->allow = "GET, HEAD";
        return 405;
    }
    return do_get(r, rq->path, rp);
}

static unsigned not_found(struct ext_http_resp *rp)
{
    text(rp, 404, "{\"error\":\"not found\"}");
    return 404;
}

void ext_routes_handle(void *ctx, const struct ext_http_req *rq, struct ext_http_resp *rp)
{
    struct ext_routes *r = ctx;
    double t0 = tpx_mono_s();
    enum ext_metrics_verb verb = verb_of(rq->path);
    unsigned status;

    if (verb != EXT_METRICS_VERB_OTHER) {
        if (strcmp(rq->method, "POST") != 0) {
            text(rp, 405, "{\"error\":\"method not allowed; use POST\"}");
            rp->allow = "POST";
            status = 405;
        } else if (verb == EXT_METRICS_VERB_FILTER) {
            status = do_filter(r, rq, rp);
        } else if (verb == EXT_METRICS_VERB_PRIORITIZE) {
            status = do_prioritize(r, rq, rp);
        } else if (verb == EXT_METRICS_VERB_BIND) {
            status = do_bind(r, rq, rp);
        } else {
            status = do_preempt(r, rq, rp);
        }
    } else if (is_get_path(r, rq->path, false)) {
        status = do_get_or_405(r, rq, rp);
    } else {
        status = not_found(rp);
    }
    ext_metrics_request(r->metrics, verb, status, tpx_mono_s() - t0);
}

void ext_routes_handle_admin(void *ctx, const struct ext_http_req *rq, struct ext_http_resp *rp)
{
    struct ext_routes *r = ctx;
    double t0 = tpx_mono_s();
    unsigned status = is_get_path(r, rq->path, true) ? do_get_or_405(r, rq, rp) : not_found(rp);

    ext_metrics_request(r->metrics, EXT_METRICS_VERB_OTHER, status, tpx_mono_s() - t0);
}
