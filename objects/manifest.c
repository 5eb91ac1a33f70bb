/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest.c - expand workload objects into the pods their controllers would create.
 * JSON is read once per object and once per pod template; each pod then costs a small kv array
 * and pol_workload_infer(), so a 1 000-replica job expands in well under a millisecond per pod. */
#include "objects/manifest.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmdline.h"
#include "common/grow.h"
#include "common/hash.h"
#include "topology/labels.h"
#include "objects/dra.h"

#define EXTRA_MAX 20
#define EXTRA_LEN 72
#define ENV_MAX 12
#define ENV_LEN 192
#define LIST_DEPTH_MAX 4

/* Where a controller puts the env it injects. */
enum inj_mode {
    INJ_FRONT_ALL = 0,  /* in front of every container's env, replacing same names (LWS, RBG) */
    INJ_APPEND_ALL,     /* after every container's env (Kubeflow training-operator) */
    INJ_APPEND_FIRST,   /* after the first container's env only (mpi-operator) */
    INJ_APPEND_REPLACE, /* after every container's env, replacing same names (Grove) */
};

struct ext_manifest_pod {
    size_t tmpl;
    size_t job;
    char name[POL_KEY_MAX];
    size_t nel; /* extra labels: extra[0, nel) */
    size_t nea; /* extra annotations: extra[nel, nel + nea) */
    const char *ekey[EXTRA_MAX];
    char eval[EXTRA_MAX][EXTRA_LEN];
    size_t ninj; /* env the operator injects into every container, in front of the own env */
    const char *ikey[ENV_MAX];
    char ival[ENV_MAX][ENV_LEN];
    bool ival_unknown[ENV_MAX]; /* valueFrom (status.podIP): NULL value */
    enum inj_mode inj_mode;
    struct topo_kv *kv;
    struct ext_manifest_env *env; /* the whole env, built by _finish() */
    size_t nenv;
    struct pol_pod_facts facts;
};

/* What one controller expansion writes into each of its pods. */
struct expander {
    struct ext_manifest *m;
    const char *src;
    size_t job;
    size_t tmpl;
};

void ext_manifest_init(struct ext_manifest *m)
{
    memset(m, 0, sizeof(*m));
}

static void add_note(struct ext_manifest *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_note(struct ext_manifest *m, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    char **nn;

    if (m->nnotes >= 256)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    nn = realloc(m->notes, (m->nnotes + 1) * sizeof(*nn));
    if (!nn)
        return;
    m->notes = nn;
    m->notes[m->nnotes] = strdup(line);
    if (m->notes[m->nnotes])
        m->nnotes++;
}

/* Bounded copy that always terminates (STYLE: no truncation warnings from snprintf). */
static void copy_str(char *dst, size_t n, const char *s)
{
    size_t l = strlen(s);

    if (l >= n)
        l = n - 1;
    memcpy(dst, s, l);
    dst[l] = '\0';
}

/* A stable short hash as 16 hex digits: stands in for the controllers' sha1 keys. The fixed key,
 * so a manifest gives the same keys in every run. */
static void hash_key(char out[EXTRA_LEN], const char *a, const char *b, size_t idx)
{
    char tail[32];
    uint64_t h;

    snprintf(tail, sizeof(tail), "%zu", idx);
    h = tpx_hash_step(&tpx_hash_fixed_key, 0, a);
    h = tpx_hash_step(&tpx_hash_fixed_key, h, b);
    h = tpx_hash_step(&tpx_hash_fixed_key, h, tail);
    snprintf(out, EXTRA_LEN, "%016" PRIx64, h);
}

static const char *obj_name(const json_t *o)
{
    const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
    return n ? n : "";
}

static const char *obj_ns(const json_t *o)
{
    const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "namespace"));
    return n && *n ? n : "default";
}

/* An optional non-negative integer field (JSON number or numeric string). On error m->err_at is
 * the field's value. */
static enum tpx_code get_count(struct ext_manifest *m, const json_t *obj, const char *key,
                               unsigned long def, unsigned long *out, struct tpx_err *err)
{
    const json_t *v = json_object_get(obj, key);
    char buf[64];
    const char *t;
    char *end;
    unsigned long x;

    *out = def;
    if (!v || json_is_null(v))
        return TPX_OK;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0 ||
            json_integer_value(v) > (json_int_t)EXT_MANIFEST_MAX_PODS) {
            m->err_at = v;
            return tpx_err_set(err, TPX_EINVAL, "%s: %" JSON_INTEGER_FORMAT " is out of range", key,
                               json_integer_value(v));
        }
        *out = (unsigned long)json_integer_value(v);
        return TPX_OK;
    }
    t = ext_json_scalar(v, buf, sizeof(buf));
    if (!t || !isdigit((unsigned char)t[0])) {
        m->err_at = v;
        return tpx_err_set(err, TPX_EINVAL, "%s: '%s' is not a whole number", key,
                           t ? t : "(not a scalar)");
    }
    x = strtoul(t, &end, 10);
    if (*end || x > EXT_MANIFEST_MAX_PODS) {
        m->err_at = v;
        return tpx_err_set(err, TPX_EINVAL, "%s: '%s' is not a whole number in range", key, t);
    }
    *out = x;
    return TPX_OK;
}

static enum tpx_code add_job(struct ext_manifest *m, const json_t *obj, const char *kind,
                             const char *src, size_t *job, struct tpx_err *err)
{
    struct ext_manifest_job *j;
    char full[POL_KEY_MAX];

    if (!TPX_GROW(m->jobs, m->ajobs, m->njobs + 1))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    j = &m->jobs[m->njobs];
    memset(j, 0, sizeof(*j));
    snprintf(full, sizeof(full), "%.120s/%.120s", obj_ns(obj), obj_name(obj));
    copy_str(j->name, sizeof(j->name), full);
    copy_str(j->kind, sizeof(j->kind), kind);
    copy_str(j->source, sizeof(j->source), src);
    j->first_replica = m->nreplicas;
    *job = m->njobs++;
    return TPX_OK;
}

/* The container of pod template tmpl that a podfacts message names ("container 'x': ..."), or
 * NULL. */
static const json_t *named_container(const json_t *tmpl, const char *msg)
{
    static const char *const lists[] = {"containers", "initContainers"};
    const char *p = strstr(msg, "container '");
    size_t len;

    if (!p)
        return NULL;
    p += strlen("container '");
    len = strcspn(p, "'");
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(json_object_get(tmpl, "spec"), lists[l]), i, c)
        {
            const char *n = json_string_value(json_object_get(c, "name"));
            if (n && strlen(n) == len && strncmp(n, p, len) == 0)
                return c;
        }
    }
    return NULL;
}

static enum tpx_code add_tmpl(struct ext_manifest *m, const json_t *tmpl, size_t *out,
                              struct tpx_err *err)
{
    struct ext_pod_facts *nt;
    const json_t **nj;
    size_t *nf;

    if (json_is_object(tmpl))
        m->err_at = tmpl;
    if (!json_is_object(tmpl) || !json_is_object(json_object_get(tmpl, "spec")))
        return tpx_err_set(err, TPX_EINVAL, "pod template (metadata, spec) is missing");
    nt = realloc(m->tmpl, (m->ntmpl + 1) * sizeof(*nt));
    if (nt)
        m->tmpl = nt;
    nj = realloc(m->tmpl_json, (m->ntmpl + 1) * sizeof(*nj));
    if (nj)
        m->tmpl_json = nj;
    nf = realloc(m->tmpl_file, (m->ntmpl + 1) * sizeof(*nf));
    if (nf)
        m->tmpl_file = nf;
    if (!nt || !nj || !nf)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    if (ext_pod_facts_from_json(tmpl, &m->tmpl[m->ntmpl], err) != TPX_OK) {
        const json_t *c = named_container(tmpl, err->msg);
        if (c)
            m->err_at = c;
        return err->code;
    }
    m->tmpl_json[m->ntmpl] = tmpl;
    m->tmpl_file[m->ntmpl] = m->nfiles - 1;
    *out = m->ntmpl++;
    return TPX_OK;
}

/* Make room for n more pods, within EXT_MANIFEST_MAX_PODS. */
static enum tpx_code reserve_pods(struct ext_manifest *m, unsigned long n, struct tpx_err *err)
{
    if (n > EXT_MANIFEST_MAX_PODS || m->npods + n > EXT_MANIFEST_MAX_PODS)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", EXT_MANIFEST_MAX_PODS);
    if (!TPX_GROW(m->pods, m->apods, m->npods + n))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    return TPX_OK;
}

static enum tpx_code new_replica(struct ext_manifest *m, struct tpx_err *err)
{
    if (!TPX_GROW(m->replica_first_pod, m->areplicas, m->nreplicas + 2))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    m->replica_first_pod[m->nreplicas++] = m->npods;
    m->jobs[m->njobs - 1].nreplicas++;
    return TPX_OK;
}

/* Append one pod (room reserved by reserve_pods()). */
static struct ext_manifest_pod *new_pod(struct expander *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static struct ext_manifest_pod *new_pod(struct expander *x, const char *fmt, ...)
{
    struct ext_manifest_pod *p = &x->m->pods[x->m->npods++];
    va_list ap;

    memset(p, 0, sizeof(*p));
    p->tmpl = x->tmpl;
    p->job = x->job;
    va_start(ap, fmt);
    vsnprintf(p->name, sizeof(p->name), fmt, ap);
    va_end(ap);
    return p;
}

/* Extra labels must be added before extra annotations. */
static void extra(struct ext_manifest_pod *p, bool annotation, const char *key, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));
static void extra(struct ext_manifest_pod *p, bool annotation, const char *key, const char *fmt,
                  ...)
{
    size_t i = p->nel + p->nea;
    va_list ap;

    if (i >= EXTRA_MAX)
        return;
    p->ekey[i] = key;
    va_start(ap, fmt);
    vsnprintf(p->eval[i], EXTRA_LEN, fmt, ap);
    va_end(ap);
    if (annotation)
        p->nea++;
    else
        p->nel++;
}

/* An env var the controller puts at the front of every container's env, replacing one of the same
 * name (LWS addEnvVarsIfNotExists); value NULL: a valueFrom the plan cannot know. */
static void inject(struct ext_manifest_pod *p, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void inject(struct ext_manifest_pod *p, const char *key, const char *fmt, ...)
{
    va_list ap;

    if (p->ninj >= ENV_MAX)
        return;
    p->ikey[p->ninj] = key;
    p->ival_unknown[p->ninj] = fmt == NULL;
    p->ival[p->ninj][0] = '\0';
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(p->ival[p->ninj], ENV_LEN, fmt, ap);
        va_end(ap);
    }
    p->ninj++;
}

/* --- kinds -------------------------------------------------------------------------------------
 */

static enum tpx_code expand_pod(struct ext_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    struct expander x = {m, src, 0, 0};

    if (add_job(m, obj, "Pod", src, &x.job, err) != TPX_OK ||
        add_tmpl(m, obj, &x.tmpl, err) != TPX_OK || reserve_pods(m, 1, err) != TPX_OK ||
        new_replica(m, err) != TPX_OK)
        return err->code;
    new_pod(&x, "%s", obj_name(obj)[0] ? obj_name(obj) : "pod");
    return TPX_OK;
}

/* Deployment, StatefulSet, ReplicaSet: each replica is a group of one pod, unless the template's
 * topox.io/group-size annotation asks for groups of several consecutive replicas. */
static enum tpx_code expand_replicated(struct ext_manifest *m, const json_t *obj, const char *kind,
                                       const char *src, struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *tmpl = json_object_get(spec, "template");
    const char *gs = json_string_value(json_object_get(
        json_object_get(json_object_get(tmpl, "metadata"), "annotations"), "topox.io/group-size"));
    struct expander x = {m, src, 0, 0};
    unsigned long replicas;
    unsigned long group = 1;

    if (get_count(m, spec, "replicas", 1, &replicas, err) != TPX_OK)
        return err->code;
    if (gs) {
        char *end;
        group = strtoul(gs, &end, 10);
        if (*end || group == 0)
            group = 1; /* pol_workload_infer() reports the malformed value */
    }
    if (add_job(m, obj, kind, src, &x.job, err) != TPX_OK ||
        add_tmpl(m, tmpl, &x.tmpl, err) != TPX_OK || reserve_pods(m, replicas, err) != TPX_OK)
        return err->code;
    for (unsigned long i = 0; i < replicas; i++) {
        struct ext_manifest_pod *p;
        if (i % group == 0 && new_replica(m, err) != TPX_OK)
            return err->code;
        p = new_pod(&x, "%s-%lu", obj_name(obj), i);
        if (group > 1) {
            extra(p, true, "topox.io/group", "%.30s/%.24s-%lu", obj_ns(obj), obj_name(obj),
                  i / group);
            extra(p, true, "topox.io/pod-index", "%lu", i % group);
        }
    }
    return TPX_OK;
}

/* Pods one Job runs at once: parallelism (default 1), at most completions when set. */
static enum tpx_code job_width(struct ext_manifest *m, const json_t *jspec, unsigned long *n,
                               bool *indexed, struct tpx_err *err)
{
    unsigned long par;
    unsigned long comp;
    const char *mode = json_string_value(json_object_get(jspec, "completionMode"));

    if (get_count(m, jspec, "parallelism", 1, &par, err) != TPX_OK ||
        get_count(m, jspec, "completions", par, &comp, err) != TPX_OK)
        return err->code;
    *n = par < comp ? par : comp;
    *indexed = mode && strcmp(mode, "Indexed") == 0;
    return TPX_OK;
}

static enum tpx_code expand_job(struct ext_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    struct expander x = {m, src, 0, 0};
    char uid[EXTRA_LEN];
    unsigned long n;
    bool indexed;

    if (job_width(m, spec, &n, &indexed, err) != TPX_OK ||
        add_job(m, obj, "Job", src, &x.job, err) != TPX_OK ||
        add_tmpl(m, json_object_get(spec, "template"), &x.tmpl, err) != TPX_OK ||
        reserve_pods(m, n, err) != TPX_OK)
        return err->code;
    hash_key(uid, obj_ns(obj), obj_name(obj), 0);
    /* an Indexed Job is one group (its indexes are ranks); otherwise each pod stands alone */
    for (unsigned long i = 0; i < n; i++) {
        struct ext_manifest_pod *p;
        if ((!indexed || i == 0) && new_replica(m, err) != TPX_OK)
            return err->code;
        p = new_pod(&x, "%s-%lu", obj_name(obj), i);
        extra(p, false, "batch.kubernetes.io/job-name", "%.70s", obj_name(obj));
        extra(p, false, "batch.kubernetes.io/controller-uid", "%s", uid);
        if (indexed) {
            extra(p, false, "batch.kubernetes.io/job-completion-index", "%lu", i);
            extra(p, true, "batch.kubernetes.io/job-completion-index", "%lu", i);
        }
    }
    return TPX_OK;
}

