/* SPDX-License-Identifier: Apache-2.0 */
/* extender/http.c - libmicrohttpd glue: request lifetime with a capped body (STYLE.md E4), one
 * handler call per complete request, access logging, TLS with client certificates, and a drain
 * on stop. The only file (with nothing else in extender/) that includes microhttpd.h. */
#include "extender/http.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cgroup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/str.h"

/* One open connection, for the whole-request deadline (MHD_OPTION_CONNECTION_TIMEOUT is only an
 * idle timeout: a client that trickles a byte now and then, or sends headers and never the body,
 * would hold its connection for ever). Linked in ext_http.conns under conns_lock while open. */
struct ext_http;

struct conn {
    struct conn *next, **pprev;
    struct ext_http *owner;
    MHD_socket fd;
    struct timespec t0; /* when the current request started (the connection opened, or the
                           previous request ended) */
    unsigned limit_s;   /* the deadline: t0 + limit_s */
    bool reading;       /* counting: headers or body still arriving */
    bool sending;       /* counting: the answer is queued and not yet all sent (issue 21) */
    bool cut;           /* shut down by the watchdog */
};

struct ext_http {
    struct MHD_Daemon *d;
    pthread_mutex_t conns_lock;
    pthread_cond_t wake;
    struct conn *conns;
    pthread_t watchdog;
    bool watchdog_started;
    bool stopping;
    unsigned request_timeout_s;
    unsigned idle_timeout_s;
    unsigned send_timeout_s; /* from an answer's queueing until its last byte is sent */
    size_t answer_budget;    /* bytes that answers not yet sent may hold, all together */
    atomic_size_t held;      /* what they hold now: their request bodies and answers */
    struct sockaddr_storage addr;
    bool v6;
    unsigned threads;
    unsigned max_conns;
    unsigned max_conns_per_ip;
    struct MHD_Daemon *retiring; /* after a TLS reload: the old daemon, stopped at retire_at */
    time_t retire_at;
    char **allow;
    size_t nallow;
    ext_http_handler_fn *fn;
    void *ctx;
    size_t max_body;
    bool require_client;
    unsigned port;
    atomic_int inflight;
    char *cert;
    char *key;
    char *ca;
    char *prio;
};

struct req {
    struct tpx_buf body; /* capped at max_body */
    size_t dropped;      /* body bytes read and thrown away once over the cap */
    size_t bytes_in;     /* the body's length once complete (a generated answer takes it) */
    size_t held;         /* counted in ext_http.held until on_completed() */
    bool too_large;
    bool oom;
    bool answered;
    unsigned status;
    double t0; /* tpx_mono_s() at the headers */
    char method[16];
    char path[256];
};

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

#define GEN_BLOCK (256 * 1024) /* the most of a generated answer MHD asks for at once */

/* A generated answer: the handler's generator, and the request body it may read (owned here
 * from now on, so it outlives the request if MHD finishes the request first). */
struct gen {
    size_t (*fn)(void *ctx, size_t pos, char *buf, size_t max);
    void (*done)(void *ctx);
    void *ctx;
    char *body;
};

static ssize_t gen_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct gen *g = cls;
    size_t n = g->fn(g->ctx, (size_t)pos, buf, max);

    /* MHD stops at Content-Length; a generator that ends early has failed */
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void gen_free(void *cls)
{
    struct gen *g = cls;

    if (g->done)
        g->done(g->ctx);
    free(g->body);
    free(g);
}

