/* SPDX-License-Identifier: Apache-2.0 */
/* extender/config.h - `topox serve` configuration: built-in defaults, then a YAML file
 * (--config), then flags. One table, ext_config_settings[], names every setting once: its key, its
 * flag, its type, its default, its limits and its help, so every flag has a config key and
 * ext_config_print() writes the effective configuration back as YAML that --config takes. */
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
enum ext_config_cluster_source { EXT_SOURCE_AUTO = 0, EXT_SOURCE_API, EXT_SOURCE_FILE };

#define EXT_MAX_LIST 32

/* Every string is malloc'd and owned; ext_config_release() frees them. */
struct ext_config {
    char *listen;       /* "127.0.0.1:8888" */
    char *admin_listen; /* NULL: none; else /metrics and /debug/state are served there only */
    char *tls_cert;     /* paths, or NULL */
    char *tls_key;
    char *client_ca;
    char *resources[EXT_MAX_LIST]; /* accelerator resource names in precedence order; none: the
                                      built-in list */
    size_t nresources;
    char *label_keys[TOPO_LEVEL_COUNT][EXT_MAX_LIST]; /* per level; none: the built-in list */
    size_t nlabel_keys[TOPO_LEVEL_COUNT];
    enum pol_scope pipeline_scope;  /* default scope for pods that do not say */
    unsigned reservation_ttl_s;     /* 600 */
    unsigned reservation_budget_ns; /* 0: no limit (accelerators held per namespace) */
    unsigned reservation_cap;       /* 0: no limit (accelerators held in all) */
    unsigned pod_table_size;        /* 200000: pods remembered between filter and bind */
    unsigned pod_table_ns_max;      /* 20000: unbound ones per namespace; 0: no limit */
    size_t max_body;                /* 64 MiB */
    unsigned max_candidates;        /* 100000: NodeNames or Nodes per request */
    enum ext_bind_mode bind_mode;   /* record */
    char *scheduler_name;           /* "topox-scheduler" */
    char *nodes_file;               /* --nodes */
    char *cluster_spec;             /* --cluster */
    unsigned threads;               /* 0: CPUs */
    unsigned conn_timeout_s;        /* 120 */
    unsigned drain_s;               /* 10: how long SIGTERM waits for requests in flight */
    char *kubeconfig;               /* --kubeconfig; NULL: $KUBECONFIG, then in-cluster */
    bool api_insecure;              /* --insecure: allow an http:// API server */
    size_t api_max_body;            /* 256 MiB: one API response (struct kube_config) */
    enum ext_config_cluster_source cluster_source; /* auto */
    unsigned bind_timeout_s;    /* 4: one Binding POST (the scheduler's timeout is 5 s) */
    unsigned api_backoff_max_s; /* 30: longest wait between watch retries */
    bool events;                /* true: Normal/Warning Events on pods (needs the API) */
    bool dra;                   /* true: watch the DRA kinds (docs/dra.md) */
    bool nominate;              /* true: nominatedNodeName on held members (api mode) */
    bool lean_filter;           /* true: unresolvable nodes left out when any node passes */
    bool one_held_node;         /* true: a held member's filter passes its held node only */
    bool hold_waiting_groups;   /* true: groups held and nominated while they wait (nominate) */
    unsigned max_conns;         /* 1000: open connections in all */
    unsigned max_conns_per_ip;  /* 64: open connections per client address; 0: no limit */
    unsigned request_timeout_s; /* 15: from a request's start until its body is in */
    unsigned send_timeout_s;    /* 30: from an answer's queueing until it is all sent */
    size_t answer_budget;       /* 256 MiB: what unsent answers may hold in all */
    char *tls_priorities;       /* GnuTLS priority string; TLS 1.2 and 1.3 only */
    char *client_allow[EXT_MAX_LIST]; /* client certificate CNs/SANs let in; none: any */
    size_t nclient_allow;
    bool insecure_listen;  /* false: a non-loopback --listen needs --tls-cert and --client-ca */
    unsigned tls_reload_s; /* 10: how often to look for new TLS files; 0: never */
    enum pol_uncertain uncertain; /* prefer: what an uncertain layout gets (docs/workloads.md) */

    /* derived by ext_config_labels(): borrowed views of the lists above */
    const char *key_ptrs[TOPO_LEVEL_COUNT][EXT_MAX_LIST];
    const char *res_ptrs[EXT_MAX_LIST];
    struct topo_label_config label_cfg;
};

