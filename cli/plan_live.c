/* SPDX-License-Identifier: Apache-2.0 */
/* cli/plan_live.c - `topox plan` against the live cluster: one kube_list() per kind, each item
 * given back its kind and apiVersion (list items carry neither) and kept in one snapshot List.
 * The paths, the paging and the pod field selector are serve's (kube/watch.c); only GET is sent. */
#include "cli/plan_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client.h"
#include "kube/config.h"

/* What is listed. The pod selector keeps pods that hold accelerators: bound and not finished
 * ("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed", escaped). */
struct live_kind {
    const char *kind;
    const char *api_version;
    const char *path;
    const char *resource; /* for RBAC messages */
    const char *group;    /* "" for the core group */
    const char *query;
    const char *absent; /* NULL: the server must serve it; else the note when it answers 404 */
};

static const struct live_kind kinds[] = {
    {"Node", "v1", "/api/v1/nodes", "nodes", "", NULL, NULL},
    {"Pod", "v1", "/api/v1/pods", "pods", "",
     "fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
     NULL},
    {"ResourceSlice", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceslices",
     "resourceslices", "resource.k8s.io", NULL,
     "the API server does not serve resource.k8s.io/v1 (DRA, Kubernetes 1.34+): planning without "
     "DRA, on the accelerators Node allocatable lists"},
    {"ResourceClaim", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceclaims",
     "resourceclaims", "resource.k8s.io", NULL, ""},
    {"DeviceClass", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/deviceclasses", "deviceclasses",
     "resource.k8s.io", NULL, ""},
    {"PodGroup", "scheduling.k8s.io/v1beta1", "/apis/scheduling.k8s.io/v1beta1/podgroups",
     "podgroups", "scheduling.k8s.io", NULL,
     "the API server does not serve scheduling.k8s.io/v1beta1 PodGroups (the Workload API): the "
     "job's PodGroups come from its manifest only"},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct gather {
    json_t *items;
    const struct live_kind *k;
    size_t n;
    bool oom;
    bool pending; /* the pods wanted are the ones not bound yet (--pending) */
};

static bool take(void *ctx, json_t *item)
{
    struct gather *g = ctx;

    /* A server that ignores the field selector still sends no pod that holds nothing here (or,
     * for --pending, no pod that is bound already). */
    if (strcmp(g->k->kind, "Pod") == 0 &&
        !json_string_value(json_object_get(json_object_get(item, "spec"), "nodeName")) !=
            g->pending)
        return true;
    if (!json_is_object(item) || json_object_set_new(item, "kind", json_string(g->k->kind)) ||
        json_object_set_new(item, "apiVersion", json_string(g->k->api_version)) ||
        json_array_append(g->items, item)) {
        g->oom = true;
        return false;
    }
    g->n++;
    return true;
}

/* The failure of one LIST, reworded for a person at a terminal. */
static enum tpx_code list_failed(const struct live_kind *k, const char *server, const char *who,
                                 struct tpx_err *err)
{
    char was[sizeof(err->msg)];
    enum tpx_code code = err->code;
    long status = err->http_status;

    snprintf(was, sizeof(was), "%s", err->msg);
    tpx_err_clear(err);
    if (code == TPX_EAPI && status == 401)
        return tpx_err_set(err, TPX_EAPI,
                           "%s: 401 Unauthorized: the API server does not accept the credentials "
                           "of %s (an expired token or certificate?)",
                           server, who);
    if (code == TPX_EAPI && status == 403) {
        tpx_err_set(err, TPX_EAPI,
                    "%s: 403 Forbidden: %s may not list %s%s%s at the cluster scope, which "
                    "`topox plan` reads; bind the ClusterRole topox-planner "
                    "(manifests/planner-rbac.yaml) to it",
                    server, who, k->resource, *k->group ? "." : "", k->group);
        err->http_status = 403;
        return err->code;
    }
    if (code == TPX_EIO || code == TPX_ETIMEOUT)
        return tpx_err_set(err, code, "cannot reach the API server %s: %s", server, was);
    tpx_err_set(err, code, "%s: list %s: %s", server, k->resource, was);
    err->http_status = status;
    return code;
}

/* Append s to q percent-encoded as a query value (RFC 3986 unreserved kept). false when full. */
static bool query_value(char *q, size_t len, const char *s)
{
    size_t n = strlen(q);

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~';
        int w = keep ? snprintf(q + n, len - n, "%c", c) : snprintf(q + n, len - n, "%%%02X", c);
        if (w < 0 || (size_t)w >= len - n)
            return false;
        n += (size_t)w;
    }
    return true;
}