static enum tpx_code expand_jobset(struct ext_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err)
{
    const json_t *rjs = json_object_get(json_object_get(obj, "spec"), "replicatedJobs");
    const char *js = obj_name(obj);
    struct expander x = {m, src, 0, 0};
    size_t r;
    const json_t *rj;

    if (!json_is_array(rjs) || json_array_size(rjs) == 0) {
        if (rjs)
            m->err_at = rjs;
        return tpx_err_set(err, TPX_EINVAL, "spec.replicatedJobs is missing or empty");
    }
    if (add_job(m, obj, "JobSet", src, &x.job, err) != TPX_OK)
        return err->code;
    json_array_foreach(rjs, r, rj)
    {
        const json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        const char *rjname = json_string_value(json_object_get(rj, "name"));
        unsigned long reps;
        unsigned long n;
        bool indexed;

        m->err_at = rj;
        if (!rjname)
            return tpx_err_set(err, TPX_EINVAL, "replicatedJobs[%zu]: name is missing", r);
        if (get_count(m, rj, "replicas", 1, &reps, err) != TPX_OK ||
            job_width(m, jspec, &n, &indexed, err) != TPX_OK ||
            add_tmpl(m, json_object_get(jspec, "template"), &x.tmpl, err) != TPX_OK) {
            tpx_err_prefix(err, "replicatedJobs '%s'", rjname);
            return err->code;
        }
        if (reps && n > EXT_MANIFEST_MAX_PODS / reps)
            return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", EXT_MANIFEST_MAX_PODS);
        if (reserve_pods(m, reps * n, err) != TPX_OK)
            return err->code;
        for (unsigned long j = 0; j < reps; j++) {
            char jobname[POL_KEY_MAX];
            char key[EXTRA_LEN];

            snprintf(jobname, sizeof(jobname), "%.80s-%.80s-%lu", js, rjname, j);
            hash_key(key, obj_ns(obj), jobname, 0);
            if (new_replica(m, err) != TPX_OK)
                return err->code;
            for (unsigned long i = 0; i < n; i++) {
                struct ext_manifest_pod *p = new_pod(&x, "%s-%lu", jobname, i);
                extra(p, false, "jobset.sigs.k8s.io/jobset-name", "%.70s", js);
                extra(p, false, "jobset.sigs.k8s.io/replicatedjob-name", "%.70s", rjname);
                extra(p, false, "jobset.sigs.k8s.io/job-index", "%lu", j);
                extra(p, false, "jobset.sigs.k8s.io/job-key", "%s", key);
                extra(p, false, "batch.kubernetes.io/job-name", "%.70s", jobname);
                if (indexed)
                    extra(p, false, "batch.kubernetes.io/job-completion-index", "%lu", i);
                extra(p, true, "jobset.sigs.k8s.io/job-key", "%s", key);
                extra(p, true, "jobset.sigs.k8s.io/replicatedjob-replicas", "%lu", reps);
                if (indexed)
                    extra(p, true, "batch.kubernetes.io/job-completion-index", "%lu", i);
            }
        }
    }
    return TPX_OK;
}

/* Labels an owning object adds to every pod of an LWS it creates (a DisaggregatedSet's role,
 * slice, name, revision). */
struct owner_labels {
    size_t n;
    const char *key[6];
    char val[6][EXTRA_LEN];
};

/*
 * The pods of one LeaderWorkerSet spec (leaderworkerset.x-k8s.io/v1, kubernetes-sigs/lws
 * api/leaderworkerset/v1/leaderworkerset_types.go, pkg/webhooks/pod_webhook.go,
 * pkg/utils/pod/pod_utils.go): groups `<lws>-<g>` (leader) and `<lws>-<g>-<w>`, the
 * leaderworkerset.sigs.k8s.io/{name,group-index,worker-index,group-key} labels, the size (and
 * leader-name on workers) annotations, subGroupPolicy's subgroup-index/subgroup-key labels and
 * subgroup-size (and, on the leader, subgroup-policy-type) annotations, and the env AddLWSVariables
 * puts in front of every container's env: LWS_LEADER_ADDRESS `<lws>-<g>.<subdomain>.<ns>`,
 * LWS_GROUP_SIZE, LWS_WORKER_INDEX. The hash keys are stand-ins (hash_key(), not sha1). The
 * caller has added the job; m->err_at names the bad value on error.
 */
static enum tpx_code lws_pods(struct ext_manifest *m, struct expander *x, const json_t *obj,
                              const char *name, const json_t *spec, const struct owner_labels *ol,
                              struct tpx_err *err)
{
    const json_t *lwt = json_object_get(spec, "leaderWorkerTemplate");
    const json_t *lt = json_object_get(lwt, "leaderTemplate");
    const json_t *wt = json_object_get(lwt, "workerTemplate");
    const json_t *sgp = json_object_get(lwt, "subGroupPolicy");
    const char *sgtype = json_string_value(json_object_get(sgp, "subGroupPolicyType"));
    const char *sdpol = json_string_value(
        json_object_get(json_object_get(spec, "networkConfig"), "subdomainPolicy"));
    bool leader_excluded = sgtype && strcmp(sgtype, "LeaderExcluded") == 0;
    bool per_replica = sdpol && strcmp(sdpol, "UniquePerReplica") == 0;
    size_t leader_tmpl;
    size_t worker_tmpl;
    unsigned long groups;
    unsigned long size;
    unsigned long sgs = 0;

    if (!json_is_object(lwt) || !json_is_object(wt)) {
        if (lwt)
            m->err_at = lwt;
        else if (spec)
            m->err_at = spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.leaderWorkerTemplate.workerTemplate is missing");
    }
    if (get_count(m, spec, "replicas", 1, &groups, err) != TPX_OK ||
        get_count(m, lwt, "size", 1, &size, err) != TPX_OK ||
        (sgp && get_count(m, sgp, "subGroupSize", 0, &sgs, err) != TPX_OK))
        return err->code;
    if (size == 0) {
        m->err_at = json_object_get(lwt, "size");
        return tpx_err_set(err, TPX_EINVAL, "leaderWorkerTemplate.size must be at least 1");
    }
    if (sgs > size) {
        m->err_at = json_object_get(sgp, "subGroupSize");
        return tpx_err_set(err, TPX_EINVAL,
                           "subGroupPolicy.subGroupSize %lu is more than the size %lu", sgs, size);
    }
    if (groups && size > EXT_MANIFEST_MAX_PODS / groups)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", EXT_MANIFEST_MAX_PODS);
    if (add_tmpl(m, wt, &worker_tmpl, err) != TPX_OK)
        return err->code;
    leader_tmpl = worker_tmpl;
    if (lt && add_tmpl(m, lt, &leader_tmpl, err) != TPX_OK) {
        tpx_err_prefix(err, "leaderTemplate");
        return err->code;
    }
    if (reserve_pods(m, groups * size, err) != TPX_OK)
        return err->code;
    for (unsigned long g = 0; g < groups; g++) {
        char key[EXTRA_LEN];
        char leader[96];

        hash_key(key, obj_ns(obj), name, g);
        snprintf(leader, sizeof(leader), "%.60s-%lu", name, g);
        if (new_replica(m, err) != TPX_OK)
            return err->code;
        for (unsigned long w = 0; w < size; w++) {
            struct ext_manifest_pod *p;
            bool in_sub = sgs > 0 && !(w == 0 && leader_excluded);
            unsigned long sub = 0;

            /* pod_webhook.go getSubGroupIndex: the leader is the extra pod of subgroup 0 when
             * size-1 (not size) divides by subGroupSize */
            if (in_sub && w > 0)
                sub = ((size - 1) % sgs == 0 && size % sgs != 0) ? (w - 1) / sgs : w / sgs;
            x->tmpl = w == 0 ? leader_tmpl : worker_tmpl;
            p = w == 0 ? new_pod(x, "%s", leader) : new_pod(x, "%s-%lu", leader, w);
            extra(p, false, "leaderworkerset.sigs.k8s.io/name", "%.70s", name);
            extra(p, false, "leaderworkerset.sigs.k8s.io/group-index", "%lu", g);
            extra(p, false, "leaderworkerset.sigs.k8s.io/worker-index", "%lu", w);
            extra(p, false, "leaderworkerset.sigs.k8s.io/group-key", "%s", key);
            if (in_sub) {
                char skey[EXTRA_LEN];
                hash_key(skey, leader, "subgroup", sub);
                extra(p, false, "leaderworkerset.sigs.k8s.io/subgroup-index", "%lu", sub);
                extra(p, false, "leaderworkerset.sigs.k8s.io/subgroup-key", "%s", skey);
            }
            for (size_t l = 0; ol && l < ol->n; l++)
                extra(p, false, ol->key[l], "%s", ol->val[l]);
            extra(p, true, "leaderworkerset.sigs.k8s.io/size", "%lu", size);
            if (w > 0)
                extra(p, true, "leaderworkerset.sigs.k8s.io/leader-name", "%s", leader);
            if (sgs > 0)
                extra(p, true, "leaderworkerset.sigs.k8s.io/subgroup-size", "%lu", sgs);
            if (sgs > 0 && w == 0)
                extra(p, true, "leaderworkerset.sigs.k8s.io/subgroup-policy-type", "%s",
                      leader_excluded ? "LeaderExcluded" : "LeaderWorker");
            inject(p, "LWS_LEADER_ADDRESS", "%s.%.60s.%.60s", leader, per_replica ? leader : name,
                   obj_ns(obj));
            inject(p, "LWS_GROUP_SIZE", "%lu", size);
            inject(p, "LWS_WORKER_INDEX", "%lu", w);
        }
    }
    return TPX_OK;
}

static enum tpx_code expand_lws(struct ext_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    struct expander x = {m, src, 0, 0};

    if (add_job(m, obj, "LeaderWorkerSet", src, &x.job, err) != TPX_OK)
        return err->code;
    return lws_pods(m, &x, obj, obj_name(obj), json_object_get(obj, "spec"), NULL, err);
}

/*
 * DisaggregatedSet (disaggregatedset.x-k8s.io/v1, kubernetes-sigs/lws
 * pkg/controllers/disaggregatedset/lws_manager.go, distribution.go,
 * pkg/utils/disaggregatedset/utils.go): for each of `slices` (default 1) and each role, one LWS
 * `<ds>-<slice>-<revision>-<role>` with the role's spec.replicas (per slice), its pods labelled
 * app `<ds>-<slice>-<role>` and disaggregatedset.x-k8s.io/{role,slice,name,revision}. The
 * revision (sha256 of the role templates upstream) is a stand-in hash. One job; each LWS group
 * is a replica.
 */
static enum tpx_code expand_disaggregatedset(struct ext_manifest *m, const json_t *obj,
                                             const char *src, struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *roles = json_object_get(spec, "roles");
    const char *ds = obj_name(obj);
    struct expander x = {m, src, 0, 0};
    char rev[EXTRA_LEN];
    unsigned long slices;
    size_t r;
    const json_t *role;

    if (!json_is_array(roles) || json_array_size(roles) == 0) {
        if (roles)
            m->err_at = roles;
        return tpx_err_set(err, TPX_EINVAL, "spec.roles is missing or empty");
    }
    if (get_count(m, spec, "slices", 1, &slices, err) != TPX_OK ||
        add_job(m, obj, "DisaggregatedSet", src, &x.job, err) != TPX_OK)
        return err->code;
    hash_key(rev, obj_ns(obj), ds, 0);
    rev[8] = '\0';
    for (unsigned long sl = 0; sl < slices; sl++) {
        json_array_foreach(roles, r, role)
        {
            const char *rn = json_string_value(json_object_get(role, "name"));
            struct owner_labels ol = {
                5,
                {"app", "disaggregatedset.x-k8s.io/role", "disaggregatedset.x-k8s.io/slice",
                 "disaggregatedset.x-k8s.io/name", "disaggregatedset.x-k8s.io/revision"},
                {{0}}};
            char lws[POL_KEY_MAX];

            m->err_at = role;
            if (!rn)
                return tpx_err_set(err, TPX_EINVAL, "roles[%zu]: name is missing", r);
            snprintf(ol.val[0], EXTRA_LEN, "%.30s-%lu-%.18s", ds, sl, rn);
            snprintf(ol.val[1], EXTRA_LEN, "%.70s", rn);
            snprintf(ol.val[2], EXTRA_LEN, "%lu", sl);
            snprintf(ol.val[3], EXTRA_LEN, "%.70s", ds);
            snprintf(ol.val[4], EXTRA_LEN, "%s", rev);
            snprintf(lws, sizeof(lws), "%.80s-%lu-%s-%.60s", ds, sl, rev, rn);
            if (lws_pods(m, &x, obj, lws, json_object_get(role, "spec"), &ol, err) != TPX_OK) {
                tpx_err_prefix(err, "role '%s'", rn);
                return err->code;
            }
        }
    }
    return TPX_OK;
}

/* Keep an object built here alive until release (its strings are borrowed by the facts). */
static json_t *keep(struct ext_manifest *m, json_t *o, struct tpx_err *err)
{
    json_t **nm;

    if (!o) {
        tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
        return NULL;
    }
    nm = realloc(m->made, (m->nmade + 1) * sizeof(*nm));
    if (!nm) {
        json_decref(o);
        tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
        return NULL;
    }
    m->made = nm;
    m->made[m->nmade++] = o;
    return o;
}

/* The object of kind `kind` named `name` among the documents of the file being read, or NULL. */
static const json_t *same_file_object(const struct ext_manifest *m, const char *kind,
                                      const char *name)
{
    const struct ext_yaml_docs *d = &m->files[m->nfiles - 1];

    for (size_t i = 0; i < d->n; i++) {
        const char *k = json_string_value(json_object_get(d->docs[i], "kind"));
        if (k && strcmp(k, kind) == 0 && strcmp(obj_name(d->docs[i]), name) == 0)
            return d->docs[i];
    }
    return NULL;
}

/* The text of a file the container reads at `path`, when a volumeMount of it holds a ConfigMap
 * of this manifest (mountPath a directory prefix of path, or subPath's exact file); NULL when
 * not found. Borrowed from the ConfigMap. */
