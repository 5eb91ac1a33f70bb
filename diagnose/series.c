/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/series.c - DCGM exporter series into struct dg_series, from a Prometheus
 * /api/v1/query_range answer (resultType matrix; vector for an instant query) or from the text
 * exposition of a /metrics scrape.
 *
 * Field names: DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_GPU_UTIL,
 * DCGM_FI_PROF_NVLINK_TX_BYTES, DCGM_FI_PROF_PCIE_TX_BYTES as dcgm-exporter names them
 * (etc/default-counters.csv @ d5e5f510, where SM_ACTIVE ships commented out and GR_ENGINE_ACTIVE
 * on: hence the fallback). Labels: `gpu`, `UUID`, `Hostname` and, in Kubernetes mode, `pod`,
 * `namespace`, `container` (internal/pkg/transformation/const.go; `pod_name`/`pod_namespace`
 * with --use-old-namespace). Behind a Prometheus that does not honor the exporter's labels they
 * arrive as `exported_pod`/`exported_namespace` (the scrape target's own pod takes `pod`), so
 * those win. `hostname` is the lower-case spelling some relabelings write. A MIG instance adds
 * GPU_I_ID. The query_range shape: prometheus.io/docs/prometheus/latest/querying/api/. */
#include "diagnose/input.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/file.h"
#include "common/grow.h"
#include "common/str.h"
#include "diagnose/jsonseq.h"
#include "common/banned.h"

static const char *const metric_names[DG_M_COUNT] = {
    "DCGM_FI_PROF_SM_ACTIVE",       "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES",
};

const char *dg_metric_name(enum dg_metric m)
{
    return (unsigned)m < DG_M_COUNT ? metric_names[m] : "?";
}

/* Every family read, with the metric it stands for and the factor to a 0..1 ratio (or bytes/s).
 * AMD's device-metrics-exporter (ROCm/device-metrics-exporter, docs/configuration metrics list;
 * a real scrape line: `gpu_gfx_activity{...,gpu_id="2",...,hostname="tw038",...}`): the
 * profiler's GPU_PROF_SM_ACTIVE (rocprof's VALUBusy, a percentage) is its effective
 * utilization, GPU_GFX_ACTIVITY (percent busy) its occupancy; Prometheus names them in lower case,
 * dashboards also in upper case, and a MetricsFieldPrefix such as "amd_" may lead. The rule
 * compares ratios of one exporter's values (gap, spread), so a unit off by a constant factor
 * shifts the printed level, never the status. */
static const struct family {
    const char *name;
    enum dg_metric metric;
    double scale;
} families[] = {
    {"DCGM_FI_PROF_SM_ACTIVE", DG_M_SM_ACTIVE, 1},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", DG_M_GR_ACTIVE, 1},
    {"DCGM_FI_DEV_GPU_UTIL", DG_M_GPU_UTIL, 0.01}, /* "GPU utilization (in %)" */
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", DG_M_NVLINK_TX, 1},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", DG_M_PCIE_TX, 1},
    {"gpu_prof_sm_active", DG_M_SM_ACTIVE, 0.01},
    {"GPU_PROF_SM_ACTIVE", DG_M_SM_ACTIVE, 0.01},
    {"gpu_gfx_activity", DG_M_GPU_UTIL, 0.01},
    {"GPU_GFX_ACTIVITY", DG_M_GPU_UTIL, 0.01},
};

const char *const dg_amd_families[DG_AMD_FAMILIES] = {"gpu_prof_sm_active", "gpu_gfx_activity"};

static const struct family *family_of(const char *name, size_t n)
{
    if (n > 4 && (memcmp(name, "amd_", 4) == 0 || memcmp(name, "AMD_", 4) == 0)) {
        name += 4;
        n -= 4;
    }
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        if (strlen(families[i].name) == n && memcmp(families[i].name, name, n) == 0)
            return &families[i];
    }
    return NULL;
}

/* --- the window ------------------------------------------------------------------------------- */

/* RFC 3339 ("2026-07-22T04:18:43Z", "...43.5+02:00") or seconds since the epoch. */
static bool parse_time(const char *s, size_t n, double *out)
{
    char buf[64], *end;
    struct tm tm;
    int y, mo, d, h, mi, consumed = 0;
    double sec, frac = 0;
    const char *p;

    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    *out = strtod(buf, &end);
    if (end != buf && *end == '\0' && errno == 0)
        return isfinite(*out);
    if (sscanf(buf, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &consumed) !=
            6 ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61)
        return false;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    frac = sec;
    *out = (double)timegm(&tm) + frac;
    p = buf + consumed;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
            return false;
        *out -= (*p == '+' ? 1 : -1) * (double)(oh * 3600 + om * 60);
        p += 6;
    } else {
        return false;
    }
    return *p == '\0';
}

