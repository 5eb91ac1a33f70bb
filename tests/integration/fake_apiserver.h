/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/fake_apiserver.h - an in-process Kubernetes API server for tests
 * (libmicrohttpd, one thread per connection, 127.0.0.1 on port 0). It serves the node and pod
 * lists of tests/fixtures/apiserver (and ResourceSlices, ResourceClaims, DeviceClasses, empty
 * until set) with limit/continue paging, scripted watch streams written in
 * small chunks (bookmarks, ERROR 410, dropped connections), pod bindings (201, then 409 for a
 * second bind; 404 for unknown pods; 403 in namespace "locked"), single Node GETs, node merge
 * PATCHes (applied to the served node list, RFC 7386), pod status merge PATCHes (applied to the
 * served pod; 404 for an unknown one, 403 in namespace "locked") and Event POSTs, which it
 * records for assertions. On demand: 401 until the client shows the expected
 * bearer token, slow answers, dropped answers and 5xx answers.
 *
 * Thread-safe: tests call these while the server's threads answer. Not for production. */
#ifndef TPX_TEST_FAKE_APISERVER_H
#define TPX_TEST_FAKE_APISERVER_H

#include <stddef.h>

struct fake_api;

/* Start on 127.0.0.1, port 0, serving FIXTURES/nodes-list.json and pods-list.json. NULL when
 * MHD cannot start or a fixture is missing (a message goes to stderr). */
struct fake_api *fake_api_start(const char *fixtures_dir);

/* The bound port. */
int fake_api_port(const struct fake_api *f);

/* "http://127.0.0.1:PORT" (static storage inside f). */
const char *fake_api_url(const struct fake_api *f);

/* Stop: ends held watch streams, joins every connection thread, frees. Accepts NULL. */
void fake_api_stop(struct fake_api *f);

/* Require "Authorization: Bearer TOKEN" (NULL: accept anything). Others get 401. */
void fake_api_set_token(struct fake_api *f, const char *token);

/* Replace the list served at path ("/api/v1/nodes", "/api/v1/pods", or
 * "/apis/resource.k8s.io/v1/{resourceslices,resourceclaims,deviceclasses}", which start empty)
 * with json_text. /apis/resource.nvidia.com/v1beta1/computedomains (no CRD) and
 * /apis/scheduling.k8s.io/v1beta1/podgroups (no Workload API) are not served (404) until they are
 * set. json_text NULL stops serving path (404, as a server without that API group answers). */
int fake_api_set_list(struct fake_api *f, const char *path, const char *json_text);

/* How a scripted watch ends after its body is sent. */
enum fake_watch_end {
    FAKE_WATCH_CLOSE, /* clean end of the chunked stream (timeoutSeconds ran out) */
    FAKE_WATCH_DROP,  /* cut the connection without the final chunk */
    FAKE_WATCH_HOLD,  /* keep the stream open, sending nothing, until the server stops */
};

/* Queue the answer to the next WATCH on path: body (newline-delimited events, copied) sent in
 * pieces of `chunk` bytes (0: all at once), then `end`. Watches with an empty queue are held open
 * without events. */
void fake_api_push_watch(struct fake_api *f, const char *path, const char *body, size_t chunk,
                         enum fake_watch_end end);

/* Queue a plain status answer (e.g. 410 with a Status body) to the next WATCH on path. */
void fake_api_push_watch_status(struct fake_api *f, const char *path, int status, const char *body);

/* The next n requests that are not watches: answer `status` with a Status body (status > 0), or
 * be cut mid-body (status == 0). */
void fake_api_fail_next(struct fake_api *f, unsigned n, int status);

/* The next n requests with this method (NULL: any) that are not watches answer `status` > 0 with
 * the body of FIXTURES/fixture (NULL: status-500.json). Counted apart from fake_api_fail_next(),
 * which wins when both apply. Strings copied. */
void fake_api_fail_method(struct fake_api *f, const char *method, unsigned n, int status,
                          const char *fixture);

/* The next n requests that are not watches wait delay_ms before answering. */
void fake_api_delay_next(struct fake_api *f, unsigned n, unsigned delay_ms);

/* The next n Event POSTs create their Event, then close the connection without an answer (an
 * answer lost on the way back). */
void fake_api_lose_answers(struct fake_api *f, unsigned n);

/* Events created in namespace ns (each name once, as the API server keeps them). */
unsigned fake_api_events(struct fake_api *f, const char *ns);

/* Requests seen so far, one line each: "METHOD PATH?k=v&k=v" (decoded query, in arrival order),
 * malloc'd; free it. */
char *fake_api_log(struct fake_api *f);

/* How many requests had this method and a path (query included) containing `needle`. */
unsigned fake_api_count(struct fake_api *f, const char *method, const char *needle);

/* The body, Content-Type or Authorization of the last request with this method whose path
 * contains needle; malloc'd (free it), NULL if none. what: "body", "content-type", "auth". */
char *fake_api_last(struct fake_api *f, const char *method, const char *needle, const char *what);

/* Block until fake_api_count(f, method, needle) >= n or timeout_ms passes; returns the count. */
unsigned fake_api_wait_count(struct fake_api *f, const char *method, const char *needle, unsigned n,
                             long timeout_ms);

#endif