static const char *configmap_file(const struct ext_manifest *m, const json_t *pod_spec,
                                  const json_t *container, const char *path)
{
    size_t i;
    const json_t *vm;

    json_array_foreach(json_object_get(container, "volumeMounts"), i, vm)
    {
        const char *mp = json_string_value(json_object_get(vm, "mountPath"));
        const char *vn = json_string_value(json_object_get(vm, "name"));
        const char *sub = json_string_value(json_object_get(vm, "subPath"));
        const char *key;
        size_t l;
        size_t k;
        const json_t *v;

        if (!mp || !vn)
            continue;
        l = strlen(mp);
        while (l > 1 && mp[l - 1] == '/')
            l--;
        if (sub ? strcmp(mp, path) != 0 : (strncmp(mp, path, l) != 0 || path[l] != '/'))
            continue;
        key = sub ? sub : path + l + 1;
        json_array_foreach(json_object_get(pod_spec, "volumes"), k, v)
        {
            const char *cm =
                json_string_value(json_object_get(json_object_get(v, "configMap"), "name"));
            const json_t *obj;
            const char *n = json_string_value(json_object_get(v, "name"));
            if (!cm || !n || strcmp(n, vn) != 0)
                continue;
            obj = same_file_object(m, "ConfigMap", cm);
            return obj ? json_string_value(json_object_get(json_object_get(obj, "data"), key))
                       : NULL;
        }
    }
    return NULL;
}

/*
 * TensorRT-LLM's --extra-engine-args file (LLM API options YAML: tensor_parallel_size,
 * pipeline_parallel_size, moe_expert_parallel_size), read from a ConfigMap of the same manifest,
 * becomes topox.io/{tensor,pipeline,expert}-parallel-size annotations on the pod template tmpl
 * (when the template does not set them itself), plus topox.io/engine-args naming the file. The
 * operator passes the file path on; the engine reads the sizes from it.
 */
static void engine_args_file(struct ext_manifest *m, const json_t *pod_spec, json_t *container,
                             json_t *tmpl, const char *dgd)
{
    static const struct {
        const char *key;
        const char *annotation;
    } sizes[] = {
        {"tensor_parallel_size", "topox.io/tensor-parallel-size"},
        {"pipeline_parallel_size", "topox.io/pipeline-parallel-size"},
        {"moe_expert_parallel_size", "topox.io/expert-parallel-size"},
    };
    const json_t *args = json_object_get(container, "args");
    const char *path = NULL;
    const char *text;
    struct ext_yaml_docs d = {0};
    struct tpx_err err = TPX_ERR_INIT;
    json_t *ann;
    size_t i;
    const json_t *a;

    json_array_foreach(args, i, a)
    {
        const char *s = json_string_value(a);
        if (s && strcmp(s, "--extra-engine-args") == 0)
            path = json_string_value(json_array_get(args, i + 1));
        else if (s && strncmp(s, "--extra-engine-args=", 20) == 0)
            path = s + 20;
    }
    if (!path)
        return;
    text = configmap_file(m, pod_spec, container, path);
    if (!text) {
        add_note(m,
                 "DynamoGraphDeployment '%s': --extra-engine-args %s is not in a ConfigMap of "
                 "this manifest; its sizes are not read",
                 dgd, path);
        return;
    }
    if (ext_yaml_parse(text, strlen(text), path, &d, &err) != TPX_OK || d.n != 1 ||
        !json_is_object(d.docs[0])) {
        add_note(m, "DynamoGraphDeployment '%s': --extra-engine-args %s is not a YAML mapping", dgd,
                 path);
        ext_yaml_docs_release(&d);
        return;
    }
    ann = json_object_get(json_object_get(tmpl, "metadata"), "annotations");
    for (size_t k = 0; ann && k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        char buf[64];
        const char *v = ext_json_scalar(json_object_get(d.docs[0], sizes[k].key), buf, sizeof(buf));
        if (v && !json_object_get(ann, sizes[k].annotation))
            json_object_set_new(ann, sizes[k].annotation, json_string(v));
    }
    if (ann)
        json_object_set_new(ann, "topox.io/engine-args", json_string(path));
    ext_yaml_docs_release(&d);
}

static bool is_python(const char *c)
{
    return c && strncmp(c, "python", 6) == 0 && strspn(c + 6, "0123456789.") == strlen(c + 6);
}

/* Join the strings of array a with spaces into buf (a Go strings.Join). */
static void join(const json_t *a, char *buf, size_t len)
{
    size_t i;
    const json_t *s;
    size_t at = 0;

    buf[0] = '\0';
    json_array_foreach(a, i, s)
    {
        const char *t = json_string_value(s);
        int n;
        if (!t)
            continue;
        n = snprintf(buf + at, len - at, "%s%s", at ? " " : "", t);
        if (n < 0 || (size_t)n >= len - at)
            return;
        at += (size_t)n;
    }
}

/*
 * How the Dynamo operator rewrites the main container of a multinode service for its backend
 * (deploy/cloud/operator/internal/dynamo/backend_sglang.go, backend_trtllm.go), with the LWS
 * deployer's names: SGLang gets `--dist-init-addr $(LWS_LEADER_ADDRESS):29500 --nnodes N
 * --node-rank R` appended (R 0 on the leader, $(LWS_WORKER_INDEX) on workers); TensorRT-LLM's
 * leader becomes `/bin/sh -c "... mpirun --oversubscribe -n N*gpus -H <hosts> ... bash -c
 * 'source /opt/dynamo/venv/bin/activate && trtllm-llmapi-launch <args>'"` and its workers run
 * sshd; both get OMPI_MCA_orte_keep_fqdn_hostnames=1.
 */
static void dynamo_multinode(json_t *c, const char *framework, bool leader, unsigned long nodes,
                             unsigned long gpus)
{
    json_t *cmd = json_object_get(c, "command");
    json_t *args = json_object_get(c, "args");

    if (framework && strcmp(framework, "sglang") == 0) {
        char n[24];
        if (!is_python(json_string_value(json_array_get(cmd, 0))))
            return; /* the operator edits a `sh -c` python line in place; not done here */
        snprintf(n, sizeof(n), "%lu", nodes);
        if (!json_is_array(args)) {
            args = json_array();
            json_object_set_new(c, "args", args);
        }
        json_array_append_new(args, json_string("--dist-init-addr"));
        json_array_append_new(args, json_string("$(LWS_LEADER_ADDRESS):29500"));
        json_array_append_new(args, json_string("--nnodes"));
        json_array_append_new(args, json_string(n));
        json_array_append_new(args, json_string("--node-rank"));
        json_array_append_new(args, json_string(leader ? "0" : "$(LWS_WORKER_INDEX)"));
    } else if (framework && strcmp(framework, "trtllm") == 0) {
        json_t *env = json_object_get(c, "env");
        char orig[2048];
        char hosts[512] = "${LWS_LEADER_ADDRESS}";
        char line[3072];

        if (!json_is_array(env)) {
            env = json_array();
            json_object_set_new(c, "env", env);
        }
        json_array_append_new(
            env, json_pack("{s:s,s:s}", "name", "OMPI_MCA_orte_keep_fqdn_hostnames", "value", "1"));
        join(json_array_size(args) ? args : cmd, orig, sizeof(orig));
        for (unsigned long i = 1; i < nodes && strlen(hosts) + 32 < sizeof(hosts); i++) {
            size_t l = strlen(hosts);
            snprintf(hosts + l, sizeof(hosts) - l, ",${LWS_WORKER_%lu_ADDRESS}", i);
        }
        if (leader)
            snprintf(line, sizeof(line),
                     "mkdir -p ~/.ssh && cp /ssh-pk/private.key ~/.ssh/id_rsa && mpirun "
                     "--oversubscribe -n %lu -H %s --mca pml ob1 --mca plm_rsh_args \"-p 2222 -o "
                     "StrictHostKeyChecking=no -i ~/.ssh/id_rsa\" bash -c 'source "
                     "/opt/dynamo/venv/bin/activate && trtllm-llmapi-launch %s'",
                     nodes * gpus, hosts, orig);
        else
            snprintf(line, sizeof(line),
                     "mkdir -p ~/.ssh ~/.ssh/host_keys ~/.ssh/run && "
                     "/usr/sbin/sshd -D -f ~/.ssh/sshd_config");
        json_object_set_new(c, "command", json_pack("[s,s]", "/bin/sh", "-c"));
        json_object_set_new(c, "args", json_pack("[s]", line));
    }
}

/* A service's pod template as the Dynamo operator builds it: extraPodSpec with its mainContainer
 * (named "main" when unnamed) asking for resources.limits.gpu (or requests.gpu) nvidia.com/gpu,
 * the graph's spec.envs and the service's envs in front of the container's env. */
static json_t *dynamo_template(struct ext_manifest *m, const json_t *dgd, const char *svcname,
                               const json_t *svc, bool leader, unsigned long nodes,
                               struct tpx_err *err)
{
    const json_t *eps = json_object_get(svc, "extraPodSpec");
    const json_t *res = json_object_get(svc, "resources");
    const char *framework =
        json_string_value(json_object_get(json_object_get(dgd, "spec"), "backendFramework"));
    const json_t *gpu = json_object_get(json_object_get(res, "requests"), "gpu");
    json_t *t = json_pack("{s:{s:{s:s,s:s},s:{}},s:{}}", "metadata", "labels",
                          "nvidia.com/dynamo-graph-deployment-name", obj_name(dgd),
                          "nvidia.com/dynamo-component", svcname, "annotations", "spec");
    json_t *spec;
    json_t *c;
    json_t *env;
    char buf[64];
    const char *g;
    unsigned long gpus = 0;

    if (!keep(m, t, err))
        return NULL;
    spec = json_object_get(t, "spec");
    if (json_is_object(eps)) {
        json_t *cp = json_deep_copy(eps);
        json_object_update(spec, cp);
        json_decref(cp);
    }
    json_object_del(spec, "mainContainer");
    c = json_deep_copy(json_object_get(eps, "mainContainer"));
    if (!c)
        c = json_object();
    if (!json_string_value(json_object_get(c, "name")))
        json_object_set_new(c, "name", json_string("main"));
    if (!gpu)
        gpu = json_object_get(json_object_get(res, "limits"), "gpu");
    g = ext_json_scalar(gpu, buf, sizeof(buf));
    if (g) {
        json_t *r = json_object_get(c, "resources");
        if (!json_is_object(r)) {
            r = json_object();
            json_object_set_new(c, "resources", r);
        }
        json_object_set_new(r, "limits", json_pack("{s:s}", "nvidia.com/gpu", g));
        gpus = strtoul(g, NULL, 10);
    }
    env = json_array();
    json_array_extend(env, json_object_get(json_object_get(dgd, "spec"), "envs"));
    json_array_extend(env, json_object_get(svc, "envs"));
    json_array_extend(env, json_object_get(c, "env"));
    json_object_set_new(c, "env", env);
    if (framework && strcmp(framework, "trtllm") == 0 && leader)
        engine_args_file(m, spec, c, t, obj_name(dgd));
    if (nodes > 1)
        dynamo_multinode(c, framework, leader, nodes, gpus);
    if (json_object_set_new(spec, "containers", json_pack("[o]", c)) != 0) {
        tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
        return NULL;
    }
    return t;
}

/*
 * DynamoGraphDeployment (nvidia.com/v1alpha1, ai-dynamo/dynamo deploy/cloud/operator:
 * api/v1alpha1, internal/dynamo/graph.go and backend_*.go). Each service gives `replicas`
 * instances; a service with multinode.nodeCount N > 1 is expanded as the LWS the operator's LWS
 * deployer creates, `<dgd>-<service>` of size N (leader and workers as dynamo_multinode()
 * rewrites them), else each instance is one pod `<dgd>-<service>-<i>`. With Grove (the
 * operator's default deployer) the pods are named by Grove instead, with the same count,
 * resources and group.
 */
static enum tpx_code expand_dgd(struct ext_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *svcs = json_object_get(json_object_get(obj, "spec"), "services");
    struct expander x = {m, src, 0, 0};
    const char *sname;
    const json_t *svc;

    if (!json_is_object(svcs) || json_object_size(svcs) == 0) {
        if (svcs)
            m->err_at = svcs;
        return tpx_err_set(err, TPX_EINVAL, "spec.services is missing or empty");
    }
    if (add_job(m, obj, "DynamoGraphDeployment", src, &x.job, err) != TPX_OK)
        return err->code;
    json_object_foreach((json_t *)svcs, sname, svc)
    {
        char name[POL_KEY_MAX];
        unsigned long replicas;
        unsigned long nodes;
        json_t *lt;

        m->err_at = svc;
        snprintf(name, sizeof(name), "%.100s-%.100s", obj_name(obj), sname);
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        if (get_count(m, svc, "replicas", 1, &replicas, err) != TPX_OK ||
            get_count(m, json_object_get(svc, "multinode"), "nodeCount", 1, &nodes, err) != TPX_OK)
            goto fail;
        lt = dynamo_template(m, obj, sname, svc, true, nodes, err);
        if (!lt)
            goto fail;
        if (nodes > 1) {
            json_t *wt = dynamo_template(m, obj, sname, svc, false, nodes, err);
            json_t *lws =
                wt ? keep(m,
                          json_pack("{s:I,s:{s:I,s:O,s:O}}", "replicas", (json_int_t)replicas,
                                    "leaderWorkerTemplate", "size", (json_int_t)nodes,
                                    "leaderTemplate", lt, "workerTemplate", wt),
                          err)
                   : NULL;
            if (!lws || lws_pods(m, &x, obj, name, lws, NULL, err) != TPX_OK)
                goto fail;
            continue;
        }
        if (add_tmpl(m, lt, &x.tmpl, err) != TPX_OK || reserve_pods(m, replicas, err) != TPX_OK)
            goto fail;
        for (unsigned long i = 0; i < replicas; i++) {
            if (new_replica(m, err) != TPX_OK)
                goto fail;
            new_pod(&x, "%s-%lu", name, i);
        }
    }
    return TPX_OK;
fail:
    tpx_err_prefix(err, "service '%s'", sname);
    return err->code;
}

/* patch merged into base (both objects, base owned): objects recursively, `containers` and
 * `initContainers` element by element by name, anything else replaced; the strategic merge
 * patch RBG applies, for the fields a pod template patch uses. */
static void merge_patch(json_t *base, const json_t *patch)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)patch, k, v)
    {
        json_t *b = json_object_get(base, k);
        if (json_is_object(v) && json_is_object(b)) {
            merge_patch(b, v);
        } else if (json_is_array(v) && json_is_array(b) &&
                   (strcmp(k, "containers") == 0 || strcmp(k, "initContainers") == 0)) {
            size_t i;
            json_t *pc;
            json_array_foreach(v, i, pc)
            {
                const char *n = json_string_value(json_object_get(pc, "name"));
                size_t j;
                json_t *bc;
                bool merged = false;
                json_array_foreach(b, j, bc)
                {
                    const char *bn = json_string_value(json_object_get(bc, "name"));
                    if (n && bn && strcmp(n, bn) == 0 && json_is_object(pc)) {
                        merge_patch(bc, pc);
                        merged = true;
                        break;
                    }
                }
                if (!merged)
                    json_array_append(b, pc);
            }
        } else {
            json_object_set(base, k, v);
        }
    }
}

/* RBG's env (api/workloads/constants/env.go; pkg discovery InjectEnv, InjectLeaderWorkerSetEnv:
 * sorted by name, in front of the user's). fieldRef values name labels RBG itself sets, so they
 * are given as the kubelet would resolve them. */
