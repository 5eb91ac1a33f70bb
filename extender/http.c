/* SPDX-License-Identifier: Apache-2.0 */
/* extender/http.c - libmicrohttpd glue: request lifetime with a capped body (STYLE.md E4), one
 * handler call per complete request, access logging, TLS with client certificates, and a drain
 * on stop. The only file (with nothing else in extender/) that includes microhttpd.h. */
#include "extender/http.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"

struct ext_http {
    struct MHD_Daemon *d;
    ext_http_handler_fn *fn;
    void *ctx;
    size_t max_body;
    bool require_client;
    unsigned port;
    atomic_int inflight;
    char *cert;
    char *key;
    char *ca;
};

struct req {
    struct tpx_buf body; /* capped at max_body */
    size_t dropped;      /* body bytes read and thrown away once over the cap */
    bool too_large;
    bool oom;
    bool answered;
    unsigned status;
    double t0; /* tpx_mono_s() at the headers */
    char method[16];
    char path[256];
};

static void copy_trunc(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

static enum MHD_Result queue(struct MHD_Connection *conn, struct req *r, unsigned status,
                             char *body, size_t len, const char *ctype, const char *allow)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (!body) {
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(body);
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype ? ctype : "application/json");
    if (allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    r->status = status;
    r->answered = true;
    ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result queue_text(struct MHD_Connection *conn, struct req *r, unsigned status,
                                  const char *json)
{
    char *b = strdup(json);

    if (!b)
        return MHD_NO;
    return queue(conn, r, status, b, strlen(b), NULL, NULL);
}

/* With a client CA: the peer must have presented a certificate that verifies against it. */
static bool client_ok(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t s;
    unsigned int status = 0, n = 0;

    if (!ci || !ci->tls_session)
        return false;
    s = (gnutls_session_t)ci->tls_session;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0)
        return false;
    if (gnutls_certificate_verify_peers2(s, &status) < 0)
        return false;
    return status == 0;
}

static void body_add(struct req *r, const char *p, size_t n)
{
    struct tpx_err e = TPX_ERR_INIT;

    if (tpx_buf_add(&r->body, p, n, &e) == TPX_OK)
        return;
    if (e.code == TPX_ETOOBIG)
        r->too_large = true;
    else
        r->oom = true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    struct ext_http *h = cls;
    struct req *r = *req_cls;
    struct ext_http_req rq;
    struct ext_http_resp rp;

    (void)version;
    if (!r) { /* first call: headers only */
        const char *cl;

        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        r->t0 = tpx_mono_s();
        tpx_buf_init(&r->body, h->max_body);
        copy_trunc(r->method, sizeof(r->method), method);
        copy_trunc(r->path, sizeof(r->path), url);
        *req_cls = r; /* freed only in on_completed() */
        atomic_fetch_add(&h->inflight, 1);
        if (h->require_client && !client_ok(conn))
            return queue_text(conn, r, MHD_HTTP_FORBIDDEN,
                              "{\"error\":\"a client certificate signed by the configured CA is "
                              "required\"}");
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            unsigned long long want = strtoull(cl, NULL, 10);
            if (want > h->max_body)
                return queue_text(conn, r, MHD_HTTP_CONTENT_TOO_LARGE,
                                  "{\"error\":\"request body too large\"}");
            if (want > 0) {
                struct tpx_err ignore = TPX_ERR_INIT; /* then it grows as the body comes */

                tpx_buf_presize(&r->body, (size_t)want, &ignore);
            }
        }
        return MHD_YES;
    }
    if (r->answered) { /* answered early (413, 403): discard the rest */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size > 0) { /* a body chunk */
        if (!r->too_large && !r->oom) {
            body_add(r, upload, *upload_size);
        } else {
            /* Over the cap without a Content-Length (chunked): MHD lets a response be queued
             * only before the body or after all of it, so the rest is read and dropped for the
             * 413 to follow, but only up to another cap's worth. A client that sends more is
             * cut off (the connection closes without an answer), so no one can keep a thread
             * reading an endless body. */
            r->dropped += *upload_size;
            if (r->dropped > h->max_body) {
                TPX_LOG(TPX_WARN, "request body far over the cap: connection closed",
                        TPX_S("path", r->path), TPX_I("cap", (long long)h->max_body));
                return MHD_NO;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->too_large)
        return queue_text(conn, r, MHD_HTTP_CONTENT_TOO_LARGE,
                          "{\"error\":\"request body too large\"}");
    if (r->oom)
        return queue_text(conn, r, MHD_HTTP_SERVICE_UNAVAILABLE,
                          "{\"error\":\"out of memory reading the request\"}");
    rq.method = method;
    rq.path = url;
    rq.body = r->body.data ? r->body.data : "";
    rq.body_len = r->body.len;
    rq.tls_client_verified = h->require_client;
    memset(&rp, 0, sizeof(rp));
    rp.status = 500;
    h->fn(h->ctx, &rq, &rp);
    return queue(conn, r, rp.status, rp.body, rp.len, rp.content_type, rp.allow);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ext_http *h = cls;
    struct req *r = *req_cls;

    (void)conn;
    if (!r)
        return;
    TPX_LOG(TPX_INFO, "http request", TPX_S("method", r->method), TPX_S("path", r->path),
            TPX_I("status", r->answered ? r->status : 0), TPX_I("bytes_in", r->body.len),
            TPX_I("dur_us", (long long)((tpx_mono_s() - r->t0) * 1e6)),
            TPX_B("completed", toe == MHD_REQUEST_TERMINATED_COMPLETED_OK));
    tpx_buf_release(&r->body);
    free(r);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    TPX_LOG(TPX_WARN, "http server", TPX_S("err", msg));
}

/* "host:port", "[v6]:port", ":port" -> a socket address. */
static enum tpx_code parse_listen(const char *listen, struct sockaddr_storage *ss, bool *v6,
                                  unsigned *port, struct tpx_err *err)
{
    char host[256];
    const char *colon, *hs = listen, *he;
    struct addrinfo hints, *res = NULL;
    char *end;
    unsigned long p;
    int rc;

    if (!listen || !*listen)
        return tpx_err_set(err, TPX_EINVAL, "empty listen address");
    if (listen[0] == '[') {
        he = strchr(listen, ']');
        if (!he || he[1] != ':')
            return tpx_err_set(err, TPX_EINVAL, "bad listen address '%s' (want [ADDR]:PORT)",
                               listen);
        hs = listen + 1;
        colon = he + 1;
    } else {
        colon = strrchr(listen, ':');
        if (!colon)
            return tpx_err_set(err, TPX_EINVAL, "bad listen address '%s' (want ADDR:PORT)", listen);
        he = colon;
    }
    p = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || p > 65535)
        return tpx_err_set(err, TPX_EINVAL, "bad port in listen address '%s'", listen);
    if ((size_t)(he - hs) >= sizeof(host))
        return tpx_err_set(err, TPX_EINVAL, "listen host too long");
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    rc = getaddrinfo(host[0] ? host : NULL, "0", &hints, &res);
    if (rc != 0 || !res)
        return tpx_err_set(err, TPX_EINVAL, "cannot resolve listen address '%s': %s", listen,
                           gai_strerror(rc));
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    if (*v6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)p);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)p);
    freeaddrinfo(res);
    *port = (unsigned)p;
    return TPX_OK;
}