static enum MHD_Result queue_gen(struct MHD_Connection *conn, struct req *r,
                                 const struct ext_http_resp *rp)
{
    struct MHD_Response *resp;
    struct gen *g = calloc(1, sizeof(*g));
    enum MHD_Result ret;

    if (!g) {
        if (rp->gen_free)
            rp->gen_free(rp->gen_ctx);
        return MHD_NO;
    }
    g->fn = rp->gen;
    g->done = rp->gen_free;
    g->ctx = rp->gen_ctx;
    g->body = tpx_buf_detach(&r->body, NULL);
    /* 256 KiB blocks: a 35 MB answer goes out in big writes; a shorter answer gets a block of
     * its own length (MHD callocs the block with each response) */
    resp = MHD_create_response_from_callback(
        rp->gen_len, rp->gen_len < GEN_BLOCK ? (rp->gen_len ? rp->gen_len : 1) : GEN_BLOCK,
        gen_read, g, gen_free);
    if (!resp) {
        gen_free(g);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rp->content_type ? rp->content_type : "application/json");
    r->status = rp->status;
    r->answered = true;
    ret = MHD_queue_response(conn, rp->status, resp);
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

/* An answer after which the connection is closed (RFC 9112 section 6.3: a request whose framing
 * cannot be trusted must not be followed by another on the same connection). */
static enum MHD_Result queue_close(struct MHD_Connection *conn, struct req *r, unsigned status,
                                   const char *json)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;

    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    r->status = status;
    r->answered = true;
    ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* MHD_get_connection_values() iterator: whether a Content-Length other than the first one MHD
 * framed the body by (cls) is among the headers. */
static enum MHD_Result other_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    const char **first = cls;

    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0 || strcmp(value, *first) == 0)
        return MHD_YES;
    *first = NULL;
    return MHD_NO;
}

/* The request's framing, where MHD 0.9.75 lets it through (issue 21, item 8): Content-Length
 * together with Transfer-Encoding is refused (400, and the connection closed, as RFC 9112 section
 * 6.3 asks of a server that does not process it by the Transfer-Encoding alone), and so are two
 * Content-Length headers with different values (RFC 9112 section 6.3, item 5: invalid framing;
 * MHD's parse_connection_headers() frames the body by the first one it finds, so the rest of the
 * body would be read as the next request). The same value repeated is one length (RFC 9110
 * section 8.6). A Transfer-Encoding other than chunked gets 501 (MHD would wait for a body it
 * cannot frame until the request timeout). NULL: the framing is fine. */
static const char *bad_framing(struct MHD_Connection *conn, unsigned *status)
{
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

    *status = MHD_HTTP_BAD_REQUEST;
    if (cl && !te) {
        const char *first = cl;

        MHD_get_connection_values(conn, MHD_HEADER_KIND, other_length, &first);
        return first ? NULL
                     : "{\"error\":\"a request with Content-Length headers of different values is "
                       "refused (RFC 9112 section 6.3)\"}";
    }
    if (!te)
        return NULL;
    if (cl)
        return "{\"error\":\"a request with both Content-Length and Transfer-Encoding is refused "
               "(RFC 9112 section 6.3)\"}";
    *status = MHD_HTTP_NOT_IMPLEMENTED;
    if (strcasecmp(te, "chunked") != 0)
        return "{\"error\":\"Transfer-Encoding other than chunked is not supported\"}";
    return NULL;
}

/* Whether the peer certificate's CN or one of its subject alternative names is in the list. */
static bool cert_allowed(const gnutls_datum_t *der, char *const *allow, size_t nallow)
{
    gnutls_x509_crt_t crt;
    char name[512];
    size_t len;
    bool ok = false;

    if (gnutls_x509_crt_init(&crt) < 0)
        return false;
    if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) < 0)
        goto out;
    for (unsigned i = 0; !ok; i++) { /* every CN of the subject */
        len = sizeof(name);
        if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, i, 0, name, &len) < 0)
            break;
        for (size_t k = 0; k < nallow && !ok; k++)
            ok = strlen(allow[k]) == len && memcmp(allow[k], name, len) == 0;
    }
    for (unsigned i = 0; !ok; i++) { /* DNS, URI, e-mail and IP SANs as text */
        unsigned critical = 0;
        int type;

        len = sizeof(name);
        type = gnutls_x509_crt_get_subject_alt_name(crt, i, name, &len, &critical);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (type < 0)
            continue;
        if (type == GNUTLS_SAN_IPADDRESS) {
            char ip[INET6_ADDRSTRLEN];
            if (!inet_ntop(len == 4 ? AF_INET : AF_INET6, name, ip, sizeof(ip)))
                continue;
            len = strlen(ip);
            memcpy(name, ip, len + 1);
        }
        for (size_t k = 0; k < nallow && !ok; k++)
            ok = strlen(allow[k]) == len && memcmp(allow[k], name, len) == 0;
    }
