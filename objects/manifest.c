/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest.c - expand workload objects into the pods their controllers would create.
 * JSON is read once per object and once per pod template; each pod then costs a small kv array
 * and pol_workload_infer(), so a 1 000-replica job expands in well under a millisecond per pod. */
#include "objects/manifest.h"
#include "objects/manifest_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmdline.h"
#include "common/grow.h"
#include "topology/labels.h"

void obj_manifest_init(struct obj_manifest *m)
{
    memset(m, 0, sizeof(*m));
}

static void prefix_at(const struct obj_manifest *m, size_t f, const json_t *at, const json_t *obj,
                      const char *src, struct tpx_err *err)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    unsigned line;

    if (obj_yaml_pos(&m->files[f], at, &line, NULL) || obj_yaml_pos(&m->files[f], obj, &line, NULL))
        tpx_err_prefix(err, "%s:%u: %s '%s'", m->fnames[f], line, kind ? kind : "?",
                       obj_mf_obj_name(obj));
    else
        tpx_err_prefix(err, "%s: %s '%s'", src, kind ? kind : "?", obj_mf_obj_name(obj));
}

static enum tpx_code expand(struct obj_manifest *m, const json_t *obj, const char *src,
                            unsigned depth, struct tpx_err *err)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    enum tpx_code rc;
    bool prefix;

    if (!json_is_object(obj)) {
        obj_mf_add_note(m, "%s: skipped a document that is not an object", src);
        return TPX_OK;
    }
    if (!kind) {
        obj_mf_add_note(m, "%s: skipped an object without a kind", src);
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
    rc = obj_mf_dispatch(m, obj, src, &prefix, err);
    if (rc != TPX_OK && prefix)
        prefix_at(m, m->nfiles - 1, m->err_at, obj, src, err);
    return rc;
}

enum tpx_code obj_manifest_add_docs(struct obj_manifest *m, struct obj_yaml_docs *docs,
                                    const char *name, struct tpx_err *err)
{
    struct obj_yaml_docs *nf = realloc(m->files, (m->nfiles + 1) * sizeof(*nf));
    char **nn = nf ? realloc(m->fnames, (m->nfiles + 1) * sizeof(*nn)) : NULL;
    char *fname = nn ? strdup(name) : NULL;
    struct obj_yaml_docs *d;

    if (nf)
        m->files = nf;
    if (nn)
        m->fnames = nn;
    if (!fname) {
        obj_yaml_docs_release(docs);
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
            obj_mf_copy_str(src, sizeof(src), name);
        if (expand(m, d->docs[i], src, 0, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

enum tpx_code obj_manifest_add_file(struct obj_manifest *m, const char *path, struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};

    if (obj_yaml_load_file(path, (size_t)64 << 20, &d, err) != TPX_OK)
        return err->code;
    return obj_manifest_add_docs(m, &d, strcmp(path, "-") == 0 ? "<stdin>" : path, err);
}

/* --- finish ------------------------------------------------------------------------------------
 */

static bool is_injected(const struct obj_manifest_pod *p, const char *name)
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
static enum tpx_code build_env(struct obj_manifest *m, struct obj_manifest_pod *p,
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
                (struct tpx_env_var){p->ikey[k], p->ival_unknown[k] ? NULL : p->ival[k]};
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
                const char *t = obj_json_scalar(v, buf, sizeof(buf));
                json_t *sv = t ? obj_mf_keep(m, json_string(t), err) : NULL;
                if (t && !sv)
                    return err->code;
                val = json_string_value(sv);
            }
            p->env[p->nenv++] =
                (struct tpx_env_var){name, json_object_get(e, "valueFrom") ? NULL : val};
        }
        for (size_t k = 0; !front && here && k < p->ninj; k++)
            p->env[p->nenv++] =
                (struct tpx_env_var){p->ikey[k], p->ival_unknown[k] ? NULL : p->ival[k]};
    }
    return TPX_OK;
}

