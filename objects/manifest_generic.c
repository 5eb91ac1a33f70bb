/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_generic.c - any object of an API group and kind topox does not know, expanded
 * from the pod templates it embeds, so that no GPU job is ever skipped. A pod template is a
 * PodTemplateSpec anywhere in the document: the value of `template` or of a key ending in
 * `Template` (leaderTemplate, workerTemplate, headTemplate, ...) that holds spec.containers; or a
 * bare PodSpec under `podSpec` or a key ending in `PodSpec`, or any object holding `containers`
 * (KServe's predictor). Without any, a container-like object whose `resources` ask for an
 * accelerator (KServe's predictor.model) is one container of a pod. Its pods are counted from the
 * usual size fields beside it: groups = `replicas` (else `minReplicas`, else 1) times the
 * `replicas` of every object above it, pods per group = the product of `size`, `podGroupSize`,
 * `numNodes`, `numOfHosts`, `nodeCount` and `groupSize` (1 when none). A parent holding both a
 * leader and a worker template with a size S makes groups of one leader and S - 1 workers (the
 * LeaderWorkerSet shape). Each group of several pods gets topox.io/group, group-size and
 * pod-index. What was assumed is a note, and every layout of the object is uncertain, placed as
 * preferred (objects/manifest.c assumed_layout()). */
#include "objects/manifest_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "objects/podfacts.h"
#include "topology/labels.h"

#define GEN_DEPTH_MAX 16
#define PATH_LEN 160

/* The fields that give pods per group, multiplied together when several are there. */
static const char *const size_fields[] = {"size",       "podGroupSize", "numNodes",
                                          "numOfHosts", "nodeCount",    "groupSize"};

struct gen {
    struct obj_manifest *m;
    const json_t *obj;
    const char *src;
    struct expander x;
    bool have_job;
    unsigned ntemplates;
};

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static bool has_containers(const json_t *pod_spec)
{
    const json_t *cs = json_object_get(pod_spec, "containers");
    return json_is_array(cs) && json_array_size(cs) > 0 && json_is_object(json_array_get(cs, 0));
}

/* The pod template at key k holding value v ({metadata, spec}), or NULL: a bare PodSpec is
 * wrapped (kept alive by m). */
static const json_t *pod_template(struct gen *g, const char *k, const json_t *v,
                                  struct tpx_err *err, bool *failed)
{
    *failed = false;
    if (!json_is_object(v))
        return NULL;
    if ((strcmp(k, "template") == 0 || ends_with(k, "Template")) &&
        has_containers(json_object_get(v, "spec")))
        return v;
    if ((strcmp(k, "podSpec") == 0 || ends_with(k, "PodSpec")) && has_containers(v)) {
        json_t *t = obj_mf_keep(g->m, json_pack("{s:{},s:O}", "metadata", "spec", v), err);
        *failed = t == NULL;
        return t;
    }
    return NULL;
}

/* An optional count field of o, as obj_mf_get_count() reads it; *present whether it is there. */
static enum tpx_code count_of(struct obj_manifest *m, const json_t *o, const char *key,
                              unsigned long *out, bool *present, struct tpx_err *err)
{
    const json_t *v = json_object_get(o, key);

    *present = v && !json_is_null(v) && !json_is_object(v) && !json_is_array(v);
    *out = 1;
    if (!*present)
        return TPX_OK;
    return obj_mf_get_count(m, o, key, 1, out, err);
}

/* Groups (replicas, else minReplicas) of parent p, with what was read into why. */
static enum tpx_code groups_of(struct obj_manifest *m, const json_t *p, unsigned long *n, char *why,
                               size_t len, struct tpx_err *err)
{
    bool present;

    if (count_of(m, p, "replicas", n, &present, err) != TPX_OK)
        return err->code;
    if (present) {
        snprintf(why, len, "replicas %lu", *n);
        return TPX_OK;
    }
    if (count_of(m, p, "minReplicas", n, &present, err) != TPX_OK)
        return err->code;
    if (present)
        snprintf(why, len, "minReplicas %lu", *n);
    else
        snprintf(why, len, "no replicas field: 1");
    return TPX_OK;
}

/* Pods per group of parent p: the product of its size fields. */
static enum tpx_code size_of(struct obj_manifest *m, const json_t *p, unsigned long *n, char *why,
                             size_t len, struct tpx_err *err)
{
    *n = 1;
    for (size_t i = 0; i < sizeof(size_fields) / sizeof(size_fields[0]); i++) {
        unsigned long v;
        bool present;
        size_t used = strlen(why);
        if (count_of(m, p, size_fields[i], &v, &present, err) != TPX_OK)
            return err->code;
        if (!present)
            continue;
        if (v && *n > OBJ_MANIFEST_MAX_PODS / v)
            return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
        *n *= v;
        snprintf(why + used, len - used, " x %s %lu", size_fields[i], v);
    }
    return TPX_OK;
}

/* A short name for the pods of a template: the parent's name or groupName, else, for a plain
 * `template`, `runner` or `container`, the parent's own key lowercased (a kubeflow-style
 * replicaSpecs.Worker makes `<job>-worker-<i>`), else the template's key. */
static const char *part_name(const json_t *p, const char *key, const char *path, char *buf,
                             size_t len)
{
    const char *n = json_string_value(json_object_get(p, "name"));
    const char *dot = strrchr(path, '.');
    size_t i = 0;

    if (!n)
        n = json_string_value(json_object_get(p, "groupName"));
    if (n ||
        (strcmp(key, "template") != 0 && strcmp(key, "runner") != 0 &&
         strcmp(key, "container") != 0) ||
        !dot || !dot[1] || strchr(dot, '['))
        return n ? n : key;
    for (const char *c = dot + 1; *c && i + 1 < len; c++)
        buf[i++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    buf[i] = '\0';
    return buf;
}

static bool is_word(const char *k, const char *word)
{
    size_t n = strlen(word);
    for (const char *s = k; *s; s++) {
        if (strncasecmp(s, word, n) == 0)
            return true;
    }
    return false;
}

/* Add the pods of one parent's templates: leader/worker pairs as one group each (when the parent
 * has a size), every other template as groups of its own. */
static enum tpx_code add_parent(struct gen *g, const json_t *p, const char *path,
                                unsigned long mult, const char *const *keys,
                                const json_t *const *tmpls, size_t n, struct tpx_err *err)
{
    struct obj_manifest *m = g->m;
    const char *name = obj_mf_obj_name(g->obj);
    const char *ns = obj_mf_obj_ns(g->obj);
    char gwhy[96];
    char swhy[160] = "";
    unsigned long groups;
    unsigned long per;
    int leader = -1, worker = -1;

    if (groups_of(m, p, &groups, gwhy, sizeof(gwhy), err) != TPX_OK ||
        size_of(m, p, &per, swhy, sizeof(swhy), err) != TPX_OK)
        return err->code;
    if (mult && groups > OBJ_MANIFEST_MAX_PODS / mult)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
    groups *= mult;
    for (size_t i = 0; i < n; i++) {
        if (is_word(keys[i], "leader"))
            leader = (int)i;
        else if (is_word(keys[i], "worker"))
            worker = (int)i;
    }
    if (!(leader >= 0 && worker >= 0 && per > 1))
        leader = worker = -1;
    if (!g->have_job) {
        if (obj_mf_add_job(m, g->obj, json_string_value(json_object_get(g->obj, "kind")), g->src,
                           &g->x.job, err) != TPX_OK)
            return err->code;
        m->jobs[g->x.job].generic = true;
        g->have_job = true;
    }
    for (size_t t = 0; t < n; t++) {
        size_t tl = 0;
        size_t tw = 0;
        char pbuf[64];
        const char *part = part_name(p, keys[t], path, pbuf, sizeof(pbuf));
        bool pair = (int)t == leader;

        if ((int)t == worker)
            continue; /* with its leader */
        if (obj_mf_add_tmpl(m, tmpls[t], &tl, err) != TPX_OK ||
            (pair && obj_mf_add_tmpl(m, tmpls[worker], &tw, err) != TPX_OK))
            return err->code;
        if (per && groups > OBJ_MANIFEST_MAX_PODS / per)
            return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
        if (obj_mf_reserve_pods(m, groups * per, err) != TPX_OK)
            return err->code;
        obj_mf_add_note(m,
                        "%s: %s '%s' (%s) is not a kind topox knows: %s.%s%s read as %lu group(s) "
                        "of %lu pod(s) (%s%s%s); layout uncertain, placed as preferred",
                        g->src, json_string_value(json_object_get(g->obj, "kind")), name,
                        json_string_value(json_object_get(g->obj, "apiVersion"))
                            ? json_string_value(json_object_get(g->obj, "apiVersion"))
                            : "no apiVersion",
                        path, keys[t], pair ? " (leader) with its worker template" : "", groups,
                        per, gwhy, mult > 1 ? " x the replicas above it" : "", swhy);
        for (unsigned long gi = 0; gi < groups; gi++) {
            char gkey[EXTRA_LEN];
            char inst[160];
            int gl;

            snprintf(inst, sizeof(inst), "%.60s-%.60s-%lu", name, part, gi);
            gl = snprintf(gkey, sizeof(gkey), "%.60s/%.120s", ns, inst);
            if (gl < 0 || (size_t)gl >= sizeof(gkey))
                obj_mf_hash_key(gkey, ns, inst, g->ntemplates);
            if (obj_mf_new_replica(m, err) != TPX_OK)
                return err->code;
            for (unsigned long k = 0; k < per; k++) {
                struct obj_manifest_pod *pod;
                g->x.tmpl = pair && k > 0 ? tw : tl;
                pod = obj_mf_new_pod(&g->x, "%s-%lu", inst, k);
                if (per > 1) {
                    obj_mf_extra(pod, true, "topox.io/group", "%s", gkey);
                    obj_mf_extra(pod, true, "topox.io/group-size", "%lu", per);
                    obj_mf_extra(pod, true, "topox.io/pod-index", "%lu", k);
                }
            }
        }
        g->ntemplates++;
    }
    return TPX_OK;
}

static enum tpx_code walk(struct gen *g, const json_t *v, char *path, size_t plen,
                          unsigned long mult, unsigned depth, struct tpx_err *err)
{
    const char *keys[16];
    const json_t *tmpls[16];
    size_t n = 0;
    const char *k;
    json_t *c;
    size_t i;

    if (depth > GEN_DEPTH_MAX)
        return TPX_OK;
    if (json_is_array(v)) {
        json_array_foreach(v, i, c)
        {
            snprintf(path + plen, PATH_LEN - plen, "[%zu]", i);
            if (walk(g, c, path, strlen(path), mult, depth + 1, err) != TPX_OK)
                return err->code;
        }
        path[plen] = '\0';
        return TPX_OK;
    }
    if (!json_is_object(v))
        return TPX_OK;
    if (depth > 0 && !json_object_get(v, "spec") && has_containers(v)) {
        /* a PodSpec-like object with its own sizes (KServe's predictor: containers and
         * minReplicas side by side): its pods are counted from itself */
        const char *dot = strrchr(path, '.');
        const char *key = dot ? dot + 1 : path;
        json_t *t = obj_mf_keep(g->m, json_pack("{s:{},s:O}", "metadata", "spec", v), err);
        if (!t)
            return err->code;
        keys[0] = key;
        tmpls[0] = t;
        g->m->err_at = v;
        return add_parent(g, v, path, mult, keys, tmpls, 1, err);
    }
    json_object_foreach((json_t *)v, k, c)
    {
        bool failed;
        const json_t *t = pod_template(g, k, c, err, &failed);
        if (failed)
            return err->code;
        if (t && n < sizeof(keys) / sizeof(keys[0])) {
            keys[n] = k;
            tmpls[n++] = t;
        }
    }
    if (n) {
        g->m->err_at = v;
        return add_parent(g, v, path, mult, keys, tmpls, n, err);
    }
    {
        unsigned long rep = 1;
        bool present;
        if (count_of(g->m, v, "replicas", &rep, &present, err) != TPX_OK)
            return err->code;
        if (rep && mult > OBJ_MANIFEST_MAX_PODS / rep)
            return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
        mult *= rep;
    }
    json_object_foreach((json_t *)v, k, c)
    {
        if (!json_is_object(c) && !json_is_array(c))
            continue;
        snprintf(path + plen, PATH_LEN - plen, "%s%s", plen ? "." : "", k);
        if (walk(g, c, path, strlen(path), mult, depth + 1, err) != TPX_OK)
            return err->code;
    }
    path[plen] = '\0';
    return TPX_OK;
}

/* Does container-like object c ask for an accelerator in resources.limits or .requests? */
static bool asks_in_resources(const json_t *c)
{
    const struct topo_label_config *cfg = topo_label_config_default();
    const json_t *res = json_object_get(c, "resources");

    for (size_t r = 0; r < cfg->nresources; r++) {
        if (json_object_get(json_object_get(res, "limits"), cfg->resources[r]) ||
            json_object_get(json_object_get(res, "requests"), cfg->resources[r]))
            return true;
    }
    return false;
}

/* When no pod template was found: a container-like object (one whose `resources` ask for an
 * accelerator: KServe's predictor.model, KFServing's tensorflow, ...) is one container of a pod
 * its operator builds; the object holding it gives the sizes. */
/* The first child of o that is a container asking for an accelerator (OME's `runner`), with
 * its key; NULL when none. */
static const json_t *container_in(const json_t *o, const char **key)
{
    const char *k;
    json_t *c;

    json_object_foreach((json_t *)o, k, c)
    {
        if (json_is_object(c) && asks_in_resources(c)) {
            *key = k;
            return c;
        }
    }
    return NULL;
}

/* A pod template of container c, with the pod-level fields of holder (its other keys, as OME's
 * leader and worker carry tolerations, hostNetwork, volumes beside their runner); NULL with *err.
 */
static const json_t *holder_template(struct gen *g, const json_t *holder, const char *ckey,
                                     const json_t *c, const char *name, struct tpx_err *err)
{
    json_t *spec = json_object();
    json_t *t;
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)holder, k, v)
    {
        if (spec && strcmp(k, ckey) != 0 && strcmp(k, "size") != 0)
            json_object_set(spec, k, v);
    }
    if (spec)
        json_object_set_new(spec, "containers", json_pack("[o]", json_deep_copy(c)));
    t = obj_mf_keep(g->m, spec ? json_pack("{s:{},s:o}", "metadata", "spec", spec) : NULL, err);
    if (t &&
        !json_object_get(
            json_array_get(json_object_get(json_object_get(t, "spec"), "containers"), 0), "name"))
        json_object_set_new(
            json_array_get(json_object_get(json_object_get(t, "spec"), "containers"), 0), "name",
            json_string(name));
    return t;
}

static enum tpx_code walk_containers(struct gen *g, const json_t *v, char *path, size_t plen,
                                     unsigned long mult, unsigned depth, struct tpx_err *err)
{
    const char *keys[16];
    const json_t *tmpls[16];
    size_t n = 0;
    const char *k;
    json_t *c;
    const char *lk = NULL, *wk = NULL;
    const json_t *lc, *wc;

    if (depth > GEN_DEPTH_MAX || !json_is_object(v))
        return TPX_OK;
    /* a leader and workers, each a container with the pod's fields beside it, the workers'
     * `size` beside them (OME's engineConfig: leader.runner, worker.runner, worker.size): one
     * group of the leader and its workers, as the LeaderWorkerSet the operator makes */
    lc = container_in(json_object_get(v, "leader"), &lk);
    wc = container_in(json_object_get(v, "worker"), &wk);
    if (lc && wc) {
        unsigned long ws;
        const json_t *lt, *wt, *parent;

        if (obj_mf_get_count(g->m, json_object_get(v, "worker"), "size", 1, &ws, err) != TPX_OK)
            return err->code;
        lt = holder_template(g, json_object_get(v, "leader"), lk, lc, "leader", err);
        wt = lt ? holder_template(g, json_object_get(v, "worker"), wk, wc, "worker", err) : NULL;
        parent =
            wt ? obj_mf_keep(g->m, json_pack("{s:I}", "size", (json_int_t)(ws + 1)), err) : NULL;
        if (!parent)
            return err->code;
        keys[0] = "leader";
        keys[1] = "worker";
        tmpls[0] = lt;
        tmpls[1] = wt;
        g->m->err_at = v;
        return add_parent(g, parent, path, mult, keys, tmpls, 2, err);
    }
    json_object_foreach((json_t *)v, k, c)
    {
        json_t *t, *ct;
        if (!json_is_object(c) || !asks_in_resources(c) || n >= sizeof(keys) / sizeof(keys[0]))
            continue;
        t = obj_mf_keep(g->m, json_pack("{s:{},s:{s:[O]}}", "metadata", "spec", "containers", c),
                        err);
        if (!t)
            return err->code;
        ct = json_array_get(json_object_get(json_object_get(t, "spec"), "containers"), 0);
        if (!json_object_get(ct, "name"))
            json_object_set_new(ct, "name", json_string(k));
        keys[n] = k;
        tmpls[n++] = t;
    }
    if (n) {
        g->m->err_at = v;
        return add_parent(g, v, path, mult, keys, tmpls, n, err);
    }
    json_object_foreach((json_t *)v, k, c)
    {
        size_t i;
        json_t *e;
        if (json_is_object(c)) {
            snprintf(path + plen, PATH_LEN - plen, "%s%s", plen ? "." : "", k);
            if (walk_containers(g, c, path, strlen(path), mult, depth + 1, err) != TPX_OK)
                return err->code;
        }
        /* a list of step templates, each running its container in a pod of its own (an Argo
         * Workflow's spec.templates[].container or .script) */
        json_array_foreach(json_is_array(c) ? c : NULL, i, e)
        {
            snprintf(path + plen, PATH_LEN - plen, "%s%s[%zu]", plen ? "." : "", k, i);
            if (walk_containers(g, e, path, strlen(path), mult, depth + 1, err) != TPX_OK)
                return err->code;
        }
    }
    path[plen] = '\0';
    return TPX_OK;
}

/* Does v name an accelerator resource anywhere (a key "nvidia.com/gpu", ...)? */
static bool asks_accelerators(const json_t *v, unsigned depth)
{
    const struct topo_label_config *cfg = topo_label_config_default();
    const char *k;
    json_t *c;
    size_t i;

    if (depth > GEN_DEPTH_MAX)
        return false;
    if (json_is_array(v)) {
        json_array_foreach(v, i, c)
        {
            if (asks_accelerators(c, depth + 1))
                return true;
        }
        return false;
    }
    json_object_foreach((json_t *)v, k, c)
    {
        for (size_t r = 0; r < cfg->nresources; r++) {
            if (strcmp(k, cfg->resources[r]) == 0)
                return true;
        }
        if ((json_is_object(c) || json_is_array(c)) && asks_accelerators(c, depth + 1))
            return true;
    }
    return false;
}

/* Annotation key of pod p set to value: its extra annotation replaced, else added. */
static void set_annotation(struct obj_manifest_pod *p, const char *key, const char *value)
{
    for (size_t i = p->nel; i < p->nel + p->nea; i++) {
        if (strcmp(p->ekey[i], key) == 0) {
            obj_mf_copy_str(p->eval[i], EXTRA_LEN, value);
            return;
        }
    }
    obj_mf_extra(p, true, key, "%s", value);
}

/* What says that every pod of obj is one gang, one communication world: Volcano's
 * spec.minAvailable (its PodGroup's minMember), a kubeflow-style runPolicy.schedulingPolicy
 * .minAvailable, or kubeflow-style replica specs (spec.replicaSpecs or spec.*ReplicaSpecs, whose
 * Master, Scheduler and Workers are one world: AscendJob, TFJob, PaddleJob, XGBoostJob). The
 * field's name in what, for the note; NULL when nothing says so. */
static const char *world_field(const json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *k;
    json_t *v;

    if (json_is_integer(json_object_get(spec, "minAvailable")))
        return "spec.minAvailable";
    if (json_is_integer(
            json_object_get(json_object_get(json_object_get(spec, "runPolicy"), "schedulingPolicy"),
                            "minAvailable")))
        return "spec.runPolicy.schedulingPolicy.minAvailable";
    json_object_foreach((json_t *)spec, k, v)
    {
        if (json_is_object(v) && (strcmp(k, "replicaSpecs") == 0 || ends_with(k, "ReplicaSpecs")))
            return "spec.replicaSpecs";
    }
    return NULL;
}

/* The pods of the job g made are one world (world_field): one replica, one topox.io/group of
 * all its pods, indexed in their order (the first template's, a Master or Scheduler, first). */
static void one_world(struct gen *g)
{
    struct obj_manifest *m = g->m;
    struct obj_manifest_job *job = &m->jobs[g->x.job];
    const char *what = world_field(g->obj);
    size_t first, n;
    char key[EXTRA_LEN], num[24];

    if (!what || job->nreplicas == 0)
        return;
    first = m->replica_first_pod[job->first_replica];
    n = m->npods - first;
    if (snprintf(key, sizeof(key), "%.60s/%.60s", obj_mf_obj_ns(g->obj), obj_mf_obj_name(g->obj)) >=
        (int)sizeof(key))
        obj_mf_hash_key(key, obj_mf_obj_ns(g->obj), obj_mf_obj_name(g->obj), 0);
    snprintf(num, sizeof(num), "%zu", n);
    for (size_t i = first; i < m->npods; i++) {
        char idx[24];
        snprintf(idx, sizeof(idx), "%zu", i - first);
        set_annotation(&m->pods[i], "topox.io/group", key);
        set_annotation(&m->pods[i], "topox.io/group-size", num);
        set_annotation(&m->pods[i], "topox.io/pod-index", idx);
    }
    /* the job's replicas are the last ones made: they become one */
    m->nreplicas = job->first_replica + 1;
    job->nreplicas = 1;
    obj_mf_add_note(m, "%s: %s '%s': %s makes its %zu pods one gang: planned as one group", g->src,
                    json_string_value(json_object_get(g->obj, "kind")), obj_mf_obj_name(g->obj),
                    what, n);
}

/* The serving runtime obj names: OME's spec.runtime.name, KServe's spec.predictor.model.runtime
 * (or spec.runtime as a string); NULL when none. */
static const char *runtime_named(const json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *rt = json_object_get(spec, "runtime");
    const char *n =
        json_is_string(rt) ? json_string_value(rt) : json_string_value(json_object_get(rt, "name"));

    if (!n)
        n = json_string_value(json_object_get(
            json_object_get(json_object_get(spec, "predictor"), "model"), "runtime"));
    return n && n[0] ? n : NULL;
}

/* The object of the file being read that is a *Runtime named name (want_runtime), or that names
 * the runtime `name` (!want_runtime); NULL when none. */
static const json_t *runtime_peer(const struct obj_manifest *m, const char *name, bool want_runtime)
{
    const struct obj_yaml_docs *d = &m->files[m->nfiles - 1];

    for (size_t i = 0; name && i < d->n; i++) {
        const char *k = json_string_value(json_object_get(d->docs[i], "kind"));
        const char *used = runtime_named(d->docs[i]);
        if (want_runtime && k && ends_with(k, "Runtime") &&
            strcmp(obj_mf_obj_name(d->docs[i]), name) == 0)
            return d->docs[i];
        if (!want_runtime && used && strcmp(used, name) == 0)
            return d->docs[i];
    }
    return NULL;
}

static enum tpx_code expand_generic(struct obj_manifest *m, const json_t *obj, const char *src,
                                    bool join, struct tpx_err *err);

enum tpx_code obj_mf_expand_generic(struct obj_manifest *m, const json_t *obj, const char *src,
                                    struct tpx_err *err)
{
    return expand_generic(m, obj, src, true, err);
}

/* obj's pods; with join, an object with no pods of its own that names a serving runtime of the
 * same file (an OME or KServe InferenceService and its ClusterServingRuntime) has the pods the
 * runtime's templates describe, under its own name. */
static enum tpx_code expand_generic(struct obj_manifest *m, const json_t *obj, const char *src,
                                    bool join, struct tpx_err *err)
{
    struct gen g = {m, obj, src, {m, src, 0, 0}, false, 0};
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    char path[PATH_LEN] = "";
    json_t *spec = json_object_get(obj, "spec");
    const json_t *rt;

    /* a kind named *Template or *Runtime (ClusterTrainingRuntime, volcano's JobTemplate, Argo's
     * WorkflowTemplate, KServe's ServingRuntime) defines pods for others to make: no workload */
    if (kind && (ends_with(kind, "Template") || ends_with(kind, "Runtime"))) {
        bool accel = asks_accelerators(obj, 0);
        if (accel)
            m->nskipped_accel++;
        if (accel && ends_with(kind, "Runtime") && !runtime_peer(m, obj_mf_obj_name(obj), false))
            obj_mf_add_note(m,
                            "%s: %s '%s' defines accelerator pods for the objects that name it, "
                            "and none in this manifest does: plan it with them",
                            src, kind, obj_mf_obj_name(obj));
        else
            obj_mf_add_note(m,
                            "%s: skipped %s '%s' (a template for other objects; no pods of its "
                            "own)",
                            src, kind, obj_mf_obj_name(obj));
        return TPX_OK;
    }
    if (json_is_object(spec)) {
        snprintf(path, sizeof(path), "spec");
        if (walk(&g, spec, path, strlen(path), 1, 0, err) != TPX_OK)
            return err->code;
    }
    if (!g.have_job && json_is_object(spec)) {
        snprintf(path, sizeof(path), "spec");
        if (walk_containers(&g, spec, path, strlen(path), 1, 0, err) != TPX_OK)
            return err->code;
    }
    if (g.have_job) {
        one_world(&g);
        return TPX_OK;
    }
    if (join && (rt = runtime_peer(m, runtime_named(obj), true)) != NULL &&
        json_is_object(json_object_get(rt, "spec"))) {
        json_t *joined = obj_mf_keep(
            m,
            json_pack("{s:O?,s:O?,s:O?,s:O}", "apiVersion", json_object_get(obj, "apiVersion"),
                      "kind", json_object_get(obj, "kind"), "metadata",
                      json_object_get(obj, "metadata"), "spec", json_object_get(rt, "spec")),
            err);
        if (!joined)
            return err->code;
        obj_mf_add_note(m, "%s: %s '%s': its pods are those %s '%s' of this manifest describes",
                        src, kind, obj_mf_obj_name(obj),
                        json_string_value(json_object_get(rt, "kind")), obj_mf_obj_name(rt));
        if (m->nskipped_accel && asks_accelerators(rt, 0))
            m->nskipped_accel--; /* the runtime, counted as skipped, is planned here */
        return expand_generic(m, joined, src, false, err);
    }
    if (asks_accelerators(obj, 0)) {
        m->nskipped_accel++;
        obj_mf_add_note(m,
                        "%s: %s '%s' (%s) asks for accelerators but holds no pod template topox "
                        "can read (template or *Template with spec.containers); not placed",
                        src, kind, obj_mf_obj_name(obj),
                        json_string_value(json_object_get(obj, "apiVersion"))
                            ? json_string_value(json_object_get(obj, "apiVersion"))
                            : "no apiVersion");
    } else
        obj_mf_add_note(m, "%s: skipped %s '%s' (no pods to place)", src, kind,
                        obj_mf_obj_name(obj));
    return TPX_OK;
}
