/* SPDX-License-Identifier: Apache-2.0 */
/* kube/client.h - the Kubernetes API client (libcurl): configuration from the pod's service
 * account or a kubeconfig, GET/POST/PATCH with caps and timeouts, paged LIST, streaming GET for
 * watches, and the Binding, node PATCH and Event helpers. Only kube/ sees curl.
 *
 * Threads: a struct kube_client holds one CURL handle and is used by one thread at a time
 * (CURLOPT_NOSIGNAL is set). Give every thread its own. kube_global_init() must have run
 * first, before any thread exists (main.c does it for commands that need the API client).
 * The handle is configured once in kube_client_new() (TLS material, timeouts, keepalive,
 * callbacks); each request sets only its method, URL, body, headers and timeout, and the handle is
 * kept, so its connections, DNS and TLS session caches serve the client's next request. */
#ifndef TPX_KUBE_CLIENT_H
#define TPX_KUBE_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/buf.h"
#include "common/err.h"
#include "kube/config.h"

/* libcurl's process-wide setup: call once from main() before any thread exists; TPX_EIO when
 * libcurl cannot start. kube_global_cleanup() undoes it after the last client is freed. */
enum tpx_code kube_global_init(struct tpx_err *err);
void kube_global_cleanup(void);

/* The libcurl version and its TLS library ("8.5.0 OpenSSL/3.0.15") for `topox version`, written
 * into buf (always NUL-terminated); returns buf. */
const char *kube_library_version(char *buf, size_t len);

struct kube_client; /* opaque */

/* A client for cfg (copied: the caller keeps cfg). NULL with *err set when curl cannot be set up
 * or the token cannot be read. Free with kube_client_free(). */
struct kube_client *kube_client_new(const struct kube_config *cfg, struct tpx_err *err);
void kube_client_free(struct kube_client *k); /* accepts NULL */

/* Make a long call (a watch) give up early: cancelled(ctx) is polled by libcurl at least once a
 * second while a transfer runs (and every 50 ms during a retry backoff), and a true answer ends
 * it with TPX_EIO "cancelled". May be set to NULL. */
void kube_set_cancel(struct kube_client *k, bool (*cancelled)(void *ctx), void *ctx);

/* One request. method "GET", "POST", "PATCH", "DELETE"; path starts with '/' and carries any
 * query; body (may be NULL) is sent with content_type (NULL: application/json). The response
 * body goes into out (reset first; it may be NULL to discard it) and is capped at max_body.
 * Non-2xx: TPX_EAPI with err->http_status and the Status message ("GET /api/v1/nodes: HTTP 403:
 * nodes is forbidden: ..."); transport failures TPX_EIO, deadlines TPX_ETIMEOUT. A 401 re-reads
 * the token file and tries once more; GET also retries transport errors, 429 and 5xx with
 * backoff and jitter. */
enum tpx_code kube_request(struct kube_client *k, const char *method, const char *path,
                           const char *content_type, const char *body, struct tpx_buf *out,
                           struct tpx_err *err);

/* GET and parse: *out is a new reference (json_decref it) or NULL on failure. */
enum tpx_code kube_get_json(struct kube_client *k, const char *path, json_t **out,
                            struct tpx_err *err);

/* Called once per item of a LIST, in order; the item is borrowed for the call. Return false to
 * stop (the list then fails with TPX_EINVAL "stopped by the caller"). */
typedef bool (*kube_item_fn)(void *ctx, json_t *item);

/* Items per LIST page when the caller passes 0 (client-go's pager asks for 500; topox asks for
 * fewer so that a page of large Pods stays well under max_body). */
#define KUBE_LIST_LIMIT 100U

/* Items one kube_list() takes before it stops with TPX_ETOOBIG: far above the 150,000 pods of the
 * largest cluster Kubernetes supports, so only a list that never ends reaches it. */
#define KUBE_LIST_ITEMS_MAX 2000000UL

/* LIST a collection page by page: GET path?limit=N[&continue=T]&<query> until no continue
 * token (limit 0: KUBE_LIST_LIMIT). A page over max_body (TPX_ETOOBIG) is asked for again
 * with half the limit, down to 1, with one TPX_WARN line each time; the smaller limit is kept for
 * the rest of the list. query (may be NULL) is an already-escaped "a=b&c=d" string. rv (may be
 * NULL) receives the list's metadata.resourceVersion (malloc'd; free it). A 410 on a continue token
 * restarts nothing: it is returned as TPX_EAPI with http_status 410, and the caller lists again.
 * A page whose continue token is the one it was asked with (the next page would be this one, for
 * ever) stops the list with TPX_EAPI, and more than KUBE_LIST_ITEMS_MAX items with TPX_ETOOBIG. */
enum tpx_code kube_list(struct kube_client *k, const char *path, const char *query, unsigned limit,
                        kube_item_fn fn, void *ctx, char **rv, struct tpx_err *err);

/* Streaming GET (a watch): each body chunk is handed to on_data as it arrives (return false to
 * stop: the call then returns TPX_OK). timeout_ms bounds the whole call (0: only the cancel hook
 * and TCP keepalive end it). A non-2xx answer is not streamed: it comes back as TPX_EAPI with
 * http_status, as for kube_request(). Only a 401 is retried (once, with a fresh token): data
 * may already have been delivered, so the caller decides about other failures. */
enum tpx_code kube_stream(struct kube_client *k, const char *path, long timeout_ms,
                          bool (*on_data)(void *ctx, const char *p, size_t n), void *ctx,
                          struct tpx_err *err);

/* Requests sent so far, 401 retries and GET retries included (tests, metrics). */
unsigned long kube_requests(const struct kube_client *k);

#endif