static enum tpx_code build_facts(struct obj_manifest *m, size_t i, struct tpx_err *err)
{
    struct obj_manifest_pod *p = &m->pods[i];
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
    /* the env as the operator leaves it (LWS_*, RBG_*, PET_* ... injected), which the engine reader
     * resolves flag values from */
    p->facts.env = p->env;
    p->facts.nenv = p->nenv;
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
        if (&wl[i] == donor || wl[i].accel_per_pod == 0)
            continue; /* a member without accelerators takes no layout */
        if (!wl[i].tp_explicit) {
            bool own_placement = wl[i].layout.placement_ann;
            wl[i].tp = donor->tp;
            wl[i].dp = donor->dp;
            wl[i].layout = donor->layout; /* ep, certainty, sources */
            wl[i].layout.placement_ann = own_placement;
            if (!donor->layout.certain && !own_placement)
                wl[i].preferred = donor->preferred;
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

/* One communication world, one group, one replica: the plan's replicas follow the groups
 * pol_workload_infer() reads from the pods (policy/workload.c), as serve reads them. Consecutive
 * replicas of one job whose pods share a group are one (a StatefulSet whose pods are --nnodes of
 * one engine, a training job's WORLD_SIZE), and a replica none of whose pods is in a group is a
 * replica per pod (an Indexed Job's pods, whose size nothing on a pod says). A replica whose pods
 * are in groups the expansion chose is left as it is. */
/* Bare Pods of one group, one after another (a List of a LeaderWorkerSet's pods, `plan
 * --pending`), are one job: the first's, whose replicas regroup() then joins. */
static void join_pod_jobs(struct obj_manifest *m)
{
    size_t out = 0;
    size_t *map = malloc((m->njobs + 1) * sizeof(*map));

    if (!map)
        return; /* out of memory: each Pod stays a job, its group is still one in the ledger */
    for (size_t j = 0; j < m->njobs; j++) {
        const struct obj_manifest_job *prev = out ? &m->jobs[out - 1] : NULL;
        const struct obj_manifest_job *cur = &m->jobs[j];
        size_t a = cur->nreplicas ? m->replica_first_pod[cur->first_replica] : m->npods;
        size_t pl = prev && prev->nreplicas
                        ? m->replica_first_pod[prev->first_replica + prev->nreplicas] - 1
                        : m->npods;

        if (prev && strcmp(prev->kind, "Pod") == 0 && strcmp(cur->kind, "Pod") == 0 &&
            a < m->npods && pl < m->npods && m->wl[a].group[0] &&
            strcmp(m->wl[a].group, m->wl[pl].group) == 0) {
            m->jobs[out - 1].nreplicas += cur->nreplicas;
            map[j] = out - 1;
            continue;
        }
        if (out != j)
            m->jobs[out] = *cur;
        map[j] = out++;
    }
    for (size_t i = 0; i < m->npods; i++)
        m->pods[i].job = map[m->pods[i].job];
    m->njobs = out;
    free(map);
}

static enum tpx_code regroup(struct obj_manifest *m, struct tpx_err *err)
{
    size_t n = 0, *first = malloc((m->npods + 1) * sizeof(*first));

    if (!first)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    for (size_t j = 0; j < m->njobs; j++) {
        struct obj_manifest_job *job = &m->jobs[j];
        size_t top = n;

        for (size_t r = job->first_replica; r < job->first_replica + job->nreplicas; r++) {
            size_t a = m->replica_first_pod[r], b = m->replica_first_pod[r + 1];
            const char *g = a < b ? m->wl[a].group : "";
            bool grouped = false;

            if (a >= b)
                continue;
            for (size_t i = a; i < b && !grouped; i++)
                grouped = m->wl[i].group[0] != '\0';
            if (!grouped) {
                for (size_t i = a; i < b; i++)
                    first[n++] = i;
                continue;
            }
            if (n > top && g[0] && strcmp(m->wl[first[n - 1]].group, g) == 0)
                continue; /* the same world as the replica before it */
            first[n++] = a;
        }
        job->first_replica = top;
        job->nreplicas = n - top;
    }
    if (!TPX_GROW(m->replica_first_pod, m->areplicas, n + 2)) {
        free(first);
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    }
    memcpy(m->replica_first_pod, first, n * sizeof(*first));
    m->replica_first_pod[n] = m->npods;
    m->nreplicas = n;
    free(first);
    return TPX_OK;
}

/* The members of a replica's groups that ask for no accelerator take no slot and no rank
 * (pol_workload_skip_members): counted per group key, before any member is changed. */
static void skip_cpu_members(struct pol_workload *wl, size_t n)
{
    size_t ncpu = 0, *cpu;

    /* as serve counts them (extender/cpumembers.c): in a group whose size was written, at most
     * POL_CPU_MEMBERS_MAX; most replicas have none, and then nothing is allocated */
    for (size_t j = 0; j < n; j++)
        ncpu += !wl[j].accel_per_pod && wl[j].group[0] && wl[j].size_explicit;
    if (ncpu == 0)
        return;
    cpu = malloc(ncpu * sizeof(*cpu));
    if (!cpu)
        return; /* out of memory: the slots stay counted, as before */
    ncpu = 0;
    for (size_t j = 0; j < n; j++) {
        if (!wl[j].accel_per_pod && wl[j].group[0] && wl[j].size_explicit)
            cpu[ncpu++] = j;
    }
    /* skipping changes only accelerator members, which no count below reads */
    for (size_t i = 0; i < n; i++) {
        unsigned total = 0, below = 0;
        for (size_t c = 0; wl[i].accel_per_pod && wl[i].group[0] && c < ncpu; c++) {
            const struct pol_workload *m = &wl[cpu[c]];
            if (total >= POL_CPU_MEMBERS_MAX || strcmp(m->group, wl[i].group) != 0)
                continue;
            total++;
            below += m->pod_index >= 0 && m->pod_index < wl[i].pod_index;
        }
        pol_workload_skip_members(&wl[i], total, below);
    }
    free(cpu);
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
static void place_of(const struct obj_manifest *m, const struct obj_manifest_pod *p,
                     const json_t *v, char *out, size_t len)
{
    size_t f = m->tmpl_file[p->tmpl];
    unsigned line;

    if (obj_yaml_pos(&m->files[f], v, &line, NULL))
        snprintf(out, len, "%.200s:%u", m->fnames[f], line);
    else
        snprintf(out, len, "%s", m->jobs[p->job].source);
}

void obj_manifest_value_source(const struct obj_manifest *m, size_t i, int argi,
                               const char *annotation, char *out, size_t len)
{
    static const char *const parts[] = {"command", "args"};
    const struct obj_manifest_pod *p;
    const json_t *tmpl;
    const json_t *v = NULL;
    size_t k;
    const json_t *c;

    if (!len)
        return;
    out[0] = '\0';
    if (i >= m->npods)
        return;
    p = &m->pods[i];
    tmpl = m->tmpl_json[p->tmpl];
    if (annotation)
        v = json_object_get(json_object_get(json_object_get(tmpl, "metadata"), "annotations"),
                            annotation);
    /* argv strings are borrowed from the template: the same pointer is the same element */
    json_array_foreach(json_object_get(json_object_get(tmpl, "spec"), "containers"), k, c)
    {
        for (size_t q = 0; q < 2 && !v && argi >= 0 && (size_t)argi < p->facts.nargv; q++) {
            size_t j;
            const json_t *a;
            json_array_foreach(json_object_get(c, parts[q]), j, a)
            {
                if (json_is_string(a) && json_string_value(a) == p->facts.argv[argi])
                    v = a;
            }
        }
    }
    place_of(m, p, v ? v : tmpl, out, len);
}

void obj_manifest_replica_source(const struct obj_manifest *m, size_t r, char *out, size_t len)
{
    const struct pol_size_origin *o;

    if (!len)
        return;
    out[0] = '\0';
    if (r >= m->nreplicas || m->replica_first_pod[r] >= m->npods)
        return;
    /* where the tensor-parallel size was read, as the engine's table named it */
    o = &m->wl[m->replica_first_pod[r]].layout.origin[POL_SIZE_TP];
    obj_manifest_value_source(m, m->replica_first_pod[r], o->argi,
                              o->src == POL_SRC_ANNOTATION ? o->what : NULL, out, len);
}

/* A pod of a kind topox does not know: its group was assumed from the size fields beside its
 * template, so its layout is never certain (the certainty rule): placed as preferred. */
static void assumed_layout(struct pol_workload *wl, const char *kind)
{
    size_t n = strlen(wl->layout.why);

    /* a pod with accelerators has a layout even alone: its group of one was assumed too */
    if (wl->accel_per_pod)
        wl->has_intent = true;
    wl->layout.certain = false;
    wl->dp_world = false; /* its group was assumed, not written */
    snprintf(wl->layout.why + n, sizeof(wl->layout.why) - n,
             "%s%.60s is a kind topox does not know: its groups are assumed", n ? "; " : "", kind);
    pol_workload_uncertain(wl, POL_UNCERTAIN_PREFER);
}

enum tpx_code obj_manifest_finish(struct obj_manifest *m, struct tpx_err *err)
{
    if (m->npods == 0 && m->nskipped_accel)
        return tpx_err_set(err, TPX_EINVAL,
                           "nothing here makes pods of its own: the %zu object(s) that ask for "
                           "accelerators are templates for other objects or hold no pod template "
                           "topox can read (the notes above name them); plan them together with "
                           "the objects that use them",
                           m->nskipped_accel);
    if (m->npods == 0) {
        char names[1024];
        obj_mf_kind_names(names, sizeof(names));
        return tpx_err_set(err, TPX_EINVAL,
                           "no pods to place (kinds: %s, List, and any object that embeds a pod "
                           "template)",
                           names);
    }
    m->wl = calloc(m->npods, sizeof(*m->wl));
    m->names = calloc(m->npods, sizeof(*m->names));
    m->pol_jobs = calloc(m->njobs, sizeof(*m->pol_jobs));
    m->pol_replicas = calloc(m->nreplicas + 1, sizeof(*m->pol_replicas));
    if (!m->wl || !m->names || !m->pol_jobs || !m->pol_replicas)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    m->replica_first_pod[m->nreplicas] = m->npods;
    if (obj_mf_workload_groups(m, err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < m->npods; i++) {
        struct obj_manifest_pod *p = &m->pods[i];
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
    join_pod_jobs(m);
    if (regroup(m, err) != TPX_OK)
        return err->code;
    free(m->pol_replicas);
    m->pol_replicas = calloc(m->nreplicas + 1, sizeof(*m->pol_replicas));
    if (!m->pol_replicas)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    for (size_t r = 0; r < m->nreplicas; r++) {
        size_t a = m->replica_first_pod[r];
        size_t b = m->replica_first_pod[r + 1];
        share_parallelism(m->wl + a, b - a);
        skip_cpu_members(m->wl + a, b - a);
        m->pol_replicas[r].pods = m->wl + a;
        m->pol_replicas[r].pod_names = m->names + a;
        m->pol_replicas[r].npods = b - a;
    }
    for (size_t i = 0; i < m->npods; i++) {
        if (m->jobs[m->pods[i].job].generic)
            assumed_layout(&m->wl[i], m->jobs[m->pods[i].job].kind);
    }
    for (size_t j = 0; j < m->njobs; j++) {
        m->pol_jobs[j].name = m->jobs[j].name;
        m->pol_jobs[j].replicas = m->pol_replicas + m->jobs[j].first_replica;
        m->pol_jobs[j].nreplicas = m->jobs[j].nreplicas;
    }
    return TPX_OK;
}

const struct pol_pod_facts *obj_manifest_pod_facts(const struct obj_manifest *m, size_t i)
{
    return &m->pods[i].facts;
}

const struct tpx_env_var *obj_manifest_pod_env(const struct obj_manifest *m, size_t i, size_t *n)
{
    *n = m->pods[i].nenv;
    return m->pods[i].env;
}

const json_t *obj_manifest_pod_template(const struct obj_manifest *m, size_t i)
{
    return m->tmpl_json[m->pods[i].tmpl];
}

/* --- engine info -------------------------------------------------------------------------------
 */

void obj_manifest_engine_info(const struct obj_manifest *m, size_t i, struct wl_engine_info *out)
{
    wl_engine_info(&m->pods[i].facts, out);
}

void obj_manifest_release(struct obj_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->npods; i++) {
        free(m->pods[i].kv);
        free(m->pods[i].env);
    }
    free(m->pods);
    for (size_t i = 0; i < m->ntmpl; i++)
        obj_pod_facts_release(&m->tmpl[i]);
    free(m->tmpl);
    free(m->tmpl_json);
    free(m->tmpl_file);
    for (size_t i = 0; i < m->nmade; i++)
        json_decref(m->made[i]);
    free(m->made);
    free((void *)m->podgroups);
    for (size_t i = 0; i < m->nfiles; i++) {
        obj_yaml_docs_release(&m->files[i]);
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
