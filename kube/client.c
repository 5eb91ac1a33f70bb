/* SPDX-License-Identifier: Apache-2.0 */
/* kube/client.c - Kubernetes API client: one CURL handle per client, token re-read, capped
 * bodies, retries with backoff and jitter, Status -> tpx_err, paged LIST and streaming GET. */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "kube/internal.h"
#include "objects/yamljson.h"
#include "common/banned.h"

#define DEFAULT_TIMEOUT_MS 10000L
#define DEFAULT_CONNECT_TIMEOUT_MS 5000L
#define DEFAULT_MAX_BODY ((size_t)256 << 20)
#define DEFAULT_TOKEN_RELOAD_S 60U
#define DEFAULT_RETRIES 3U
#define DEFAULT_BACKOFF_MS 200U
#define MAX_BACKOFF_MS 5000U
#define ERR_BODY_CAP ((size_t)64 << 10)

struct kube_client {
    struct kube_config cfg;
    CURL *h;
    char curl_err[CURL_ERROR_SIZE];
    char *token;     /* current bearer token, or NULL */
    double token_at; /* when token_file was last read, tpx_mono_s() */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
    struct tpx_backoff retry;
    unsigned long nreq;
};

/* ---- process-wide ----------------------------------------------------------------------- */

enum tpx_code kube_global_init(struct tpx_err *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return tpx_err_set(err, TPX_EIO, "cannot initialise libcurl");
    return TPX_OK;
}

void kube_global_cleanup(void)
{
    curl_global_cleanup();
}

const char *kube_library_version(char *buf, size_t len)
{
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);

    snprintf(buf, len, "%s%s%s", cv->version, cv->ssl_version ? " " : "",
             cv->ssl_version ? cv->ssl_version : "");
    return buf;
}

/* ---- the client ------------------------------------------------------------------------- */

static enum tpx_code load_token(struct kube_client *k, struct tpx_err *err)
{
    char *tok = NULL;

    if (!k->cfg.token_file)
        return TPX_OK;
    if (kube_read_trimmed(k->cfg.token_file, &tok, err) != TPX_OK) {
        tpx_err_prefix(err, "bearer token");
        return err->code;
    }
    free(k->token);
    k->token = tok;
    k->token_at = tpx_mono_s();
    return TPX_OK;
}

/* Re-read the token file when it is older than token_reload_s. A failed re-read keeps the old
 * token: the projected file is swapped atomically, so a failure is transient. */
static void refresh_token(struct kube_client *k)
{
    struct tpx_err ignore = TPX_ERR_INIT;

    if (k->cfg.token_file && tpx_mono_s() - k->token_at >= (double)k->cfg.token_reload_s)
        load_token(k, &ignore);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *userp);
static int on_progress(void *userp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow);

/* Everything that is the same for every request of this client, set once: perform() then sets
 * only the method, URL, body, headers, timeout and the transfer's write target. Keeping one
 * handle (rather than a duplicate per request) keeps its connection, DNS and TLS session caches.
 * As before, a setopt the libcurl build refuses (a TLS backend without blobs) is not an error
 * here: the transfer then fails with libcurl's message. */
static void setup_handle(struct kube_client *k)
{
    CURL *h = k->h;

    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, k->curl_err);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, k->cfg.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, k);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (k->cfg.insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (k->cfg.ca_data) {
        struct curl_blob b = {k->cfg.ca_data, k->cfg.ca_data_len, CURL_BLOB_COPY};

        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    } else if (k->cfg.ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, k->cfg.ca_file);
    }
    if (k->cfg.cert_data) {
        struct curl_blob b = {k->cfg.cert_data, k->cfg.cert_data_len, CURL_BLOB_COPY};

        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (k->cfg.cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, k->cfg.cert_file);
    }
    if (k->cfg.key_data) {
        struct curl_blob b = {k->cfg.key_data, k->cfg.key_data_len, CURL_BLOB_COPY};

        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (k->cfg.key_file) {
        curl_easy_setopt(h, CURLOPT_SSLKEY, k->cfg.key_file);
    }
}

