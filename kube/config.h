/* SPDX-License-Identifier: Apache-2.0 */
/* kube/config.h - how to reach the API server: struct kube_config from the pod's service
 * account or from a kubeconfig. Pure file reading, no network. */
#ifndef TPX_KUBE_CONFIG_H
#define TPX_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* Where the service-account files live inside a pod; TOPOX_SA_DIR overrides it (tests). */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * How to reach the API server. Every string is malloc'd and owned by the struct: fill it with
 * kube_config_load() (or the _in_cluster/_kubeconfig variants), or by hand with strdup'd
 * strings, and free it with kube_config_release(). Zero numbers mean "the default".
 */
struct kube_config {
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
 * token file, ca.crt and namespace from KUBE_SA_DIR or $TOPOX_SA_DIR. TPX_ENOENT when the
 * variables are unset (not in a cluster) or the token cannot be read; TPX_EIO when ca.crt is not
 * readable (no fallback to the system trust store, where client-go's InClusterConfig only logs).
 * *cfg is zeroed first; release it also on failure. */
enum tpx_code kube_config_in_cluster(struct kube_config *cfg, struct tpx_err *err);

/* The current context of a kubeconfig file: server, certificate-authority(-data),
 * insecure-skip-tls-verify, token, tokenFile, client-certificate(-data), client-key(-data),
 * namespace. Relative paths are taken from the file's folder. insecure-skip-tls-verify is
 * honoured with one TPX_WARN log line; with a certificate-authority(-data) too it is TPX_EINVAL,
 * as client-go refuses it. TPX_ENOTSUP for exec or
 * auth-provider users, TPX_EPARSE / TPX_ENOENT with "FILE: ..." messages otherwise. */
enum tpx_code kube_config_kubeconfig(const char *path, struct kube_config *cfg,
                                     struct tpx_err *err);

/* The same with the context named `context` (NULL or "": current-context), as kubectl's
 * --context. TPX_ENOENT "FILE: context 'x' not found". */
enum tpx_code kube_config_kubeconfig_context(const char *path, const char *context,
                                             struct kube_config *cfg, struct tpx_err *err);

/* kubectl's search, for a user's command (`topox plan`): `path` if not NULL, else the first file
 * of $KUBECONFIG that exists, else ~/.kube/config when it exists, else in-cluster; `context` as
 * for kube_config_kubeconfig_context(). TPX_ENOENT "no kubeconfig: ..." when there is none and no
 * pod either. (client-go's loading rules, without merging several files.) */
enum tpx_code kube_config_load_user(const char *path, const char *context, struct kube_config *cfg,
                                    struct tpx_err *err);

/* The usual search: `path` if not NULL, else the first file of $KUBECONFIG (a ':' list), else
 * in-cluster. */
enum tpx_code kube_config_load(const char *path, struct kube_config *cfg, struct tpx_err *err);

/* Refuse a plain http:// server unless allow_http (the caller's --insecure); `flag` names that
 * flag in the message. Any other scheme is refused too. TPX_EINVAL "API server URL is plain
 * http: ... pass FLAG". */
enum tpx_code kube_config_check_scheme(const struct kube_config *cfg, bool allow_http,
                                       const char *flag, struct tpx_err *err);

/* Deep copy (for giving a watch thread its own client). */
enum tpx_code kube_config_copy(struct kube_config *dst, const struct kube_config *src,
                               struct tpx_err *err);

/* Free the strings and zero the struct. Safe to call twice. */
void kube_config_release(struct kube_config *cfg);

#endif
