/* SPDX-License-Identifier: Apache-2.0 */
/* objects/podfacts.c - Pod/Node jansson values -> pol_pod_facts / topo_node_info. Reads only the
 * fields the policy needs; everything else in the object is ignored. */
#include "objects/podfacts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool obj_api_group(const json_t *obj, char *out, size_t n)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *slash = api ? strchr(api, '/') : NULL;
    size_t len = slash ? (size_t)(slash - api) : 0;

    if (n == 0)
        return api != NULL;
    if (len >= n)
        len = n - 1;
    if (slash)
        memcpy(out, api, len);
    out[len] = '\0';
    return api != NULL;
}

bool obj_is_kind(const json_t *obj, const char *group, const char *kind)
{
    const char *k = json_string_value(json_object_get(obj, "kind"));
    char g[128];

    if (!k || strcmp(k, kind) != 0)
        return false;
    if (!obj_api_group(obj, g, sizeof(g)))
        return true;
    return strcmp(g, group) == 0;
}

const char *obj_json_scalar(const json_t *v, char *buf, size_t bufsz)
{
    if (!v || bufsz == 0)
        return NULL;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_value(v);
    case JSON_INTEGER:
        snprintf(buf, bufsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    case JSON_REAL:
        snprintf(buf, bufsz, "%.17g", json_real_value(v));
        return buf;
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    default:
        return NULL;
    }
}

/* A scalar as a string that lives as long as the store: borrowed for JSON strings, else a copy. */
static const char *keep_scalar(struct obj_pod_facts *s, const json_t *v, struct tpx_err *err)
{
    char buf[64];
    const char *t;
    char **no;
    char *dup;

    if (json_is_string(v))
        return json_string_value(v);
    t = obj_json_scalar(v, buf, sizeof(buf));
    if (!t)
        return NULL;
    if (t != buf)
        return t; /* static "true"/"false" */
    dup = strdup(t);
    no = dup ? realloc(s->owned, (s->nowned + 1) * sizeof(*no)) : NULL;
    if (!no) {
        free(dup);
        tpx_err_set(err, TPX_ENOMEM, "pod facts: out of memory");
        return NULL;
    }
    s->owned = no;
    s->owned[s->nowned++] = dup;
    return dup;
}

void obj_pod_facts_release(struct obj_pod_facts *store)
{
    if (!store)
        return;
    for (size_t i = 0; i < store->nowned; i++)
        free(store->owned[i]);
    free(store->owned);
    for (size_t i = 0; i < store->nconfig_text; i++)
        free(store->config_text[i]);
    free(store->config_text);
    free(store->configs);
    free(store->config_kv);
    free(store->kv);
    free((void *)store->argv);
    free(store->env);
    memset(store, 0, sizeof(*store));
}

static size_t count_argv(const json_t *containers)
{
    size_t n = 0;
    size_t i;
    const json_t *c;

    json_array_foreach(containers, i, c)
    {
        const json_t *cmd = json_object_get(c, "command");
        const json_t *args = json_object_get(c, "args");
        n += json_is_array(cmd) ? json_array_size(cmd) : 0;
        n += json_is_array(args) ? json_array_size(args) : 0;
    }
    return n;
}

static size_t count_env(const json_t *containers)
{
    size_t n = 0;
    size_t i;
    const json_t *c;

    json_array_foreach(containers, i, c)
    {
        const json_t *env = json_object_get(c, "env");
        n += json_is_array(env) ? json_array_size(env) : 0;
    }
    return n;
}

/* Each container's env in order: a `value` is kept (a number too, formatted), valueFrom or any
 * other form gives a NULL value (unknown here), an entry without a name is skipped. */
static enum tpx_code add_env(struct obj_pod_facts *s, const json_t *containers, struct tpx_err *err)
{
    size_t i;
    const json_t *c;
    size_t n = 0;

