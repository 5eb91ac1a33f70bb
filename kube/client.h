/* SPDX-License-Identifier: Apache-2.0 */
/* kube/client.h - the Kubernetes API client (libcurl): configuration from the pod's service
 * account or a kubeconfig, GET/POST/PATCH with caps and timeouts, paged LIST, streaming GET for
 * watches, and the Binding, node PATCH and Event helpers. Only kube/ sees curl.
 *
 * Threads: a struct ext_kube holds one CURL handle and is used by one thread at a time
 * (CURLOPT_NOSIGNAL is set). Give every thread its own. ext_kube_global_init() must have run
 * first, before any thread exists (main.c does it for commands that need the API client). */
#ifndef TPX_EXTENDER_KUBE_H
#define TPX_EXTENDER_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/buf.h"
#include "common/err.h"

/* libcurl's process-wide setup: call once from main() before any thread exists; TPX_EIO when
 * libcurl cannot start. ext_kube_global_cleanup() undoes it after the last client is freed. */
enum tpx_code ext_kube_global_init(struct tpx_err *err);
void ext_kube_global_cleanup(void);

/* The libcurl version and its TLS library ("8.5.0 OpenSSL/3.0.15") for `topox version`, written
 * into buf (always NUL-terminated); returns buf. */
const char *ext_kube_library_version(char *buf, size_t len);

/* Where the service-account files live inside a pod; TOPOX_SA_DIR overrides it (tests). */
#define EXT_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * How to reach the API server. Every string is malloc'd and owned by the struct: fill it with
 * ext_kube_config_load() (or the _in_cluster/_kubeconfig variants), or by hand with strdup'd
 * strings, and free it with ext_kube_config_release(). Zero numbers mean "the default".
 */
struct ext_kube_config {
    char *server;  /* "https://host:port" (IPv6 hosts bracketed), no trailing '/' */
    char *ca_file; /* PEM bundle to trust, or NULL for the system store */
    char *ca_data; /* PEM bytes (already base64-decoded), or NULL; wins over ca_file */
    size_t ca_data_len;
    char *token;      /* a fixed bearer token, or NULL */
    char *token_file; /* re-read every token_reload_s seconds and after a 401; wins over token */
    char *cert_file;  /* client certificate (PEM) */
    char *key_file;   /* its key */
    char *cert_data;  /* or the same as bytes */
    size_t cert_data_len;
    char *key_data;
    size_t key_data_len;
    char *namespace; /* the pod's (or the context's) namespace, or NULL */
    bool insecure;   /* skip server certificate checks (kubeconfig insecure-skip-tls-verify) */
    long timeout_ms; /* whole request, default 10 000 */
    long connect_timeout_ms; /* default 5 000 */
    size_t max_body;         /* cap on a response body, default 256 MiB */
    unsigned token_reload_s; /* default 60 */
    unsigned retries;        /* extra tries for GET on transport errors, 429 and 5xx; default 3 */
    unsigned backoff_ms;     /* first retry delay, doubled each time, with jitter; default 200 */
};

/* In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 bracketed), the
 * token file, ca.crt and namespace from EXT_KUBE_SA_DIR or $TOPOX_SA_DIR. TPX_ENOENT when the
 * variables are unset (not in a cluster) or the token cannot be read. *cfg is zeroed first;
 * release it also on failure. */
enum tpx_code ext_kube_config_in_cluster(struct ext_kube_config *cfg, struct tpx_err *err);

/* The current context of a kubeconfig file: server, certificate-authority(-data),
 * insecure-skip-tls-verify, token, tokenFile, client-certificate(-data), client-key(-data),
 * namespace. Relative paths are taken from the file's folder. TPX_ENOTSUP for exec or
 * auth-provider users, TPX_EPARSE / TPX_ENOENT with "FILE: ..." messages otherwise. */
enum tpx_code ext_kube_config_kubeconfig(const char *path, struct ext_kube_config *cfg,
                                         struct tpx_err *err);

/* The usual search: `path` if not NULL, else the first file of $KUBECONFIG (a ':' list), else
 * in-cluster. */
enum tpx_code ext_kube_config_load(const char *path, struct ext_kube_config *cfg,
                                   struct tpx_err *err);

/* Deep copy (for giving a watch thread its own client). */
enum tpx_code ext_kube_config_copy(struct ext_kube_config *dst, const struct ext_kube_config *src,
                                   struct tpx_err *err);

/* Free the strings and zero the struct. Safe to call twice. */
void ext_kube_config_release(struct ext_kube_config *cfg);

struct ext_kube; /* opaque */

/* A client for cfg (copied: the caller keeps cfg). NULL with *err set when curl cannot be set up
 * or the token cannot be read. Free with ext_kube_free(). */
struct ext_kube *ext_kube_new(const struct ext_kube_config *cfg, struct tpx_err *err);
void ext_kube_free(struct ext_kube *k); /* accepts NULL */

/* Make a long call (a watch) give up early: cancelled(ctx) is polled by libcurl at least once a
 * second while a transfer runs (and every 50 ms during a retry backoff), and a true answer ends
 * it with TPX_EIO "cancelled". May be set to NULL. */
void ext_kube_set_cancel(struct ext_kube *k, bool (*cancelled)(void *ctx), void *ctx);