struct kube_client *kube_client_new(const struct kube_config *cfg, struct tpx_err *err)
{
    struct kube_client *k = calloc(1, sizeof(*k));

    if (!k) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory creating the API client");
        return NULL;
    }
    if (!cfg->server || !*cfg->server) {
        tpx_err_set(err, TPX_EINVAL, "API client: no server URL");
        free(k);
        return NULL;
    }
    if (kube_config_copy(&k->cfg, cfg, err) != TPX_OK) {
        free(k);
        return NULL;
    }
    if (!k->cfg.timeout_ms)
        k->cfg.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (!k->cfg.connect_timeout_ms)
        k->cfg.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    if (!k->cfg.max_body)
        k->cfg.max_body = DEFAULT_MAX_BODY;
    if (!k->cfg.token_reload_s)
        k->cfg.token_reload_s = DEFAULT_TOKEN_RELOAD_S;
    if (!k->cfg.retries)
        k->cfg.retries = DEFAULT_RETRIES;
    if (!k->cfg.backoff_ms)
        k->cfg.backoff_ms = DEFAULT_BACKOFF_MS;
    tpx_backoff_init(&k->retry, k->cfg.backoff_ms, MAX_BACKOFF_MS, true);
    if (k->cfg.token_file) {
        if (load_token(k, err) != TPX_OK)
            goto fail;
    } else if (k->cfg.token) {
        k->token = strdup(k->cfg.token);
        if (!k->token) {
            tpx_err_set(err, TPX_ENOMEM, "out of memory");
            goto fail;
        }
    }
    k->h = curl_easy_init();
    if (!k->h) {
        tpx_err_set(err, TPX_EIO, "cannot create a libcurl handle");
        goto fail;
    }
    setup_handle(k);
    return k;
fail:
    kube_client_free(k);
    return NULL;
}

void kube_client_free(struct kube_client *k)
{
    if (!k)
        return;
    if (k->h)
        curl_easy_cleanup(k->h);
    free(k->token);
    kube_config_release(&k->cfg);
    free(k);
}

void kube_set_cancel(struct kube_client *k, bool (*cancelled)(void *ctx), void *ctx)
{
    k->cancelled = cancelled;
    k->cancel_ctx = ctx;
}

unsigned long kube_requests(const struct kube_client *k)
{
    return k->nreq;
}

static bool is_cancelled(struct kube_client *k)
{
    return k->cancelled && k->cancelled(k->cancel_ctx);
}

/* What one transfer writes into: a capped buffer, or a streaming consumer once the status says
 * 2xx (anything else is kept in errbody for the message). */
struct xfer {
    struct kube_client *k;
    struct tpx_buf *body;
    struct tpx_buf errbody;
    bool (*on_data)(void *ctx, const char *p, size_t n);
    void *ctx;
    bool stopped; /* on_data asked to stop */
    bool too_big;
    struct tpx_err body_err;
};

static size_t on_write(char *p, size_t size, size_t nmemb, void *userp)
{
    struct xfer *x = userp;
    size_t n = size * nmemb;
    long status = 0;

    curl_easy_getinfo(x->k->h, CURLINFO_RESPONSE_CODE, &status);
    if (x->on_data && status >= 200 && status <= 299) {
        if (!x->on_data(x->ctx, p, n)) {
            x->stopped = true;
            return 0;
        }
        return n;
    }
    if (x->on_data || !x->body) {
        /* An error body (or one nobody wants): keep the head for the message, drop the rest. */
        size_t room = x->errbody.cap - x->errbody.len;
        struct tpx_err ignore = TPX_ERR_INIT;

        tpx_buf_add(&x->errbody, p, n < room ? n : room, &ignore);
        return n;
    }
    if (tpx_buf_add(x->body, p, n, &x->body_err) != TPX_OK) {
        x->too_big = true;
        return 0;
    }
    return n;
}

