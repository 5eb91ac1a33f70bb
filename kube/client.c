/* SPDX-License-Identifier: Apache-2.0 */
/* kube/client.c - Kubernetes API client: config (in-cluster, kubeconfig), one CURL handle per
 * client, token re-read, capped bodies, retries with backoff and jitter, Status -> tpx_err, and
 * the Binding / node PATCH / Event helpers. One of the two files that include curl. */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
#define SMALL_FILE_CAP ((size_t)1 << 20)

struct ext_kube {
    struct ext_kube_config cfg;
    CURL *h;
    char curl_err[CURL_ERROR_SIZE];
    char *token;              /* current bearer token, or NULL */
    struct timespec token_at; /* when token_file was last read */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
    unsigned seed; /* rand_r() state for jitter */
    unsigned long nreq;
};

/* ---- process-wide ----------------------------------------------------------------------- */

enum tpx_code ext_kube_global_init(struct tpx_err *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return tpx_err_set(err, TPX_EIO, "cannot initialise libcurl");
    return TPX_OK;
}

void ext_kube_global_cleanup(void)
{
    curl_global_cleanup();
}

const char *ext_kube_library_version(char *buf, size_t len)
{
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);

    snprintf(buf, len, "%s%s%s", cv->version, cv->ssl_version ? " " : "",
             cv->ssl_version ? cv->ssl_version : "");
    return buf;
}

/* ---- small helpers ---------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read a small file and strip trailing whitespace (token, namespace). */
static enum tpx_code read_trimmed(const char *path, char **out, struct tpx_err *err)
{
    char *data = NULL;
    size_t len = 0;

    *out = NULL;
    if (ext_read_file(path, SMALL_FILE_CAP, &data, &len, err) != TPX_OK)
        return err->code;
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' ' ||
                       data[len - 1] == '\t'))
        data[--len] = '\0';
    *out = data;
    return TPX_OK;
}

static int b64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Standard base64 (whitespace ignored, '=' padding optional). */
static enum tpx_code b64_decode(const char *in, char **out, size_t *out_len, const char *what,
                                struct tpx_err *err)
{
    size_t n = strlen(in);
    char *p = malloc(n / 4 * 3 + 4);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;

    if (!p)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory decoding %s", what);
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)in[i];
        int v;

        if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        v = b64_value(c);
        if (v < 0) {
            free(p);
            return tpx_err_set(err, TPX_EPARSE, "%s is not valid base64", what);
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            p[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    p[o] = '\0';
    *out = p;
    *out_len = o;
    return TPX_OK;
}

/* ---- configuration ---------------------------------------------------------------------- */

void ext_kube_config_release(struct ext_kube_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_file);
    free(cfg->ca_data);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->cert_file);
    free(cfg->key_file);
    free(cfg->cert_data);
    free(cfg->key_data);
    free(cfg->namespace);
    memset(cfg, 0, sizeof(*cfg));
}

static char *dup_bytes(const char *p, size_t n)
{
    char *q;

    if (!p)
        return NULL;
    q = malloc(n + 1);
    if (!q)
        return NULL;
    memcpy(q, p, n);
    q[n] = '\0';
    return q;
}

enum tpx_code ext_kube_config_copy(struct ext_kube_config *dst, const struct ext_kube_config *src,
                                   struct tpx_err *err)
{
    *dst = *src;
    dst->server = dup_or_null(src->server);
    dst->ca_file = dup_or_null(src->ca_file);
    dst->ca_data = dup_bytes(src->ca_data, src->ca_data_len);
    dst->token = dup_or_null(src->token);
    dst->token_file = dup_or_null(src->token_file);
    dst->cert_file = dup_or_null(src->cert_file);
    dst->key_file = dup_or_null(src->key_file);
    dst->cert_data = dup_bytes(src->cert_data, src->cert_data_len);
    dst->key_data = dup_bytes(src->key_data, src->key_data_len);
    dst->namespace = dup_or_null(src->namespace);
    if ((src->server && !dst->server) || (src->ca_file && !dst->ca_file) ||
        (src->ca_data && !dst->ca_data) || (src->token && !dst->token) ||
        (src->token_file && !dst->token_file) || (src->cert_file && !dst->cert_file) ||
        (src->key_file && !dst->key_file) || (src->cert_data && !dst->cert_data) ||
        (src->key_data && !dst->key_data) || (src->namespace && !dst->namespace)) {
        ext_kube_config_release(dst);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory copying the API client config");
    }
    return TPX_OK;
}

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir);
    size_t b = strlen(name);
    char *p = malloc(a + b + 2);

    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

