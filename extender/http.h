/* SPDX-License-Identifier: Apache-2.0 */
/* extender/http.h - the HTTP/1.1 server (libmicrohttpd: poll() + thread pool, keep-alive, optional
 * TLS with client-certificate checks): it collects each request body under a hard cap (413 past
 * it), hands complete requests to one handler, logs one access line per request, and drains on
 * stop. It knows nothing about the extender protocol: routes.c does. Only http.c sees MHD.
 *
 * Threads: the handler is called from MHD's pool threads, concurrently. */
#ifndef TPX_EXTENDER_HTTP_H
#define TPX_EXTENDER_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* A complete request, borrowed for the duration of the handler call. body is NUL-terminated. */
struct ext_http_req {
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    bool tls_client_verified; /* a client certificate was presented and checked */
};

/* What the handler fills. body is malloc'd (the server frees it) or NULL for an empty body;
 * content_type is static text (NULL: application/json). */
struct ext_http_resp {
    unsigned status;
    char *body;
    size_t len;
    const char *content_type;
    const char *allow; /* for 405: the Allow header value (static) */
};

typedef void ext_http_handler_fn(void *ctx, const struct ext_http_req *rq,
                                 struct ext_http_resp *rp);

struct ext_http_config {
    const char *listen;       /* "ADDR:PORT", "[v6]:PORT" or ":PORT"; port 0 picks a free one */
    size_t max_body;          /* bytes; over it: 413 */
    unsigned threads;         /* pool size; 0: number of CPUs (at least 2) */
    unsigned conn_timeout_s;  /* idle keep-alive connections are closed after this; 0: 120 */
    const char *tls_cert_pem; /* PEM text (not paths); all NULL: plain HTTP */
    const char *tls_key_pem;
    const char *client_ca_pem; /* non-NULL: require a client certificate signed by it */
};

struct ext_http;

/* Bind and start serving. cfg strings are copied. NULL with *err (TPX_EIO naming the address on
 * a bind failure, TPX_EINVAL for a bad address). Stop with ext_http_stop(). */
struct ext_http *ext_http_start(const struct ext_http_config *cfg, ext_http_handler_fn *fn,
                                void *ctx, struct tpx_err *err);

/* The port actually bound (useful after port 0). */
unsigned ext_http_port(const struct ext_http *h);

/* The libmicrohttpd version, for `topox version`. Static storage. */
const char *ext_http_library_version(void);

/* Stop accepting, wait up to drain_ms for requests in flight to be answered, then stop the
 * threads and free. Accepts NULL. */
void ext_http_stop(struct ext_http *h, unsigned drain_ms);

#endif