/* The pending pods o asks for, into out->pending. */
static enum tpx_code list_pending(struct kube_client *kc, const struct cmd_plan_live_opts *o,
                                  struct cmd_plan_live *out, const char *who, struct tpx_err *err)
{
    const struct live_kind *pods = &kinds[1]; /* its path and names; the query is this one */
    char query[1024] = "fieldSelector=spec.nodeName%3D%2Cstatus.phase%3DPending";
    struct gather g = {json_array(), pods, 0, false, true};

    if (!g.items)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    /* cluster-wide, as the bound pods are listed (the planner's ClusterRole), the namespace in
     * the field selector */
    if ((o->pending_ns &&
         !(strlen(query) + 32 < sizeof(query) && strcat(query, "%2Cmetadata.namespace%3D") &&
           query_value(query, sizeof(query), o->pending_ns))) ||
        (o->selector && !(strlen(query) + 16 < sizeof(query) && strcat(query, "&labelSelector=") &&
                          query_value(query, sizeof(query), o->selector)))) {
        json_decref(g.items);
        return tpx_err_set(err, TPX_EINVAL, "-n or -l: longer than a selector topox sends");
    }
    if (kube_list(kc, pods->path, query, 0, take, &g, NULL, err) != TPX_OK) {
        json_decref(g.items);
        if (g.oom)
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return list_failed(pods, out->server, who, err);
    }
    out->pending = g.items; /* cmd_plan.c orders them */
    return TPX_OK;
}

enum tpx_code cmd_plan_live_read(const struct cmd_plan_live_opts *o, struct cmd_plan_live *out,
                                 void (*note)(void *ctx, const char *line), void *ctx,
                                 struct tpx_err *err)
{
    struct kube_config cfg;
    struct kube_client *kc = NULL;
    json_t *items = json_array();
    char who[160];
    char line[512];
    size_t counts[NKINDS] = {0};
    bool dra_absent = false;

    memset(out, 0, sizeof(*out));
    if (!items)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    if (kube_config_load_user(o->kubeconfig, o->context, &cfg, err) != TPX_OK)
        goto out;
    if (kube_config_check_scheme(&cfg, o->insecure, "--insecure", err) != TPX_OK)
        goto out;
    /* A person waits for the answer: fewer and shorter retries than serve's. */
    cfg.retries = 1;
    out->server = strdup(cfg.server);
    out->namespace = cfg.namespace ? strdup(cfg.namespace) : NULL;
    if (!out->server || (cfg.namespace && !out->namespace)) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    if (o->context && *o->context)
        snprintf(who, sizeof(who), "the user of context '%s'", o->context);
    else
        snprintf(who, sizeof(who), "%s", "the kubeconfig's user");
    kc = kube_client_new(&cfg, err);
    if (!kc)
        goto out;
    for (size_t i = 0; i < NKINDS; i++) {
        struct gather g = {items, &kinds[i], 0, false, false};

        if (kinds[i].absent && dra_absent && strcmp(kinds[i].group, "resource.k8s.io") == 0)
            continue;
        if (kube_list(kc, kinds[i].path, kinds[i].query, 0, take, &g, NULL, err) != TPX_OK) {
            if (g.oom) {
                tpx_err_set(err, TPX_ENOMEM, "out of memory");
                goto out;
            }
            if (kinds[i].absent && err->code == TPX_EAPI && err->http_status == 404) {
                if (*kinds[i].absent && note)
                    note(ctx, kinds[i].absent);
                dra_absent = dra_absent || strcmp(kinds[i].group, "resource.k8s.io") == 0;
                tpx_err_clear(err);
                continue;
            }
            list_failed(&kinds[i], out->server, who, err);
            goto out;
        }
        counts[i] = g.n;
    }
    if (o->pending && list_pending(kc, o, out, who, err) != TPX_OK)
        goto out;
    snprintf(line, sizeof(line),
             "read from %s: %zu nodes, %zu bound pods, %zu ResourceSlices, %zu ResourceClaims, "
             "%zu DeviceClasses, %zu PodGroups",
             out->server, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
    if (o->pending) {
        size_t used = strlen(line);
        snprintf(line + used, sizeof(line) - used, ", %zu pending pods%s%s%s%s",
                 json_array_size(out->pending), o->pending_ns ? " in " : "",
                 o->pending_ns ? o->pending_ns : "", o->selector ? " with " : "",
                 o->selector ? o->selector : "");
    }
    if (note)
        note(ctx, line);
    out->list = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items);
    items = NULL;
    if (!out->list)
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
out:
    json_decref(items);
    kube_client_free(kc);
    kube_config_release(&cfg);
    if (err->code != TPX_OK)
        cmd_plan_live_release(out);
    return err->code;
}

void cmd_plan_live_release(struct cmd_plan_live *p)
{
    json_decref(p->list);
    json_decref(p->pending);
    free(p->server);
    free(p->namespace);
    memset(p, 0, sizeof(*p));
}
