/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_build.c - the pod-building API every kind's expansion writes its pods with
 * (objects/manifest_int.h): a job, its templates and replicas, its pods with the labels,
 * annotations and env their operator gives them, notes, kept JSON, the objects of the file
 * being read. Below the expansions and above nothing of objects/ but the manifest's own struct:
 * objects/ reads top-down, manifest.c (read, finish) -> manifest_kinds.c (the table) -> the
 * expansions -> this builder. */
#include "objects/manifest.h"
#include "objects/manifest_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"

void obj_mf_add_note(struct obj_manifest *m, const char *fmt, ...)
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
void obj_mf_copy_str(char *dst, size_t n, const char *s)
{
    size_t l = strlen(s);

    if (l >= n)
        l = n - 1;
    memcpy(dst, s, l);
    dst[l] = '\0';
}

/* A stable short hash as 16 hex digits: stands in for the controllers' sha1 keys. The fixed key,
 * so a manifest gives the same keys in every run. */
void obj_mf_hash_key(char out[EXTRA_LEN], const char *a, const char *b, size_t idx)
{
    char tail[32];
    uint64_t h;

    snprintf(tail, sizeof(tail), "%zu", idx);
    h = tpx_hash_step(&tpx_hash_fixed_key, 0, a);
    h = tpx_hash_step(&tpx_hash_fixed_key, h, b);
    h = tpx_hash_step(&tpx_hash_fixed_key, h, tail);
    snprintf(out, EXTRA_LEN, "%016" PRIx64, h);
}

const char *obj_mf_obj_name(const json_t *o)
{
    const json_t *md = json_object_get(o, "metadata");
    const char *n = json_string_value(json_object_get(md, "name"));

    /* an object made with generateName (an Argo Workflow, a Job from a CronJob-like tool) is
     * known by its prefix until the API server names it */
    if (!n || !n[0])
        n = json_string_value(json_object_get(md, "generateName"));
    return n ? n : "";
}

const char *obj_mf_obj_ns(const json_t *o)
{
    const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "namespace"));
    return n && *n ? n : "default";
}

/* An optional non-negative integer field (JSON number or numeric string). On error m->err_at is
 * the field's value. */
enum tpx_code obj_mf_get_count(struct obj_manifest *m, const json_t *obj, const char *key,
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
            json_integer_value(v) > (json_int_t)OBJ_MANIFEST_MAX_PODS) {
            m->err_at = v;
            return tpx_err_set(err, TPX_EINVAL, "%s: %" JSON_INTEGER_FORMAT " is out of range", key,
                               json_integer_value(v));
        }
        *out = (unsigned long)json_integer_value(v);
        return TPX_OK;
    }
    t = obj_json_scalar(v, buf, sizeof(buf));
    if (!t || !isdigit((unsigned char)t[0])) {
        m->err_at = v;
        return tpx_err_set(err, TPX_EINVAL, "%s: '%s' is not a whole number", key,
                           t ? t : "(not a scalar)");
    }
    x = strtoul(t, &end, 10);
    if (*end || x > OBJ_MANIFEST_MAX_PODS) {
        m->err_at = v;
        return tpx_err_set(err, TPX_EINVAL, "%s: '%s' is not a whole number in range", key, t);
    }
    *out = x;
    return TPX_OK;
}

enum tpx_code obj_mf_add_job(struct obj_manifest *m, const json_t *obj, const char *kind,
                             const char *src, size_t *job, struct tpx_err *err)
{
    struct obj_manifest_job *j;
    char full[POL_KEY_MAX];

    if (!TPX_GROW(m->jobs, m->ajobs, m->njobs + 1))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    j = &m->jobs[m->njobs];
    memset(j, 0, sizeof(*j));
    snprintf(full, sizeof(full), "%.120s/%.120s", obj_mf_obj_ns(obj), obj_mf_obj_name(obj));
    obj_mf_copy_str(j->name, sizeof(j->name), full);
    obj_mf_copy_str(j->kind, sizeof(j->kind), kind);
    obj_mf_copy_str(j->source, sizeof(j->source), src);
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

enum tpx_code obj_mf_add_tmpl(struct obj_manifest *m, const json_t *tmpl, size_t *out,
                              struct tpx_err *err)
{
    struct obj_pod_facts *nt;
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
    if (obj_pod_facts_from_json(tmpl, &m->tmpl[m->ntmpl], err) != TPX_OK) {
        const json_t *c = named_container(tmpl, err->msg);
        if (c)
            m->err_at = c;
        return err->code;
    }
    if (obj_mf_engine_configs(m, tmpl, &m->tmpl[m->ntmpl], err) != TPX_OK) {
        obj_pod_facts_release(&m->tmpl[m->ntmpl]);
        return err->code;
    }
    m->tmpl_json[m->ntmpl] = tmpl;
    m->tmpl_file[m->ntmpl] = m->nfiles - 1;
    *out = m->ntmpl++;
    return TPX_OK;
}

/* Make room for n more pods, within OBJ_MANIFEST_MAX_PODS. */
enum tpx_code obj_mf_reserve_pods(struct obj_manifest *m, unsigned long n, struct tpx_err *err)
{
    if (n > OBJ_MANIFEST_MAX_PODS || m->npods + n > OBJ_MANIFEST_MAX_PODS)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
    if (!TPX_GROW(m->pods, m->apods, m->npods + n))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    return TPX_OK;
}

enum tpx_code obj_mf_new_replica(struct obj_manifest *m, struct tpx_err *err)
{
    if (!TPX_GROW(m->replica_first_pod, m->areplicas, m->nreplicas + 2))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    m->replica_first_pod[m->nreplicas++] = m->npods;
    m->jobs[m->njobs - 1].nreplicas++;
    return TPX_OK;
}

/* Append one pod (room reserved by obj_mf_reserve_pods()). */
struct obj_manifest_pod *obj_mf_new_pod(struct expander *x, const char *fmt, ...)
{
    struct obj_manifest_pod *p = &x->m->pods[x->m->npods++];
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
void obj_mf_extra(struct obj_manifest_pod *p, bool annotation, const char *key, const char *fmt,
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
void obj_mf_inject(struct obj_manifest_pod *p, const char *key, const char *fmt, ...)
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

json_t *obj_mf_keep(struct obj_manifest *m, json_t *o, struct tpx_err *err)
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

/* The object of API group `group` and kind `kind` named `name` among the documents of the file
 * being read, or NULL. */
const json_t *obj_mf_same_file_object(const struct obj_manifest *m, const char *group,
                                      const char *kind, const char *name)
{
    const struct obj_yaml_docs *d = &m->files[m->nfiles - 1];

    for (size_t i = 0; i < d->n; i++) {
        if (obj_is_kind(d->docs[i], group, kind) && strcmp(obj_mf_obj_name(d->docs[i]), name) == 0)
            return d->docs[i];
    }
    return NULL;
}

/* The container named `name` in pod spec ps, or NULL. */
json_t *obj_mf_container_named(const json_t *ps, const char *name)
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

/* Prefix err with "FILE:LINE: KIND 'name'": the line where `at` (else obj) starts in file f, or
 * src ("FILE#N") when the file was parsed without positions. */