enum tpx_code ext_kube_config_in_cluster(struct ext_kube_config *cfg, struct tpx_err *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = getenv("TOPOX_SA_DIR");
    struct tpx_buf url;
    char *ns_path = NULL;
    char *tok = NULL;

    memset(cfg, 0, sizeof(*cfg));
    if (!host || !*host || !port || !*port)
        return tpx_err_set(err, TPX_ENOENT,
                           "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                           "KUBERNETES_SERVICE_PORT must be set (or pass --kubeconfig)");
    if (!dir || !*dir)
        dir = EXT_KUBE_SA_DIR;
    tpx_buf_init(&url, 1024);
    /* An IPv6 literal needs brackets, as net.JoinHostPort does in client-go. */
    if (strchr(host, ':') && host[0] != '[')
        tpx_buf_addf(&url, err, "https://[%s]:%s", host, port);
    else
        tpx_buf_addf(&url, err, "https://%s:%s", host, port);
    if (err->code != TPX_OK) {
        tpx_buf_release(&url);
        return err->code;
    }
    cfg->server = tpx_buf_detach(&url, NULL);
    cfg->token_file = path_join(dir, "token");
    cfg->ca_file = path_join(dir, "ca.crt");
    ns_path = path_join(dir, "namespace");
    if (!cfg->server || !cfg->token_file || !cfg->ca_file || !ns_path) {
        free(ns_path);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory building the in-cluster config");
    }
    /* The token must be readable now; a missing namespace file is only a missing default. */
    if (read_trimmed(cfg->token_file, &tok, err) != TPX_OK) {
        free(ns_path);
        tpx_err_prefix(err, "in-cluster service-account token");
        return err->code;
    }
    free(tok);
    if (access(cfg->ca_file, R_OK) != 0) {
        free(cfg->ca_file);
        cfg->ca_file = NULL;
    }
    {
        struct tpx_err ignore = TPX_ERR_INIT;
        char *ns = NULL;

        if (read_trimmed(ns_path, &ns, &ignore) == TPX_OK)
            cfg->namespace = ns;
    }
    free(ns_path);
    return TPX_OK;
}

static const char *jstr(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Find the entry named `name` in a kubeconfig list (clusters, users, contexts) and return its
 * `inner` object. */
static json_t *named(json_t *root, const char *list, const char *name, const char *inner)
{
    json_t *arr = json_object_get(root, list);
    size_t i;
    json_t *e;

    if (!json_is_array(arr))
        return NULL;
    json_array_foreach(arr, i, e)
    {
        const char *n = jstr(e, "name");

        if (n && strcmp(n, name) == 0) {
            json_t *o = json_object_get(e, inner);

            return json_is_object(o) ? o : NULL;
        }
    }
    return NULL;
}

/* A kubeconfig path relative to the file's folder. */
static char *resolve(const char *dir, const char *p)
{
    if (!p)
        return NULL;
    if (p[0] == '/' || !dir)
        return strdup(p);
    return path_join(dir, p);
}

static enum tpx_code take_data(json_t *obj, const char *key, char **out, size_t *len,
                               const char *file, struct tpx_err *err)
{
    const char *v = jstr(obj, key);

    if (!v)
        return TPX_OK;
    if (b64_decode(v, out, len, key, err) != TPX_OK)
        tpx_err_prefix(err, "%s", file);
    return err->code;
}

enum tpx_code ext_kube_config_kubeconfig(const char *path, struct ext_kube_config *cfg,
                                         struct tpx_err *err)
{
    struct ext_yaml_docs docs = {0};
    json_t *root;
    json_t *ctx;
    json_t *cluster;
    json_t *user = NULL;
    const char *cur;
    const char *cname;
    const char *uname;
    const char *server;
    char *dir = NULL;
    char *slash;

    memset(cfg, 0, sizeof(*cfg));
    if (ext_yaml_load_file(path, SMALL_FILE_CAP * 16, &docs, err) != TPX_OK)
        return err->code;
    if (docs.n != 1 || !json_is_object(docs.docs[0])) {
        tpx_err_set(err, TPX_EPARSE, "%s: a kubeconfig is one YAML mapping", path);
        goto out;
    }
    root = docs.docs[0];
    dir = strdup(path);
    if (!dir) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else {
        free(dir);
        dir = NULL;
    }
    cur = jstr(root, "current-context");
    if (!cur || !*cur) {
        tpx_err_set(err, TPX_EPARSE, "%s: no current-context", path);
        goto out;
    }
    ctx = named(root, "contexts", cur, "context");
    if (!ctx) {
        tpx_err_set(err, TPX_ENOENT, "%s: context '%s' not found", path, cur);
        goto out;
    }
    cname = jstr(ctx, "cluster");
    uname = jstr(ctx, "user");
    cluster = cname ? named(root, "clusters", cname, "cluster") : NULL;
    if (!cluster) {
        tpx_err_set(err, TPX_ENOENT, "%s: cluster '%s' of context '%s' not found", path,
                    cname ? cname : "", cur);
        goto out;
    }
    if (uname) {
        user = named(root, "users", uname, "user");
        if (!user) {
            tpx_err_set(err, TPX_ENOENT, "%s: user '%s' of context '%s' not found", path, uname,
                        cur);
            goto out;
        }
    }
    server = jstr(cluster, "server");
    if (!server || !*server) {
        tpx_err_set(err, TPX_EPARSE, "%s: cluster '%s' has no server", path, cname);
        goto out;
    }
    cfg->server = strdup(server);
    if (cfg->server) {
        size_t n = strlen(cfg->server);

        while (n > 0 && cfg->server[n - 1] == '/')
            cfg->server[--n] = '\0';
    }
    cfg->insecure = json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
    cfg->ca_file = resolve(dir, jstr(cluster, "certificate-authority"));
    if (take_data(cluster, "certificate-authority-data", &cfg->ca_data, &cfg->ca_data_len, path,
                  err) != TPX_OK)
        goto out;
    if (jstr(ctx, "namespace"))
        cfg->namespace = strdup(jstr(ctx, "namespace"));
    if (user) {
        if (json_object_get(user, "exec") || json_object_get(user, "auth-provider")) {
            tpx_err_set(err, TPX_ENOTSUP,
                        "%s: user '%s' uses an exec or auth-provider plugin, which topox does not "
                        "run; use a token, tokenFile or client certificate",
                        path, uname);
            goto out;
        }
        if (jstr(user, "token"))
            cfg->token = strdup(jstr(user, "token"));
        cfg->token_file = resolve(dir, jstr(user, "tokenFile"));
        cfg->cert_file = resolve(dir, jstr(user, "client-certificate"));
        cfg->key_file = resolve(dir, jstr(user, "client-key"));
        if (take_data(user, "client-certificate-data", &cfg->cert_data, &cfg->cert_data_len, path,
                      err) != TPX_OK ||
            take_data(user, "client-key-data", &cfg->key_data, &cfg->key_data_len, path, err) !=
                TPX_OK)
            goto out;
    }
    if (!cfg->server)
        tpx_err_set(err, TPX_ENOMEM, "out of memory reading %s", path);
out:
    free(dir);
    ext_yaml_docs_release(&docs);
    return err->code;
}

enum tpx_code ext_kube_config_load(const char *path, struct ext_kube_config *cfg,
                                   struct tpx_err *err)
{
    const char *env = getenv("KUBECONFIG");

    if (path && *path)
        return ext_kube_config_kubeconfig(path, cfg, err);
    if (env && *env) {
        /* client-go merges a ':' list; we take the first file that exists. */
        char *copy = strdup(env);
        char *save = NULL;
        enum tpx_code rc = TPX_ENOENT;

        if (!copy)
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
            if (access(p, F_OK) == 0) {
                rc = ext_kube_config_kubeconfig(p, cfg, err);
                free(copy);
                return rc;
            }
        }
        free(copy);
        memset(cfg, 0, sizeof(*cfg));
        return tpx_err_set(err, TPX_ENOENT, "no file of $KUBECONFIG ('%s') exists", env);
    }
    return ext_kube_config_in_cluster(cfg, err);
}

/* ---- the client ------------------------------------------------------------------------- */

static enum tpx_code load_token(struct ext_kube *k, struct tpx_err *err)
{
    char *tok = NULL;

    if (!k->cfg.token_file)
        return TPX_OK;
    if (read_trimmed(k->cfg.token_file, &tok, err) != TPX_OK) {
        tpx_err_prefix(err, "bearer token");
        return err->code;
    }
    free(k->token);
    k->token = tok;
    clock_gettime(CLOCK_MONOTONIC, &k->token_at);
    return TPX_OK;
}

/* Re-read the token file when it is older than token_reload_s. A failed re-read keeps the old
 * token: the projected file is swapped atomically, so a failure is transient. */
static void refresh_token(struct ext_kube *k)
{
    struct tpx_err ignore = TPX_ERR_INIT;
    double at = (double)k->token_at.tv_sec + (double)k->token_at.tv_nsec / 1e9;

    if (k->cfg.token_file && now_s() - at >= (double)k->cfg.token_reload_s)
        load_token(k, &ignore);
}

struct ext_kube *ext_kube_new(const struct ext_kube_config *cfg, struct tpx_err *err)
{
    struct ext_kube *k = calloc(1, sizeof(*k));

    if (!k) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory creating the API client");
        return NULL;
    }
    if (!cfg->server || !*cfg->server) {
        tpx_err_set(err, TPX_EINVAL, "API client: no server URL");
        free(k);
        return NULL;
    }
    if (ext_kube_config_copy(&k->cfg, cfg, err) != TPX_OK) {
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
    k->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)k;
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
    return k;
fail:
    ext_kube_free(k);
    return NULL;
}