static void rbg_env(struct ext_manifest_pod *p, const char *rbg, const char *role,
                    unsigned long index, bool lwp, const char *instance, unsigned long comp,
                    unsigned long size, const char *svc, const char *ns)
{
    if (lwp) {
        inject(p, "RBG_COMPONENT_INDEX", "%lu", comp);
        inject(p, "RBG_COMPONENT_NAME", "%s", comp == 0 ? "leader" : "worker");
    }
    inject(p, "RBG_GROUP_NAME", "%s", rbg);
    inject(p, "RBG_ROLE_INDEX", "%lu", index);
    if (lwp)
        inject(p, "RBG_ROLE_INSTANCE_NAME", "%s", instance);
    inject(p, "RBG_ROLE_NAME", "%s", role);
    if (lwp) {
        inject(p, "RBG_LWP_LEADER_ADDRESS", "$(RBG_ROLE_INSTANCE_NAME)-0.%s.%s", svc, ns);
        inject(p, "RBG_LWP_WORKER_INDEX", "%lu", comp);
        inject(p, "RBG_LWP_GROUP_SIZE", "%lu", size);
    }
}

/* The leader or worker template of a leaderWorkerPattern: template with leaderTemplatePatch or
 * workerTemplatePatch merged in. NULL with *err. */
static json_t *rbg_lwp_template(struct ext_manifest *m, const json_t *lwp, bool leader,
                                struct tpx_err *err)
{
    const json_t *patch =
        json_object_get(lwp, leader ? "leaderTemplatePatch" : "workerTemplatePatch");
    json_t *t;

    if (!json_is_object(json_object_get(lwp, "template"))) {
        m->err_at = lwp;
        tpx_err_set(err, TPX_EINVAL, "leaderWorkerPattern.template is missing");
        return NULL;
    }
    t = keep(m, json_deep_copy(json_object_get(lwp, "template")), err);

    if (t && json_is_object(patch))
        merge_patch(t, patch);
    return t;
}

/*
 * RoleBasedGroup (workloads.x-k8s.io/v1alpha2, sgl-project/rbg api/workloads/v1alpha2 and
 * api/workloads/constants): each role gives `replicas` instances. standalonePattern: one pod
 * `<rbg>-<role>-<i>` per instance. leaderWorkerPattern (size N): a RoleInstance
 * `<rbg>-<role>-<i>` of N pods `<instance>-<k>` (k 0 the leader, the host name
 * RBG_LWP_LEADER_ADDRESS points at), the leader/worker patches merged into the template. Pods
 * carry the rbg.workloads.x-k8s.io/{group-name,role-name,role-instance-name,
 * role-instance-index,component-name,component-index,component-size} labels and the RBG_* env.
 * Other patterns are skipped with a note.
 */
static enum tpx_code expand_rbg(struct ext_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *roles = json_object_get(json_object_get(obj, "spec"), "roles");
    const char *rbg = obj_name(obj);
    struct expander x = {m, src, 0, 0};
    size_t r;
    const json_t *role;

    if (!json_is_array(roles) || json_array_size(roles) == 0) {
        if (roles)
            m->err_at = roles;
        return tpx_err_set(err, TPX_EINVAL, "spec.roles is missing or empty");
    }
    if (add_job(m, obj, "RoleBasedGroup", src, &x.job, err) != TPX_OK)
        return err->code;
    json_array_foreach(roles, r, role)
    {
        const char *rn = json_string_value(json_object_get(role, "name"));
        const json_t *sp = json_object_get(role, "standalonePattern");
        const json_t *lwp = json_object_get(role, "leaderWorkerPattern");
        char svc[POL_KEY_MAX];
        unsigned long reps;
        unsigned long size = 1;
        size_t lt;
        size_t wt;

        m->err_at = role;
        if (!rn)
            return tpx_err_set(err, TPX_EINVAL, "roles[%zu]: name is missing", r);
        snprintf(svc, sizeof(svc), "s-%.100s-%.100s", rbg, rn);
        if (get_count(m, role, "replicas", 1, &reps, err) != TPX_OK ||
            (lwp && get_count(m, lwp, "size", 1, &size, err) != TPX_OK))
            goto fail;
        if (!sp && !lwp) {
            add_note(m,
                     "%s: RoleBasedGroup '%s' role '%s': no standalonePattern or "
                     "leaderWorkerPattern; skipped",
                     src, rbg, rn);
            continue;
        }
        if (size == 0 || (reps && size > EXT_MANIFEST_MAX_PODS / reps)) {
            tpx_err_set(err, TPX_EINVAL, "leaderWorkerPattern.size %lu is out of range", size);
            goto fail;
        }
        if (sp) {
            if (add_tmpl(m, json_object_get(sp, "template"), &lt, err) != TPX_OK)
                goto fail;
            wt = lt;
        } else {
            json_t *l = rbg_lwp_template(m, lwp, true, err);
            json_t *w = l ? rbg_lwp_template(m, lwp, false, err) : NULL;
            if (!w || add_tmpl(m, l, &lt, err) != TPX_OK || add_tmpl(m, w, &wt, err) != TPX_OK)
                goto fail;
        }
        if (reserve_pods(m, reps * size, err) != TPX_OK)
            goto fail;
        for (unsigned long i = 0; i < reps; i++) {
            char inst[192];
            char gkey[EXTRA_LEN];
            int gl;

            snprintf(inst, sizeof(inst), "%.80s-%.80s-%lu", rbg, rn, i);
            gl = snprintf(gkey, sizeof(gkey), "%.60s/%.120s", obj_ns(obj), inst);
            if (gl < 0 || (size_t)gl >= sizeof(gkey))
                hash_key(gkey, obj_ns(obj), inst, 0); /* too long to read back: a hash */
            if (new_replica(m, err) != TPX_OK)
                return err->code;
            for (unsigned long k = 0; k < size; k++) {
                struct ext_manifest_pod *p;

                x.tmpl = k == 0 ? lt : wt;
                p = sp ? new_pod(&x, "%s", inst) : new_pod(&x, "%s-%lu", inst, k);
                extra(p, false, "rbg.workloads.x-k8s.io/group-name", "%.70s", rbg);
                extra(p, false, "rbg.workloads.x-k8s.io/role-name", "%.70s", rn);
                if (lwp) {
                    extra(p, false, "rbg.workloads.x-k8s.io/role-instance-name", "%.70s", inst);
                    extra(p, false, "rbg.workloads.x-k8s.io/role-instance-index", "%lu", i);
                    extra(p, false, "rbg.workloads.x-k8s.io/component-name", "%s",
                          k == 0 ? "leader" : "worker");
                    extra(p, false, "rbg.workloads.x-k8s.io/component-index", "%lu", k);
                    extra(p, false, "rbg.workloads.x-k8s.io/component-size", "%lu", size);
                    /* policy reads no RBG label as a group: topox's own annotations */
                    extra(p, true, "topox.io/group", "%s", gkey);
                    extra(p, true, "topox.io/group-size", "%lu", size);
                    extra(p, true, "topox.io/pod-index", "%lu", k);
                } else {
                    extra(p, false, "apps.kubernetes.io/pod-index", "%lu", i);
                }
                rbg_env(p, rbg, rn, i, lwp != NULL, inst, k, size, svc, obj_ns(obj));
            }
        }
    }
    return TPX_OK;
fail:
    tpx_err_prefix(err, "role '%s'", json_string_value(json_object_get(role, "name")));
    return err->code;
}

/* The pod template and replicas of replica spec `type` (Master, Worker, Launcher) of a Kubeflow
 * job; false when absent. */
static bool replica_spec(const json_t *specs, const char *type, const json_t **rs)
{
    *rs = json_object_get(specs, type);
    return json_is_object(*rs);
}

/* Kubeflow's labels on every pod (kubeflow/common for training-operator; mpi-operator's
 * defaultLabels): job-name and operator-name, replica-type (training-operator only),
 * replica-index (not on an MPI launcher), job-role (a PyTorchJob's master-0, every MPI pod). */
static void kubeflow_labels(struct ext_manifest_pod *p, const char *job, bool mpi,
                            const char *rtype, unsigned long index, bool role_label)
{
    extra(p, false, "training.kubeflow.org/job-name", "%.70s", job);
    extra(p, false, "training.kubeflow.org/operator-name", "%s",
          mpi ? "mpi-operator" : "pytorchjob-controller");
    if (!mpi)
        extra(p, false, "training.kubeflow.org/replica-type", "%s", rtype);
    if (!mpi || strcmp(rtype, "launcher") != 0)
        extra(p, false, "training.kubeflow.org/replica-index", "%lu", index);
    if (role_label)
        extra(p, false, "training.kubeflow.org/job-role", "%s", rtype);
}

/* The port named `name` of the container named `container` in template t, or def. */
static unsigned long named_port(const json_t *t, const char *container, const char *name,
                                unsigned long def)
{
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(json_object_get(t, "spec"), "containers"), i, c)
    {
        size_t k;
        const json_t *pt;
        const char *cn = json_string_value(json_object_get(c, "name"));
        if (!cn || strcmp(cn, container) != 0)
            continue;
        json_array_foreach(json_object_get(c, "ports"), k, pt)
        {
            const char *pn = json_string_value(json_object_get(pt, "name"));
            if (pn && strcmp(pn, name) == 0 &&
                json_is_integer(json_object_get(pt, "containerPort")))
                return (unsigned long)json_integer_value(json_object_get(pt, "containerPort"));
        }
    }
    return def;
}

/*
 * PyTorchJob (kubeflow.org/v1, kubeflow/training-operator pkg/controller.v1/pytorch envvar.go,
 * elastic.go): pods `<job>-master-0` and `<job>-worker-<i>`, the training.kubeflow.org labels,
 * and after every container's env PYTHONUNBUFFERED=0, then with a Master MASTER_PORT (its
 * `pytorchjob-port`, default 23456), MASTER_ADDR, WORLD_SIZE (all replicas) and RANK (workers
 * from 1), then with an elasticPolicy PET_RDZV_ENDPOINT, PET_RDZV_BACKEND, PET_NNODES,
 * PET_MAX_RESTARTS, PET_N_PROC_PER_NODE. The whole job is one group (one torch world): policy
 * reads it from topox.io/group, group-size and pod-index (the rank).
 */
static enum tpx_code expand_pytorchjob(struct ext_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *specs = json_object_get(spec, "pytorchReplicaSpecs");
    const json_t *ep = json_object_get(spec, "elasticPolicy");
    const char *job = obj_name(obj);
    static const char *const types[] = {"Master", "Worker"};
    struct expander x = {m, src, 0, 0};
    unsigned long n[2] = {0, 0};
    size_t t[2] = {0, 0};
    const json_t *rs[2];
    bool has[2];
    unsigned long port = 23456;
    char gkey[EXTRA_LEN];

    for (size_t k = 0; k < 2; k++) {
        has[k] = replica_spec(specs, types[k], &rs[k]);
        if (has[k] && (get_count(m, rs[k], "replicas", 1, &n[k], err) != TPX_OK ||
                       add_tmpl(m, json_object_get(rs[k], "template"), &t[k], err) != TPX_OK)) {
            tpx_err_prefix(err, "pytorchReplicaSpecs.%s", types[k]);
            return err->code;
        }
    }
    if (!has[0] && !has[1]) {
        m->err_at = specs ? specs : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.pytorchReplicaSpecs has no Master or Worker");
    }
    if (has[0])
        port = named_port(json_object_get(rs[0], "template"), "pytorch", "pytorchjob-port", port);
    if (add_job(m, obj, "PyTorchJob", src, &x.job, err) != TPX_OK ||
        reserve_pods(m, n[0] + n[1], err) != TPX_OK || new_replica(m, err) != TPX_OK)
        return err->code;
    snprintf(gkey, sizeof(gkey), "%.30s/%.40s", obj_ns(obj), job);
    for (size_t k = 0; k < 2; k++) {
        for (unsigned long i = 0; has[k] && i < n[k]; i++) {
            unsigned long rank = k == 1 && has[0] ? n[0] + i : i;
            struct ext_manifest_pod *p;
            char buf[64];

            x.tmpl = t[k];
            p = new_pod(&x, "%s-%s-%lu", job, k == 0 ? "master" : "worker", i);
            p->inj_mode = INJ_APPEND_ALL;
            kubeflow_labels(p, job, false, k == 0 ? "master" : "worker", i, k == 0 && i == 0);
            extra(p, true, "topox.io/group", "%s", gkey);
            extra(p, true, "topox.io/group-size", "%lu", n[0] + n[1]);
            extra(p, true, "topox.io/pod-index", "%lu", rank);
            inject(p, "PYTHONUNBUFFERED", "0");
            if (has[0]) {
                inject(p, "MASTER_PORT", "%lu", port);
                inject(p, "MASTER_ADDR", "%.70s-master-0", job);
                inject(p, "WORLD_SIZE", "%lu", n[0] + n[1]);
                inject(p, "RANK", "%lu", k == 1 ? i + 1 : i);
            }
            if (!ep)
                continue;
            {
                const char *host = json_string_value(json_object_get(ep, "rdzvHost"));
                const char *be = json_string_value(json_object_get(ep, "rdzvBackend"));
                const char *mn = ext_json_scalar(json_object_get(ep, "minReplicas"), buf, 32);
                const char *mx = ext_json_scalar(json_object_get(ep, "maxReplicas"), buf + 32, 32);
                char rp[32];
                const char *rport = ext_json_scalar(json_object_get(ep, "rdzvPort"), rp, 32);
                char mr[32];
                const char *maxr = ext_json_scalar(json_object_get(ep, "maxRestarts"), mr, 32);
                char np[32];
                const char *nproc = ext_json_scalar(json_object_get(ep, "nProcPerNode"), np, 32);

                if (host)
                    inject(p, "PET_RDZV_ENDPOINT", "%.60s:%s", host, rport ? rport : "");
                else
                    inject(p, "PET_RDZV_ENDPOINT", "%.60s-worker-0:%s", job, rport ? rport : "");
                inject(p, "PET_RDZV_BACKEND", "%s", be ? be : "c10d");
                if (mn || mx)
                    inject(p, "PET_NNODES", "%s:%s", mn ? mn : "", mx ? mx : "");
                else
                    inject(p, "PET_NNODES", "%lu", n[1]);
                if (maxr)
                    inject(p, "PET_MAX_RESTARTS", "%s", maxr);
                if (nproc)
                    inject(p, "PET_N_PROC_PER_NODE", "%s", nproc);
            }
        }
    }
    return TPX_OK;
}