out:
    gnutls_x509_crt_deinit(crt);
    return ok;
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

/* A verified client certificate that is also on the allow-list (when there is one). */
static bool client_allowed(struct ext_http *h, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    const gnutls_datum_t *peers;
    unsigned int n = 0;

    if (!h->nallow)
        return true;
    if (!ci || !ci->tls_session)
        return false;
    peers = gnutls_certificate_get_peers((gnutls_session_t)ci->tls_session, &n);
    return peers && n > 0 && cert_allowed(&peers[0], h->allow, h->nallow);
}

/* Where a connection's clock stands: CLOCK_READ, a request begins (the connection opened or the
 * previous request ended; after one, the idle time MHD allows comes on top); CLOCK_RUN, the body
 * is in and the handler runs (no deadline); CLOCK_SEND, the answer is queued and the send
 * deadline counts (issue 21, item 2). MHD's connection timeout is an idle timeout, reset by every
 * byte sent, so a client reading a byte every few seconds, or one that never reads while the
 * kernel's buffers take what it will, could hold the request body and the answer until it
 * pleased. */
enum conn_clock { CLOCK_READ, CLOCK_RUN, CLOCK_SEND };

static void conn_clock(struct MHD_Connection *mc, enum conn_clock phase)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct ext_http *h;
    struct conn *c;

    if (!ci || !ci->socket_context)
        return;
    c = ci->socket_context;
    h = c->owner;
    pthread_mutex_lock(&h->conns_lock);
    c->reading = phase == CLOCK_READ;
    c->sending = phase == CLOCK_SEND;
    if (phase != CLOCK_RUN) {
        clock_gettime(CLOCK_MONOTONIC, &c->t0);
        c->limit_s =
            phase == CLOCK_READ ? h->request_timeout_s + h->idle_timeout_s : h->send_timeout_s;
    }
    pthread_mutex_unlock(&h->conns_lock);
}

/* MHD_OPTION_NOTIFY_CONNECTION: link each connection in while it is open. MHD calls CLOSED
 * before it closes the socket, so the watchdog never shuts down a reused descriptor. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct ext_http *h = cls;
    struct conn *c = *socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);

        c = calloc(1, sizeof(*c));
        if (!c || !ci)
            return free(c); /* untracked: only MHD's idle timeout applies to it */
        c->owner = h;
        c->fd = ci->connect_fd;
        c->reading = true;
        c->limit_s = h->request_timeout_s;
        clock_gettime(CLOCK_MONOTONIC, &c->t0);
        pthread_mutex_lock(&h->conns_lock);
        c->next = h->conns;
        if (c->next)
            c->next->pprev = &c->next;
        c->pprev = &h->conns;
        h->conns = c;
        pthread_mutex_unlock(&h->conns_lock);
        *socket_context = c;
        return;
    }
    if (!c)
        return;
    pthread_mutex_lock(&h->conns_lock);
    *c->pprev = c->next;
    if (c->next)
        c->next->pprev = c->pprev;
    pthread_mutex_unlock(&h->conns_lock);
    free(c);
    *socket_context = NULL;
}

/* Once a second: shut down every connection whose request is still arriving past its deadline.
 * shutdown(2), not close(2): MHD sees the end of the stream, answers nothing and closes the
 * descriptor itself, so it is never closed twice. */
static void stop_retiring(struct ext_http *h, bool only_when_due);

