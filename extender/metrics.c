/* SPDX-License-Identifier: Apache-2.0 */
/* extender/metrics.c - counters and fixed-bucket histograms; the text format is written by hand
 * (it is a few dozen lines, and a client library would be one more dependency). */
#include "extender/metrics.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                 0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))
#define MAX_REASONS 64
#define NSTATUS 5 /* 2xx 3xx 4xx 5xx other */

struct reason_count {
    char *verdict;
    char *reason;
    unsigned long long n;
};

#define UNCERTAIN_SLOTS 4096 /* groups remembered for "once per group" */
static const char *const uncertain_actions[] = {"prefer", "reject", "ignore"};

struct ext_metrics {
    pthread_mutex_t lock;
    unsigned long long requests[EXT_METRICS_VERB_COUNT][NSTATUS];
    unsigned long long hist[EXT_METRICS_VERB_COUNT][NBUCKETS + 1];
    double sum[EXT_METRICS_VERB_COUNT];
    unsigned long long count[EXT_METRICS_VERB_COUNT];
    struct reason_count reasons[MAX_REASONS + 4];
    size_t nreasons;
    unsigned long long uncertain[3];                    /* by action: prefer, reject, ignore */
    unsigned long long uncertain_seen[UNCERTAIN_SLOTS]; /* hashes of groups already counted */
    unsigned long long dra_rebuilds;
    unsigned long long binds[3];
};

const char *ext_metrics_verb_name(enum ext_metrics_verb v)
{
    static const char *const names[] = {"filter", "prioritize", "bind", "preempt", "other"};
    return (unsigned)v < EXT_METRICS_VERB_COUNT ? names[v] : "other";
}

struct ext_metrics *ext_metrics_new(struct tpx_err *err)
{
    struct ext_metrics *m = calloc(1, sizeof(*m));

    if (!m) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for metrics");
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    return m;
}