/*
 * MPIJob (kubeflow.org/v2beta1, kubeflow/mpi-operator pkg/controller/mpi_job_controller.go):
 * the launcher `<job>-launcher` (a Job's pod upstream, with a generated suffix) is a replica of
 * its own when it asks for accelerators, else it is left out with a note; the workers
 * `<job>-worker-<i>` are one group. Labels training.kubeflow.org/
 * {operator-name mpi-operator, job-name, job-role, replica-index}; after the first container's
 * env, K_MPI_JOB_ROLE, and on the launcher OpenMPI's OMPI_MCA_orte_keep_fqdn_hostnames,
 * OMPI_MCA_orte_default_hostfile, OMPI_MCA_plm_rsh_args and OMPI_MCA_orte_set_default_slots
 * (slotsPerWorker, default 1).
 */
static enum tpx_code expand_mpijob(struct ext_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *specs = json_object_get(spec, "mpiReplicaSpecs");
    const char *job = obj_name(obj);
    struct expander x = {m, src, 0, 0};
    const json_t *lrs;
    const json_t *wrs;
    bool hl = replica_spec(specs, "Launcher", &lrs);
    bool hw = replica_spec(specs, "Worker", &wrs);
    unsigned long nl = 0;
    unsigned long nw = 0;
    unsigned long slots;
    size_t lt = 0;
    size_t wt = 0;
    char gkey[EXTRA_LEN];

    if (!hl && !hw) {
        m->err_at = specs ? specs : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.mpiReplicaSpecs has no Launcher or Worker");
    }
    if (get_count(m, spec, "slotsPerWorker", 1, &slots, err) != TPX_OK ||
        (hl && (get_count(m, lrs, "replicas", 1, &nl, err) != TPX_OK ||
                add_tmpl(m, json_object_get(lrs, "template"), &lt, err) != TPX_OK)) ||
        (hw && (get_count(m, wrs, "replicas", 1, &nw, err) != TPX_OK ||
                add_tmpl(m, json_object_get(wrs, "template"), &wt, err) != TPX_OK)) ||
        add_job(m, obj, "MPIJob", src, &x.job, err) != TPX_OK ||
        reserve_pods(m, nl + nw, err) != TPX_OK)
        return err->code;
    snprintf(gkey, sizeof(gkey), "%.30s/%.40s", obj_ns(obj), job);
    if (nl && m->tmpl[lt].facts.accel == 0) {
        /* a launcher that asks for no accelerators has nothing to place (objects/dra.c and the
         * plan then see the workers only) */
        add_note(m, "%s: MPIJob '%s': the launcher is not placed (it asks for no accelerators)",
                 src, job);
        nl = 0;
    }
    if (nl) {
        struct ext_manifest_pod *p;
        x.tmpl = lt;
        if (new_replica(m, err) != TPX_OK)
            return err->code;
        p = new_pod(&x, "%s-launcher", job);
        p->inj_mode = INJ_APPEND_FIRST;
        kubeflow_labels(p, job, true, "launcher", 0, true);
        inject(p, "K_MPI_JOB_ROLE", "launcher");
        inject(p, "OMPI_MCA_orte_keep_fqdn_hostnames", "true");
        inject(p, "OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile");
        inject(p, "OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10");
        inject(p, "OMPI_MCA_orte_set_default_slots", "%lu", slots);
    }
    if (nw && new_replica(m, err) != TPX_OK)
        return err->code;
    for (unsigned long i = 0; i < nw; i++) {
        struct ext_manifest_pod *p;
        x.tmpl = wt;
        p = new_pod(&x, "%s-worker-%lu", job, i);
        p->inj_mode = INJ_APPEND_FIRST;
        kubeflow_labels(p, job, true, "worker", i, true);
        extra(p, true, "topox.io/group", "%s", gkey);
        extra(p, true, "topox.io/group-size", "%lu", nw);
        extra(p, true, "topox.io/pod-index", "%lu", i);
        inject(p, "K_MPI_JOB_ROLE", "worker");
    }
    return TPX_OK;
}

/* The container named `name` in pod spec ps, or NULL. */
static json_t *container_named(const json_t *ps, const char *name)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(ps, "containers"), i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

/* What one LLMInferenceService workload (the main one or spec.prefill) reads. */
struct llmisvc_par {
    unsigned long tensor, pipeline, data, data_local;
    bool expert;
    const char *model;
};

/* The `vllm serve` line of KServe's well-known worker-data-parallel preset
 * (config/llmisvcconfig/config-llm-worker-data-parallel.yaml), rendered with spec.parallelism;
 * the preset's RoCE/DNS probing before it is left out. */
static void llmisvc_command(json_t *c, const struct llmisvc_par *par, bool leader)
{
    char line[1024];
    char tp[48] = "";

    if (json_array_size(json_object_get(c, "command")) ||
        json_array_size(json_object_get(c, "args")))
        return; /* the user's own command wins over the preset's */
    if (par->tensor)
        snprintf(tp, sizeof(tp), " --tensor-parallel-size %lu", par->tensor);
    snprintf(
        line, sizeof(line),
        "START_RANK=%s; exec vllm serve /mnt/models --served-model-name %.100s --port 8000%s%s "
        "--data-parallel-size %lu --data-parallel-size-local %lu --data-parallel-address "
        "${DP_ADDRESS} --data-parallel-rpc-port 5555 --data-parallel-start-rank $START_RANK%s "
        "${VLLM_ADDITIONAL_ARGS}",
        leader ? "0" : "$(( ${LWS_WORKER_INDEX:-0} * DATA_LOCAL ))",
        par->model ? par->model : "model", par->expert ? " --enable-expert-parallel" : "", tp,
        par->data ? par->data : 1, par->data_local ? par->data_local : 1,
        leader ? "" : " --headless");
    if (!leader) {
        /* DATA_LOCAL stands for the preset's {{ or .Spec.Parallelism.DataLocal 1 }} */
        char *at = strstr(line, "DATA_LOCAL");
        char n[24];
        int l = snprintf(n, sizeof(n), "%lu", par->data_local ? par->data_local : 1);
        if (at && l > 0) {
            memmove(at + l, at + 10, strlen(at + 10) + 1);
            memcpy(at, n, (size_t)l);
        }
    }
    json_object_set_new(c, "command", json_pack("[s,s,s]", "/bin/bash", "-c", line));
}

/* A KServe pod template: the user's pod spec with the preset's `main` container command and
 * env (HOME, VLLM_LOGGING_LEVEL, HF_HUB_CACHE, unless the user sets them) and the labels of
 * expectedMainMultiNodeLWS. */
static json_t *llmisvc_template(struct ext_manifest *m, const json_t *ps, const char *name,
                                const struct llmisvc_par *par, bool leader, bool multinode,
                                const char *role, struct tpx_err *err)
{
    static const char *const preset_env[][2] = {
        {"HOME", "/home"}, {"VLLM_LOGGING_LEVEL", "INFO"}, {"HF_HUB_CACHE", "/models"}};
    json_t *t = keep(m,
                     json_pack("{s:{s:{s:s,s:s,s:s}},s:O}", "metadata", "labels",
                               "app.kubernetes.io/component",
                               leader ? "llminferenceservice-workload-leader"
                                      : "llminferenceservice-workload-worker",
                               "app.kubernetes.io/name", name, "app.kubernetes.io/part-of",
                               "llminferenceservice", "spec", ps),
                     err);
    json_t *spec;
    json_t *c;
    json_t *env;

    if (!t)
        return NULL;
    spec = json_deep_copy(ps);
    json_object_set_new(t, "spec", spec ? spec : json_object());
    spec = json_object_get(t, "spec");
    if (leader) {
        json_t *l = json_object_get(json_object_get(t, "metadata"), "labels");
        json_object_set_new(l, "kserve.io/component", json_string("workload"));
        json_object_set_new(l, "llm-d.ai/role", json_string(role));
    }
    c = container_named(spec, "main");
    if (!c)
        return t;
    if (multinode)
        llmisvc_command(c, par, leader);
    env = json_object_get(c, "env");
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(c, "env", env);
    }
    for (size_t k = 0; k < 3; k++) {
        bool set = false;
        size_t i;
        json_t *e;
        json_array_foreach(env, i, e)
        {
            const char *n = json_string_value(json_object_get(e, "name"));
            set = set || (n && strcmp(n, preset_env[k][0]) == 0);
        }
        if (!set)
            json_array_insert_new(
                env, k,
                json_pack("{s:s,s:s}", "name", preset_env[k][0], "value", preset_env[k][1]));
    }
    return t;
}

/* One workload of an LLMInferenceService (spec, or spec.prefill): with a worker, the LWS
 * `<name>-kserve-mn[-prefill]` of size pipeline (when set) else data / dataLocal; without one,
 * `replicas` pods `<name>-kserve[-prefill]-<i>`. */
static enum tpx_code llmisvc_workload(struct ext_manifest *m, struct expander *x, const json_t *obj,
                                      const json_t *w, const char *model, bool prefill,
                                      struct tpx_err *err)
{
    const json_t *parj = json_object_get(w, "parallelism");
    const json_t *tmpl = json_object_get(w, "template");
    const json_t *worker = json_object_get(w, "worker");
    const char *name = obj_name(obj);
    const char *role = prefill ? "prefill" : "decode";
    struct llmisvc_par par = {0, 0, 0, 0, false, model};
    unsigned long replicas;
    unsigned long size = 1;
    char lws[POL_KEY_MAX];

    if (get_count(m, w, "replicas", 1, &replicas, err) != TPX_OK ||
        get_count(m, parj, "tensor", 0, &par.tensor, err) != TPX_OK ||
        get_count(m, parj, "pipeline", 0, &par.pipeline, err) != TPX_OK ||
        get_count(m, parj, "data", 0, &par.data, err) != TPX_OK ||
        get_count(m, parj, "dataLocal", 0, &par.data_local, err) != TPX_OK)
        return err->code;
    par.expert = json_is_true(json_object_get(parj, "expert"));
    if (!tmpl && !worker)
        return TPX_OK;
    if (worker) {
        json_t *lt =
            llmisvc_template(m, tmpl ? tmpl : worker, name, &par, tmpl != NULL, true, role, err);
        json_t *wt = lt ? llmisvc_template(m, worker, name, &par, false, true, role, err) : NULL;
        json_t *spec;

        if (par.pipeline > 1)
            size = par.pipeline;
        else if (par.data && par.data_local && par.data >= par.data_local)
            size = par.data / par.data_local;
        spec = wt ? keep(m,
                         json_pack("{s:I,s:{s:I,s:O,s:O}}", "replicas", (json_int_t)replicas,
                                   "leaderWorkerTemplate", "size", (json_int_t)size,
                                   "leaderTemplate", lt, "workerTemplate", wt),
                         err)
                  : NULL;
        snprintf(lws, sizeof(lws), "%.120s-kserve-mn%s", name, prefill ? "-prefill" : "");
        return spec ? lws_pods(m, x, obj, lws, spec, NULL, err) : err->code;
    }
    {
        json_t *t = llmisvc_template(m, tmpl, name, &par, true, false, role, err);
        if (!t || add_tmpl(m, t, &x->tmpl, err) != TPX_OK ||
            reserve_pods(m, replicas, err) != TPX_OK)
            return err->code;
        for (unsigned long i = 0; i < replicas; i++) {
            if (new_replica(m, err) != TPX_OK)
                return err->code;
            new_pod(x, "%.120s-kserve%s-%lu", name, prefill ? "-prefill" : "", i);
        }
    }
    return TPX_OK;
}

/*
 * LLMInferenceService (serving.kserve.io/v1alpha2, kserve/kserve pkg/controller/llmisvc and
 * config/llmisvcconfig): the main workload (spec) and spec.prefill, each as llmisvc_workload()
 * expands it; the router, scheduler and gateway make no GPU pods. v1alpha1 is read the same.
 */
static enum tpx_code expand_llmisvc(struct ext_manifest *m, const json_t *obj, const char *src,
                                    struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *model = json_string_value(json_object_get(json_object_get(spec, "model"), "name"));
    struct expander x = {m, src, 0, 0};

    if (add_job(m, obj, "LLMInferenceService", src, &x.job, err) != TPX_OK ||
        llmisvc_workload(m, &x, obj, spec, model, false, err) != TPX_OK)
        return err->code;
    if (json_is_object(json_object_get(spec, "prefill")) &&
        llmisvc_workload(m, &x, obj, json_object_get(spec, "prefill"), model, true, err) !=
            TPX_OK) {
        tpx_err_prefix(err, "prefill");
        return err->code;
    }
    return TPX_OK;
}

/* A Grove topologyConstraint's pack.required (or preferred) domain as topox's pipeline scope:
 * rack, block and zone are topox's; NULL for the others (host, numa, region, datacenter). */
static const char *grove_scope(const json_t *tc, const char **domain)
{
    static const char *const known[] = {"rack", "block", "zone"};
    const json_t *pack = json_object_get(tc, "pack");
    const char *d = json_string_value(json_object_get(pack, "required"));

    if (!d)
        d = json_string_value(json_object_get(pack, "preferred"));
    *domain = d;
    for (size_t i = 0; d && i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(d, known[i]) == 0)
            return known[i];
    }
    return NULL;
}