static void *watchdog(void *arg)
{
    struct ext_http *h = arg;

    pthread_mutex_lock(&h->conns_lock);
    while (!h->stopping) {
        struct timespec now, until;
        size_t cut = 0, cut_send = 0;

        clock_gettime(CLOCK_MONOTONIC, &now);
        for (struct conn *c = h->conns; c; c = c->next) {
            if ((!c->reading && !c->sending) || c->cut ||
                now.tv_sec - c->t0.tv_sec < (time_t)c->limit_s)
                continue;
            shutdown(c->fd, SHUT_RDWR);
            c->cut = true;
            if (c->sending)
                cut_send++;
            else
                cut++;
        }
        if (cut)
            TPX_LOG(TPX_WARN, "requests past the request timeout: connections closed",
                    TPX_I("count", (long long)cut),
                    TPX_I("timeout_s", (long long)h->request_timeout_s));
        if (cut_send)
            TPX_LOG(TPX_WARN, "answers past the send timeout: connections closed",
                    TPX_I("count", (long long)cut_send),
                    TPX_I("timeout_s", (long long)h->send_timeout_s),
                    TPX_I("held_bytes", (long long)atomic_load(&h->held)));
        if (h->retiring && now.tv_sec >= h->retire_at) {
            pthread_mutex_unlock(&h->conns_lock);
            stop_retiring(h, true);
            pthread_mutex_lock(&h->conns_lock);
            continue;
        }
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&h->wake, &h->conns_lock, &until);
    }
    pthread_mutex_unlock(&h->conns_lock);
    return NULL;
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

/* A big body (a full-node request is 35 MB) is written once, in order: ask for transparent huge
 * pages where the kernel gives them on request (THP "madvise" mode), so it costs a few dozen page
 * faults instead of thousands. Advice only: nothing changes when it is refused. */