void ext_kube_free(struct ext_kube *k)
{
    if (!k)
        return;
    if (k->h)
        curl_easy_cleanup(k->h);
    free(k->token);
    ext_kube_config_release(&k->cfg);
    free(k);
}

void ext_kube_set_cancel(struct ext_kube *k, bool (*cancelled)(void *ctx), void *ctx)
{
    k->cancelled = cancelled;
    k->cancel_ctx = ctx;
}

unsigned long ext_kube_requests(const struct ext_kube *k)
{
    return k->nreq;
}

static bool is_cancelled(struct ext_kube *k)
{
    return k->cancelled && k->cancelled(k->cancel_ctx);
}

/* What one transfer writes into: a capped buffer, or a streaming consumer once the status says
 * 2xx (anything else is kept in errbody for the message). */
struct xfer {
    struct ext_kube *k;
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
    struct ext_kube *k = userp;

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
    const char *m = j ? jstr(j, "message") : NULL;
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
static enum tpx_code perform(struct ext_kube *k, const char *method, const char *path,
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
    curl_easy_reset(k->h);
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
    curl_easy_setopt(k->h, CURLOPT_URL, url.data);
    curl_easy_setopt(k->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k->h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(k->h, CURLOPT_ERRORBUFFER, k->curl_err);
    curl_easy_setopt(k->h, CURLOPT_CONNECTTIMEOUT_MS, k->cfg.connect_timeout_ms);
    if (timeout_ms > 0)
        curl_easy_setopt(k->h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(k->h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(k->h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(k->h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(k->h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(k->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(k->h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(k->h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(k->h, CURLOPT_XFERINFODATA, k);
    curl_easy_setopt(k->h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(k->h, CURLOPT_ACCEPT_ENCODING, "");
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(k->h, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(k->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(k->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    if (k->cfg.insecure) {
        curl_easy_setopt(k->h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(k->h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (k->cfg.ca_data) {
        struct curl_blob b = {k->cfg.ca_data, k->cfg.ca_data_len, CURL_BLOB_COPY};

        curl_easy_setopt(k->h, CURLOPT_CAINFO_BLOB, &b);
    } else if (k->cfg.ca_file) {
        curl_easy_setopt(k->h, CURLOPT_CAINFO, k->cfg.ca_file);
    }
    if (k->cfg.cert_data) {
        struct curl_blob b = {k->cfg.cert_data, k->cfg.cert_data_len, CURL_BLOB_COPY};

        curl_easy_setopt(k->h, CURLOPT_SSLCERT_BLOB, &b);
        curl_easy_setopt(k->h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (k->cfg.cert_file) {
        curl_easy_setopt(k->h, CURLOPT_SSLCERT, k->cfg.cert_file);
    }
    if (k->cfg.key_data) {
        struct curl_blob b = {k->cfg.key_data, k->cfg.key_data_len, CURL_BLOB_COPY};

        curl_easy_setopt(k->h, CURLOPT_SSLKEY_BLOB, &b);
        curl_easy_setopt(k->h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (k->cfg.key_file) {
        curl_easy_setopt(k->h, CURLOPT_SSLKEY, k->cfg.key_file);
    }
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
static void backoff(struct ext_kube *k, unsigned attempt)
{
    unsigned long ms = k->cfg.backoff_ms;
    unsigned long span;
    double end;

    for (unsigned i = 0; i < attempt && ms < MAX_BACKOFF_MS; i++)
        ms *= 2;
    if (ms > MAX_BACKOFF_MS)
        ms = MAX_BACKOFF_MS;
    span = ms ? ms : 1;
    ms = ms / 2 + (unsigned long)rand_r(&k->seed) % span;
    end = now_s() + (double)ms / 1000.0;
    while (!is_cancelled(k)) {
        double left = end - now_s();
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
static enum tpx_code request(struct ext_kube *k, const char *method, const char *path,
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

enum tpx_code ext_kube_request(struct ext_kube *k, const char *method, const char *path,
                               const char *content_type, const char *body, struct tpx_buf *out,
                               struct tpx_err *err)
{
    return request(k, method, path, content_type, body, out, NULL, NULL, k->cfg.timeout_ms, err);
}

enum tpx_code ext_kube_stream(struct ext_kube *k, const char *path, long timeout_ms,
                              bool (*on_data)(void *ctx, const char *p, size_t n), void *ctx,
                              struct tpx_err *err)
{
    return request(k, "GET", path, NULL, NULL, NULL, on_data, ctx, timeout_ms, err);
}

enum tpx_code ext_kube_get_json(struct ext_kube *k, const char *path, json_t **out,
                                struct tpx_err *err)
{
    struct tpx_buf b;
    json_error_t je;
    char sp[128];

    *out = NULL;
    tpx_buf_init(&b, k->cfg.max_body);
    if (ext_kube_request(k, "GET", path, NULL, NULL, &b, err) != TPX_OK) {
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

enum tpx_code ext_kube_list(struct ext_kube *k, const char *path, const char *query, unsigned limit,
                            ext_kube_item_fn fn, void *ctx, char **rv, struct tpx_err *err)
{
    char *cont = NULL;
    struct tpx_buf url;

    if (rv)
        *rv = NULL;
    if (!limit)
        limit = 500;
    tpx_buf_init(&url, 16384);
    do {
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
        if (ext_kube_get_json(k, url.data, &page, err) != TPX_OK)
            break;
        items = json_object_get(page, "items");
        meta = json_object_get(page, "metadata");
        if (!json_is_array(items) && !json_is_null(items) && items) {
            tpx_err_set(err, TPX_EPARSE, "LIST %s: 'items' is not an array", path);
            json_decref(page);
            break;
        }
        json_array_foreach(items, i, it)
        {
            if (!fn(ctx, it)) {
                tpx_err_set(err, TPX_EINVAL, "LIST %s: stopped by the caller", path);
                break;
            }
        }
        r = jstr(meta, "resourceVersion");
        if (rv && r) {
            free(*rv);
            *rv = strdup(r);
        }
        c = jstr(meta, "continue");
        free(cont);
        cont = c && *c ? strdup(c) : NULL;
        json_decref(page);
    } while (cont && err->code == TPX_OK);
    free(cont);
    tpx_buf_release(&url);
    if (err->code != TPX_OK && rv) {
        free(*rv);
        *rv = NULL;
    }
    return err->code;
}

/* ---- Binding, node patch, events -------------------------------------------------------- */

char *ext_kube_binding_body(const char *ns, const char *name, const char *uid, const char *node,
                            const struct ext_kube_kv *annotations, size_t nann)
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

enum tpx_code ext_kube_bind(struct ext_kube *k, const char *ns, const char *name, const char *uid,
                            const char *node, const struct ext_kube_kv *annotations, size_t nann,
                            struct tpx_err *err)
{
    struct tpx_err e = TPX_ERR_INIT;
    char *body;
    char path[600];
    const char *m;

    if (!is_path_safe(ns) || !is_path_safe(name) || !node || !*node)
        return tpx_err_set(err, TPX_EINVAL, "bind: bad pod '%s/%s' or node '%s'", ns ? ns : "",
                           name ? name : "", node ? node : "");
    body = ext_kube_binding_body(ns, name, uid, node, annotations, nann);
    if (!body)
        return tpx_err_set(err, TPX_ENOMEM, "bind: out of memory");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    ext_kube_request(k, "POST", path, "application/json", body, NULL, &e);
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

enum tpx_code ext_kube_patch_node(struct ext_kube *k, const char *node, const char *patch_json,
                                  struct tpx_err *err)
{
    char path[320];

    if (!is_path_safe(node))
        return tpx_err_set(err, TPX_EINVAL, "patch node: bad node name '%s'", node ? node : "");
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    if (ext_kube_request(k, "PATCH", path, "application/merge-patch+json", patch_json, NULL, err) !=
        TPX_OK)
        tpx_err_prefix(err, "patch node '%s'", node);
    return err->code;
}

enum tpx_code ext_kube_event(struct ext_kube *k, const struct ext_kube_event *ev,
                             struct tpx_err *err)
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
    ext_kube_request(k, "POST", path, "application/json", body, NULL, err);
    free(body);
    if (err->code == TPX_EAPI && err->http_status == 409 && ev->name && *ev->name) {
        tpx_err_clear(err); /* created by an earlier try whose answer was lost */
        return TPX_OK;
    }
    if (err->code != TPX_OK)
        tpx_err_prefix(err, "event for pod '%s/%s'", ev->ns, ev->pod);
    return err->code;
}