/* The clique template named `name` of a PodCliqueSet template, or NULL. */
static const json_t *grove_clique(const json_t *cliques, const char *name)
{
    size_t i;
    const json_t *c;

    json_array_foreach(cliques, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

/* A clique's pod template: its labels and annotations, spec.podSpec. Owned by m. */
static enum tpx_code grove_tmpl(struct ext_manifest *m, const json_t *cl, size_t *out,
                                struct tpx_err *err)
{
    const json_t *labels = json_object_get(cl, "labels");
    const json_t *ann = json_object_get(cl, "annotations");
    json_t *t =
        keep(m,
             json_pack("{s:{s:o,s:o},s:O?}", "metadata", "labels",
                       json_is_object(labels) ? json_deep_copy(labels) : json_object(),
                       "annotations", json_is_object(ann) ? json_deep_copy(ann) : json_object(),
                       "spec", json_object_get(json_object_get(cl, "spec"), "podSpec")),
             err);

    return t ? add_tmpl(m, t, out, err) : err->code;
}

/* Grove's labels and env on pod k of PodClique pclq (api/common labels; the env of
 * docs/user-guide naming-and-env-vars). pcsg NULL for a standalone clique. */
static void grove_pod(struct ext_manifest_pod *p, const char *pcs, unsigned long r,
                      const char *pclq, unsigned long k, const char *pcsg, unsigned long j,
                      unsigned long pcsg_pods, const char *ns)
{
    p->inj_mode = INJ_APPEND_REPLACE;
    extra(p, false, "app.kubernetes.io/managed-by", "grove-operator");
    extra(p, false, "app.kubernetes.io/part-of", "%.70s", pcs);
    extra(p, false, "grove.io/podclique", "%.70s", pclq);
    extra(p, false, "grove.io/podcliqueset-replica-index", "%lu", r);
    extra(p, false, "grove.io/podgang", "%.60s-%lu", pcs, r);
    if (pcsg) {
        extra(p, false, "grove.io/podcliquescalinggroup", "%.70s", pcsg);
        extra(p, false, "grove.io/podcliquescalinggroup-replica-index", "%lu", j);
    }
    inject(p, "GROVE_PCS_NAME", "%s", pcs);
    inject(p, "GROVE_PCS_INDEX", "%lu", r);
    inject(p, "GROVE_PCLQ_NAME", "%s", pclq);
    inject(p, "GROVE_HEADLESS_SERVICE", "%.80s-%lu.%.60s.svc.cluster.local", pcs, r, ns);
    inject(p, "GROVE_PCLQ_POD_INDEX", "%lu", k);
    if (pcsg) {
        inject(p, "GROVE_PCSG_NAME", "%s", pcsg);
        inject(p, "GROVE_PCSG_TEMPLATE_NUM_PODS", "%lu", pcsg_pods);
        inject(p, "GROVE_PCSG_INDEX", "%lu", j);
    }
}

/*
 * PodCliqueSet (grove.io/v1alpha1, ai-dynamo/grove operator/api and docs/user-guide): for each of
 * `replicas` r, each PodCliqueScalingGroup g (replicas R) gives R model instances, each the
 * cliques of g.cliqueNames as PodCliques `<pcs>-<r>-<g>-<j>-<clique>`; a clique in no scaling
 * group is a standalone PodClique `<pcs>-<r>-<clique>`. Pod k of a PodClique is named by its
 * host name `<pclq>-<k>` (Grove gives the pod itself a random suffix). An instance of a scaling
 * group is one group (topox.io/group, group-size, pod-index across its cliques); a standalone
 * clique's pods stand alone. The scaling group's (else the set's) topologyConstraint
 * pack.required rack/block/zone becomes topox.io/pipeline-scope; other domains are a note.
 */
static enum tpx_code expand_pcs(struct ext_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *tmpl = json_object_get(spec, "template");
    const json_t *cliques = json_object_get(tmpl, "cliques");
    const json_t *sgs = json_object_get(tmpl, "podCliqueScalingGroups");
    const char *pcs = obj_name(obj);
    const char *pcs_dom = NULL;
    const char *pcs_scope = grove_scope(json_object_get(tmpl, "topologyConstraint"), &pcs_dom);
    struct expander x = {m, src, 0, 0};
    unsigned long reps;
    size_t *ct;
    size_t i;
    const json_t *cl;
    enum tpx_code rc = TPX_OK;

    if (!json_is_array(cliques) || json_array_size(cliques) == 0) {
        m->err_at = cliques ? cliques : tmpl ? tmpl : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.template.cliques is missing or empty");
    }
    if (get_count(m, spec, "replicas", 1, &reps, err) != TPX_OK ||
        add_job(m, obj, "PodCliqueSet", src, &x.job, err) != TPX_OK)
        return err->code;
    ct = calloc(json_array_size(cliques), sizeof(*ct));
    if (!ct)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    json_array_foreach(cliques, i, cl)
    {
        m->err_at = cl;
        if (grove_tmpl(m, cl, &ct[i], err) != TPX_OK) {
            rc = err->code;
            goto out;
        }
    }
    for (unsigned long r = 0; r < reps; r++) {
        size_t g;
        const json_t *sg;

        /* standalone cliques: those no scaling group names */
        json_array_foreach(cliques, i, cl)
        {
            const char *cn = json_string_value(json_object_get(cl, "name"));
            bool grouped = false;
            unsigned long n;
            char pclq[192];
            size_t gg;
            const json_t *s2;

            json_array_foreach(sgs, gg, s2)
            {
                size_t q;
                const json_t *nm;
                json_array_foreach(json_object_get(s2, "cliqueNames"), q, nm)
                {
                    grouped = grouped || (cn && json_string_value(nm) &&
                                          strcmp(cn, json_string_value(nm)) == 0);
                }
            }
            if (grouped || !cn)
                continue;
            m->err_at = cl;
            if (get_count(m, json_object_get(cl, "spec"), "replicas", 1, &n, err) != TPX_OK ||
                reserve_pods(m, n, err) != TPX_OK) {
                rc = err->code;
                goto out;
            }
            snprintf(pclq, sizeof(pclq), "%.80s-%lu-%.80s", pcs, r, cn);
            x.tmpl = ct[i];
            for (unsigned long k = 0; k < n; k++) {
                if (new_replica(m, err) != TPX_OK) {
                    rc = err->code;
                    goto out;
                }
                grove_pod(new_pod(&x, "%s-%lu", pclq, k), pcs, r, pclq, k, NULL, 0, 0, obj_ns(obj));
            }
        }
        json_array_foreach(sgs, g, sg)
        {
            const char *gn = json_string_value(json_object_get(sg, "name"));
            const char *dom = NULL;
            const char *scope = grove_scope(json_object_get(sg, "topologyConstraint"), &dom);
            unsigned long sreps;
            unsigned long total = 0;
            char pcsg[192];
            size_t q;
            const json_t *nm;

            m->err_at = sg;
            if (!gn || get_count(m, sg, "replicas", 1, &sreps, err) != TPX_OK) {
                rc = gn ? err->code
                        : tpx_err_set(err, TPX_EINVAL,
                                      "podCliqueScalingGroups[%zu]: name is "
                                      "missing",
                                      g);
                goto out;
            }
            if (!dom) {
                scope = pcs_scope;
                dom = pcs_dom;
            }
            if (dom && !scope && r == 0)
                add_note(m,
                         "%s: PodCliqueSet '%s' scaling group '%s': pack %s is no level topox "
                         "places by; kept as a constraint it does not check",
                         src, pcs, gn, dom);
            snprintf(pcsg, sizeof(pcsg), "%.80s-%lu-%.80s", pcs, r, gn);
            json_array_foreach(json_object_get(sg, "cliqueNames"), q, nm)
            {
                const json_t *c =
                    grove_clique(cliques, json_string_value(nm) ? json_string_value(nm) : "");
                unsigned long n;
                if (!c) {
                    rc = tpx_err_set(err, TPX_EINVAL, "scaling group '%s': no clique '%s'", gn,
                                     json_string_value(nm) ? json_string_value(nm) : "?");
                    goto out;
                }
                if (get_count(m, json_object_get(c, "spec"), "replicas", 1, &n, err) != TPX_OK) {
                    rc = err->code;
                    goto out;
                }
                total += n;
            }
            if (sreps && total > EXT_MANIFEST_MAX_PODS / sreps) {
                rc = tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all",
                                 EXT_MANIFEST_MAX_PODS);
                goto out;
            }
            if (reserve_pods(m, sreps * total, err) != TPX_OK) {
                rc = err->code;
                goto out;
            }
            for (unsigned long j = 0; j < sreps; j++) {
                char gkey[EXTRA_LEN];
                int gl;
                unsigned long idx = 0;

                gl = snprintf(gkey, sizeof(gkey), "%.60s/%.150s-%lu", obj_ns(obj), pcsg, j);
                if (gl < 0 || (size_t)gl >= sizeof(gkey))
                    hash_key(gkey, obj_ns(obj), pcsg, j);
                if (total && new_replica(m, err) != TPX_OK) {
                    rc = err->code;
                    goto out;
                }
                json_array_foreach(json_object_get(sg, "cliqueNames"), q, nm)
                {
                    const char *cn = json_string_value(nm);
                    const json_t *c = grove_clique(cliques, cn);
                    unsigned long n;
                    char pclq[256];
                    size_t ci;
                    const json_t *cc;

                    (void)get_count(m, json_object_get(c, "spec"), "replicas", 1, &n, err);
                    json_array_foreach(cliques, ci, cc)
                    {
                        if (cc == c)
                            x.tmpl = ct[ci];
                    }
                    snprintf(pclq, sizeof(pclq), "%.150s-%lu-%.80s", pcsg, j, cn);
                    for (unsigned long k = 0; k < n; k++, idx++) {
                        struct ext_manifest_pod *p = new_pod(&x, "%s-%lu", pclq, k);
                        grove_pod(p, pcs, r, pclq, k, pcsg, j, total, obj_ns(obj));
                        extra(p, true, "topox.io/group", "%s", gkey);
                        extra(p, true, "topox.io/group-size", "%lu", total);
                        extra(p, true, "topox.io/pod-index", "%lu", idx);
                        if (scope)
                            extra(p, true, "topox.io/pipeline-scope", "%s", scope);
                    }
                }
            }
        }
    }
out:
    free(ct);
    return rc;
}

/*
 * PodGroup (scheduling.k8s.io v1alpha2 in Kubernetes 1.36, v1beta1 in 1.37; KEP-4671 gang
 * scheduling, KEP-5732 topology-aware workload scheduling): no pods of its own; kept for
 * workload_groups(). Other versions are read the same, with a note.
 */
static enum tpx_code read_podgroup(struct ext_manifest *m, const json_t *obj, struct tpx_err *err)
{
    const json_t **np;

    np = realloc((void *)m->podgroups, (m->npodgroups + 1) * sizeof(*np));
    if (!np)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    m->podgroups = np;
    m->podgroups[m->npodgroups++] = obj;
    return TPX_OK;
}

/* The pipeline scope a topology key names: the level whose label keys in topology/labels.c's
 * defaults hold it (rack, block, zone); NULL for the NVLink domain level and unknown keys. */
static const char *key_scope(const char *key)
{
    const struct topo_label_config *cfg = topo_label_config_default();

    for (int l = TOPO_LEVEL_DOMAIN; l < TOPO_LEVEL_COUNT; l++) {
        for (size_t k = 0; k < cfg->nkeys[l]; k++) {
            if (strcmp(cfg->keys[l][k], key) == 0)
                return l == TOPO_LEVEL_DOMAIN ? NULL : topo_level_name((enum topo_level)l);
        }
    }
    return NULL;
}

struct pg_ref {
    const char *name; /* spec.schedulingGroup.podGroupName */
    size_t pod;
};

static int pg_ref_cmp(const void *a, const void *b)
{
    const struct pg_ref *x = a;
    const struct pg_ref *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->pod > y->pod) - (x->pod < y->pod);
}

static const char *pod_group_name(const struct ext_manifest *m, size_t i)
{
    const json_t *t = m->tmpl_json[m->pods[i].tmpl];

    return json_string_value(json_object_get(
        json_object_get(json_object_get(t, "spec"), "schedulingGroup"), "podGroupName"));
}

/* The scope the topology keys of PodGroup obj set (NULL: none), with a note for other keys. */
static const char *podgroup_scope(struct ext_manifest *m, const json_t *obj, const char *pg)
{
    const char *scope = NULL;
    size_t k;
    const json_t *tc;

    json_array_foreach(
        json_object_get(json_object_get(json_object_get(obj, "spec"), "schedulingConstraints"),
                        "topology"),
        k, tc)
    {
        const char *key = json_string_value(json_object_get(tc, "key"));
        const char *sc = key ? key_scope(key) : NULL;
        if (sc && !scope)
            scope = sc;
        else if (key && !sc)
            add_note(m,
                     "PodGroup '%s': topology key '%s' is no rack, block or zone label topox "
                     "reads; kept as a constraint it does not check",
                     pg, key);
    }
    return scope;
}

/*
 * The Workload API's groups: a pod whose template sets spec.schedulingGroup.podGroupName is in
 * that PodGroup (topox.io/group `<ns>/<name>`, group-size the pods of this manifest in it,
 * pod-index their order), and the PodGroup's schedulingConstraints.topology[].key, when it is a
 * label key topox reads for a rack, block or zone, sets topox.io/pipeline-scope; any other key
 * is kept as a note. Run once by _finish() before the facts are built; O(n log n).
 */
static enum tpx_code workload_groups(struct ext_manifest *m, struct tpx_err *err)
{
    struct pg_ref *refs;
    size_t n = 0;

    for (size_t i = 0; i < m->npods; i++)
        n += pod_group_name(m, i) != NULL;
    if (n == 0)
        return TPX_OK;
    refs = malloc(n * sizeof(*refs));
    if (!refs)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    n = 0;
    for (size_t i = 0; i < m->npods; i++) {
        const char *pg = pod_group_name(m, i);
        if (pg)
            refs[n++] = (struct pg_ref){pg, i};
    }
    qsort(refs, n, sizeof(*refs), pg_ref_cmp);
    for (size_t a = 0, b; a < n; a = b) {
        const char *pg = refs[a].name;
        const char *scope = NULL;
        const json_t *obj = NULL;
        const char *job = m->jobs[m->pods[refs[a].pod].job].name; /* "ns/name" */
        char ns[POL_KEY_MAX];
        char gkey[EXTRA_LEN];
        int gl;

        for (b = a; b < n && strcmp(refs[b].name, pg) == 0; b++)
            ;
        for (size_t g = 0; g < m->npodgroups && !obj; g++) {
            if (strcmp(obj_name(m->podgroups[g]), pg) == 0)
                obj = m->podgroups[g];
        }
        if (obj)
            scope = podgroup_scope(m, obj, pg);
        else
            add_note(m, "pod '%s': PodGroup '%s' is not in this manifest; grouped by its name only",
                     m->pods[refs[a].pod].name, pg);
        copy_str(ns, sizeof(ns), job);
        ns[strcspn(ns, "/")] = '\0';
        gl = snprintf(gkey, sizeof(gkey), "%.60s/%.200s", ns, pg);
        if (gl < 0 || (size_t)gl >= sizeof(gkey))
            hash_key(gkey, ns, pg, 0);
        for (size_t k = a; k < b; k++) {
            struct ext_manifest_pod *p = &m->pods[refs[k].pod];
            extra(p, true, "topox.io/group", "%s", gkey);
            extra(p, true, "topox.io/group-size", "%zu", b - a);
            extra(p, true, "topox.io/pod-index", "%zu", k - a);
            if (scope)
                extra(p, true, "topox.io/pipeline-scope", "%s", scope);
        }
    }
    free(refs);
    return TPX_OK;
}

/* Set env var name of container c to value (a string, or NULL for a valueFrom placeholder
 * dropped later), in place when c has it, else appended: the trainer's apply.UpsertEnvVar. */
static void upsert_env(json_t *c, const char *name, const char *value)
{
    json_t *env = json_object_get(c, "env");
    json_t *e = value ? json_pack("{s:s,s:s}", "name", name, "value", value)
                      : json_pack("{s:s,s:{}}", "name", name, "valueFrom");
    size_t i;
    json_t *old;

    if (!e)
        return;
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(c, "env", env);
    }
    json_array_foreach(env, i, old)
    {
        const char *n = json_string_value(json_object_get(old, "name"));
        if (n && strcmp(n, name) == 0) {
            json_array_set_new(env, i, e);
            return;
        }
    }
    json_array_append_new(env, e);
}