    json_array_foreach(containers, i, c)
    {
        size_t j;
        const json_t *e;
        json_array_foreach(json_object_get(c, "env"), j, e)
        {
            const char *name = json_string_value(json_object_get(e, "name"));
            const json_t *v = json_object_get(e, "value");
            const char *val = NULL;

            if (!name)
                continue;
            if (v && !json_object_get(e, "valueFrom")) {
                val = keep_scalar(s, v, err);
                if (err->code != TPX_OK)
                    return err->code;
            }
            s->env[n++] = (struct tpx_env_var){name, val};
        }
    }
    s->facts.env = s->env;
    s->facts.nenv = n;
    return TPX_OK;
}

static enum tpx_code add_kv(struct obj_pod_facts *s, size_t *n, const json_t *obj, bool *bad,
                            struct tpx_err *err)
{
    const char *key;
    const json_t *v;

    json_object_foreach((json_t *)obj, key, v)
    {
        const char *val = keep_scalar(s, v, err);
        if (err->code != TPX_OK)
            return err->code;
        if (!val) {
            *bad = true;
            continue;
        }
        s->kv[*n].key = key;
        s->kv[*n].value = val;
        (*n)++;
    }
    return TPX_OK;
}

/* One container's request of resource res (its limit when it has no request); 0 when absent. */
static enum tpx_code container_qty(const json_t *c, const char *res, unsigned *out,
                                   struct tpx_err *err)
{
    static const char *const where[] = {"requests", "limits"};
    const json_t *r = json_object_get(c, "resources");

    *out = 0;
    for (size_t w = 0; w < 2; w++) {
        const json_t *q = json_object_get(json_object_get(r, where[w]), res);
        char buf[64];
        const char *t;

        if (!q)
            continue;
        t = obj_json_scalar(q, buf, sizeof(buf));
        if (!t || !topo_quantity_whole(t, out)) {
            const char *name = json_string_value(json_object_get(c, "name"));
            return tpx_err_set(err, TPX_EINVAL,
                               "container '%s': %s '%s': '%s' is not a whole number of devices",
                               name ? name : "?", where[w], res, t ? t : "(not a scalar)");
        }
        if (*out > TOPO_ACCEL_MAX)
            return tpx_err_set(err, TPX_EINVAL, "pod requests %s '%s' of more than %u devices",
                               where[w], res, TOPO_ACCEL_MAX);
        return TPX_OK;
    }
    return TPX_OK;
}

/* max(sum over containers, max over init containers) for resource res. */
static enum tpx_code sum_resource(const json_t *spec, const char *res, unsigned *total, bool *seen,
                                  struct tpx_err *err)
{
    unsigned sum = 0;
    unsigned init_max = 0;
    size_t i;
    const json_t *c;

    *seen = false;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        unsigned q;
        if (container_qty(c, res, &q, err) != TPX_OK)
            return err->code;
        if (json_object_get(json_object_get(json_object_get(c, "resources"), "requests"), res) ||
            json_object_get(json_object_get(json_object_get(c, "resources"), "limits"), res))
            *seen = true;
        if (q > TOPO_ACCEL_MAX - sum)
            return tpx_err_set(err, TPX_EINVAL, "pod requests more than %u '%s' in all",
                               TOPO_ACCEL_MAX, res);
        sum += q;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        unsigned q;
        if (container_qty(c, res, &q, err) != TPX_OK)
            return err->code;
        if (q > 0)
            *seen = true;
        if (q > init_max)
            init_max = q;
    }
    *total = sum > init_max ? sum : init_max;
    return TPX_OK;
}

enum tpx_code obj_pod_accel(const json_t *pod, const struct topo_label_config *cfg, unsigned *accel,
                            const char **resource, struct tpx_err *err)
{
    const json_t *spec = json_object_get(pod, "spec");

    if (!cfg)
        cfg = topo_label_config_default();
    *accel = 0;
    if (resource)
        *resource = NULL;
    for (size_t k = 0; k < cfg->nresources; k++) {
        unsigned q = 0;
        bool seen = false;
        if (sum_resource(spec, cfg->resources[k], &q, &seen, err) != TPX_OK)
            return err->code;
        if (seen) {
            *accel = q;
            if (resource)
                *resource = cfg->resources[k];
            if (q > 0)
                break;
        }
    }
    return TPX_OK;
}