enum tpx_code dg_window_parse(const char *s, struct dg_window *w, struct tpx_err *err)
{
    const char *comma = strchr(s, ',');

    memset(w, 0, sizeof(*w));
    if (!comma || !parse_time(s, (size_t)(comma - s), &w->start) ||
        !parse_time(comma + 1, strlen(comma + 1), &w->end))
        return tpx_err_set(err, TPX_EINVAL,
                           "--window '%s': use START,END (RFC 3339 or seconds since the epoch)", s);
    if (w->end <= w->start)
        return tpx_err_set(err, TPX_EINVAL, "--window '%s': END is not after START", s);
    w->set = true;
    return TPX_OK;
}

/* --- the store -------------------------------------------------------------------------------- */

struct labels {
    char pod[DG_STR], ns[DG_STR], host[DG_STR], gpu[32], mig[16];
    bool exported_pod, exported_ns;
};

static void set_label(struct labels *l, const char *k, const char *v)
{
    if (strcmp(k, "exported_pod") == 0) {
        tpx_str_copy(l->pod, sizeof(l->pod), v);
        l->exported_pod = true;
    } else if ((strcmp(k, "pod") == 0 || strcmp(k, "pod_name") == 0) && !l->exported_pod) {
        tpx_str_copy(l->pod, sizeof(l->pod), v);
    } else if (strcmp(k, "exported_namespace") == 0) {
        tpx_str_copy(l->ns, sizeof(l->ns), v);
        l->exported_ns = true;
    } else if ((strcmp(k, "namespace") == 0 || strcmp(k, "pod_namespace") == 0) &&
               !l->exported_ns) {
        tpx_str_copy(l->ns, sizeof(l->ns), v);
    } else if (strcmp(k, "Hostname") == 0 || (strcmp(k, "hostname") == 0 && !l->host[0])) {
        tpx_str_copy(l->host, sizeof(l->host), v);
    } else if (strcmp(k, "gpu") == 0 || strcmp(k, "gpu_id") == 0) { /* gpu_id: AMD's */
        tpx_str_copy(l->gpu, sizeof(l->gpu), v);
    } else if (strcmp(k, "GPU_I_ID") == 0) {
        tpx_str_copy(l->mig, sizeof(l->mig), v);
    }
}

static struct dg_series *new_series(struct dg_metrics *m, const struct family *f,
                                    const struct labels *l, struct tpx_err *err)
{
    struct dg_series *s;

    if (!TPX_GROW(m->s, m->alloc, m->n + 1)) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return NULL;
    }
    s = &m->s[m->n++];
    memset(s, 0, sizeof(*s));
    s->metric = f->metric;
    s->scale = f->scale;
    tpx_str_copy(s->pod, sizeof(s->pod), l->pod);
    tpx_str_copy(s->ns, sizeof(s->ns), l->ns);
    tpx_str_copy(s->host, sizeof(s->host), l->host);
    if (l->mig[0])
        snprintf(s->gpu, sizeof(s->gpu), "%s/%s", l->gpu, l->mig);
    else
        tpx_str_copy(s->gpu, sizeof(s->gpu), l->gpu);
    return s;
}

static enum tpx_code add_sample(struct dg_series *s, size_t *alloc, double t, double v,
                                struct tpx_err *err)
{
    size_t at = *alloc, av = *alloc;

    if (!TPX_GROW(s->t, at, s->n + 1) || !TPX_GROW(s->v, av, s->n + 1))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    *alloc = at < av ? at : av;
    v *= s->scale;
    s->t[s->n] = t;
    s->v[s->n++] = v;
    return TPX_OK;
}

static bool in_window(const struct dg_window *w, double t)
{
    return !w || !w->set || t == 0 || (t >= w->start && t <= w->end);
}

/* Drop a series that kept no sample; keep the rest. */
static void drop_if_empty(struct dg_metrics *m)
{
    struct dg_series *s = &m->s[m->n - 1];
    if (s->n)
        return;
    free(s->t);
    free(s->v);
    m->n--;
}

/* --- Prometheus JSON -------------------------------------------------------------------------- */

