/* SPDX-License-Identifier: Apache-2.0 */
/* kube/config.c - how to reach the API server: in-cluster (service-account files and the
 * KUBERNETES_SERVICE_* variables) or the current context of a kubeconfig (read through
 * objects/yamljson), with base64 data fields decoded. No network I/O. */
#include "kube/config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/file.h"
#include "common/log.h"
#include "kube/internal.h"
#include "objects/yamljson.h"
#include "common/banned.h"

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
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

enum tpx_code kube_read_trimmed(const char *path, char **out, struct tpx_err *err)
{
    char *data = NULL;
    size_t len = 0;

    *out = NULL;
    if (tpx_read_file(path, KUBE_SMALL_FILE_CAP, &data, &len, err) != TPX_OK)
        return err->code;
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' ' ||
                       data[len - 1] == '\t'))
        data[--len] = '\0';
    *out = data;
    return TPX_OK;
}

/* ---- configuration ---------------------------------------------------------------------- */

void kube_config_release(struct kube_config *cfg)
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

enum tpx_code kube_config_copy(struct kube_config *dst, const struct kube_config *src,
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
        kube_config_release(dst);
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

enum tpx_code kube_config_in_cluster(struct kube_config *cfg, struct tpx_err *err)
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
        dir = KUBE_SA_DIR;
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
    if (kube_read_trimmed(cfg->token_file, &tok, err) != TPX_OK) {
        free(ns_path);
        tpx_err_prefix(err, "in-cluster service-account token");
        return err->code;
    }
    free(tok);
    /* Stricter than client-go: rest.InClusterConfig (rest/config.go) only logs "Expected to load
     * root CA config from ..." and leaves CAFile empty, so Go's system roots are used. Here no
     * ca.crt is an error: the system store would let any public CA vouch for an impostor that
     * then receives the token. TPX_EIO, not TPX_ENOENT: serve's clusterSource auto must not take
     * it for "not in a cluster". */
    if (access(cfg->ca_file, R_OK) != 0) {
        int e = errno;

        free(ns_path);
        return tpx_err_set(err, TPX_EIO,
                           "in-cluster service-account CA %s: %s (topox does not fall back to the "
                           "system trust store)",
                           cfg->ca_file, strerror(e));
    }
    {
        struct tpx_err ignore = TPX_ERR_INIT;
        char *ns = NULL;

        if (kube_read_trimmed(ns_path, &ns, &ignore) == TPX_OK)
            cfg->namespace = ns;
    }
    free(ns_path);
    return TPX_OK;
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
        const char *n = kube_jstr(e, "name");

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
    const char *v = kube_jstr(obj, key);

    if (!v)
        return TPX_OK;
    if (b64_decode(v, out, len, key, err) != TPX_OK)
        tpx_err_prefix(err, "%s", file);
    return err->code;
}

enum tpx_code kube_config_kubeconfig(const char *path, struct kube_config *cfg, struct tpx_err *err)
{
    return kube_config_kubeconfig_context(path, NULL, cfg, err);
}