static void huge_pages(void *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096, a = (uintptr_t)p, start, end;

    if (!p || len < (4U << 20))
        return;
    start = (a + page - 1) & ~(page - 1);
    end = (a + len) & ~(page - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
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
        tpx_str_copy(r->method, sizeof(r->method), method);
        tpx_str_copy(r->path, sizeof(r->path), url);
        *req_cls = r; /* freed only in on_completed() */
        atomic_fetch_add(&h->inflight, 1);
        {
            unsigned st = 0;
            const char *bad = bad_framing(conn, &st);

            if (bad)
                return queue_close(conn, r, st, bad);
        }
        if (h->require_client && !client_ok(conn))
            return queue_text(conn, r, MHD_HTTP_FORBIDDEN,
                              "{\"error\":\"a client certificate signed by the configured CA is "
                              "required\"}");
        if (h->require_client && !client_allowed(h, conn))
            return queue_text(conn, r, MHD_HTTP_FORBIDDEN,
                              "{\"error\":\"the client certificate's CN and SANs are not on the "
                              "allow-list (--client-allow)\"}");
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            unsigned long long want = strtoull(cl, NULL, 10);
            if (want > h->max_body)
                return queue_text(conn, r, MHD_HTTP_CONTENT_TOO_LARGE,
                                  "{\"error\":\"request body too large\"}");
            if (want > 0) {
                struct tpx_err ignore = TPX_ERR_INIT; /* then it grows as the body comes */

                if (tpx_buf_presize(&r->body, (size_t)want, &ignore) == TPX_OK)
                    huge_pages(r->body.data, (size_t)want);
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
    conn_clock(conn, CLOCK_RUN); /* the whole body is in: the deadline no longer applies */
    if (r->too_large)
        return queue_text(conn, r, MHD_HTTP_CONTENT_TOO_LARGE,
                          "{\"error\":\"request body too large\"}");
    if (r->oom)
        return queue_text(conn, r, MHD_HTTP_SERVICE_UNAVAILABLE,
                          "{\"error\":\"out of memory reading the request\"}");
    r->bytes_in = r->body.len;
    {
        size_t held = atomic_load(&h->held);

        /* the budget for unfinished answers (issue 21, item 2): a request alone always runs */
        if (held > 0 && held + r->body.len > h->answer_budget) {
            char msg[256];

            TPX_LOG(TPX_WARN, "answers in flight over the budget: request refused",
                    TPX_S("path", r->path), TPX_I("held_bytes", (long long)held),
                    TPX_I("budget", (long long)h->answer_budget));
            snprintf(msg, sizeof(msg),
                     "{\"error\":\"busy: unsent answers hold %zu bytes, and this request's %zu "
                     "more would pass answerBudget (%zu); retry\"}",
                     held, r->body.len, h->answer_budget);
            tpx_buf_release(&r->body);
            return queue_text(conn, r, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
        }
    }
    /* held until on_completed(): the body from now (a generated answer reads from it), then the
     * answer */
    r->held = r->body.len;
    atomic_fetch_add(&h->held, r->held);
    rq.method = method;
    rq.path = url;
    rq.body = r->body.data ? r->body.data : "";
    rq.body_len = r->body.len;
    rq.tls_client_verified = h->require_client;
    memset(&rp, 0, sizeof(rp));
    rp.status = 500;
    h->fn(h->ctx, &rq, &rp);
    {
        size_t answer = rp.gen ? (rp.gen_len < GEN_BLOCK ? rp.gen_len : GEN_BLOCK) : rp.len;

        r->held += answer;
        atomic_fetch_add(&h->held, answer);
    }
    conn_clock(conn, CLOCK_SEND);
    if (rp.gen) {
        free(rp.body);
        return queue_gen(conn, r, &rp);
    }
    return queue(conn, r, rp.status, rp.body, rp.len, rp.content_type, rp.allow);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ext_http *h = cls;
    struct req *r = *req_cls;

    if (!r) {
        conn_clock(conn, CLOCK_READ);
        return;
    }
    TPX_LOG(TPX_INFO, "http request", TPX_S("method", r->method), TPX_S("path", r->path),
            TPX_I("status", r->answered ? r->status : 0),
            TPX_I("bytes_in", r->bytes_in > r->body.len ? r->bytes_in : r->body.len),
            TPX_I("dur_us", (long long)((tpx_mono_s() - r->t0) * 1e6)),
            TPX_B("completed", toe == MHD_REQUEST_TERMINATED_COMPLETED_OK));
    tpx_buf_release(&r->body);
    atomic_fetch_sub(&h->held, r->held);
    free(r);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
    conn_clock(conn, CLOCK_READ); /* a keep-alive connection: the next request's clock starts now */
}

/* At most this many MHD messages a second: a flood of refused connections ("reached connection
 * limit", one message each) must not turn into a flood of log lines, nor block every pool thread
 * on a slow stderr. The count of those left out goes with the first line of the next second. */
#define LOG_PER_SECOND 10

static atomic_llong log_second;
static atomic_uint log_count;
static atomic_uint log_dropped;

static void on_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;
    struct timespec t;
    long long sec, seen;
    unsigned dropped = 0;

    (void)cls;
    clock_gettime(CLOCK_MONOTONIC, &t);
    sec = (long long)t.tv_sec;
    seen = atomic_load(&log_second);
    if (seen != sec && atomic_compare_exchange_strong(&log_second, &seen, sec)) {
        atomic_store(&log_count, 0);
        dropped = atomic_exchange(&log_dropped, 0);
    }
    if (atomic_fetch_add(&log_count, 1) >= LOG_PER_SECOND) {
        atomic_fetch_add(&log_dropped, 1);
        return;
    }
    if (dropped)
        TPX_LOG(TPX_WARN, "http server: messages left out", TPX_I("count", (long long)dropped));
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
    if (!colon[1])
        return tpx_err_set(err, TPX_EINVAL, "bad port in listen address '%s': no port", listen);
    if ((colon[1] < '0' || colon[1] > '9') && colon[1] != '-')
        return tpx_err_set(err, TPX_EINVAL, "bad port in listen address '%s': not a number",
                           listen);
    errno = 0;
    p = strtoul(colon + 1, &end, 10);
    if (*end)
        return tpx_err_set(err, TPX_EINVAL, "bad port in listen address '%s': not a number",
                           listen);
    if (colon[1] == '-' || errno == ERANGE || p > 65535)
        return tpx_err_set(err, TPX_EINVAL, "port out of range in listen address '%s' (0 to 65535)",
                           listen);
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

/* A bad priority string would only fail at the first handshake inside MHD: check it here, with
 * GnuTLS's own position of the error. */
static enum tpx_code check_priorities(const char *prio, struct tpx_err *err)
{
    gnutls_priority_t p;
    const char *at = NULL;
    int rc = gnutls_priority_init(&p, prio, &at);

    if (rc < 0)
        return tpx_err_set(err, TPX_EINVAL, "bad TLS priority string '%s' at '%s': %s", prio,
                           at ? at : "", gnutls_strerror(rc));
    gnutls_priority_deinit(p);
    return TPX_OK;
}

static enum tpx_code copy_allow(struct ext_http *h, const struct ext_http_config *cfg,
                                struct tpx_err *err)
{
    if (!cfg->nclient_allow)
        return TPX_OK;
    if (!cfg->client_ca_pem)
        return tpx_err_set(err, TPX_EINVAL, "a client allow-list needs a client CA");
    h->allow = calloc(cfg->nclient_allow, sizeof(*h->allow));
    if (!h->allow)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    for (size_t i = 0; i < cfg->nclient_allow; i++) {
        h->allow[i] = strdup(cfg->client_allow[i]);
        if (!h->allow[i])
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        h->nallow++;
    }
    return TPX_OK;
}

/* The watchdog stopped (or never started) and the daemon gone: free the rest. */
static void free_http(struct ext_http *h)
{
    if (h->watchdog_started) {
        pthread_mutex_lock(&h->conns_lock);
        h->stopping = true;
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->conns_lock);
        pthread_join(h->watchdog, NULL);
    }
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->conns_lock);
    for (size_t i = 0; i < h->nallow; i++)
        free(h->allow[i]);
    free(h->allow);
    free(h->prio);
    free(h->cert);
    free(h->key);
    free(h->ca);
    free(h);
}

enum tpx_code ext_http_check_listen(const char *listen, struct tpx_err *err)
{
    struct sockaddr_storage ss;
    unsigned port;
    bool v6 = false;

    return parse_listen(listen, &ss, &v6, &port, err);
}

bool ext_http_is_loopback(const char *listen)
{
    struct sockaddr_storage ss;
    struct tpx_err err = TPX_ERR_INIT;
    unsigned port;
    bool v6 = false;

    if (!listen || listen[0] == ':') /* ":PORT" is every address */
        return false;
    if (parse_listen(listen, &ss, &v6, &port, &err) != TPX_OK)
        return false;
    if (v6)
        return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
    return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
}

/* A new daemon from h's settings: on the address (fd invalid) or on a listen socket a quiesced
 * daemon handed over. NULL when MHD refuses (it has logged why through on_log). */
static struct MHD_Daemon *open_daemon(struct ext_http *h, MHD_socket fd)
{
    /* poll(), not epoll: with epoll, MHD_quiesce_daemon() (ext_http_stop) removes the listen
     * socket from each pool thread's epoll set from the stopping thread, while a pool thread
     * woken by a connection may remove it too; the loser gets ENOENT and MHD aborts ("Failed to
     * remove listen FD from epoll set", exit 134 on SIGTERM: 1 stop in a few hundred under
     * load). With poll() each pool thread is told through its ITC and drops it itself. */
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    struct MHD_OptionItem opts[24];
    size_t no = 0;

    if (h->v6)
        flags |= MHD_USE_IPv6;
    /* the logger first, so MHD never writes to stderr itself */
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_log, NULL};
    if (fd == MHD_INVALID_SOCKET)
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &h->addr};
    else
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, h->threads, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, h->idle_timeout_s, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, h->max_conns, NULL};
    if (h->max_conns_per_ip)
        opts[no++] =
            (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->max_conns_per_ip, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h};
    /* bigger per-connection buffers: a 30 MB body arrives in fewer, larger chunks */
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 256 * 1024, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h};
    if (h->cert) {
        flags |= MHD_USE_TLS;
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, h->prio};
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert};
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->key};
        if (h->ca)
            opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, h->ca};
    }
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
}