static enum tpx_code fill(const json_t *pod, const struct topo_label_config *cfg,
                          struct obj_pod_facts *s, struct tpx_err *err)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *annots = json_object_get(meta, "annotations");
    const json_t *containers = json_object_get(spec, "containers");
    size_t nl = json_is_object(labels) ? json_object_size(labels) : 0;
    size_t na = json_is_object(annots) ? json_object_size(annots) : 0;
    size_t nargv = json_is_array(containers) ? count_argv(containers) : 0;
    size_t n = 0;
    bool bad = false;
    size_t i;
    const json_t *c;

    if (!json_is_object(pod))
        return tpx_err_set(err, TPX_EINVAL, "pod: not an object");
    if (spec && !json_is_object(spec))
        return tpx_err_set(err, TPX_EINVAL, "pod: spec is not an object");
    s->kv = calloc(nl + na + 1, sizeof(*s->kv));
    s->argv = calloc(nargv + 1, sizeof(*s->argv));
    if (!s->kv || !s->argv)
        return tpx_err_set(err, TPX_ENOMEM, "pod facts: out of memory");
    s->facts.name = json_string_value(json_object_get(meta, "name"));
    if (!s->facts.name)
        s->facts.name = json_string_value(json_object_get(meta, "generateName"));
    s->facts.ns = json_string_value(json_object_get(meta, "namespace"));
    s->facts.uid = json_string_value(json_object_get(meta, "uid"));
    /* core/v1 PodSchedulingGroup (k8s.io/api v0.37.2 core/v1/types.go): the PodGroup's name; its
     * minCount and topology come from the PodGroup object (obj_podgroup_read) */
    s->facts.pod_group = json_string_value(
        json_object_get(json_object_get(spec, "schedulingGroup"), "podGroupName"));
    s->facts.pod_group_level = -1;
    if (nl && add_kv(s, &n, labels, &bad, err) != TPX_OK)
        return err->code;
    s->facts.labels = s->kv;
    s->facts.nlabels = n;
    if (na && add_kv(s, &n, annots, &bad, err) != TPX_OK)
        return err->code;
    s->facts.annotations = s->kv + s->facts.nlabels;
    s->facts.nannotations = n - s->facts.nlabels;
    n = 0;
    json_array_foreach(containers, i, c)
    {
        static const char *const parts[] = {"command", "args"};
        for (size_t p = 0; p < 2; p++) {
            size_t j;
            const json_t *a;
            json_array_foreach(json_object_get(c, parts[p]), j, a)
            {
                const char *t = keep_scalar(s, a, err);
                if (err->code != TPX_OK)
                    return err->code;
                if (t)
                    s->argv[n++] = t;
            }
        }
    }
    s->facts.argv = s->argv;
    s->facts.nargv = n;
    s->env = calloc(count_env(containers) + 1, sizeof(*s->env));
    if (!s->env)
        return tpx_err_set(err, TPX_ENOMEM, "pod facts: out of memory");
    if (add_env(s, containers, err) != TPX_OK)
        return err->code;
    return obj_pod_accel(pod, cfg, &s->facts.accel, &s->facts.resource, err);
}

enum tpx_code obj_pod_facts_from_json_cfg(const json_t *pod, const struct topo_label_config *cfg,
                                          struct obj_pod_facts *store, struct tpx_err *err)
{
    memset(store, 0, sizeof(*store));
    if (fill(pod, cfg, store, err) != TPX_OK) {
        obj_pod_facts_release(store);
        return err->code;
    }
    return TPX_OK;
}

enum tpx_code obj_pod_facts_from_json(const json_t *pod, struct obj_pod_facts *store,
                                      struct tpx_err *err)
{
    return obj_pod_facts_from_json_cfg(pod, NULL, store, err);
}

/* --- nodes -------------------------------------------------------------------------------------
 */

#define NODE_KV_MAX 512 /* labels or allocatable entries read per node; more is refused */

static bool node_not_ready(const json_t *node)
{
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (type && strcmp(type, "Ready") == 0)
            return !status || strcmp(status, "True") != 0;
    }
    return false;
}