enum tpx_code kube_config_kubeconfig_context(const char *path, const char *context,
                                             struct kube_config *cfg, struct tpx_err *err)
{
    struct obj_yaml_docs docs = {0};
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
    if (obj_yaml_load_file(path, KUBE_SMALL_FILE_CAP * 16, &docs, err) != TPX_OK)
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
    cur = context && *context ? context : kube_jstr(root, "current-context");
    if (!cur || !*cur) {
        tpx_err_set(err, TPX_EPARSE, "%s: no current-context (name one with --context)", path);
        goto out;
    }
    ctx = named(root, "contexts", cur, "context");
    if (!ctx) {
        tpx_err_set(err, TPX_ENOENT, "%s: context '%s' not found", path, cur);
        goto out;
    }
    cname = kube_jstr(ctx, "cluster");
    uname = kube_jstr(ctx, "user");
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
    server = kube_jstr(cluster, "server");
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
    cfg->ca_file = resolve(dir, kube_jstr(cluster, "certificate-authority"));
    if (take_data(cluster, "certificate-authority-data", &cfg->ca_data, &cfg->ca_data_len, path,
                  err) != TPX_OK)
        goto out;
    /* client-go refuses the pair (transport.TLSConfigFor): which of the two was meant? */
    if (cfg->insecure && (cfg->ca_file || cfg->ca_data)) {
        tpx_err_set(err, TPX_EINVAL,
                    "%s: cluster '%s' sets both insecure-skip-tls-verify and %s: specifying a "
                    "root certificates file with the insecure flag is not allowed (as in "
                    "kubectl); drop one of them",
                    path, cname,
                    cfg->ca_data ? "certificate-authority-data" : "certificate-authority");
        goto out;
    }
    if (cfg->insecure)
        TPX_LOG(TPX_WARN, "kubeconfig skips TLS verification of the API server",
                TPX_S("kubeconfig", path), TPX_S("server", server),
                TPX_S("setting", "insecure-skip-tls-verify"));
    if (kube_jstr(ctx, "namespace"))
        cfg->namespace = strdup(kube_jstr(ctx, "namespace"));
    if (user) {
        if (json_object_get(user, "exec") || json_object_get(user, "auth-provider")) {
            tpx_err_set(err, TPX_ENOTSUP,
                        "%s: user '%s' uses an exec or auth-provider plugin, which topox does not "
                        "run; use a token, tokenFile or client certificate",
                        path, uname);
            goto out;
        }
        if (kube_jstr(user, "token"))
            cfg->token = strdup(kube_jstr(user, "token"));
        cfg->token_file = resolve(dir, kube_jstr(user, "tokenFile"));
        cfg->cert_file = resolve(dir, kube_jstr(user, "client-certificate"));
        cfg->key_file = resolve(dir, kube_jstr(user, "client-key"));
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
    obj_yaml_docs_release(&docs);
    return err->code;
}

enum tpx_code kube_config_check_scheme(const struct kube_config *cfg, bool allow_http,
                                       const char *flag, struct tpx_err *err)
{
    const char *s = cfg->server ? cfg->server : "";

    if (strncasecmp(s, "https://", 8) == 0)
        return TPX_OK;
    if (strncasecmp(s, "http://", 7) == 0) {
        if (allow_http)
            return TPX_OK;
        return tpx_err_set(err, TPX_EINVAL,
                           "API server %s is plain http: the bearer token and the cluster's "
                           "state would cross the network unencrypted; use https, or pass %s",
                           s, flag);
    }
    return tpx_err_set(err, TPX_EINVAL, "API server '%s': the URL must start with https://", s);
}

/* The first file of $KUBECONFIG that exists into *found (malloc'd), else NULL; TPX_ENOENT when
 * the variable names files of which none exists. */
static enum tpx_code kubeconfig_env(char **found, struct tpx_err *err)
{
    const char *env = getenv("KUBECONFIG");
    char *copy;
    char *save = NULL;

    *found = NULL;
    if (!env || !*env)
        return TPX_OK;
    /* client-go merges a ':' list; we take the first file that exists. */
    copy = strdup(env);
    if (!copy)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        if (access(p, F_OK) == 0) {
            *found = strdup(p);
            free(copy);
            return *found ? TPX_OK : tpx_err_set(err, TPX_ENOMEM, "out of memory");
        }
    }
    free(copy);
    return tpx_err_set(err, TPX_ENOENT, "no file of $KUBECONFIG ('%s') exists", env);
}

enum tpx_code kube_config_load_user(const char *path, const char *context, struct kube_config *cfg,
                                    struct tpx_err *err)
{
    const char *home = getenv("HOME");
    char *file = NULL;
    enum tpx_code rc;

    memset(cfg, 0, sizeof(*cfg));
    if (path && *path)
        return kube_config_kubeconfig_context(path, context, cfg, err);
    if (kubeconfig_env(&file, err) != TPX_OK)
        return err->code;
    if (!file && home && *home) {
        size_t n = strlen(home) + sizeof("/.kube/config");

        file = malloc(n);
        if (!file)
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        snprintf(file, n, "%s/.kube/config", home);
        if (access(file, F_OK) != 0) {
            free(file);
            file = NULL;
        }
    }
    if (file) {
        rc = kube_config_kubeconfig_context(file, context, cfg, err);
        free(file);
        return rc;
    }
    if (context && *context)
        return tpx_err_set(err, TPX_ENOENT,
                           "--context '%s': no kubeconfig (no --kubeconfig, $KUBECONFIG unset, "
                           "no ~/.kube/config)",
                           context);
    if (!getenv("KUBERNETES_SERVICE_HOST") || !*getenv("KUBERNETES_SERVICE_HOST"))
        return tpx_err_set(
            err, TPX_ENOENT,
            "no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG or write "
            "~/.kube/config (not in a pod either: KUBERNETES_SERVICE_HOST is unset)");
    return kube_config_in_cluster(cfg, err);
}

enum tpx_code kube_config_load(const char *path, struct kube_config *cfg, struct tpx_err *err)
{
    char *file = NULL;
    enum tpx_code rc;

    if (path && *path)
        return kube_config_kubeconfig(path, cfg, err);
    if (kubeconfig_env(&file, err) != TPX_OK) {
        memset(cfg, 0, sizeof(*cfg));
        return err->code;
    }
    if (!file)
        return kube_config_in_cluster(cfg, err);
    rc = kube_config_kubeconfig(file, cfg, err);
    free(file);
    return rc;
}
