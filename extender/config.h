/* SPDX-License-Identifier: Apache-2.0 */
/* extender/config.h - `topox serve` configuration: built-in defaults, then a YAML file
 * (--config), then flags. Every key a flag sets has a config key, and ext_serve_config_print()
 * writes the effective configuration back as YAML that --config accepts. */
#ifndef TPX_EXTENDER_CONFIG_H
#define TPX_EXTENDER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "policy/policy.h"
#include "topology/labels.h"

enum ext_bind_mode { EXT_BIND_RECORD = 0, EXT_BIND_API };

/* Where the cluster view comes from. auto: the API server when neither nodes nor cluster is set
 * and a kubeconfig ($KUBECONFIG, kubeconfig) or in-cluster config exists, else the files. */
enum ext_cluster_source { EXT_SOURCE_AUTO = 0, EXT_SOURCE_API, EXT_SOURCE_FILE };

#define EXT_MAX_LIST 32

/* Every string is malloc'd and owned; ext_serve_config_release() frees them. */
struct ext_serve_config {
    char *listen;   /* "127.0.0.1:8888" */
    char *tls_cert; /* paths, or NULL */
    char *tls_key;
    char *client_ca;
    char *resources[EXT_MAX_LIST]; /* accelerator resource names in precedence order; none: the
                                      built-in list */
    size_t nresources;
    char *label_keys[TOPO_LEVEL_COUNT][EXT_MAX_LIST]; /* per level; none: the built-in list */
    size_t nlabel_keys[TOPO_LEVEL_COUNT];
    enum pol_scope pipeline_scope;          /* default scope for pods that do not say */
    unsigned reservation_ttl_s;             /* 600 */
    size_t max_body;                        /* 256 MiB */
    enum ext_bind_mode bind_mode;           /* record */
    char *nodes_file;                       /* --nodes */
    char *cluster_spec;                     /* --cluster */
    unsigned threads;                       /* 0: CPUs */
    unsigned conn_timeout_s;                /* 120 */
    unsigned drain_s;                       /* 10: how long SIGTERM waits for requests in flight */
    char *kubeconfig;                       /* --kubeconfig; NULL: $KUBECONFIG, then in-cluster */
    enum ext_cluster_source cluster_source; /* auto */
    unsigned bind_timeout_s;    /* 4: one Binding POST (the scheduler's timeout is 5 s) */
    unsigned api_backoff_max_s; /* 30: longest wait between watch retries */
    bool events;                /* true: Normal/Warning Events on pods (needs the API) */

    /* derived by ext_serve_config_labels(): borrowed views of the lists above */
    const char *key_ptrs[TOPO_LEVEL_COUNT][EXT_MAX_LIST];
    const char *res_ptrs[EXT_MAX_LIST];
    struct topo_label_config label_cfg;
};

/* Defaults. TPX_ENOMEM. Release with ext_serve_config_release(), also on failure. */
enum tpx_code ext_serve_config_init(struct ext_serve_config *c, struct tpx_err *err);
void ext_serve_config_release(struct ext_serve_config *c);

/* Apply a YAML/JSON config file on top of *c. Unknown keys are errors (like kube-scheduler's
 * strict decoder), naming the file and key. */
enum tpx_code ext_serve_config_load(struct ext_serve_config *c, const char *path,
                                    struct tpx_err *err);

/* Set one key from text, as a flag gives it ("reservationTTL", "10m"). Keys are the config keys
 * (see ext_serve_config_print()). TPX_EINVAL naming the key for a bad value. */
enum tpx_code ext_serve_config_set(struct ext_serve_config *c, const char *key, const char *value,
                                   struct tpx_err *err);

/* The label/resource precedence to decode nodes with (defaults where a list is empty). Borrowed
 * from *c: valid until it changes or is released. */
const struct topo_label_config *ext_serve_config_labels(struct ext_serve_config *c);

/* Print as YAML. */
void ext_serve_config_print(const struct ext_serve_config *c, FILE *f);

/* "10m", "90s", "1h30m", "600" (seconds) -> seconds. */
bool ext_parse_duration(const char *s, unsigned *out);
/* "256Mi", "1Gi", "64M", "1000" (bytes) -> bytes. */
bool ext_parse_size(const char *s, size_t *out);

#endif