void ext_metrics_free(struct ext_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nreasons; i++) {
        free(m->reasons[i].verdict);
        free(m->reasons[i].reason);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static const char *status_class(size_t i)
{
    static const char *const c[] = {"2xx", "3xx", "4xx", "5xx", "other"};
    return c[i];
}

void ext_metrics_request(struct ext_metrics *m, enum ext_metrics_verb v, unsigned status,
                         double seconds)
{
    size_t sc = status >= 200 && status < 600 ? status / 100 - 2 : 4;
    size_t b = 0;

    if ((unsigned)v >= EXT_METRICS_VERB_COUNT)
        v = EXT_METRICS_VERB_OTHER;
    while (b < NBUCKETS && seconds > buckets[b])
        b++;
    pthread_mutex_lock(&m->lock);
    m->requests[v][sc]++;
    m->hist[v][b]++;
    m->sum[v] += seconds;
    m->count[v]++;
    pthread_mutex_unlock(&m->lock);
}

void ext_metrics_verdict(struct ext_metrics *m, const char *verdict, const char *reason,
                         size_t count)
{
    size_t i;

    if (!count)
        return;
    if (!reason)
        reason = "";
    pthread_mutex_lock(&m->lock);
    for (i = 0; i < m->nreasons; i++) {
        if (strcmp(m->reasons[i].verdict, verdict) == 0 &&
            strcmp(m->reasons[i].reason, reason) == 0)
            break;
    }
    if (i == m->nreasons && m->nreasons >= MAX_REASONS) {
        /* bounded cardinality: fold the rest into "other" */
        for (i = 0; i < m->nreasons; i++) {
            if (strcmp(m->reasons[i].verdict, verdict) == 0 &&
                strcmp(m->reasons[i].reason, "other") == 0)
                break;
        }
        reason = "other";
    }
    if (i == m->nreasons && m->nreasons < MAX_REASONS + 4) {
        m->reasons[i].verdict = strdup(verdict);
        m->reasons[i].reason = strdup(reason);
        if (!m->reasons[i].verdict || !m->reasons[i].reason) {
            free(m->reasons[i].verdict);
            free(m->reasons[i].reason);
            pthread_mutex_unlock(&m->lock);
            return;
        }
        m->reasons[i].n = 0;
        m->nreasons++;
    }
    if (i < m->nreasons)
        m->reasons[i].n += count;
    pthread_mutex_unlock(&m->lock);
}

/* A label value: backslash, quote and newline escaped. */
static enum tpx_code label(struct tpx_buf *out, const char *s, struct tpx_err *err)
{
    for (const char *p = s; *p; p++) {
        const char *rep = NULL;
        char c[2] = {*p, 0};

        if (*p == '\\')
            rep = "\\\\";
        else if (*p == '"')
            rep = "\\\"";
        else if (*p == '\n')
            rep = "\\n";
        if (tpx_buf_adds(out, rep ? rep : c, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

bool ext_metrics_layout_seen(struct ext_metrics *m, const char *group_key, bool certain,
                             const char *action)
{
    /* seeded: group names are chosen by whoever creates pods */
    unsigned long long h = tpx_hash_step(tpx_hash_process_key(), 0, group_key ? group_key : "");
    size_t a = 0;
    bool first;

    h |= 1; /* 0 marks a free slot */
    while (a < 2 && strcmp(uncertain_actions[a], action ? action : "prefer") != 0)
        a++;
    pthread_mutex_lock(&m->lock);
    first = m->uncertain_seen[h % UNCERTAIN_SLOTS] != h;
    if (first) {
        m->uncertain_seen[h % UNCERTAIN_SLOTS] = h;
        if (!certain)
            m->uncertain[a]++;
    }
    pthread_mutex_unlock(&m->lock);
    return first;
}

void ext_metrics_dra_rebuild(struct ext_metrics *m)
{
    pthread_mutex_lock(&m->lock);
    m->dra_rebuilds++;
    pthread_mutex_unlock(&m->lock);
}

void ext_metrics_bind(struct ext_metrics *m, enum ext_metrics_bind result)
{
    if ((unsigned)result >= 3)
        return;
    pthread_mutex_lock(&m->lock);
    m->binds[result]++;
    pthread_mutex_unlock(&m->lock);
}

enum tpx_code ext_metrics_render(struct ext_metrics *m, struct tpx_buf *out, struct tpx_err *err)
{
    enum tpx_code rc = TPX_OK;

    pthread_mutex_lock(&m->lock);
    rc = tpx_buf_adds(out,
                      "# HELP topox_requests_total Extender requests answered, by verb and "
                      "status class.\n# TYPE topox_requests_total counter\n",
                      err);
    for (size_t v = 0; v < EXT_METRICS_VERB_COUNT && rc == TPX_OK; v++) {
        for (size_t s = 0; s < NSTATUS && rc == TPX_OK; s++) {
            if (!m->requests[v][s] && s != 0)
                continue;
            rc = tpx_buf_addf(out, err, "topox_requests_total{verb=\"%s\",code=\"%s\"} %llu\n",
                              ext_metrics_verb_name((enum ext_metrics_verb)v), status_class(s),
                              m->requests[v][s]);
        }
    }
    if (rc == TPX_OK)
        rc = tpx_buf_adds(out,
                          "# HELP topox_request_duration_seconds Time to answer a request, "
                          "body decode to response, by verb.\n"
                          "# TYPE topox_request_duration_seconds histogram\n",
                          err);
    for (size_t v = 0; v < EXT_METRICS_VERB_COUNT && rc == TPX_OK; v++) {
        unsigned long long cum = 0;
        const char *vn = ext_metrics_verb_name((enum ext_metrics_verb)v);

        for (size_t b = 0; b < NBUCKETS && rc == TPX_OK; b++) {
            cum += m->hist[v][b];
            rc = tpx_buf_addf(out, err,
                              "topox_request_duration_seconds_bucket{verb=\"%s\",le=\"%g\"} %llu\n",
                              vn, buckets[b], cum);
        }
        cum += m->hist[v][NBUCKETS];
        if (rc == TPX_OK)
            rc = tpx_buf_addf(out, err,
                              "topox_request_duration_seconds_bucket{verb=\"%s\",le=\"+Inf\"} "
                              "%llu\ntopox_request_duration_seconds_sum{verb=\"%s\"} %.9g\n"
                              "topox_request_duration_seconds_count{verb=\"%s\"} %llu\n",
                              vn, cum, vn, m->sum[v], vn, m->count[v]);
    }
    if (rc == TPX_OK)
        rc = tpx_buf_adds(out,
                          "# HELP topox_filter_nodes_total Nodes judged by filter, by verdict and "
                          "reason.\n# TYPE topox_filter_nodes_total counter\n",
                          err);
    for (size_t i = 0; i < m->nreasons && rc == TPX_OK; i++) {
        rc = tpx_buf_addf(out, err, "topox_filter_nodes_total{verdict=\"%s\",reason=\"",
                          m->reasons[i].verdict);
        if (rc == TPX_OK)
            rc = label(out, m->reasons[i].reason, err);
        if (rc == TPX_OK)
            rc = tpx_buf_addf(out, err, "\"} %llu\n", m->reasons[i].n);
    }
    if (rc == TPX_OK)
        rc =
            tpx_buf_adds(out,
                         "# HELP topox_uncertain_layouts_total Groups whose layout topox could not "
                         "read for certain (unknown or inconsistent engine flags), by what serve "
                         "did.\n# TYPE topox_uncertain_layouts_total counter\n",
                         err);
    for (size_t a = 0; a < 3 && rc == TPX_OK; a++)
        rc = tpx_buf_addf(out, err, "topox_uncertain_layouts_total{action=\"%s\"} %llu\n",
                          uncertain_actions[a], m->uncertain[a]);
    if (rc == TPX_OK)
        rc = tpx_buf_addf(out, err,
                          "# HELP topox_dra_view_rebuilds_total Times the DRA view (slices, "
                          "claims, classes, ComputeDomains) was built anew: after each list and "
                          "each burst of watch events.\n# TYPE topox_dra_view_rebuilds_total "
                          "counter\ntopox_dra_view_rebuilds_total %llu\n",
                          m->dra_rebuilds);
    if (rc == TPX_OK)
        rc = tpx_buf_addf(out, err,
                          "# HELP topox_binds_total Binds answered: bound, refused by topox's "
                          "own checks (the answer's Error), or failed at the API server (taken "
                          "back).\n# TYPE topox_binds_total counter\n"
                          "topox_binds_total{result=\"bound\"} %llu\n"
                          "topox_binds_total{result=\"refused\"} %llu\n"
                          "topox_binds_total{result=\"failed\"} %llu\n",
                          m->binds[0], m->binds[1], m->binds[2]);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* One gauge per rack: the unsigned field at `field` of each rack's summary. */
static enum tpx_code rack_gauge(struct tpx_buf *out, const struct topo_cluster *c,
                                const struct pol_rack_summary *r, size_t nr, const char *name,
                                const char *help, size_t field, struct tpx_err *err)
{
    enum tpx_code rc = tpx_buf_addf(out, err, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);

    for (size_t i = 0; i < nr && rc == TPX_OK; i++) {
        unsigned v;

        memcpy(&v, (const char *)&r[i] + field, sizeof(v));
        rc = tpx_buf_addf(out, err, "%s{rack=\"", name);
        if (rc == TPX_OK)
            rc = label(out, topo_cluster_rack_name(c, r[i].rack), err);
        if (rc == TPX_OK)
            rc = tpx_buf_addf(out, err, "\"} %u\n", v);
    }
    return rc;
}

enum tpx_code ext_metrics_render_ledger(const struct pol_ledger *l, size_t pods_seen,
                                        struct tpx_buf *out, struct tpx_err *err)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    size_t nr = topo_cluster_rack_count(c);
    size_t ng = pol_ledger_group_count(l);
    struct pol_rack_summary *r = calloc(nr ? nr : 1, sizeof(*r));
    struct pol_group_summary *g = calloc(ng ? ng : 1, sizeof(*g));
    size_t reservations = 0;
    enum tpx_code rc;

    if (!r || !g) {
        free(r);
        free(g);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory for metrics");
    }
    pol_ledger_racks(l, r);
    pol_ledger_groups(l, g);
    for (size_t i = 0; i < ng; i++)
        reservations += g[i].accel_reserved > 0;
    rc = tpx_buf_addf(out, err,
                      "# HELP topox_nodes Nodes in topox's cluster view.\n"
                      "# TYPE topox_nodes gauge\n"
                      "topox_nodes %zu\n"
                      "# HELP topox_pods_tracked Pods remembered from filter, bind and watch.\n"
                      "# TYPE topox_pods_tracked gauge\ntopox_pods_tracked %zu\n"
                      "# HELP topox_groups Groups with placed or reserved members.\n"
                      "# TYPE topox_groups gauge\ntopox_groups %zu\n"
                      "# HELP topox_reservations Groups holding a capacity reservation.\n"
                      "# TYPE topox_reservations gauge\ntopox_reservations %zu\n"
                      "# HELP topox_reservation_budget_refusals_total Holds not made because a "
                      "namespace's budget or the global cap was spent.\n"
                      "# TYPE topox_reservation_budget_refusals_total counter\n"
                      "topox_reservation_budget_refusals_total %lu\n",
                      topo_cluster_node_count(c), pods_seen, ng, reservations,
                      pol_ledger_budget_refusals(l));
    if (rc == TPX_OK)
        rc = tpx_buf_adds(out,
                          "# HELP topox_rack_accelerators Accelerators per rack by state.\n"
                          "# TYPE topox_rack_accelerators gauge\n",
                          err);
    for (size_t i = 0; i < nr && rc == TPX_OK; i++) {
        const char *name = topo_cluster_rack_name(c, r[i].rack);
        rc = tpx_buf_adds(out, "topox_rack_accelerators{rack=\"", err);
        if (rc == TPX_OK)
            rc = label(out, name, err);
        if (rc == TPX_OK)
            rc = tpx_buf_addf(out, err, "\",state=\"free\"} %u\n", r[i].accel_free);
        if (rc == TPX_OK)
            rc = tpx_buf_adds(out, "topox_rack_accelerators{rack=\"", err);
        if (rc == TPX_OK)
            rc = label(out, name, err);
        if (rc == TPX_OK)
            rc = tpx_buf_addf(out, err, "\",state=\"reserved\"} %u\n", r[i].accel_reserved);
    }
    if (rc == TPX_OK)
        rc = rack_gauge(out, c, r, nr, "topox_rack_largest_tp_placeable",
                        "Largest tensor-parallel group placeable now in one interconnect domain of "
                        "the rack.",
                        offsetof(struct pol_rack_summary, largest_tp_now), err);
    if (rc == TPX_OK)
        rc = rack_gauge(out, c, r, nr, "topox_rack_free_domains",
                        "Interconnect domains of the rack with every accelerator free.",
                        offsetof(struct pol_rack_summary, free_domains), err);
    free(r);
    free(g);
    return rc;
}
