/* SPDX-License-Identifier: Apache-2.0 */
/* extender/http.h - the HTTP/1.1 server (libmicrohttpd: poll() + thread pool, keep-alive, optional
 * TLS with client-certificate checks): it collects each request body under a hard cap (413 past
 * it), hands complete requests to one handler, logs one access line per request, and drains on
 * stop. It knows nothing about the extender protocol: routes.c does. Only http.c sees MHD.
 * Limits: connections in all and per client address, a whole-request deadline and an answer
 * deadline (a watchdog thread shuts down connections whose headers and body are not in, or whose
 * answer is not all sent, by then), and a budget for the bytes unsent answers hold.
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
    /* Instead of body: the body written as it is sent, gen_len bytes in all (Content-Length).
     * gen(gen_ctx, pos, buf, max) puts up to max bytes from offset pos into buf and returns how
     * many; gen_free(gen_ctx) is called once when the answer is done with, sent or not (also when
     * it cannot be queued). The request's body stays valid until then. */
    size_t (*gen)(void *gen_ctx, size_t pos, char *buf, size_t max);
    void (*gen_free)(void *gen_ctx);
    void *gen_ctx;
    size_t gen_len;
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
    const char *client_ca_pem;  /* non-NULL: require a client certificate signed by it */
    unsigned max_conns;         /* open connections in all; over it new ones are closed; 0: 1000 */
    unsigned max_conns_per_ip;  /* open connections per client address; 0: no such limit */
    unsigned request_timeout_s; /* from a request's start until its body is in; 0: 15 */
    unsigned send_timeout_s;    /* from an answer's queueing until it is all sent; 0: 30 */
    size_t answer_budget;       /* bytes unsent answers may hold in all (their bodies and answers;
                                   a request alone always runs); past it 503; 0: 256 MiB */
    const char *tls_priorities; /* GnuTLS priority string; NULL: EXT_HTTP_TLS_PRIORITIES */
    const char *const *client_allow; /* with a client CA: the certificate's CN or one of its
                                        SANs must be one of these (403 otherwise); none: any */
    size_t nclient_allow;
};

/* TLS 1.3 and 1.2 only, with GnuTLS's SECURE128 ciphers and groups. */
#define EXT_HTTP_TLS_PRIORITIES "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* Whether a listen address can be listened on as written: TPX_EINVAL saying what is wrong ("bad
 * port ...: not a number", "port out of range ...", an address that does not resolve). */
enum tpx_code ext_http_check_listen(const char *listen, struct tpx_err *err);

/* Whether a listen address ("ADDR:PORT") binds only loopback: 127.0.0.0/8, ::1, localhost. */
bool ext_http_is_loopback(const char *listen);

struct ext_http;

/* Bind and start serving. cfg strings are copied. NULL with *err (TPX_EIO naming the address on
 * a bind failure, TPX_EINVAL for a bad address). Stop with ext_http_stop(). */
struct ext_http *ext_http_start(const struct ext_http_config *cfg, ext_http_handler_fn *fn,
                                void *ctx, struct tpx_err *err);

/* New TLS certificate, key and client CA (PEM text, copied; ca_pem must be given when a client
 * CA was). MHD 0.9.75 cannot change the certificate of a running daemon, so a new daemon takes
 * over the listen socket (nothing is refused meanwhile: connections wait in the backlog) and the
 * old one finishes what it has, and is stopped a request timeout (+5 s) later. The files are
 * checked first: on TPX_EINVAL (they do not load) the old certificates keep serving. Call from
 * one thread (the one that calls ext_http_stop()). */
enum tpx_code ext_http_reload_tls(struct ext_http *h, const char *cert_pem, const char *key_pem,
                                  const char *ca_pem, struct tpx_err *err);

/* The port actually bound (useful after port 0). */
unsigned ext_http_port(const struct ext_http *h);

/* The libmicrohttpd version, for `topox version`. Static storage. */
const char *ext_http_library_version(void);

/* Stop accepting, wait up to drain_ms for requests in flight to be answered, then stop the
 * threads and free. Accepts NULL. */
void ext_http_stop(struct ext_http *h, unsigned drain_ms);

#endif