static int on_progress(void *userp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct kube_client *k = userp;

    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return is_cancelled(k) ? 1 : 0;
}

/* The message of a Status body, or the start of whatever the body is. */
static void status_message(const char *body, char *out, size_t size)
{
    json_t *j = body && *body ? json_loads(body, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    const char *m = j ? kube_jstr(j, "message") : NULL;
    size_t n;

    if (!m)
        m = body ? body : "";
    n = strlen(m);
    if (n >= size)
        n = size - 1;
    memcpy(out, m, n);
    out[n] = '\0';
    /* One line in logs and Error fields. */
    for (size_t i = 0; i < n; i++) {
        if (out[i] == '\n' || out[i] == '\r')
            out[i] = ' ';
    }
    json_decref(j);
}

/* The path without its query string, for messages. */
static void short_path(const char *path, char *out, size_t size)
{
    size_t n = strcspn(path, "?");

    if (n >= size)
        n = size - 1;
    memcpy(out, path, n);
    out[n] = '\0';
}

/* One attempt. *status is the HTTP status (0 when none came back). */
static enum tpx_code perform(struct kube_client *k, const char *method, const char *path,
                             const char *content_type, const char *body, struct xfer *x,
                             long timeout_ms, long *status, struct tpx_err *err)
{
    struct curl_slist *hdrs = NULL;
    struct tpx_buf url;
    struct tpx_buf auth;
    char ctype[160];
    CURLcode cc;
    char sp[128];

    *status = 0;
    short_path(path, sp, sizeof(sp));
    tpx_buf_init(&url, 16384);
    tpx_buf_init(&auth, 65536);
    if (tpx_buf_addf(&url, err, "%s%s", k->cfg.server, path) != TPX_OK)
        goto out;
    refresh_token(k);
    k->curl_err[0] = '\0';
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    hdrs = curl_slist_append(hdrs, "User-Agent: topox");
    if (k->token && *k->token) {
        if (tpx_buf_addf(&auth, err, "Authorization: Bearer %s", k->token) != TPX_OK)
            goto out;
        hdrs = curl_slist_append(hdrs, auth.data);
    }
    if (body) {
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        hdrs = curl_slist_append(hdrs, ctype);
    }
    if (!hdrs) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory building request headers");
        goto out;
    }
    /* what changes per request; the rest setup_handle() set once */
    curl_easy_setopt(k->h, CURLOPT_URL, url.data);
    curl_easy_setopt(k->h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(k->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(k->h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 0L);
    if (body) {
        curl_easy_setopt(k->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(k->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    } else {
        /* forget the last request's body (this also makes it a POST), then back to GET */
        curl_easy_setopt(k->h, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(k->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
        curl_easy_setopt(k->h, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(k->h, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") != 0 ? method : NULL);
    k->nreq++;
    cc = curl_easy_perform(k->h);
    curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, status);
    if (cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && x->stopped))
        goto out;
    if (x->too_big) {
        tpx_err_set(err, TPX_ETOOBIG, "%s %s: response body over %zu bytes", method, sp,
                    k->cfg.max_body);
    } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
        tpx_err_set(err, TPX_EIO, "%s %s: cancelled", method, sp);
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        tpx_err_set(err, TPX_ETIMEOUT, "%s %s: %s", method, sp,
                    k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc));
    } else {
        tpx_err_set(err, TPX_EIO, "%s %s: %s", method, sp,
                    k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc));
    }
    /* A transport failure after the headers must not pass for an HTTP answer. */
    *status = 0;
out:
    curl_slist_free_all(hdrs);
    tpx_buf_release(&url);
    tpx_buf_release(&auth);
    return err->code;
}

/* Sleep before retry `attempt` (0-based): backoff_ms * 2^attempt, capped, with +-50 % jitter.
 * Wakes early when cancelled. */
static void backoff(struct kube_client *k, unsigned attempt)
{
    double end = tpx_mono_s() + (double)tpx_backoff_ms(&k->retry, attempt) / 1000.0;

    while (!is_cancelled(k)) {
        double left = end - tpx_mono_s();
        struct timespec ts;

        if (left <= 0)
            break;
        if (left > 0.05)
            left = 0.05;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)(left * 1e9);
        nanosleep(&ts, NULL);
    }
}

static bool retryable(const char *method, enum tpx_code rc, long status, bool cancelled)
{
    if (cancelled || strcmp(method, "GET") != 0)
        return false;
    if (rc == TPX_EIO || rc == TPX_ETIMEOUT)
        return true;
    return status == 429 || (status >= 500 && status <= 599);
}

/* The request loop shared by buffered and streaming calls. */
static enum tpx_code request(struct kube_client *k, const char *method, const char *path,
                             const char *content_type, const char *body, struct tpx_buf *out,
                             bool (*on_data)(void *, const char *, size_t), void *ctx,
                             long timeout_ms, struct tpx_err *err)
{
    bool retried_401 = false;
    unsigned attempt = 0;
    struct tpx_buf scratch;
    char sp[128];

    short_path(path, sp, sizeof(sp));
    tpx_buf_init(&scratch, k->cfg.max_body);
    for (;;) {
        struct tpx_err e = TPX_ERR_INIT;
        struct xfer x;
        long status = 0;
        enum tpx_code rc;

        memset(&x, 0, sizeof(x));
        x.k = k;
        x.body = on_data ? NULL : (out ? out : &scratch);
        x.on_data = on_data;
        x.ctx = ctx;
        tpx_buf_init(&x.errbody, ERR_BODY_CAP);
        if (x.body) {
            tpx_buf_reset(x.body);
            x.body->cap = k->cfg.max_body;
        }
        rc = perform(k, method, path, content_type, body, &x, timeout_ms, &status, &e);
        if (rc == TPX_OK && status >= 200 && status <= 299) {
            tpx_buf_release(&x.errbody);
            tpx_buf_release(&scratch);
            return TPX_OK;
        }
        if (rc == TPX_OK && status == 401 && k->cfg.token_file && !retried_401) {
            /* The projected token may have rotated under us: read it again, try once more. */
            struct tpx_err ignore = TPX_ERR_INIT;

            tpx_buf_release(&x.errbody);
            retried_401 = true;
            load_token(k, &ignore);
            continue;
        }
        /* A stream may already have delivered data: its caller decides about retries. */
        if (!on_data && attempt < k->cfg.retries &&
            retryable(method, rc, status, is_cancelled(k))) {
            tpx_buf_release(&x.errbody);
            backoff(k, attempt);
            attempt++;
            continue;
        }
        if (rc == TPX_OK) {
            char msg[200];
            const char *text = x.body && !on_data ? x.body->data : x.errbody.data;

            status_message(text, msg, sizeof(msg));
            err->http_status = status;
            tpx_err_set(err, TPX_EAPI, "%s %s: HTTP %ld: %s", method, sp, status,
                        msg[0] ? msg : "(no message)");
        } else {
            tpx_err_set(err, e.code, "%s", e.msg);
        }
        tpx_buf_release(&x.errbody);
        tpx_buf_release(&scratch);
        return err->code;
    }
}

enum tpx_code kube_request(struct kube_client *k, const char *method, const char *path,
                           const char *content_type, const char *body, struct tpx_buf *out,
                           struct tpx_err *err)
{
    return request(k, method, path, content_type, body, out, NULL, NULL, k->cfg.timeout_ms, err);
}

enum tpx_code kube_stream(struct kube_client *k, const char *path, long timeout_ms,
                          bool (*on_data)(void *ctx, const char *p, size_t n), void *ctx,
                          struct tpx_err *err)
{
    return request(k, "GET", path, NULL, NULL, NULL, on_data, ctx, timeout_ms, err);
}

enum tpx_code kube_get_json(struct kube_client *k, const char *path, json_t **out,
                            struct tpx_err *err)
{
    struct tpx_buf b;
    json_error_t je;
    char sp[128];

    *out = NULL;
    tpx_buf_init(&b, k->cfg.max_body);
    if (kube_request(k, "GET", path, NULL, NULL, &b, err) != TPX_OK) {
        tpx_buf_release(&b);
        return err->code;
    }
    *out = json_loadb(b.data ? b.data : "", b.len, 0, &je);
    tpx_buf_release(&b);
    if (!*out) {
        short_path(path, sp, sizeof(sp));
        return tpx_err_set(err, TPX_EPARSE, "GET %s: bad JSON at line %d column %d: %s", sp,
                           je.line, je.column, je.text);
    }
    return TPX_OK;
}

enum tpx_code kube_list(struct kube_client *k, const char *path, const char *query, unsigned limit,
                        kube_item_fn fn, void *ctx, char **rv, struct tpx_err *err)
{
    char *cont = NULL;
    struct tpx_buf url;
    unsigned long seen = 0;

    if (rv)
        *rv = NULL;
    if (!limit)
        limit = KUBE_LIST_LIMIT;
    tpx_buf_init(&url, 16384);
    for (;;) {
        json_t *page = NULL;
        json_t *meta;
        json_t *items;
        json_t *it;
        const char *c;
        const char *r;
        size_t i;

        tpx_buf_reset(&url);
        if (tpx_buf_addf(&url, err, "%s?limit=%u", path, limit) != TPX_OK)
            break;
        if (cont) {
            char *esc = curl_easy_escape(k->h, cont, 0);

            if (!esc) {
                tpx_err_set(err, TPX_ENOMEM, "out of memory");
                break;
            }
            tpx_buf_addf(&url, err, "&continue=%s", esc);
            curl_free(esc);
        }
        if (query && *query)
            tpx_buf_addf(&url, err, "&%s", query);
        if (err->code != TPX_OK)
            break;
        if (kube_get_json(k, url.data, &page, err) != TPX_OK) {
            /* A page over max_body: ask for the same page (same continue token) again with half
             * the limit, down to 1 item. The items already delivered stay delivered. */
            if (err->code != TPX_ETOOBIG || limit <= 1)
                break;
            limit /= 2;
            TPX_LOG(TPX_WARN, "LIST page over the body cap, halving the page size",
                    TPX_S("path", path), TPX_I("limit", limit), TPX_S("error", err->msg));
            tpx_err_clear(err);
            continue;
        }
        items = json_object_get(page, "items");
        meta = json_object_get(page, "metadata");
        if (!json_is_array(items) && !json_is_null(items) && items) {
            tpx_err_set(err, TPX_EPARSE, "LIST %s: 'items' is not an array", path);
            json_decref(page);
            break;
        }
        json_array_foreach(items, i, it)
        {
            if (++seen > KUBE_LIST_ITEMS_MAX) {
                tpx_err_set(err, TPX_ETOOBIG,
                            "LIST %s: more than %lu items; stopping (a list that never ends?)",
                            path, (unsigned long)KUBE_LIST_ITEMS_MAX);
                break;
            }
            if (!fn(ctx, it)) {
                tpx_err_set(err, TPX_EINVAL, "LIST %s: stopped by the caller", path);
                break;
            }
        }
        r = kube_jstr(meta, "resourceVersion");
        if (rv && r) {
            free(*rv);
            *rv = strdup(r);
        }
        c = kube_jstr(meta, "continue");
        if (err->code == TPX_OK && c && *c && cont && strcmp(c, cont) == 0)
            /* the token it was given, back again: the next page is this one, for ever */
            tpx_err_set(err, TPX_EAPI,
                        "LIST %s: the API server answered continue token '%.64s' with the same "
                        "token; stopping, the list would never end",
                        path, c);
        free(cont);
        cont = c && *c ? strdup(c) : NULL;
        json_decref(page);
        if (!cont || err->code != TPX_OK)
            break;
    }
    free(cont);
    tpx_buf_release(&url);
    if (err->code != TPX_OK && rv) {
        free(*rv);
        *rv = NULL;
    }
    return err->code;
}