/* The trainer's replicated job of a runtime's JobSet spec: the one labelled
 * trainer.kubeflow.org/trainjob-ancestor-step: trainer, else the one named "node". */
static json_t *trainer_rjob(json_t *jsspec)
{
    size_t i;
    json_t *rj;
    json_t *named = NULL;

    json_array_foreach(json_object_get(jsspec, "replicatedJobs"), i, rj)
    {
        const char *n = json_string_value(json_object_get(rj, "name"));
        const char *a = json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(rj, "template"), "metadata"), "labels"),
            "trainer.kubeflow.org/trainjob-ancestor-step"));
        if (a && strcmp(a, "trainer") == 0)
            return rj;
        if (n && strcmp(n, "node") == 0)
            named = rj;
    }
    return named;
}

/*
 * TrainJob (trainer.kubeflow.org/v1alpha1, kubeflow/trainer pkg/runtime/framework/plugins/torch
 * torch.go, pkg/runtime/core): the JobSet `<trainjob>` its runtime (spec.runtimeRef, a
 * ClusterTrainingRuntime or TrainingRuntime of this manifest) templates, the trainer's
 * replicated job run on trainer.numNodes (else the runtime's mlPolicy.numNodes) pods, its `node`
 * container taking trainer.image, command, args, env and resourcesPerNode; with the torch
 * policy, the PET_NNODES, PET_NPROC_PER_NODE (trainer.numProcPerNode, else the policy's, else
 * "auto"), PET_NODE_RANK (the completion index), PET_MASTER_ADDR `<trainjob>-node-0-0.<trainjob>`
 * and PET_MASTER_PORT 29400 env. A runtime not in the manifest gives a note and no pods.
 */
static enum tpx_code expand_trainjob(struct ext_manifest *m, const json_t *obj, const char *src,
                                     struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *ref = json_object_get(spec, "runtimeRef");
    const json_t *tr = json_object_get(spec, "trainer");
    const char *rname = json_string_value(json_object_get(ref, "name"));
    const char *rkind = json_string_value(json_object_get(ref, "kind"));
    const char *tj = obj_name(obj);
    const json_t *rt;
    const json_t *torch;
    json_t *js;
    json_t *jsspec;
    json_t *rj;
    json_t *c;
    unsigned long nodes;
    char buf[64];
    char np[64];
    const char *npp;
    size_t first;
    size_t job;

    if (!rname) {
        m->err_at = ref ? ref : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.runtimeRef.name is missing");
    }
    rt = same_file_object(m, rkind ? rkind : "ClusterTrainingRuntime", rname);
    if (!rt) {
        add_note(m, "%s: TrainJob '%s': runtime %s '%s' is not in this manifest; no pods to place",
                 src, tj, rkind ? rkind : "ClusterTrainingRuntime", rname);
        return TPX_OK;
    }
    torch = json_object_get(json_object_get(json_object_get(rt, "spec"), "mlPolicy"), "torch");
    js = keep(m,
              json_pack("{s:s,s:{s:s,s:s},s:O?}", "kind", "JobSet", "metadata", "name", tj,
                        "namespace", obj_ns(obj), "spec",
                        json_object_get(json_object_get(json_object_get(rt, "spec"), "template"),
                                        "spec")),
              err);
    if (!js)
        return err->code;
    jsspec = json_deep_copy(json_object_get(js, "spec"));
    json_object_set_new(js, "spec", jsspec ? jsspec : json_object());
    jsspec = json_object_get(js, "spec");
    rj = trainer_rjob(jsspec);
    c = container_named(
        json_object_get(
            json_object_get(json_object_get(json_object_get(rj, "template"), "spec"), "template"),
            "spec"),
        "node");
    if (get_count(m, tr, "numNodes", 0, &nodes, err) != TPX_OK)
        return err->code;
    if (!nodes && get_count(m, json_object_get(json_object_get(rt, "spec"), "mlPolicy"), "numNodes",
                            1, &nodes, err) != TPX_OK)
        return err->code;
    if (rj) {
        json_t *jt = json_object_get(json_object_get(rj, "template"), "spec");
        json_object_set_new(jt, "parallelism", json_integer((json_int_t)nodes));
        json_object_set_new(jt, "completions", json_integer((json_int_t)nodes));
        /* JobSet's webhook defaults it; PET_NODE_RANK reads the completion index */
        if (!json_object_get(jt, "completionMode"))
            json_object_set_new(jt, "completionMode", json_string("Indexed"));
    }
    if (c && tr) {
        static const char *const keys[] = {"image", "command", "args"};
        size_t k;
        json_t *e;
        for (size_t q = 0; q < 3; q++) {
            if (json_object_get(tr, keys[q]))
                json_object_set(c, keys[q], json_object_get(tr, keys[q]));
        }
        if (json_is_object(json_object_get(tr, "resourcesPerNode")))
            json_object_set(c, "resources", json_object_get(tr, "resourcesPerNode"));
        json_array_foreach(json_object_get(tr, "env"), k, e)
        {
            const char *n = json_string_value(json_object_get(e, "name"));
            if (n)
                upsert_env(c, n, json_string_value(json_object_get(e, "value")));
        }
    }
    npp = ext_json_scalar(json_object_get(tr, "numProcPerNode"), np, sizeof(np));
    if (!npp)
        npp = ext_json_scalar(json_object_get(torch, "numProcPerNode"), np, sizeof(np));
    if (c && torch) {
        snprintf(buf, sizeof(buf), "%lu", nodes);
        upsert_env(c, "PET_NNODES", buf);
        upsert_env(c, "PET_NPROC_PER_NODE", npp ? npp : "auto");
        upsert_env(c, "PET_NODE_RANK", NULL);
        {
            char addr[POL_KEY_MAX];
            snprintf(addr, sizeof(addr), "%.100s-node-0-0.%.100s", tj, tj);
            upsert_env(c, "PET_MASTER_ADDR", addr);
        }
        upsert_env(c, "PET_MASTER_PORT", "29400");
    }
    first = m->npods;
    job = m->njobs;
    if (expand_jobset(m, js, src, err) != TPX_OK)
        return err->code;
    copy_str(m->jobs[job].kind, sizeof(m->jobs[job].kind), "TrainJob");
    for (size_t p = first; c && torch && p < m->npods; p++) {
        const struct ext_manifest_pod *pp = &m->pods[p];
        const char *idx = NULL;
        for (size_t e = 0; e < pp->nel; e++) {
            if (strcmp(pp->ekey[e], "batch.kubernetes.io/job-completion-index") == 0)
                idx = pp->eval[e];
        }
        /* the fieldRef to the completion index, resolved as the kubelet would */
        if (idx && strncmp(pp->name, tj, strlen(tj)) == 0) {
            m->pods[p].inj_mode = INJ_APPEND_REPLACE;
            inject(&m->pods[p], "PET_NODE_RANK", "%s", idx);
        }
    }
    return TPX_OK;
}

/* Prefix err with "FILE:LINE: KIND 'name'": the line where `at` (else obj) starts in file f, or
 * src ("FILE#N") when the file was parsed without positions. */
static void prefix_at(const struct ext_manifest *m, size_t f, const json_t *at, const json_t *obj,
                      const char *src, struct tpx_err *err)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    unsigned line;

    if (ext_yaml_pos(&m->files[f], at, &line, NULL) || ext_yaml_pos(&m->files[f], obj, &line, NULL))
        tpx_err_prefix(err, "%s:%u: %s '%s'", m->fnames[f], line, kind ? kind : "?", obj_name(obj));
    else
        tpx_err_prefix(err, "%s: %s '%s'", src, kind ? kind : "?", obj_name(obj));
}

/* The API versions each expansion was written from (docs/workloads.md "Kinds read"). Another
 * version of a kind is read by the same rules, with a note. */
static const struct {
    const char *kind;
    const char *versions[2];
} written_from[] = {
    {"LeaderWorkerSet", {"leaderworkerset.x-k8s.io/v1"}},
    {"DisaggregatedSet", {"disaggregatedset.x-k8s.io/v1"}},
    {"DynamoGraphDeployment", {"nvidia.com/v1alpha1"}},
    {"PodCliqueSet", {"grove.io/v1alpha1"}},
    {"LLMInferenceService", {"serving.kserve.io/v1alpha2"}},
    {"RoleBasedGroup", {"workloads.x-k8s.io/v1alpha2"}},
    {"PyTorchJob", {"kubeflow.org/v1"}},
    {"MPIJob", {"kubeflow.org/v2beta1"}},
    {"TrainJob", {"trainer.kubeflow.org/v1alpha1"}},
    {"PodGroup", {"scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1beta1"}},
};

static void check_version(struct ext_manifest *m, const json_t *obj, const char *kind,
                          const char *src)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));

    for (size_t i = 0; i < sizeof(written_from) / sizeof(written_from[0]); i++) {
        if (strcmp(written_from[i].kind, kind) != 0)
            continue;
        for (size_t v = 0; v < 2 && written_from[i].versions[v]; v++) {
            if (api && strcmp(api, written_from[i].versions[v]) == 0)
                return;
        }
        add_note(m, "%s: %s '%s' is %s; read as %s", src, kind, obj_name(obj),
                 api ? api : "(no apiVersion)", written_from[i].versions[0]);
        return;
    }
}

