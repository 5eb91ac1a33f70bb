/* SPDX-License-Identifier: Apache-2.0 */
/* objects/dra.c - ResourceSlices, ResourceClaims, DeviceClasses, ResourceClaimTemplates and
 * ComputeDomains -> accelerator capacity per node, a pod's claim demand, ComputeDomain groups. */
#include "objects/dra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/map.h"
#include "objects/manifest.h"
#include "objects/podfacts.h"
#include "topology/labels.h"

#define LIST_DEPTH_MAX 4

/* The DRA drivers whose devices are whole accelerators (docs/dra.md). */
static const char *const gpu_drivers[] = {"gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com"};

static bool is_gpu_driver(const char *s)
{
    for (size_t i = 0; s && i < sizeof(gpu_drivers) / sizeof(gpu_drivers[0]); i++) {
        if (strcmp(s, gpu_drivers[i]) == 0)
            return true;
    }
    return false;
}

static const json_t *jget(const json_t *o, const char *k)
{
    return json_object_get(o, k);
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static const char *meta_str(const json_t *o, const char *k)
{
    return jstr(jget(o, "metadata"), k);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void obj_dra_init(struct obj_dra *d)
{
    memset(d, 0, sizeof(*d));
}

/* The kinds read here, by API group and kind (ComputeDomain is NVIDIA's DRA driver's,
 * resource.nvidia.com; the rest are Kubernetes' resource.k8s.io). */
static const struct {
    const char *group;
    const char *kind;
} dra_kinds[] = {
    {"resource.k8s.io", "DeviceClass"},       {"resource.k8s.io", "ResourceSlice"},
    {"resource.k8s.io", "ResourceClaim"},     {"resource.k8s.io", "ResourceClaimTemplate"},
    {"resource.nvidia.com", "ComputeDomain"},
};

/* The kind of obj when it is one read here, else NULL. */
static const char *dra_kind(const json_t *obj)
{
    for (size_t i = 0; i < sizeof(dra_kinds) / sizeof(dra_kinds[0]); i++) {
        if (obj_is_kind(obj, dra_kinds[i].group, dra_kinds[i].kind))
            return dra_kinds[i].kind;
    }
    return NULL;
}

bool obj_dra_is_object(const json_t *obj)
{
    return dra_kind(obj) != NULL;
}

/* A device attribute's value (v1: attributes.K.{string,int}; v1beta1: basic.attributes). */
static const json_t *attr(const json_t *dev, const char *key)
{
    const json_t *attrs = jget(dev, "attributes");

    if (!attrs)
        attrs = jget(jget(dev, "basic"), "attributes");
    return jget(attrs, key);
}

static enum tpx_code add_slice(struct obj_dra *d, const json_t *obj, struct tpx_err *err)
{
    const json_t *spec = jget(obj, "spec");
    const char *driver = jstr(spec, "driver");
    const char *pool = jstr(jget(spec, "pool"), "name");
    const char *node = jstr(spec, "nodeName");
    const char *sname = meta_str(obj, "name");
    size_t i;
    const json_t *dev;

    d->finished = false; /* the devices must be sorted again */
    if (!driver)
        return tpx_err_set(err, TPX_EINVAL, "ResourceSlice '%s': spec.driver is missing",
                           sname ? sname : "?");
    json_array_foreach(jget(spec, "devices"), i, dev)
    {
        const char *name = jstr(dev, "name");
        const char *type = json_string_value(jget(attr(dev, "type"), "string"));
        const json_t *numa = jget(attr(dev, "resource.kubernetes.io/numaNode"), "int");
        struct obj_dra_device *x;

        if (!name)
            return tpx_err_set(err, TPX_EINVAL, "ResourceSlice '%s': devices[%zu]: name is missing",
                               sname ? sname : "?", i);
        if (d->ndev >= OBJ_DRA_MAX_DEVICES)
            return tpx_err_set(err, TPX_ETOOBIG, "more than %u DRA devices", OBJ_DRA_MAX_DEVICES);
        if (!TPX_GROW(d->dev, d->adev, d->ndev + 1))
            return tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
        x = &d->dev[d->ndev++];
        memset(x, 0, sizeof(*x));
        if (!numa)
            numa = jget(attr(dev, "numaNode"), "int");
        x->numa = json_is_integer(numa) ? (long)json_integer_value(numa) : -1;
        x->node = dup_or_null(node);
        x->driver = strdup(driver);
        x->pool = strdup(pool ? pool : (node ? node : ""));
        x->name = strdup(name);
        x->pcie_root = dup_or_null(
            json_string_value(jget(attr(dev, "resource.kubernetes.io/pcieRoot"), "string")));
        /* a whole GPU: a GPU driver's device whose type, when given, is "gpu" (not a MIG slice,
         * a channel or an IMEX daemon) */
        x->accel = is_gpu_driver(driver) && (!type || strcmp(type, "gpu") == 0);
        if (!x->driver || !x->pool || !x->name)
            return tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
    }
    return TPX_OK;
}

/* The driver a CEL expression names: "device.driver == 'x'" or with double quotes. */
static char *cel_driver(const char *expr)
{
    const char *p = expr ? strstr(expr, "device.driver") : NULL;
    const char *q;
    char quote;

    if (!p)
        return NULL;
    p += strlen("device.driver");
    while (*p == ' ')
        p++;
    if (strncmp(p, "==", 2) != 0)
        return NULL;
    p += 2;
    while (*p == ' ')
        p++;
    if (*p != '\'' && *p != '"')
        return NULL;
    quote = *p++;
    q = strchr(p, quote);
    return q ? strndup(p, (size_t)(q - p)) : NULL;
}

static enum tpx_code add_class(struct obj_dra *d, const json_t *obj, struct tpx_err *err)
{
    const json_t *spec = jget(obj, "spec");
    const char *name = meta_str(obj, "name");
    struct obj_dra_class *c;
    size_t i;
    const json_t *sel;
    bool mig = false;

    if (!name)
        return tpx_err_set(err, TPX_EINVAL, "DeviceClass: metadata.name is missing");
    if (!TPX_GROW(d->cls, d->acls, d->ncls + 1))
        return tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
    c = &d->cls[d->ncls++];
    memset(c, 0, sizeof(*c));
    c->name = strdup(name);
    c->ext_resource = dup_or_null(jstr(spec, "extendedResourceName"));
    json_array_foreach(jget(spec, "selectors"), i, sel)
    {
        const char *expr = jstr(jget(sel, "cel"), "expression");
        if (!c->driver)
            c->driver = cel_driver(expr);
        if (expr && (strstr(expr, "== 'mig'") || strstr(expr, "== \"mig\"")))
            mig = true;
    }
    c->accel = is_gpu_driver(c->driver) && !mig;
    return c->name ? TPX_OK : tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
}

static enum tpx_code add_domain(struct obj_dra *d, const json_t *obj, struct tpx_err *err)
{
    const json_t *spec = jget(obj, "spec");
    const char *tmpl = jstr(jget(jget(spec, "channel"), "resourceClaimTemplate"), "name");
    const json_t *nn = jget(spec, "numNodes");
    struct obj_dra_domain *c;

    if (!tmpl)
        return TPX_OK; /* no channel: no claimant can name it */
    if (!TPX_GROW(d->cd, d->acd, d->ncd + 1))
        return tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
    c = &d->cd[d->ncd++];
    c->ns = dup_or_null(meta_str(obj, "namespace"));
    c->name = strdup(meta_str(obj, "name") ? meta_str(obj, "name") : "?");
    c->channel_template = strdup(tmpl);
    c->num_nodes =
        json_is_integer(nn) && json_integer_value(nn) > 0 ? (unsigned)json_integer_value(nn) : 0;
    return c->name && c->channel_template ? TPX_OK
                                          : tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
}

static enum tpx_code keep(json_t **arr, const json_t *obj, struct tpx_err *err)
{
    if (!*arr)
        *arr = json_array();
    if (!*arr || json_array_append(*arr, (json_t *)obj) != 0)
        return tpx_err_set(err, TPX_ENOMEM, "dra: out of memory");
    return TPX_OK;
}

static enum tpx_code add_one(struct obj_dra *d, const json_t *obj, unsigned depth,
                             struct tpx_err *err)
{
    const char *kind = dra_kind(obj); /* by API group and kind */
    const json_t *items = jget(obj, "items");

    if (json_is_array(items)) {
        size_t i;
        const json_t *it;
        if (depth >= LIST_DEPTH_MAX)
            return tpx_err_set(err, TPX_ETOOBIG, "lists nested too deep");
        json_array_foreach(items, i, it)
        {
            if (add_one(d, it, depth + 1, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (!kind)
        return TPX_OK;
    if (strcmp(kind, "ResourceSlice") == 0)
        return add_slice(d, obj, err);
    if (strcmp(kind, "DeviceClass") == 0)
        return add_class(d, obj, err);
    if (strcmp(kind, "ComputeDomain") == 0)
        return add_domain(d, obj, err);
    if (strcmp(kind, "ResourceClaim") == 0) {
        d->claim_ix_stale = true; /* until the next finish */
        return keep(&d->claims, obj, err);
    }
    if (strcmp(kind, "ResourceClaimTemplate") == 0)
        return keep(&d->templates, obj, err);
    return TPX_OK;
}

enum tpx_code obj_dra_add_docs(struct obj_dra *d, json_t *const *docs, size_t ndocs,
                               struct tpx_err *err)
{
    for (size_t i = 0; i < ndocs; i++) {
        if (add_one(d, docs[i], 0, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

/* Order by driver, pool and name: how claims name a device. */
static int by_key(const void *pa, const void *pb)
{
    const struct obj_dra_device *a = pa, *b = pb;
    int c = strcmp(a->driver, b->driver);

    if (!c)
        c = strcmp(a->pool, b->pool);
    return c ? c : strcmp(a->name, b->name);
}

/* Order by node (pools on no node last), then by key. */
static int by_node(const void *pa, const void *pb)
{
    const struct obj_dra_device *a = pa, *b = pb;
    int c = !a->node || !b->node ? (a->node == NULL) - (b->node == NULL) : strcmp(a->node, b->node);

    return c ? c : by_key(pa, pb);
}

static struct obj_dra_device *find_device(struct obj_dra *d, const char *driver, const char *pool,
                                          const char *name)
{
    struct obj_dra_device key = {
        .driver = (char *)driver, .pool = (char *)pool, .name = (char *)name};

    return d->ndev ? bsearch(&key, d->dev, d->ndev, sizeof(*d->dev), by_key) : NULL;
}

/* status.allocation.devices.results of a claim (empty when it is not allocated). */
static const json_t *results(const json_t *claim)
{
    return jget(jget(jget(jget(claim, "status"), "allocation"), "devices"), "results");
}

void obj_dra_finish(struct obj_dra *d)
{
    obj_dra_finish_skip(d, NULL, NULL);
}

/* Index the claims by "ns/name" (all of them namespaced: otherwise find_claim() scans). */
static void index_claims(struct obj_dra *d)
{
    size_t i;
    const json_t *claim;

    for (i = 0; i < d->nclaim_keys; i++)
        free(d->claim_keys[i]);
    free(d->claim_keys);
    d->claim_keys = NULL;
    d->nclaim_keys = 0;
    tpx_map_release(&d->claim_ix);
    d->claim_ix_stale = true;
    if (!json_array_size(d->claims))
        return;
    d->claim_keys = calloc(json_array_size(d->claims), sizeof(*d->claim_keys));
    if (!d->claim_keys)
        return;
    json_array_foreach(d->claims, i, claim)
    {
        const char *ns = meta_str(claim, "namespace");
        const char *name = meta_str(claim, "name");
        size_t len;
        struct tpx_err e = TPX_ERR_INIT;
        char *key;

        if (!ns || !name)
            return; /* a claim without a namespace matches any: scan */
        len = strlen(ns) + strlen(name) + 2;
        key = malloc(len);
        if (!key)
            return;
        snprintf(key, len, "%s/%s", ns, name);
        d->claim_keys[d->nclaim_keys++] = key;
        if (!tpx_map_get(&d->claim_ix, key) &&
            tpx_map_put(&d->claim_ix, key, (void *)claim, &e) != TPX_OK)
            return;
    }
    d->claim_ix_stale = false;
}

void obj_dra_finish_skip(struct obj_dra *d, bool (*skip)(void *ctx, const json_t *claim), void *ctx)
{
    size_t i;
    const json_t *claim;

    index_claims(d);
    if (d->ndev)
        qsort(d->dev, d->ndev, sizeof(*d->dev), by_key);
    for (i = 0; i < d->ndev; i++)
        d->dev[i].taken = false;
    json_array_foreach(d->claims, i, claim)
    {
        size_t k;
        const json_t *r;
        if (skip && skip(ctx, claim))
            continue;
        json_array_foreach(results(claim), k, r)
        {
            const char *driver = jstr(r, "driver");
            const char *pool = jstr(r, "pool");
            const char *dev = jstr(r, "device");
            struct obj_dra_device *x =
                driver && pool && dev ? find_device(d, driver, pool, dev) : NULL;
            if (x)
                x->taken = true;
        }
    }
    /* then by node, so a node's devices are one run that obj_dra_node_count() finds by halving */
    if (d->ndev)
        qsort(d->dev, d->ndev, sizeof(*d->dev), by_node);
    d->finished = true;
}

void obj_dra_node_count(const struct obj_dra *d, const char *node, unsigned *total, unsigned *taken)
{
    size_t lo = 0, hi = d->ndev;

    *total = *taken = 0;
    while (lo < hi) { /* the first device on node or after it */
        size_t mid = lo + (hi - lo) / 2;
        if (d->dev[mid].node && strcmp(d->dev[mid].node, node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < d->ndev && d->dev[i].node && strcmp(d->dev[i].node, node) == 0; i++) {
        if (d->dev[i].accel) {
            (*total)++;
            *taken += d->dev[i].taken;
        }
    }
}

const char *obj_dra_resource(const struct obj_dra *d)
{
    for (size_t i = 0; i < d->ncls; i++) {
        if (d->cls[i].accel && d->cls[i].ext_resource)
            return d->cls[i].ext_resource;
    }
    return "nvidia.com/gpu";
}

static bool ns_match(const char *want, const json_t *obj)
{
    const char *ns = meta_str(obj, "namespace");

    return !want || !ns || strcmp(want, ns) == 0;
}

static const json_t *find_named(const json_t *arr, const char *ns, const char *name)
{
    size_t i;
    const json_t *o;

    json_array_foreach(arr, i, o)
    {
        const char *n = meta_str(o, "name");
        if (n && strcmp(n, name) == 0 && ns_match(ns, o))
            return o;
    }
    return NULL;
}

/* A claim by namespace and name: through the index obj_dra_finish() builds when every claim has
 * a namespace (what serve's watch gives: a pod's demand is then O(1) per claim, not a scan of
 * every claim), else by a scan. */
static const json_t *find_claim(const struct obj_dra *d, const char *ns, const char *name)
{
    char key[600];

    if (!name)
        return NULL;
    if (!ns || !d->claim_ix.cap || d->claim_ix_stale)
        return find_named(d->claims, ns, name);
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return tpx_map_get(&d->claim_ix, key);
}

bool obj_dra_claim_allocated(const struct obj_dra *d, const char *ns, const char *name)
{
    const json_t *c = find_claim(d, ns, name);

    return c && json_array_size(results(c)) > 0;
}

/* Is the class an accelerator class? Classes not in the snapshot go by their name. */
static bool class_accel(const struct obj_dra *d, const char *cls)
{
    for (size_t i = 0; i < d->ncls; i++) {
        if (strcmp(d->cls[i].name, cls) == 0)
            return d->cls[i].accel;
    }
    return is_gpu_driver(cls);
}

/* Accelerators the requests of one claim spec ({devices: {requests: [...]}}) ask for. */
static enum tpx_code spec_demand(const struct obj_dra *d, const json_t *spec, const char *what,
                                 unsigned *accel, struct tpx_err *err)
{
    size_t i;
    const json_t *req;

    json_array_foreach(jget(jget(spec, "devices"), "requests"), i, req)
    {
        const json_t *ex = jget(req, "exactly");
        const json_t *src = ex ? ex : req; /* v1beta1 puts the fields on the request */
        const char *cls = jstr(src, "deviceClassName");
        const char *mode = jstr(src, "allocationMode");
        const json_t *count = jget(src, "count");

        if (!cls || !class_accel(d, cls))
            continue;
        if (mode && strcmp(mode, "All") == 0)
            return tpx_err_set(err, TPX_EINVAL,
                               "%s: request '%s' asks for all devices of '%s'; topox needs a count",
                               what, jstr(req, "name") ? jstr(req, "name") : "?", cls);
        *accel += json_is_integer(count) && json_integer_value(count) > 0
                      ? (unsigned)json_integer_value(count)
                      : 1;
    }
    return TPX_OK;
}

static const struct obj_dra_domain *domain_of(const struct obj_dra *d, const char *ns,
                                              const char *tmpl)
{
    for (size_t i = 0; i < d->ncd; i++) {
        const struct obj_dra_domain *c = &d->cd[i];
        if (strcmp(c->channel_template, tmpl) == 0 && (!ns || !c->ns || strcmp(ns, c->ns) == 0))
            return c;
    }
    return NULL;
}

/* The ComputeDomain whose channel template pod claims, or NULL. */
static const struct obj_dra_domain *claimed_domain(const struct obj_dra *d, const json_t *pod,
                                                   const char *ns)
{
    size_t i;
    const json_t *rc;

    json_array_foreach(jget(jget(pod, "spec"), "resourceClaims"), i, rc)
    {
        const char *tmpl = jstr(rc, "resourceClaimTemplateName");
        const struct obj_dra_domain *c;
        if (!tmpl)
            tmpl = jstr(jget(rc, "source"), "resourceClaimTemplateName");
        if (tmpl && (c = domain_of(d, ns, tmpl)) != NULL)
            return c;
    }
    return NULL;
}

/* The claim that the kube-controller-manager made from entry's template, as the pod's
 * status.resourceClaimStatuses names it, or NULL. */
static const char *generated_claim(const json_t *pod, const char *entry)
{
    size_t i;
    const json_t *st;

    json_array_foreach(jget(jget(pod, "status"), "resourceClaimStatuses"), i, st)
    {
        const char *n = jstr(st, "name");
        if (entry && n && strcmp(n, entry) == 0)
            return jstr(st, "resourceClaimName");
    }
    return NULL;
}

enum tpx_code obj_dra_pod_demand(const struct obj_dra *d, const json_t *pod, const char *ns,
                                 unsigned *accel, const struct obj_dra_domain **domain,
                                 struct tpx_err *err)
{
    return obj_dra_pod_demand_owned(d, pod, ns, accel, domain, NULL, NULL, err);
}

enum tpx_code obj_dra_pod_demand_owned(const struct obj_dra *d, const json_t *pod, const char *ns,
                                       unsigned *accel, const struct obj_dra_domain **domain,
                                       void (*owned)(void *ctx, const json_t *claim), void *ctx,
                                       struct tpx_err *err)
{
    size_t i;
    const json_t *rc;

    *accel = 0;
    if (domain)
        *domain = claimed_domain(d, pod, ns);
    json_array_foreach(jget(jget(pod, "spec"), "resourceClaims"), i, rc)
    {
        const char *claim = jstr(rc, "resourceClaimName");
        const char *tmpl = jstr(rc, "resourceClaimTemplateName");
        const char *made;
        const json_t *o;
        char what[320];

        if (!claim && !tmpl) { /* 1.31-1.33 spelled it source.{resourceClaimName,...} */
            claim = jstr(jget(rc, "source"), "resourceClaimName");
            tmpl = jstr(jget(rc, "source"), "resourceClaimTemplateName");
        }
        if (tmpl && domain_of(d, ns, tmpl))
            continue; /* a ComputeDomain channel: no GPUs */
        made = tmpl ? generated_claim(pod, jstr(rc, "name")) : NULL;
        if (made && !find_named(d->templates, ns, tmpl) && find_claim(d, ns, made)) {
            /* serve watches claims, not templates: the claim made from it says the same */
            claim = made;
            tmpl = NULL;
        }
        if (claim) {
            unsigned before = *accel;
            snprintf(what, sizeof(what), "ResourceClaim '%.200s'", claim);
            o = find_claim(d, ns, claim);
            if (!o)
                return tpx_err_set(err, TPX_ENOENT, "%s is not in the snapshot or manifests", what);
            if (spec_demand(d, jget(o, "spec"), what, accel, err) != TPX_OK)
                return err->code;
            if (owned && *accel > before)
                owned(ctx, o);
        } else if (tmpl) {
            snprintf(what, sizeof(what), "ResourceClaimTemplate '%.200s'", tmpl);
            o = find_named(d->templates, ns, tmpl);
            if (!o)
                return tpx_err_set(err, TPX_ENOENT, "%s is not in the snapshot or manifests", what);
            if (spec_demand(d, jget(jget(o, "spec"), "spec"), what, accel, err) != TPX_OK)
                return err->code;
        }
    }
    return TPX_OK;
}

enum tpx_code obj_dra_extended_demand(const struct obj_dra *d, const json_t *pod, unsigned *accel,
                                      const char **resource, struct tpx_err *err)
{
    *accel = 0;
    *resource = NULL;
    for (size_t i = 0; i < d->ncls && *accel == 0; i++) {
        struct topo_label_config cfg = *topo_label_config_default();
        const char *one[1];

        if (!d->cls[i].accel || !d->cls[i].ext_resource)
            continue;
        one[0] = d->cls[i].ext_resource;
        cfg.resources = one;
        cfg.nresources = 1;
        if (obj_pod_accel(pod, &cfg, accel, NULL, err) != TPX_OK)
            return err->code;
        if (*accel)
            *resource = d->cls[i].ext_resource;
    }
    return TPX_OK;
}

/* The claim that serves a bound pod's extended resource (KEP-5004), or NULL. */
static const json_t *extended_claim(const struct obj_dra *d, const json_t *pod, const char *ns)
{
    const char *claim =
        jstr(jget(jget(pod, "status"), "extendedResourceClaimStatus"), "resourceClaimName");

    return find_claim(d, ns, claim);
}

enum tpx_code obj_dra_facts_demand(const struct obj_dra *d, const json_t *pod,
                                   struct pol_pod_facts *f,
                                   void (*owned)(void *ctx, const json_t *claim), void *ctx,
                                   struct tpx_err *err)
{
    const char *res = obj_dra_resource(d);
    struct tpx_err miss = TPX_ERR_INIT;
    unsigned extra = 0;
    const char *ext = NULL;
    const json_t *xc;

    if (obj_dra_pod_demand_owned(d, pod, f->ns, &extra, NULL, owned, ctx, &miss) != TPX_OK) {
        if (miss.code != TPX_ENOENT) {
            *err = miss;
            return err->code;
        }
        extra = 0; /* a claim made elsewhere: its GPUs, if any, are unknown here */
    }
    if (f->accel == 0 && extra == 0 && obj_dra_extended_demand(d, pod, &extra, &ext, err) != TPX_OK)
        return err->code;
    if (ext)
        f->resource = res; /* the nodes carry DRA GPUs under obj_dra_resource() */
    f->accel += extra;
    if (extra && !f->resource)
        f->resource = res;
    /* the claim behind the pod's extended resource holds what the pod counts */
    if (owned && f->accel > 0 && (xc = extended_claim(d, pod, f->ns)) != NULL)
        owned(ctx, xc);
    if (miss.code != TPX_OK) {
        *err = miss;
        return TPX_ENOENT;
    }
    return TPX_OK;
}

enum tpx_code obj_dra_manifest_demand(const struct obj_dra *d, struct obj_manifest *m,
                                      void (*note)(void *ctx, const char *line), void *ctx,
                                      struct tpx_err *err)
{
    for (size_t t = 0; t < m->ntmpl; t++) {
        struct pol_pod_facts *f = &m->tmpl[t].facts;

        if (obj_dra_facts_demand(d, m->tmpl_json[t], f, NULL, NULL, err) == TPX_ENOENT) {
            if (note) {
                char line[400];
                snprintf(line, sizeof(line),
                         "pod template '%.60s': %.290s; its devices are not counted",
                         f->name ? f->name : "?", err->msg);
                note(ctx, line);
            }
            *err = (struct tpx_err)TPX_ERR_INIT;
        }
        if (err->code != TPX_OK) {
            tpx_err_prefix(err, "pod template '%s'", f->name ? f->name : "?");
            return err->code;
        }
    }
    return TPX_OK;
}

/* Is replica r of m one with a claimant of domain cd? */
static bool replica_claims(const struct obj_dra *d, const struct obj_manifest *m, size_t r,
                           const struct obj_dra_domain *cd)
{
    for (size_t i = m->replica_first_pod[r]; i < m->replica_first_pod[r + 1]; i++) {
        if (claimed_domain(d, obj_manifest_pod_template(m, i), cd->ns) == cd)
            return true;
    }
    return false;
}

enum tpx_code obj_dra_manifest_domains(const struct obj_dra *d, struct obj_manifest *m,
                                       void (*note)(void *ctx, const char *line), void *ctx,
                                       struct tpx_err *err)
{
    (void)err;
    for (size_t c = 0; c < d->ncd; c++) {
        const struct obj_dra_domain *cd = &d->cd[c];
        unsigned n = 0;
        unsigned groups = 0;
        unsigned accel = 0;
        int k = 0;

        /* every group with a claimant shares the domain: all of them, whole, one clique (the
         * GB200 recipes put 1 prefill pod and 8 decode pods in one domain of numNodes 9) */
        for (size_t r = 0; r < m->nreplicas; r++) {
            if (!replica_claims(d, m, r, cd))
                continue;
            groups++;
            for (size_t i = m->replica_first_pod[r]; i < m->replica_first_pod[r + 1]; i++) {
                accel += m->wl[i].accel_per_pod;
                n++;
            }
        }
        if (n == 0)
            continue;
        if (cd->num_nodes && cd->num_nodes != n && note) {
            char line[320];
            snprintf(line, sizeof(line),
                     "ComputeDomain '%.100s': numNodes is %u but %u pods claim its channel; the "
                     "domain is sized for the %u claimants",
                     cd->name, cd->num_nodes, n, n);
            note(ctx, line);
        }
        if (groups > 1 && note) {
            char line[320];
            snprintf(line, sizeof(line),
                     "ComputeDomain '%.100s': its %u claimants come from %u groups of the "
                     "manifest; all are placed whole inside one clique of %u GPUs",
                     cd->name, n, groups, accel);
            note(ctx, line);
        }
        for (size_t r = 0; r < m->nreplicas; r++) {
            if (!replica_claims(d, m, r, cd))
                continue;
            for (size_t i = m->replica_first_pod[r]; i < m->replica_first_pod[r + 1]; i++)
                obj_dra_domain_member(cd, n, accel, k++, &m->wl[i]);
        }
    }
    return TPX_OK;
}

void obj_dra_domain_member(const struct obj_dra_domain *cd, unsigned n, unsigned accel, int index,
                           struct pol_workload *wl)
{
    snprintf(wl->group, sizeof(wl->group), "%.100s/computedomain:%.100s",
             cd->ns ? cd->ns : "default", cd->name);
    snprintf(wl->display, sizeof(wl->display), "%.100s/%.100s (ComputeDomain)",
             cd->ns ? cd->ns : "default", cd->name);
    wl->group_size = n;
    wl->size_explicit = true;
    wl->pod_index = index;
    /* one clique: the whole group is one tensor-parallel group over multi-node NVLink */
    wl->tp = accel ? accel : n;
    wl->pp = 1;
    wl->dp = 1;
    wl->tp_explicit = true;
    wl->pp_explicit = true;
    wl->tp_source = "ComputeDomain";
    wl->has_intent = true;
    /* the domain says it: a known size and one clique are no guess (the certainty rule) */
    wl->layout.tp = wl->tp;
    wl->layout.pp = 1;
    wl->layout.dp = 1;
    wl->layout.accel = wl->tp;
    wl->layout.certain = true;
    wl->layout.why[0] = '\0';
    wl->layout.origin[POL_SIZE_TP] =
        (struct pol_size_origin){POL_SRC_OBJECT, "ComputeDomain", -1, false, NULL};
    if (!wl->layout.placement_ann)
        wl->preferred = false;
}

const struct obj_dra_domain *obj_dra_pod_domain(const struct obj_dra *d, const json_t *pod,
                                                const char *ns)
{
    return claimed_domain(d, pod, ns);
}

bool obj_dra_domain_reason(const struct pol_workload *wl, const char *reason, char *out, size_t len)
{
    const char *has = reason ? strstr(reason, "the largest here has ") : NULL;
    const char *end = has ? strstr(has, ")") : NULL;

    if (!wl->tp_source || strcmp(wl->tp_source, "ComputeDomain") != 0 || !has || !end || !len)
        return false;
    snprintf(out, len,
             "%.200s needs one multi-node NVLink domain (clique) with %u free GPUs for its %u "
             "pods; %.*s",
             wl->display, wl->tp, wl->group_size, (int)(end + 1 - has), has);
    return true;
}

void obj_dra_reword_rejects(const struct obj_manifest *m, struct pol_plan_result *res)
{
    for (size_t k = 0; k < res->nrejected; k++) {
        struct pol_plan_reject *rj = &res->rejected[k];
        size_t r = m->jobs[rj->job].first_replica + rj->replica;
        const struct pol_workload *wl = &m->wl[m->replica_first_pod[r]];
        char why[512];

        if (obj_dra_domain_reason(wl, rj->reason, why, sizeof(why)))
            snprintf(rj->reason, sizeof(rj->reason), "%s", why);
    }
}

void obj_dra_release(struct obj_dra *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->ndev; i++) {
        free(d->dev[i].node);
        free(d->dev[i].driver);
        free(d->dev[i].pool);
        free(d->dev[i].name);
        free(d->dev[i].pcie_root);
    }
    for (size_t i = 0; i < d->ncls; i++) {
        free(d->cls[i].name);
        free(d->cls[i].driver);
        free(d->cls[i].ext_resource);
    }
    for (size_t i = 0; i < d->ncd; i++) {
        free(d->cd[i].ns);
        free(d->cd[i].name);
        free(d->cd[i].channel_template);
    }
    for (size_t i = 0; i < d->nclaim_keys; i++)
        free(d->claim_keys[i]);
    free(d->claim_keys);
    tpx_map_release(&d->claim_ix);
    free(d->dev);
    free(d->cls);
    free(d->cd);
    json_decref(d->claims);
    json_decref(d->templates);
    memset(d, 0, sizeof(*d));
}