enum tpx_code obj_node_from_json(const json_t *node, const struct topo_label_config *cfg,
                                 struct topo_node_info *out, struct topo_label_explain *explain,
                                 struct tpx_err *err)
{
    const json_t *meta = json_object_get(node, "metadata");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
    const char *name = json_string_value(json_object_get(meta, "name"));
    struct topo_kv *lk = NULL;
    struct topo_kv *ak = NULL;
    char(*abuf)[32] = NULL;
    size_t nl = 0;
    size_t na = 0;
    const char *key;
    const json_t *v;
    enum tpx_code rc = TPX_OK;

    if (!json_is_object(node))
        return tpx_err_set(err, TPX_EINVAL, "node: not an object");
    if (!name || !*name)
        return tpx_err_set(err, TPX_EINVAL, "node: metadata.name is missing");
    if ((labels && !json_is_object(labels)) || (alloc && !json_is_object(alloc)))
        return tpx_err_set(err, TPX_EINVAL, "node '%s': labels or allocatable is not a map", name);
    if (json_object_size(labels) > NODE_KV_MAX || json_object_size(alloc) > NODE_KV_MAX)
        return tpx_err_set(err, TPX_ETOOBIG, "node '%s': more than %d labels or resources", name,
                           NODE_KV_MAX);
    lk = calloc(json_object_size(labels) + 1, sizeof(*lk));
    ak = calloc(json_object_size(alloc) + 1, sizeof(*ak));
    abuf = calloc(json_object_size(alloc) + 1, sizeof(*abuf));
    if (!lk || !ak || !abuf) {
        rc = tpx_err_set(err, TPX_ENOMEM, "node '%s': out of memory", name);
        goto out;
    }
    json_object_foreach((json_t *)labels, key, v)
    {
        if (!json_is_string(v)) {
            rc = tpx_err_set(err, TPX_EINVAL, "node '%s': label '%s' is not a string (quote it)",
                             name, key);
            goto out;
        }
        lk[nl].key = key;
        lk[nl].value = json_string_value(v);
        nl++;
    }
    /* quantities are parsed, never kept, so formatting numbers into a local buffer is fine */
    json_object_foreach((json_t *)alloc, key, v)
    {
        const char *t = obj_json_scalar(v, abuf[na], sizeof(abuf[na]));
        if (!t)
            continue;
        ak[na].key = key;
        ak[na].value = t;
        na++;
    }
    out->name = name;
    rc = topo_labels_decode(cfg, lk, nl, ak, na, out, explain, err);
    if (rc != TPX_OK) {
        tpx_err_prefix(err, "node '%s'", name);
        goto out;
    }
    out->name = name;
    out->accel_used = 0;
    out->unschedulable =
        json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable")) ||
        node_not_ready(node);
out:
    free(abuf);
    free(ak);
    free(lk);
    return rc;
}

int obj_podgroup_key_scope(const struct topo_label_config *cfg, const char *key)
{
    static const int scope_of_level[TOPO_LEVEL_COUNT] = {-1, POL_SCOPE_RACK, POL_SCOPE_BLOCK,
                                                         POL_SCOPE_ZONE};

    if (!cfg)
        cfg = topo_label_config_default();
    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        for (size_t k = 0; k < cfg->nkeys[lv]; k++) {
            if (strcmp(cfg->keys[lv][k], key) == 0)
                return scope_of_level[lv];
        }
    }
    return -1;
}

void obj_podgroup_read(const json_t *pg, const struct topo_label_config *cfg, unsigned *min_count,
                       int *level)
{
    const json_t *spec = json_object_get(pg, "spec");
    const json_t *min = json_object_get(
        json_object_get(json_object_get(spec, "schedulingPolicy"), "gang"), "minCount");
    const json_t *topo =
        json_object_get(json_object_get(spec, "schedulingConstraints"), "topology");
    size_t i;
    const json_t *t;

    *min_count =
        json_is_integer(min) && json_integer_value(min) > 0 && json_integer_value(min) <= 1000000
            ? (unsigned)json_integer_value(min)
            : 0;
    *level = -1;
    json_array_foreach(topo, i, t)
    {
        const char *key = json_string_value(json_object_get(t, "key"));
        int s = key ? obj_podgroup_key_scope(cfg, key) : -1;
        if (s >= 0 && (*level < 0 || s < *level))
            *level = s;
    }
}