/* The certificate and key load together and the CA holds at least one certificate: checked
 * before the running daemon is touched, so a bad file never takes the listener down. */
static enum tpx_code check_tls(const char *cert, const char *key, const char *ca,
                               struct tpx_err *err)
{
    gnutls_certificate_credentials_t cr;
    gnutls_datum_t c = {(unsigned char *)(uintptr_t)cert, (unsigned)strlen(cert)};
    gnutls_datum_t k = {(unsigned char *)(uintptr_t)key, (unsigned)strlen(key)};
    int rc;

    if (gnutls_certificate_allocate_credentials(&cr) < 0)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory for TLS credentials");
    rc = gnutls_certificate_set_x509_key_mem(cr, &c, &k, GNUTLS_X509_FMT_PEM);
    if (rc < 0) {
        gnutls_certificate_free_credentials(cr);
        return tpx_err_set(err, TPX_EINVAL, "TLS certificate and key do not load: %s",
                           gnutls_strerror(rc));
    }
    if (ca) {
        gnutls_datum_t a = {(unsigned char *)(uintptr_t)ca, (unsigned)strlen(ca)};
        rc = gnutls_certificate_set_x509_trust_mem(cr, &a, GNUTLS_X509_FMT_PEM);
        if (rc <= 0) {
            gnutls_certificate_free_credentials(cr);
            return tpx_err_set(err, TPX_EINVAL, "client CA holds no certificate%s%s",
                               rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
        }
    }
    gnutls_certificate_free_credentials(cr);
    return TPX_OK;
}

/* Replace *slot with a copy of text (NULL: NULL). The old copy is freed. */
static enum tpx_code replace_str(char **slot, const char *text, struct tpx_err *err)
{
    char *copy = NULL;