static bool sample_of(const json_t *pair, double *t, double *v)
{
    const json_t *tv = json_array_get(pair, 0), *vv = json_array_get(pair, 1);
    char *end;

    if (!json_is_number(tv) || !json_is_string(vv))
        return false;
    *t = json_number_value(tv);
    *v = strtod(json_string_value(vv), &end);
    return end != json_string_value(vv) && *end == '\0';
}

static enum tpx_code add_result(struct dg_metrics *m, const json_t *r, const char *name,
                                const struct dg_window *w, struct tpx_err *err)
{
    const json_t *metric = json_object_get(r, "metric"), *values = json_object_get(r, "values");
    const char *mname = json_string_value(json_object_get(metric, "__name__"));
    struct labels l;
    struct dg_series *s;
    const char *k;
    json_t *v;
    size_t alloc = 0, i;
    const struct family *which;

    memset(&l, 0, sizeof(l));
    if (!json_is_object(metric))
        return tpx_err_set(err, TPX_EPARSE, "%s: a result without 'metric'", name);
    if (!values && json_object_get(r, "value")) /* an instant vector */
        values = json_pack("[O]", json_object_get(r, "value"));
    else
        json_incref((json_t *)values);
    m->seen += json_array_size(values);
    which = mname ? family_of(mname, strlen(mname)) : NULL;
    if (!which) {
        m->other++;
        json_decref((json_t *)values);
        return TPX_OK;
    }
    json_object_foreach((json_t *)metric, k, v)
    {
        if (json_is_string(v))
            set_label(&l, k, json_string_value(v));
    }
    s = new_series(m, which, &l, err);
    for (i = 0; s && i < json_array_size(values); i++) {
        double t, x;
        if (!sample_of(json_array_get(values, i), &t, &x)) {
            json_decref((json_t *)values);
            return tpx_err_set(err, TPX_EPARSE, "%s: %s: sample %zu is not [time, \"value\"]", name,
                               mname, i);
        }
        if (isfinite(x) && in_window(w, t) && add_sample(s, &alloc, t, x, err) != TPX_OK)
            break;
    }
    json_decref((json_t *)values);
    if (!s || err->code != TPX_OK)
        return err->code;
    drop_if_empty(m);
    return TPX_OK;
}