/* One request. method "GET", "POST", "PATCH", "DELETE"; path starts with '/' and carries any
 * query; body (may be NULL) is sent with content_type (NULL: application/json). The response
 * body goes into out (reset first; it may be NULL to discard it) and is capped at max_body.
 * Non-2xx: TPX_EAPI with err->http_status and the Status message ("GET /api/v1/nodes: HTTP 403:
 * nodes is forbidden: ..."); transport failures TPX_EIO, deadlines TPX_ETIMEOUT. A 401 re-reads
 * the token file and tries once more; GET also retries transport errors, 429 and 5xx with
 * backoff and jitter. */
enum tpx_code ext_kube_request(struct ext_kube *k, const char *method, const char *path,
                               const char *content_type, const char *body, struct tpx_buf *out,
                               struct tpx_err *err);

/* GET and parse: *out is a new reference (json_decref it) or NULL on failure. */
enum tpx_code ext_kube_get_json(struct ext_kube *k, const char *path, json_t **out,
                                struct tpx_err *err);

/* Called once per item of a LIST, in order; the item is borrowed for the call. Return false to
 * stop (the list then fails with TPX_EINVAL "stopped by the caller"). */
typedef bool (*ext_kube_item_fn)(void *ctx, json_t *item);

/* LIST a collection page by page: GET path?limit=N[&continue=T]&<query> until no continue
 * token. query (may be NULL) is an already-escaped "a=b&c=d" string. rv (may be NULL) receives
 * the list's metadata.resourceVersion (malloc'd; free it). A 410 on a continue token restarts
 * nothing: it is returned as TPX_EAPI with http_status 410, and the caller lists again. */
enum tpx_code ext_kube_list(struct ext_kube *k, const char *path, const char *query, unsigned limit,
                            ext_kube_item_fn fn, void *ctx, char **rv, struct tpx_err *err);

/* Streaming GET (a watch): each body chunk is handed to on_data as it arrives (return false to
 * stop: the call then returns TPX_OK). timeout_ms bounds the whole call (0: only the cancel hook
 * and TCP keepalive end it). A non-2xx answer is not streamed: it comes back as TPX_EAPI with
 * http_status, as for ext_kube_request(). Only a 401 is retried (once, with a fresh token): data
 * may already have been delivered, so the caller decides about other failures. */
enum tpx_code ext_kube_stream(struct ext_kube *k, const char *path, long timeout_ms,
                              bool (*on_data)(void *ctx, const char *p, size_t n), void *ctx,
                              struct tpx_err *err);

/* One annotation for a Binding. Strings borrowed for the call. */
struct ext_kube_kv {
    const char *key;
    const char *value;
};

/* POST /api/v1/namespaces/NS/pods/NAME/binding with the exact Binding of extender-protocol.md
 * 5.1: metadata {name, namespace, uid (precondition, omitted when NULL or ""), annotations},
 * target {apiVersion v1, kind Node, name node}. Any 2xx is success. 409, 404 and 403 become
 * clear TPX_EAPI messages ("pod 'ns/name' is already bound or was re-created (409 Conflict)...").
 */
enum tpx_code ext_kube_bind(struct ext_kube *k, const char *ns, const char *name, const char *uid,
                            const char *node, const struct ext_kube_kv *annotations, size_t nann,
                            struct tpx_err *err);

/* PATCH /api/v1/nodes/NODE with Content-Type application/merge-patch+json; patch_json is the
 * patch text as the caller built it (e.g. {"metadata":{"labels":{...},"annotations":{...}}}). */
enum tpx_code ext_kube_patch_node(struct ext_kube *k, const char *node, const char *patch_json,
                                  struct tpx_err *err);

/* A core/v1 Event about a pod. Strings borrowed for the call; the caller deduplicates. */
struct ext_kube_event {
    const char *ns;        /* the pod's namespace (where the event is created) */
    const char *pod;       /* involvedObject name */
    const char *pod_uid;   /* may be NULL */
    const char *type;      /* "Normal" or "Warning" */
    const char *reason;    /* CamelCase, e.g. "Placed", "GroupRejected" */
    const char *message;   /* e.g. "placed replica vllm/0 stage 1 in rack r3, domain n12" */
    const char *component; /* source.component and reportingComponent; NULL: "topox" */
    const char *name;      /* metadata.name, fixed for the event's life so a retry whose first
                            * try's answer was lost gets 409 instead of making a second Event
                            * (client-go's recorder does the same); NULL: generateName "POD." */
    time_t at;             /* when it happened (first and last timestamps); 0: now */
};

/* POST /api/v1/namespaces/NS/events with a new Event (count 1). A named event that already exists
 * (409 AlreadyExists: an earlier try went through) is success. */
enum tpx_code ext_kube_event(struct ext_kube *k, const struct ext_kube_event *ev,
                             struct tpx_err *err);

/* Build the Binding body ext_kube_bind() sends (malloc'd JSON text; free it), for tests and
 * logs. NULL when out of memory. */
char *ext_kube_binding_body(const char *ns, const char *name, const char *uid, const char *node,
                            const struct ext_kube_kv *annotations, size_t nann);

/* Requests sent so far, 401 retries and GET retries included (tests, metrics). */
unsigned long ext_kube_requests(const struct ext_kube *k);

#endif
