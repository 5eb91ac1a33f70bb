/* SPDX-License-Identifier: Apache-2.0 */
/* kube/bodies.c - the requests with a body topox sends: the pod Binding, the node merge PATCH and
 * core/v1 Events, each built with jansson and sent through kube/client. */
#include "kube/bodies.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/internal.h"
#include "common/banned.h"

char *kube_binding_body(const char *ns, const char *name, const char *uid, const char *node,
                        const struct kube_kv *annotations, size_t nann)
{
    json_t *root = json_object();
    json_t *meta = json_object();
    json_t *target = json_object();
    json_t *ann = nann ? json_object() : NULL;
    char *text = NULL;

    if (!root || !meta || !target || (nann && !ann)) {
        json_decref(root);
        json_decref(meta);
        json_decref(target);
        json_decref(ann);
        return NULL;
    }
    json_object_set_new(root, "apiVersion", json_string("v1"));
    json_object_set_new(root, "kind", json_string("Binding"));
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "namespace", json_string(ns));
    if (uid && *uid)
        json_object_set_new(meta, "uid", json_string(uid));
    for (size_t i = 0; i < nann; i++)
        json_object_set_new(ann, annotations[i].key, json_string(annotations[i].value));
    if (ann)
        json_object_set_new(meta, "annotations", ann);
    json_object_set_new(root, "metadata", meta);
    json_object_set_new(target, "apiVersion", json_string("v1"));
    json_object_set_new(target, "kind", json_string("Node"));
    json_object_set_new(target, "name", json_string(node));
    json_object_set_new(root, "target", target);
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return text;
}