/* How a setting's text becomes its field. */
enum ext_config_setting_type {
    EXT_CONFIG_SETTING_STRING, /* char *, malloc'd; NULL when unset */
    EXT_CONFIG_SETTING_LIST, /* char *[EXT_MAX_LIST] and a size_t count: "a,b" or a YAML list; with
                         levels, one such list per level (see struct ext_config_setting) */
    EXT_CONFIG_SETTING_UINT, /* unsigned in [min, max] */
    EXT_CONFIG_SETTING_DURATION, /* unsigned seconds in [min, max]: common/parse.h's grammar */
    EXT_CONFIG_SETTING_SIZE,     /* size_t bytes in [min, max]: common/parse.h's grammar */
    EXT_CONFIG_SETTING_BOOL,     /* bool: true or on, false or off; printed true or false */
    EXT_CONFIG_SETTING_ENUM,     /* an enum field: one of names[] */
};

/* A name and the value it stands for (an enum constant, or a level). */
struct ext_config_setting_name {
    const char *name;
    int value;
};

/*
 * One `topox serve` setting, as redis's static_configs[] and nginx's ngx_command_t describe theirs:
 * ext_config_settings[] lists every one, and the flag parser, the config file reader,
 * --print-config and --help are all generated from it. Adding a setting is one field in struct
 * ext_config and one entry in config.c.
 *
 * In the YAML file a setting sits at `path` ("tls.cert" is `tls: {cert: ...}`), and also at the
 * top level under `key`. A list with levels is one list per level: the file nests them
 * (`labels: {rack: [a, b]}`), ext_config_set() takes "labels.rack", the flag "rack=a,b".
 */
struct ext_config_setting {
    const char *key;     /* config key, as ext_config_set() takes it: "reservationTTL" */
    const char *path;    /* where the file nests it ("tls.cert"); NULL: at the top, as key */
    const char *flag;    /* the long flag without "--": "reservation-ttl" */
    const char *metavar; /* the flag's value in --help: "DUR" */
    enum ext_config_setting_type type;
    size_t offset;       /* offsetof(struct ext_config, field) */
    size_t count_offset; /* LIST: offsetof the size_t count (an array of them with levels) */
    const char *def;     /* the default, as a flag would give it ("10m"); NULL: zero, NULL or no
                            entries */
    unsigned long long min, max;                 /* UINT, DURATION, SIZE: the accepted range */
    const struct ext_config_setting_name *names; /* ENUM: the values; LIST: the levels, or NULL */
    size_t nnames;
    /* LIST: what an empty list means, for --print-config (the built-in precedence), or NULL */
    const char *const *(*builtin)(int level, size_t *n);
    const char *help; /* --help text after the flag; each "\n" starts an indented line */
};

/* Every setting, in --print-config (and --help) order. Static storage. */
extern const struct ext_config_setting ext_config_settings[];
extern const size_t ext_config_nsettings;

/* Defaults. TPX_ENOMEM. Release with ext_config_release(), also on failure. */
enum tpx_code ext_config_init(struct ext_config *c, struct tpx_err *err);
void ext_config_release(struct ext_config *c);

/* Apply a YAML/JSON config file on top of *c. Unknown keys are errors (like kube-scheduler's
 * strict decoder), naming the file and key; "key: null" keeps the value *c has. */
enum tpx_code ext_config_load(struct ext_config *c, const char *path, struct tpx_err *err);

/* Set one key from text, as a flag gives it ("reservationTTL", "10m"). Keys are the config keys
 * of ext_config_settings[], and "labels.LEVEL". TPX_EINVAL naming the key for an unknown key or a
 * bad value. */
enum tpx_code ext_config_set(struct ext_config *c, const char *key, const char *value,
                             struct tpx_err *err);

/* Set *s from its flag's text (for a list with levels: "LEVEL=A,B"). TPX_EINVAL as above. */
enum tpx_code ext_config_set_flag(struct ext_config *c, const struct ext_config_setting *s,
                                  const char *arg, struct tpx_err *err);

/* The label/resource precedence to decode nodes with (defaults where a list is empty). Borrowed
 * from *c: valid until it changes or is released. */
const struct topo_label_config *ext_config_labels(struct ext_config *c);

/* Print as YAML that ext_config_load() takes back, every setting in table order. */
void ext_config_print(const struct ext_config *c, FILE *f);

#endif