static enum tpx_code add_answer(struct dg_metrics *m, const json_t *doc, const char *name,
                                size_t line, const struct dg_window *w, struct tpx_err *err)
{
    const json_t *data = json_object_get(doc, "data");
    const char *status = json_string_value(json_object_get(doc, "status"));
    const char *type;
    const json_t *res, *r;
    size_t i;

    if (status && strcmp(status, "success") != 0)
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: Prometheus answered '%s': %s", name, line,
                           status,
                           json_string_value(json_object_get(doc, "error"))
                               ? json_string_value(json_object_get(doc, "error"))
                               : "no error text");
    if (!data)
        data = doc; /* the data object alone */
    type = json_string_value(json_object_get(data, "resultType"));
    res = json_object_get(data, "result");
    if (!type || !json_is_array(res))
        return tpx_err_set(err, TPX_EPARSE,
                           "%s:%zu: no data.resultType and data.result: not a Prometheus "
                           "query_range answer",
                           name, line);
    if (strcmp(type, "matrix") != 0 && strcmp(type, "vector") != 0)
        return tpx_err_set(err, TPX_EPARSE, "%s:%zu: resultType '%s': want matrix (query_range)",
                           name, line, type);
    json_array_foreach(res, i, r)
    {
        if (add_result(m, r, name, w, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

struct answer_ctx {
    struct dg_metrics *m;
    const char *name;
    const struct dg_window *w;
};

static enum tpx_code one_answer(void *ctx, const json_t *v, size_t line, struct tpx_err *err)
{
    struct answer_ctx *c = ctx;
    return add_answer(c->m, v, c->name, line, c->w, err);
}

static enum tpx_code parse_json(struct dg_metrics *m, const char *text, size_t len,
                                const char *name, const struct dg_window *w, struct tpx_err *err)
{
    struct answer_ctx c = {m, name, w};
    return dg_json_each(text, len, name, one_answer, &c, NULL, err);
}

/* --- the text exposition ---------------------------------------------------------------------- */

/* name{k="v",...} value [timestamp_ms]; p at the label set's '{'. Returns the position after
 * '}', or NULL when malformed. */
static const char *read_labels(const char *p, const char *eol, struct labels *l)
{
    char key[128], val[DG_STR];

    p++;
    for (;;) {
        size_t kn = 0, vn = 0;
        while (p < eol && (*p == ' ' || *p == ','))
            p++;
        if (p < eol && *p == '}')
            return p + 1;
        while (p < eol && (isalnum((unsigned char)*p) || *p == '_') && kn + 1 < sizeof(key))
            key[kn++] = *p++;
        key[kn] = '\0';
        if (!kn || p + 1 >= eol || p[0] != '=' || p[1] != '"')
            return NULL;
        p += 2;
        while (p < eol && *p != '"') {
            char c = *p++;
            if (c == '\\' && p < eol) {
                c = *p++;
                c = c == 'n' ? '\n' : c;
            }
            if (vn + 1 < sizeof(val))
                val[vn++] = c;
        }
        if (p >= eol)
            return NULL;
        val[vn] = '\0';
        p++;
        set_label(l, key, val);
    }
}

static enum tpx_code parse_text(struct dg_metrics *m, const char *text, size_t len,
                                const char *name, const struct dg_window *w, struct tpx_err *err)
{
    const char *p = text, *end = text + len;
    size_t line = 0;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *q = p, *nm;
        struct labels l;
        double v, t = 0;
        char num[64], *e;
        size_t nn, alloc = 0;
        const struct family *which;

        eol = eol ? eol : end;
        line++;
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        if (q == eol || *q == '#' || *q == '\r') {
            p = eol + 1;
            continue;
        }
        nm = q;
        while (q < eol && (isalnum((unsigned char)*q) || *q == '_' || *q == ':'))
            q++;
        nn = (size_t)(q - nm);
        memset(&l, 0, sizeof(l));
        if (!nn || (q < eol && *q == '{' && !(q = read_labels(q, eol, &l))))
            return tpx_err_set(err, TPX_EPARSE, "%s:%zu: not a Prometheus text sample", name, line);
        while (q < eol && *q == ' ')
            q++;
        {
            size_t k = 0;
            while (q < eol && !isspace((unsigned char)*q) && k + 1 < sizeof(num))
                num[k++] = *q++;
            num[k] = '\0';
        }
        v = strtod(num, &e);
        if (e == num || *e != '\0')
            return tpx_err_set(err, TPX_EPARSE, "%s:%zu: sample value '%s' is not a number", name,
                               line, num);
        while (q < eol && *q == ' ')
            q++;
        if (q < eol && isdigit((unsigned char)*q))
            t = strtod(q, NULL) / 1000.0; /* the exposition's timestamps are milliseconds */
        m->seen++;
        which = family_of(nm, nn);
        if (!which) {
            m->other++;
        } else if (isfinite(v) && in_window(w, t)) {
            struct dg_series *s = new_series(m, which, &l, err);
            if (!s || add_sample(s, &alloc, t, v, err) != TPX_OK)
                return err->code;
        }
        p = eol + 1;
    }
    return TPX_OK;
}

enum tpx_code dg_metrics_parse(struct dg_metrics *m, const char *text, size_t len, const char *name,
                               const struct dg_window *w, struct tpx_err *err)
{
    size_t i = 0;

    while (i < len && isspace((unsigned char)text[i]))
        i++;
    if (i < len && (text[i] == '{' || text[i] == '['))
        return parse_json(m, text, len, name, w, err);
    return parse_text(m, text, len, name, w, err);
}

enum tpx_code dg_metrics_load(struct dg_metrics *m, const char *path, const struct dg_window *w,
                              struct tpx_err *err)
{
    char *data;
    size_t len, before = m->n, seen = m->seen;
    enum tpx_code rc;

    if (tpx_read_file(path, DG_MAX_FILE, &data, &len, err) != TPX_OK)
        return err->code;
    rc = dg_metrics_parse(m, data, len, path, w, err);
    free(data);
    if (rc != TPX_OK)
        return rc;
    if (m->n == before && w && w->set && m->seen > seen)
        return tpx_err_set(err, TPX_EINVAL,
                           "%s: no DCGM series with samples in the window %.0f..%.0f", path,
                           w->start, w->end);
    if (m->n == before)
        return tpx_err_set(err, TPX_EINVAL, "%s: no DCGM series (%s, %s or %s) with samples", path,
                           dg_metric_name(DG_M_SM_ACTIVE), dg_metric_name(DG_M_GR_ACTIVE),
                           dg_metric_name(DG_M_GPU_UTIL));
    return TPX_OK;
}

void dg_metrics_release(struct dg_metrics *m)
{
    for (size_t i = 0; m && i < m->n; i++) {
        free(m->s[i].t);
        free(m->s[i].v);
    }
    if (m) {
        free(m->s);
        memset(m, 0, sizeof(*m));
    }
}