static enum tpx_code expand(struct ext_manifest *m, const json_t *obj, const char *src,
                            unsigned depth, struct tpx_err *err)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    enum tpx_code rc;

    if (!json_is_object(obj)) {
        add_note(m, "%s: skipped a document that is not an object", src);
        return TPX_OK;
    }
    if (!kind) {
        add_note(m, "%s: skipped an object without a kind", src);
        return TPX_OK;
    }
    if (strcmp(kind, "List") == 0 ||
        (strlen(kind) > 4 && strcmp(kind + strlen(kind) - 4, "List") == 0)) {
        size_t i;
        const json_t *it;
        if (depth >= LIST_DEPTH_MAX)
            return tpx_err_set(err, TPX_ETOOBIG, "%s: lists nested too deep", src);
        json_array_foreach(json_object_get(obj, "items"), i, it)
        {
            if (expand(m, it, src, depth + 1, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    m->err_at = obj;
    check_version(m, obj, kind, src);
    if (strcmp(kind, "Pod") == 0)
        rc = expand_pod(m, obj, src, err);
    else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "StatefulSet") == 0 ||
             strcmp(kind, "ReplicaSet") == 0)
        rc = expand_replicated(m, obj, kind, src, err);
    else if (strcmp(kind, "Job") == 0)
        rc = expand_job(m, obj, src, err);
    else if (strcmp(kind, "JobSet") == 0)
        rc = expand_jobset(m, obj, src, err);
    else if (strcmp(kind, "LeaderWorkerSet") == 0)
        rc = expand_lws(m, obj, src, err);
    else if (strcmp(kind, "DynamoGraphDeployment") == 0)
        rc = expand_dgd(m, obj, src, err);
    else if (strcmp(kind, "TrainJob") == 0)
        rc = expand_trainjob(m, obj, src, err);
    else if (strcmp(kind, "PyTorchJob") == 0)
        rc = expand_pytorchjob(m, obj, src, err);
    else if (strcmp(kind, "MPIJob") == 0)
        rc = expand_mpijob(m, obj, src, err);
    else if (strcmp(kind, "LLMInferenceService") == 0)
        rc = expand_llmisvc(m, obj, src, err);
    else if (strcmp(kind, "PodCliqueSet") == 0)
        rc = expand_pcs(m, obj, src, err);
    else if (strcmp(kind, "PodGroup") == 0)
        return read_podgroup(m, obj, err);
    else if (strcmp(kind, "RoleBasedGroup") == 0)
        rc = expand_rbg(m, obj, src, err);
    else if (strcmp(kind, "DisaggregatedSet") == 0)
        rc = expand_disaggregatedset(m, obj, src, err);
    else if (ext_dra_is_kind(kind))
        return TPX_OK; /* no pods, but objects/dra.c reads it (claim demand, ComputeDomains) */
    else {
        add_note(m, "%s: skipped %s '%s' (no pods to place)", src, kind, obj_name(obj));
        return TPX_OK;
    }
    if (rc != TPX_OK)
        prefix_at(m, m->nfiles - 1, m->err_at, obj, src, err);
    return rc;
}

enum tpx_code ext_manifest_add_docs(struct ext_manifest *m, struct ext_yaml_docs *docs,
                                    const char *name, struct tpx_err *err)
{
    struct ext_yaml_docs *nf = realloc(m->files, (m->nfiles + 1) * sizeof(*nf));
    char **nn = nf ? realloc(m->fnames, (m->nfiles + 1) * sizeof(*nn)) : NULL;
    char *fname = nn ? strdup(name) : NULL;
    struct ext_yaml_docs *d;

    if (nf)
        m->files = nf;
    if (nn)
        m->fnames = nn;
    if (!fname) {
        ext_yaml_docs_release(docs);
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    }
    m->fnames[m->nfiles] = fname;
    d = &m->files[m->nfiles++];
    *d = *docs;
    memset(docs, 0, sizeof(*docs));
    for (size_t i = 0; i < d->n; i++) {
        char src[POL_KEY_MAX];
        snprintf(src, sizeof(src), "%.200s#%zu", name, i + 1);
        if (d->n == 1)
            copy_str(src, sizeof(src), name);
        if (expand(m, d->docs[i], src, 0, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

enum tpx_code ext_manifest_add_file(struct ext_manifest *m, const char *path, struct tpx_err *err)
{
    struct ext_yaml_docs d = {0};

    if (ext_yaml_load_file(path, (size_t)64 << 20, &d, err) != TPX_OK)
        return err->code;
    return ext_manifest_add_docs(m, &d, strcmp(path, "-") == 0 ? "<stdin>" : path, err);
}

/* --- finish ------------------------------------------------------------------------------------
 */

static bool is_injected(const struct ext_manifest_pod *p, const char *name)
{
    for (size_t k = 0; k < p->ninj; k++) {
        if (strcmp(p->ikey[k], name) == 0)
            return true;
    }
    return false;
}

/* Each container's env as the pod will carry it, containers in order: what the controller
 * injects first (replacing variables of the same name), then the container's own; a value that
 * is not a plain `value` (valueFrom, a non-scalar) is NULL. Strings are borrowed from the
 * template's JSON or from p. */
static enum tpx_code build_env(struct ext_manifest *m, struct ext_manifest_pod *p,
                               struct tpx_err *err)
{
    const json_t *cs =
        json_object_get(json_object_get(m->tmpl_json[p->tmpl], "spec"), "containers");
    size_t n = 0;
    size_t i;
    const json_t *c;

    json_array_foreach(cs, i, c)
    {
        const json_t *env = json_object_get(c, "env");
        n += p->ninj + (json_is_array(env) ? json_array_size(env) : 0);
    }
    p->env = calloc(n + 1, sizeof(*p->env));
    if (!p->env)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    json_array_foreach(cs, i, c)
    {
        size_t j;
        const json_t *e;

        bool front = p->inj_mode == INJ_FRONT_ALL;
        bool here = p->inj_mode != INJ_APPEND_FIRST || i == 0;

        for (size_t k = 0; front && k < p->ninj; k++)
            p->env[p->nenv++] =
                (struct ext_manifest_env){p->ikey[k], p->ival_unknown[k] ? NULL : p->ival[k]};
        json_array_foreach(json_object_get(c, "env"), j, e)
        {
            const char *name = json_string_value(json_object_get(e, "name"));
            const json_t *v = json_object_get(e, "value");
            const char *val = json_string_value(v);
            if (!name || ((front || p->inj_mode == INJ_APPEND_REPLACE) && is_injected(p, name)))
                continue;
            if (!val && v && !json_object_get(e, "valueFrom")) {
                /* an unquoted number or boolean: the kubelet gets its text */
                char buf[64];
                const char *t = ext_json_scalar(v, buf, sizeof(buf));
                json_t *sv = t ? keep(m, json_string(t), err) : NULL;
                if (t && !sv)
                    return err->code;
                val = json_string_value(sv);
            }
            p->env[p->nenv++] =
                (struct ext_manifest_env){name, json_object_get(e, "valueFrom") ? NULL : val};
        }
        for (size_t k = 0; !front && here && k < p->ninj; k++)
            p->env[p->nenv++] =
                (struct ext_manifest_env){p->ikey[k], p->ival_unknown[k] ? NULL : p->ival[k]};
    }
    return TPX_OK;
}

static enum tpx_code build_facts(struct ext_manifest *m, size_t i, struct tpx_err *err)
{
    struct ext_manifest_pod *p = &m->pods[i];
    const struct pol_pod_facts *t = &m->tmpl[p->tmpl].facts;
    size_t n = p->nel + t->nlabels + p->nea + t->nannotations;
    size_t k = 0;

    p->kv = malloc((n + 1) * sizeof(*p->kv));
    if (!p->kv)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    /* the controller's labels first: a lookup that stops at the first match sees them */
    for (size_t e = 0; e < p->nel; e++)
        p->kv[k++] = (struct topo_kv){p->ekey[e], p->eval[e]};
    for (size_t e = 0; e < t->nlabels; e++)
        p->kv[k++] = t->labels[e];
    for (size_t e = p->nel; e < p->nel + p->nea; e++)
        p->kv[k++] = (struct topo_kv){p->ekey[e], p->eval[e]};
    for (size_t e = 0; e < t->nannotations; e++)
        p->kv[k++] = t->annotations[e];
    if (build_env(m, p, err) != TPX_OK)
        return err->code;
    p->facts = *t;
    p->facts.name = p->name;
    p->facts.ns = NULL;
    p->facts.uid = p->name;
    p->facts.labels = p->kv;
    p->facts.nlabels = p->nel + t->nlabels;
    p->facts.annotations = p->kv + p->facts.nlabels;
    p->facts.nannotations = p->nea + t->nannotations;
    return TPX_OK;
}

/* Workers of an LWS usually carry no engine flags (the leader runs vLLM over Ray): a pod whose
 * parallelism is only a default takes it from the first member of its replica that states it. */
static void share_parallelism(struct pol_workload *wl, size_t n)
{
    const struct pol_workload *donor = NULL;

    for (size_t i = 0; i < n && !donor; i++) {
        if (wl[i].tp_explicit)
            donor = &wl[i];
    }
    if (!donor)
        return;
    for (size_t i = 0; i < n; i++) {
        if (&wl[i] == donor)
            continue;
        if (!wl[i].tp_explicit) {
            wl[i].tp = donor->tp;
            wl[i].dp = donor->dp;
            wl[i].tp_explicit = true;
            wl[i].tp_source = donor->tp_source;
            wl[i].has_intent = wl[i].has_intent || donor->has_intent;
        }
        if (!wl[i].pp_explicit && donor->pp_explicit) {
            wl[i].pp = donor->pp;
            wl[i].pp_explicit = true;
        }
        if (!wl[i].num_ubatches)
            wl[i].num_ubatches = donor->num_ubatches;
        if (!wl[i].model_layers)
            wl[i].model_layers = donor->model_layers;
    }
}

/* Does argv element s hold flag ("--tensor-parallel-size"), read as pol_workload_infer() reads
 * it? */
static bool holds_flag(const char *s, const char *flag)
{
    struct tpx_cmdline cl;
    struct tpx_cmdline_value v;
    struct tpx_err err = TPX_ERR_INIT;
    bool found = false;

    tpx_cmdline_init(&cl);
    (void)tpx_cmdline_split(&cl, &s, 1, &err); /* on failure cl is empty: not found */
    for (size_t i = 0; i < cl.ntok && !found; i++)
        found = tpx_cmdline_flag(&cl, i, flag, &v);
    tpx_cmdline_release(&cl);
    return found;
}

/* The value of pod template tmpl that a pol_workload_infer() message is about: the annotation's
 * value ("annotation 'k': ..."), the first command/args element holding the flag ("flag '--f':
 * ..."), else the template itself. */
static const json_t *infer_culprit(const json_t *tmpl, const char *msg)
{
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const parts[] = {"command", "args"};
    const json_t *annots = json_object_get(json_object_get(tmpl, "metadata"), "annotations");
    char quoted[POL_KEY_MAX];
    const char *q = strchr(msg, '\'');
    size_t len = q ? strcspn(q + 1, "'") : 0;

    if (!q || len >= sizeof(quoted))
        return tmpl;
    memcpy(quoted, q + 1, len);
    quoted[len] = '\0';
    if (strncmp(msg, "annotation '", 12) == 0) {
        const json_t *v = json_object_get(annots, quoted);
        return v ? v : annots ? annots : tmpl;
    }
    if (strncmp(msg, "flag '", 6) != 0)
        return tmpl;
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(json_object_get(tmpl, "spec"), lists[l]), i, c)
        {
            for (size_t p = 0; p < 2; p++) {
                size_t k;
                const json_t *a;
                json_array_foreach(json_object_get(c, parts[p]), k, a)
                {
                    if (json_is_string(a) && holds_flag(json_string_value(a), quoted))
                        return a;
                }
            }
        }
    }
    return tmpl;
}

/* "FILE:LINE" of value v of pod p's template, else the job's "FILE#DOC". */
static void place_of(const struct ext_manifest *m, const struct ext_manifest_pod *p,
                     const json_t *v, char *out, size_t len)
{
    size_t f = m->tmpl_file[p->tmpl];
    unsigned line;

    if (ext_yaml_pos(&m->files[f], v, &line, NULL))
        snprintf(out, len, "%.200s:%u", m->fnames[f], line);
    else
        snprintf(out, len, "%s", m->jobs[p->job].source);
}

void ext_manifest_replica_source(const struct ext_manifest *m, size_t r, char *out, size_t len)
{
    /* the flags the tensor-parallel size can come from, as pol_workload_infer() names them */
    static const char *const flags[] = {"flag '--tensor-parallel-size'", "flag '--tp-size'",
                                        "flag '--tp'"};
    const struct ext_manifest_pod *p;
    const struct pol_workload *wl;
    const json_t *tmpl;
    const json_t *v;

    if (!len)
        return;
    out[0] = '\0';
    if (r >= m->nreplicas || m->replica_first_pod[r] >= m->npods)
        return;
    p = &m->pods[m->replica_first_pod[r]];
    wl = &m->wl[m->replica_first_pod[r]];
    tmpl = m->tmpl_json[p->tmpl];
    v = tmpl;
    if (wl->tp_source && strcmp(wl->tp_source, "annotation") == 0) {
        v = infer_culprit(tmpl, "annotation 'topox.io/tensor-parallel-size'");
    } else if (wl->tp_source && strstr(wl->tp_source, "flag")) {
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]) && v == tmpl; i++)
            v = infer_culprit(tmpl, flags[i]);
    }
    place_of(m, p, v, out, len);
}

enum tpx_code ext_manifest_finish(struct ext_manifest *m, struct tpx_err *err)
{
    if (m->npods == 0)
        return tpx_err_set(err, TPX_EINVAL,
                           "no pods to place (kinds: LeaderWorkerSet, Deployment, "
                           "StatefulSet, Job, JobSet, Pod, List, DisaggregatedSet, "
                           "DynamoGraphDeployment, PodCliqueSet, LLMInferenceService, "
                           "RoleBasedGroup, PyTorchJob, TrainJob, MPIJob)");
    m->wl = calloc(m->npods, sizeof(*m->wl));
    m->names = calloc(m->npods, sizeof(*m->names));
    m->pol_jobs = calloc(m->njobs, sizeof(*m->pol_jobs));
    m->pol_replicas = calloc(m->nreplicas + 1, sizeof(*m->pol_replicas));
    if (!m->wl || !m->names || !m->pol_jobs || !m->pol_replicas)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    m->replica_first_pod[m->nreplicas] = m->npods;
    if (workload_groups(m, err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < m->npods; i++) {
        struct ext_manifest_pod *p = &m->pods[i];
        if (build_facts(m, i, err) != TPX_OK)
            return err->code;
        m->names[i] = p->name;
        if (pol_workload_infer(&p->facts, &m->wl[i], err) != TPX_OK) {
            char where[POL_KEY_MAX + 16];

            place_of(m, p, infer_culprit(m->tmpl_json[p->tmpl], err->msg), where, sizeof(where));
            tpx_err_prefix(err, "%s: %s '%s': pod '%s'", where, m->jobs[p->job].kind,
                           m->jobs[p->job].name, p->name);
            return err->code;
        }
    }
    for (size_t r = 0; r < m->nreplicas; r++) {
        size_t a = m->replica_first_pod[r];
        size_t b = m->replica_first_pod[r + 1];
        share_parallelism(m->wl + a, b - a);
        m->pol_replicas[r].pods = m->wl + a;
        m->pol_replicas[r].pod_names = m->names + a;
        m->pol_replicas[r].npods = b - a;
    }
    for (size_t j = 0; j < m->njobs; j++) {
        m->pol_jobs[j].name = m->jobs[j].name;
        m->pol_jobs[j].replicas = m->pol_replicas + m->jobs[j].first_replica;
        m->pol_jobs[j].nreplicas = m->jobs[j].nreplicas;
    }
    return TPX_OK;
}

const struct pol_pod_facts *ext_manifest_pod_facts(const struct ext_manifest *m, size_t i)
{
    return &m->pods[i].facts;
}

const struct ext_manifest_env *ext_manifest_pod_env(const struct ext_manifest *m, size_t i,
                                                    size_t *n)
{
    *n = m->pods[i].nenv;
    return m->pods[i].env;
}

const json_t *ext_manifest_pod_template(const struct ext_manifest *m, size_t i)
{
    return m->tmpl_json[m->pods[i].tmpl];
}

/* --- engine info -------------------------------------------------------------------------------
 */

enum engine_field { EF_DTYPE, EF_QUANTIZATION, EF_MAX_MODEL_LEN, EF_MAX_NUM_SEQS };

/* vLLM's and SGLang's spellings of what a record keeps */
static const struct {
    const char *name;
    enum engine_field field;
} engine_flags[] = {
    {"--dtype", EF_DTYPE},
    {"--quantization", EF_QUANTIZATION},
    {"-q", EF_QUANTIZATION},
    {"--max-model-len", EF_MAX_MODEL_LEN},
    {"--context-length", EF_MAX_MODEL_LEN},
    {"--max-num-seqs", EF_MAX_NUM_SEQS},
    {"--max-running-requests", EF_MAX_NUM_SEQS},
};

static void set_engine_field(struct ext_engine_info *e, enum engine_field field, const char *v)
{
    unsigned long *num;
    char *end;
    unsigned long x;

    switch (field) {
    case EF_DTYPE:
        copy_str(e->dtype, sizeof(e->dtype), v);
        return;
    case EF_QUANTIZATION:
        copy_str(e->quantization, sizeof(e->quantization), v);
        return;
    case EF_MAX_MODEL_LEN:
        num = &e->max_model_len;
        break;
    default:
        num = &e->max_num_seqs;
        break;
    }
    x = strtoul(v, &end, 10); /* "8192", or "8k" */
    if (end != v && (*end == '\0' || *end == 'k' || *end == 'K'))
        *num = (*end == '\0') ? x : x * 1024;
}

void ext_manifest_engine_info(const struct ext_manifest *m, size_t i, struct ext_engine_info *out)
{
    const struct pol_pod_facts *f = &m->pods[i].facts;
    struct tpx_cmdline cl;
    struct tpx_err err = TPX_ERR_INIT;

    memset(out, 0, sizeof(*out));
    tpx_cmdline_init(&cl);
    /* out of memory or past the tokenizer's caps cl is empty: a record without engine flags */
    (void)tpx_cmdline_split(&cl, f->argv, f->nargv, &err);
    for (size_t t = 0; t < cl.ntok; t++) {
        struct tpx_cmdline_value v;

        if (cl.tok[t].text[0] != '-')
            continue;
        for (size_t k = 0; k < sizeof(engine_flags) / sizeof(engine_flags[0]); k++) {
            if (!tpx_cmdline_flag(&cl, t, engine_flags[k].name, &v))
                continue;
            if (v.text)
                set_engine_field(out, engine_flags[k].field, v.text);
            break;
        }
    }
    tpx_cmdline_release(&cl);
    for (size_t a = 0; a < f->nannotations; a++) {
        const char *k = f->annotations[a].key;
        unsigned long *num = NULL;
        if (strcmp(k, "topox.io/input-len") == 0)
            num = &out->input_len;
        else if (strcmp(k, "topox.io/output-len") == 0)
            num = &out->output_len;
        if (num && !*num)
            *num = strtoul(f->annotations[a].value, NULL, 10);
    }
}

void ext_manifest_release(struct ext_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->npods; i++) {
        free(m->pods[i].kv);
        free(m->pods[i].env);
    }
    free(m->pods);
    for (size_t i = 0; i < m->ntmpl; i++)
        ext_pod_facts_release(&m->tmpl[i]);
    free(m->tmpl);
    free(m->tmpl_json);
    free(m->tmpl_file);
    for (size_t i = 0; i < m->nmade; i++)
        json_decref(m->made[i]);
    free(m->made);
    free((void *)m->podgroups);
    for (size_t i = 0; i < m->nfiles; i++) {
        ext_yaml_docs_release(&m->files[i]);
        free(m->fnames[i]);
    }
    free(m->files);
    free(m->fnames);
    for (size_t i = 0; i < m->nnotes; i++)
        free(m->notes[i]);
    free(m->notes);
    free(m->jobs);
    free(m->pol_jobs);
    free(m->pol_replicas);
    free(m->wl);
    free((void *)m->names);
    free(m->replica_first_pod);
    memset(m, 0, sizeof(*m));
}