/* Names that go into a URL path: reject what would change the path. */
static bool is_path_safe(const char *s)
{
    if (!s || !*s || strlen(s) > 253)
        return false;
    for (const char *p = s; *p; p++) {
        if (*p == '/' || *p == '?' || *p == '#' || *p == '%' || (unsigned char)*p <= ' ')
            return false;
    }
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

enum tpx_code kube_bind(struct kube_client *k, const char *ns, const char *name, const char *uid,
                        const char *node, const struct kube_kv *annotations, size_t nann,
                        struct tpx_err *err)
{
    struct tpx_err e = TPX_ERR_INIT;
    char *body;
    char path[600];
    const char *m;

    if (!is_path_safe(ns) || !is_path_safe(name) || !node || !*node)
        return tpx_err_set(err, TPX_EINVAL, "bind: bad pod '%s/%s' or node '%s'", ns ? ns : "",
                           name ? name : "", node ? node : "");
    body = kube_binding_body(ns, name, uid, node, annotations, nann);
    if (!body)
        return tpx_err_set(err, TPX_ENOMEM, "bind: out of memory");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    kube_request(k, "POST", path, "application/json", body, NULL, &e);
    free(body);
    if (e.code == TPX_OK)
        return TPX_OK;
    /* The Status message follows the last ": HTTP nnn: " of the generic text. */
    m = strstr(e.msg, ": HTTP ");
    m = m ? strstr(m + 7, ": ") : NULL;
    m = m ? m + 2 : e.msg;
    err->http_status = e.http_status;
    switch (e.http_status) {
    case 409:
        return tpx_err_set(err, TPX_EAPI,
                           "pod '%s/%s' is already bound or was re-created (409 Conflict): %s", ns,
                           name, m);
    case 404:
        return tpx_err_set(err, TPX_EAPI, "pod '%s/%s' no longer exists (404 Not Found): %s", ns,
                           name, m);
    case 403:
        return tpx_err_set(err, TPX_EAPI,
                           "not allowed to bind pod '%s/%s' (403 Forbidden; the service account "
                           "needs create on pods/binding): %s",
                           ns, name, m);
    default:
        tpx_err_set(err, e.code, "%s", e.msg);
        tpx_err_prefix(err, "bind pod '%s/%s' to node '%s'", ns, name, node);
        return err->code;
    }
}

enum tpx_code kube_patch_node(struct kube_client *k, const char *node, const char *patch_json,
                              struct tpx_err *err)
{
    char path[320];

    if (!is_path_safe(node))
        return tpx_err_set(err, TPX_EINVAL, "patch node: bad node name '%s'", node ? node : "");
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    if (kube_request(k, "PATCH", path, "application/merge-patch+json", patch_json, NULL, err) !=
        TPX_OK)
        tpx_err_prefix(err, "patch node '%s'", node);
    return err->code;
}

char *kube_nominate_body(const char *node)
{
    json_t *root = json_pack("{s:{s:o}}", "status", "nominatedNodeName",
                             node && *node ? json_string(node) : json_null());
    char *body = root ? json_dumps(root, JSON_COMPACT) : NULL;

    json_decref(root);
    return body;
}

enum tpx_code kube_nominate(struct kube_client *k, const char *ns, const char *name,
                            const char *node, struct tpx_err *err)
{
    char path[600];
    char *body;

    if (!is_path_safe(ns) || !is_path_safe(name))
        return tpx_err_set(err, TPX_EINVAL, "nominate: bad pod '%s/%s'", ns ? ns : "",
                           name ? name : "");
    body = kube_nominate_body(node);
    if (!body)
        return tpx_err_set(err, TPX_ENOMEM, "nominate: out of memory");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    if (kube_request(k, "PATCH", path, "application/merge-patch+json", body, NULL, err) != TPX_OK)
        tpx_err_prefix(err, "nominate pod '%s/%s'", ns, name);
    free(body);
    return err->code;
}

enum tpx_code kube_event(struct kube_client *k, const struct kube_event *ev, struct tpx_err *err)
{
    const char *comp = ev->component ? ev->component : "topox";
    char ts[32];
    char host[256];
    char gen[300];
    char path[320];
    struct tm tm;
    time_t now = ev->at ? ev->at : time(NULL);
    json_t *root;
    json_t *obj;
    char *body;

    if (!is_path_safe(ev->ns) || !is_path_safe(ev->pod) || (ev->name && !is_path_safe(ev->name)))
        return tpx_err_set(err, TPX_EINVAL, "event: bad pod '%s/%s'", ev->ns ? ev->ns : "",
                           ev->pod ? ev->pod : "");
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "topox");
    host[sizeof(host) - 1] = '\0';
    snprintf(gen, sizeof(gen), "%s.", ev->pod);
    root = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s},"
        " s:s, s:s, s:i, s:s, s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen, "namespace", ev->ns,
        "involvedObject", "apiVersion", "v1", "kind", "Pod", "namespace", ev->ns, "name", ev->pod,
        "reason", ev->reason ? ev->reason : "", "message", ev->message ? ev->message : "", "type",
        ev->type ? ev->type : "Normal", "source", "component", comp, "firstTimestamp", ts,
        "lastTimestamp", ts, "count", 1, "reportingComponent", comp, "reportingInstance", host);
    if (!root)
        return tpx_err_set(err, TPX_ENOMEM, "event: cannot build the Event");
    if (ev->name && *ev->name) {
        obj = json_object_get(root, "metadata");
        json_object_del(obj, "generateName");
        json_object_set_new(obj, "name", json_string(ev->name));
    }
    obj = json_object_get(root, "involvedObject");
    if (ev->pod_uid && *ev->pod_uid)
        json_object_set_new(obj, "uid", json_string(ev->pod_uid));
    body = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!body)
        return tpx_err_set(err, TPX_ENOMEM, "event: out of memory");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ev->ns);
    kube_request(k, "POST", path, "application/json", body, NULL, err);
    free(body);
    if (err->code == TPX_EAPI && err->http_status == 409 && ev->name && *ev->name) {
        tpx_err_clear(err); /* created by an earlier try whose answer was lost */
        return TPX_OK;
    }
    if (err->code != TPX_OK)
        tpx_err_prefix(err, "event for pod '%s/%s'", ev->ns, ev->pod);
    return err->code;
}
