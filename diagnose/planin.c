/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/planin.c - the plan `topox diagnose` judges: `topox plan -o json` (placements[] and
 * estimates[]) or `-o json|yaml --record` (records with pods[]), into struct dg_plan. */
#include "diagnose/input.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/str.h"
#include "objects/yamljson.h"
#include "policy/estimate.h"
#include "common/banned.h"

static unsigned uint_of(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) > 0 ? (unsigned)json_integer_value(v) : 0;
}

static double real_or_nan(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str_of(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

static struct dg_replica_plan *add_replica(struct dg_plan *p, size_t *alloc, struct tpx_err *err)
{
    struct dg_replica_plan *r;

    if (!TPX_GROW(p->r, *alloc, p->n + 1)) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return NULL;
    }
    r = &p->r[p->n++];
    memset(r, 0, sizeof(*r));
    r->bubble = r->imbalance = NAN;
    return r;
}

/* pp, tp and num_ubatches set: the bubble is the planner's own formula (policy/estimate.c). */
static void finish_replica(struct dg_replica_plan *r)
{
    r->bubble = r->num_ubatches ? pol_bubble(r->pp, r->num_ubatches) : NAN;
}

static enum tpx_code add_pod(struct dg_replica_plan *r, size_t *alloc, const char *name,
                             const char *node, unsigned stage, struct tpx_err *err)
{
    struct dg_pod *p;
    const char *slash = strchr(r->job, '/');

    if (!TPX_GROW(r->pods, *alloc, r->npods + 1))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    p = &r->pods[r->npods++];
    memset(p, 0, sizeof(*p));
    tpx_str_copy(p->name, sizeof(p->name), name);
    tpx_str_copy(p->node, sizeof(p->node), node);
    if (slash && (size_t)(slash - r->job) < sizeof(p->ns)) {
        memcpy(p->ns, r->job, (size_t)(slash - r->job));
        p->ns[slash - r->job] = '\0';
    }
    p->stage = stage;
    return TPX_OK;
}

/* One record of `plan --record`. */
static enum tpx_code add_record(struct dg_plan *out, size_t *alloc, const json_t *rec,
                                const char *name, struct tpx_err *err)
{
    const json_t *par = json_object_get(rec, "parallelism");
    const json_t *use = json_object_get(rec, "utilization");
    const json_t *pods = json_object_get(rec, "pods");
    struct dg_replica_plan *r;
    size_t palloc = 0, i;
    const json_t *p;

    if (!json_is_object(par) || !json_is_string(json_object_get(rec, "replica")))
        return tpx_err_set(err, TPX_EPARSE,
                           "%s: a record without 'replica' and 'parallelism': not `topox plan "
                           "--record` output",
                           name);
    r = add_replica(out, alloc, err);
    if (!r)
        return err->code;
    tpx_str_copy(r->job, sizeof(r->job), str_of(json_object_get(rec, "replica")));
    r->index = uint_of(json_object_get(rec, "index"));
    r->pp = uint_of(json_object_get(par, "pipeline_parallel_size"));
    r->tp = uint_of(json_object_get(par, "tensor_parallel_size"));
    r->num_ubatches = uint_of(json_object_get(par, "num_ubatches"));
    r->imbalance = real_or_nan(json_object_get(use, "stage_imbalance"));
    tpx_str_copy(r->interconnect, sizeof(r->interconnect),
                 str_of(json_object_get(json_object_get(rec, "hardware"), "interconnect")));
    if (!r->pp)
        r->pp = 1;
    finish_replica(r);
    json_array_foreach(pods, i, p)
    {
        if (add_pod(r, &palloc, str_of(json_object_get(p, "pod")),
                    str_of(json_object_get(p, "node")), uint_of(json_object_get(p, "stage")),
                    err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

/* `plan -o json`: estimates[] give the replicas, placements[] their pods. */
static enum tpx_code add_plan_object(struct dg_plan *out, size_t *alloc, const json_t *doc,
                                     const char *name, struct tpx_err *err)
{
    const json_t *est = json_object_get(doc, "estimates");
    const json_t *pl = json_object_get(doc, "placements");
    size_t first = out->n, i, j;
    const json_t *e, *p;

    if (!json_is_array(est) || !json_is_array(pl))
        return tpx_err_set(err, TPX_EPARSE,
                           "%s: no 'estimates' and 'placements': not `topox plan -o json` output",
                           name);
    json_array_foreach(est, i, e)
    {
        struct dg_replica_plan *r = add_replica(out, alloc, err);
        if (!r)
            return err->code;
        tpx_str_copy(r->job, sizeof(r->job), str_of(json_object_get(e, "job")));
        r->index = uint_of(json_object_get(e, "replica"));
        r->pp = uint_of(json_object_get(e, "pp"));
        r->tp = uint_of(json_object_get(e, "tp"));
        r->num_ubatches = uint_of(json_object_get(e, "num_ubatches"));
        r->imbalance = real_or_nan(json_object_get(e, "stage_imbalance"));
        tpx_str_copy(r->interconnect, sizeof(r->interconnect),
                     str_of(json_object_get(e, "interconnect")));
        if (!r->pp)
            r->pp = 1;
        finish_replica(r);
    }
    for (i = first; i < out->n; i++) {
        struct dg_replica_plan *r = &out->r[i];
        size_t palloc = 0;
        json_array_foreach(pl, j, p)
        {
            if (strcmp(str_of(json_object_get(p, "job")), r->job) != 0 ||
                uint_of(json_object_get(p, "replica")) != r->index)
                continue;
            if (add_pod(r, &palloc, str_of(json_object_get(p, "pod")),
                        str_of(json_object_get(p, "node")), uint_of(json_object_get(p, "stage")),
                        err) != TPX_OK)
                return err->code;
        }
    }
    return TPX_OK;
}

enum tpx_code dg_plan_add_json(struct dg_plan *out, const json_t *doc, const char *name,
                               struct tpx_err *err)
{
    size_t alloc = out->n, i;
    const json_t *rec;

    if (json_is_array(doc)) {
        json_array_foreach(doc, i, rec)
        {
            if (add_record(out, &alloc, rec, name, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (json_is_object(doc) && json_object_get(doc, "parallelism"))
        return add_record(out, &alloc, doc, name, err);
    if (json_is_object(doc))
        return add_plan_object(out, &alloc, doc, name, err);
    return tpx_err_set(err, TPX_EPARSE, "%s: not `topox plan -o json` output", name);
}

enum tpx_code dg_plan_load(struct dg_plan *out, const char *path, struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};
    enum tpx_code rc = obj_yaml_load_file(path, DG_MAX_FILE, &d, err);

    for (size_t i = 0; rc == TPX_OK && i < d.n; i++)
        rc = dg_plan_add_json(out, d.docs[i], path, err);
    if (rc == TPX_OK && out->n == 0)
        rc = tpx_err_set(err, TPX_EPARSE, "%s: no replica in the plan", path);
    obj_yaml_docs_release(&d);
    return rc;
}

void dg_plan_release(struct dg_plan *p)
{
    for (size_t i = 0; p && i < p->n; i++)
        free(p->r[i].pods);
    if (p) {
        free(p->r);
        memset(p, 0, sizeof(*p));
    }
}