    if (text && !(copy = strdup(text)))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    free(*slot);
    *slot = copy;
    return TPX_OK;
}

struct ext_http *ext_http_start(const struct ext_http_config *cfg, ext_http_handler_fn *fn,
                                void *ctx, struct tpx_err *err)
{
    struct ext_http *h;
    unsigned port = 0;
    bool tls = cfg->tls_cert_pem || cfg->tls_key_pem;
    const union MHD_DaemonInfo *di;
    struct sockaddr_storage ss;
    bool v6 = false;

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
    h->addr = ss;
    h->v6 = v6;
    h->max_body = cfg->max_body;
    h->request_timeout_s = cfg->request_timeout_s ? cfg->request_timeout_s : 15;
    h->idle_timeout_s = cfg->conn_timeout_s ? cfg->conn_timeout_s : 120;
    h->send_timeout_s = cfg->send_timeout_s ? cfg->send_timeout_s : 30;
    h->answer_budget = cfg->answer_budget ? cfg->answer_budget : 256U << 20;
    h->max_conns = cfg->max_conns ? cfg->max_conns : 1000;
    h->max_conns_per_ip = cfg->max_conns_per_ip;
    h->threads = cfg->threads;
    atomic_init(&h->inflight, 0);
    pthread_mutex_init(&h->conns_lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    if (h->threads == 0) { /* the cgroup's CPU quota, not the host's CPUs */
        unsigned n = tpx_cpus_available();
        h->threads = n < 2 ? 2 : n > 64 ? 64 : n;
    }
    if (copy_allow(h, cfg, err) != TPX_OK)
        goto fail;
    if (tls) {
        const char *prio = cfg->tls_priorities ? cfg->tls_priorities : EXT_HTTP_TLS_PRIORITIES;

        if (check_priorities(prio, err) != TPX_OK ||
            check_tls(cfg->tls_cert_pem, cfg->tls_key_pem, cfg->client_ca_pem, err) != TPX_OK ||
            replace_str(&h->prio, prio, err) != TPX_OK ||
            replace_str(&h->cert, cfg->tls_cert_pem, err) != TPX_OK ||
            replace_str(&h->key, cfg->tls_key_pem, err) != TPX_OK ||
            replace_str(&h->ca, cfg->client_ca_pem, err) != TPX_OK)
            goto fail;
        h->require_client = h->ca != NULL;
    }
    h->d = open_daemon(h, MHD_INVALID_SOCKET);
    if (!h->d) {
        tpx_err_set(err, TPX_EIO,
                    "cannot listen on '%s' (address in use, bad TLS files, or no "
                    "permission)",
                    cfg->listen);
        goto fail;
    }
    di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : port;
    if (pthread_create(&h->watchdog, NULL, watchdog, h) != 0) {
        tpx_err_set(err, TPX_ENOMEM, "cannot start the request-timeout thread");
        goto fail;
    }
    h->watchdog_started = true;
    return h;
fail:
    if (h->d)
        MHD_stop_daemon(h->d);
    free_http(h);
    return NULL;
}

/* Take the retiring daemon (if any) out under the lock and stop it outside: its connections'
 * CLOSED notifications take the lock. */
static void stop_retiring(struct ext_http *h, bool only_when_due)
{
    struct MHD_Daemon *old = NULL;
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&h->conns_lock);
    if (h->retiring && (!only_when_due || now.tv_sec >= h->retire_at)) {
        old = h->retiring;
        h->retiring = NULL;
    }
    pthread_mutex_unlock(&h->conns_lock);
    if (old)
        MHD_stop_daemon(old); /* quiesced: it does not close the listen socket */
}

static void free_three(char *v[3])
{
    for (int i = 0; i < 3; i++)
        free(v[i]);
}

/* Exchange the PEM texts h serves with v's. */
static void swap_tls(struct ext_http *h, char *v[3])
{
    char *old[3] = {h->cert, h->key, h->ca};

    h->cert = v[0];
    h->key = v[1];
    h->ca = v[2];
    memcpy(v, old, sizeof(old));
}

enum tpx_code ext_http_reload_tls(struct ext_http *h, const char *cert_pem, const char *key_pem,
                                  const char *ca_pem, struct tpx_err *err)
{
    struct MHD_Daemon *fresh;
    struct timespec now;
    MHD_socket fd;
    char *keep[3];

    if (!h->cert)
        return tpx_err_set(err, TPX_EINVAL, "not serving TLS: nothing to reload");
    if (!cert_pem || !key_pem || (h->ca && !ca_pem))
        return tpx_err_set(err, TPX_EINVAL, "reload needs a certificate, a key and a client CA");
    if (check_tls(cert_pem, key_pem, ca_pem, err) != TPX_OK)
        return err->code;
    keep[0] = strdup(cert_pem);
    keep[1] = strdup(key_pem);
    keep[2] = h->ca ? strdup(ca_pem) : NULL;
    if (!keep[0] || !keep[1] || (h->ca && !keep[2])) {
        free_three(keep);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    swap_tls(h, keep);       /* h: the new files; keep: the old ones */
    stop_retiring(h, false); /* at most one old daemon at a time */
    /* The new daemon takes over the listen socket; connections that arrive in between wait in
     * the kernel's backlog. The old one keeps serving what it has until it retires. */
    fd = MHD_quiesce_daemon(h->d);
    fresh = fd == MHD_INVALID_SOCKET ? NULL : open_daemon(h, fd);
    if (!fresh) {
        /* cannot happen with checked files; put the old certificates back on the socket */
        swap_tls(h, keep);
        fresh = fd == MHD_INVALID_SOCKET ? NULL : open_daemon(h, fd);
        if (!fresh) {
            free_three(keep);
            return tpx_err_set(err, TPX_EIO, "TLS reload: cannot restart the listener");
        }
        tpx_err_set(err, TPX_EIO, "TLS reload: the new certificates do not start; kept the old");
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&h->conns_lock);
    h->retiring = h->d;
    h->retire_at = now.tv_sec + (time_t)h->request_timeout_s + 5;
    h->d = fresh;
    pthread_mutex_unlock(&h->conns_lock);
    free_three(keep);
    return err->code;
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
    stop_retiring(h, false);
    MHD_stop_daemon(h->d);
    h->d = NULL;
    /* MHD's threads drop the quiesced socket with some delay: it may be closed only once the
     * daemon has stopped (MHD_quiesce_daemon's documentation). */
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    free_http(h);
}