struct ext_http *ext_http_start(const struct ext_http_config *cfg, ext_http_handler_fn *fn,
                                void *ctx, struct tpx_err *err)
{
    struct sockaddr_storage ss;
    struct ext_http *h;
    /* poll(), not epoll: with epoll, MHD_quiesce_daemon() (ext_http_stop) removes the listen
     * socket from each pool thread's epoll set from the stopping thread, while a pool thread
     * woken by a connection may remove it too; the loser gets ENOENT and MHD aborts ("Failed to
     * remove listen FD from epoll set", exit 134 on SIGTERM: 1 stop in a few hundred under
     * load). With poll() each pool thread is told through its ITC and drops it itself. */
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    unsigned threads = cfg->threads;
    unsigned port = 0;
    bool v6 = false;
    bool tls = cfg->tls_cert_pem || cfg->tls_key_pem;
    const union MHD_DaemonInfo *di;
    struct MHD_OptionItem opts[16];
    size_t no = 0;

    if (parse_listen(cfg->listen, &ss, &v6, &port, err) != TPX_OK)
        return NULL;
    if (tls && (!cfg->tls_cert_pem || !cfg->tls_key_pem)) {
        tpx_err_set(err, TPX_EINVAL, "TLS needs both a certificate and a key");
        return NULL;
    }
    if (cfg->client_ca_pem && !tls) {
        tpx_err_set(err, TPX_EINVAL, "a client CA needs TLS (a certificate and a key)");
        return NULL;
    }
    h = calloc(1, sizeof(*h));
    if (!h) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return NULL;
    }
    h->fn = fn;
    h->ctx = ctx;
    h->max_body = cfg->max_body;
    atomic_init(&h->inflight, 0);
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 2 ? 2 : n > 64 ? 64 : (unsigned)n;
    }
    if (v6)
        flags |= MHD_USE_IPv6;
    /* the logger first, so MHD never writes to stderr itself */
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_log, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                         cfg->conn_timeout_s ? cfg->conn_timeout_s : 120, NULL};
    /* bigger per-connection buffers: a 30 MB body arrives in fewer, larger chunks */
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 256 * 1024, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h};
    if (tls) {
        h->cert = strdup(cfg->tls_cert_pem);
        h->key = strdup(cfg->tls_key_pem);
        h->ca = cfg->client_ca_pem ? strdup(cfg->client_ca_pem) : NULL;
        if (!h->cert || !h->key || (cfg->client_ca_pem && !h->ca)) {
            tpx_err_set(err, TPX_ENOMEM, "out of memory");
            goto fail;
        }
        flags |= MHD_USE_TLS;
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert};
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->key};
        if (h->ca) {
            opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, h->ca};
            h->require_client = true;
        }
    }
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (!h->d) {
        tpx_err_set(err, TPX_EIO,
                    "cannot listen on '%s' (address in use, bad TLS files, or no "
                    "permission)",
                    cfg->listen);
        goto fail;
    }
    di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : port;
    return h;
fail:
    free(h->cert);
    free(h->key);
    free(h->ca);
    free(h);
    return NULL;
}

const char *ext_http_library_version(void)
{
    return MHD_get_version();
}

unsigned ext_http_port(const struct ext_http *h)
{
    return h->port;
}

void ext_http_stop(struct ext_http *h, unsigned drain_ms)
{
    MHD_socket fd;

    if (!h)
        return;
    /* stop accepting first, then let requests in flight be answered */
    fd = MHD_quiesce_daemon(h->d);
    for (unsigned waited = 0; atomic_load(&h->inflight) > 0 && waited < drain_ms; waited += 5) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(h->d);
    /* MHD's threads drop the quiesced socket with some delay: it may be closed only once the
     * daemon has stopped (MHD_quiesce_daemon's documentation). */
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    free(h->cert);
    free(h->key);
    free(h->ca);
    free(h);
}
