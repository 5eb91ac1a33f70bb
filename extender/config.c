/* SPDX-License-Identifier: Apache-2.0 */
/* extender/config.c - serve configuration: the settings table, and the defaults, YAML file, flag
 * overrides and printing it drives. */
#include "extender/config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "objects/yamljson.h"

#define CONFIG_MAX_BYTES (1024 * 1024)

/* The longest duration a setting takes: what the config parser capped every duration at before
 * common/parse.c, about three years. */
#define DURATION_MAX 100000000ULL

#define FIELD(f) offsetof(struct ext_config, f)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ENUM fields are written as int: every enum here is int-sized (checked below). */
_Static_assert(sizeof(enum pol_scope) == sizeof(int) && sizeof(enum ext_bind_mode) == sizeof(int) &&
                   sizeof(enum ext_config_cluster_source) == sizeof(int) &&
                   sizeof(enum pol_uncertain) == sizeof(int),
               "enum settings are stored as int");

static const struct ext_config_setting_name levels[TOPO_LEVEL_COUNT] = {
    {"domain", TOPO_LEVEL_DOMAIN},
    {"rack", TOPO_LEVEL_RACK},
    {"block", TOPO_LEVEL_BLOCK},
    {"zone", TOPO_LEVEL_ZONE},
};
static const struct ext_config_setting_name scopes[] = {
    {"rack", POL_SCOPE_RACK}, {"block", POL_SCOPE_BLOCK}, {"zone", POL_SCOPE_ZONE}};
static const struct ext_config_setting_name bind_modes[] = {{"record", EXT_BIND_RECORD},
                                                            {"api", EXT_BIND_API}};
static const struct ext_config_setting_name uncertain_modes[] = {{"prefer", POL_UNCERTAIN_PREFER},
                                                                 {"reject", POL_UNCERTAIN_REJECT},
                                                                 {"ignore", POL_UNCERTAIN_IGNORE}};
static const struct ext_config_setting_name sources[] = {
    {"auto", EXT_SOURCE_AUTO}, {"api", EXT_SOURCE_API}, {"file", EXT_SOURCE_FILE}};

static const char *const *builtin_resources(int level, size_t *n)
{
    (void)level;
    *n = topo_label_config_default()->nresources;
    return topo_label_config_default()->resources;
}

static const char *const *builtin_label_keys(int level, size_t *n)
{
    *n = topo_label_config_default()->nkeys[level];
    return topo_label_config_default()->keys[level];
}

/* In --print-config order; --help lists the flags in the same order. */
const struct ext_config_setting ext_config_settings[] = {
    {.key = "listen",
     .flag = "listen",
     .metavar = "ADDR:PORT",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(listen),
     .def = "127.0.0.1:8888",
     .help = "where to listen (default 127.0.0.1:8888; port 0 picks one)"},
    {.key = "adminListen",
     .flag = "admin-listen",
     .metavar = "ADDR:PORT",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(admin_listen),
     .help = "serve /metrics and /debug/state (and /healthz, /readyz, /version)\n"
             "on a second, plain-HTTP listener, and no longer on --listen\n"
             "(default: none, all on --listen)"},
    {.key = "tlsCert",
     .path = "tls.cert",
     .flag = "tls-cert",
     .metavar = "FILE",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(tls_cert),
     .help = "serve HTTPS with this certificate (PEM) ..."},
    {.key = "tlsKey",
     .path = "tls.key",
     .flag = "tls-key",
     .metavar = "FILE",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(tls_key),
     .help = "... and key"},
    {.key = "clientCA",
     .path = "tls.clientCA",
     .flag = "client-ca",
     .metavar = "FILE",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(client_ca),
     .help = "require client certificates signed by this CA (mutual TLS)"},
    {.key = "clientAllow",
     .path = "tls.clientAllow",
     .flag = "client-allow",
     .metavar = "LIST",
     .type = EXT_CONFIG_SETTING_LIST,
     .offset = FIELD(client_allow),
     .count_offset = FIELD(nclient_allow),
     .help = "with --client-ca: let in only client certificates whose CN or a SAN\n"
             "is in this comma list (others get 403); empty: any the CA signed"},
    {.key = "tlsPriorities",
     .path = "tls.priorities",
     .flag = "tls-priorities",
     .metavar = "PRIO",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(tls_priorities),
     .def = "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
     .help = "GnuTLS priority string (default: TLS 1.3 and 1.2 only,\n"
             "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2)"},
    {.key = "tlsReloadInterval",
     .path = "tls.reloadInterval",
     .flag = "tls-reload-interval",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(tls_reload_s),
     .def = "10s",
     .max = 3600,
     .help = "look for changed TLS files this often and serve the new ones\n"
             "(default 10s; 0s: never)"},
    {.key = "insecureListen",
     .flag = "insecure-listen",
     .metavar = "[=BOOL]", /* a switch: the value is optional */
     .type = EXT_CONFIG_SETTING_BOOL,
     .def = "false",
     .offset = FIELD(insecure_listen),
     .help = "allow a non-loopback --listen without --tls-cert and --client-ca\n"
             "(default false)"},
    {.key = "maxConnections",
     .flag = "max-connections",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(max_conns),
     .def = "1000",
     .min = 1,
     .max = 1000000,
     .help = "open connections in all; more are closed at once (default 1000)"},
    {.key = "maxConnectionsPerIP",
     .flag = "max-connections-per-ip",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(max_conns_per_ip),
     .def = "64",
     .max = 1000000,
     .help = "open connections per client address (default 64; 0: no limit)"},
    {.key = "requestTimeout",
     .flag = "request-timeout",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(request_timeout_s),
     .def = "15s",
     .min = 1,
     .max = 3600,
     .help = "close a connection whose request (headers and body) is not in\n"
             "after DUR (default 15s)"},
    {.key = "sendTimeout",
     .flag = "send-timeout",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(send_timeout_s),
     .def = "30s",
     .min = 1,
     .max = 3600,
     .help = "close a connection whose answer is not all sent DUR after it\n"
             "was ready (default 30s, kube-scheduler's extender httpTimeout)"},
    {.key = "answerBudget",
     .flag = "answer-budget",
     .metavar = "SIZE",
     .type = EXT_CONFIG_SETTING_SIZE,
     .offset = FIELD(answer_budget),
     .def = "256Mi",
     .min = 1,
     .max = 1ULL << 40,
     .help = "bytes that answers not yet sent may hold in all, with their\n"
             "requests (default 256Mi); past it a request gets 503"},
    {.key = "resources",
     .flag = "resources",
     .metavar = "LIST",
     .type = EXT_CONFIG_SETTING_LIST,
     .offset = FIELD(resources),
     .count_offset = FIELD(nresources),
     .builtin = builtin_resources,
     .help = "accelerator resource names in precedence order (comma list)"},
    {.key = "labels",
     .flag = "label-keys",
     .metavar = "LEVEL=LIST",
     .type = EXT_CONFIG_SETTING_LIST,
     .offset = FIELD(label_keys),
     .count_offset = FIELD(nlabel_keys),
     .names = levels,
     .nnames = COUNT(levels),
     .builtin = builtin_label_keys,
     .help = "label keys for domain, rack, block or zone, in precedence order"},
    {.key = "pipelineScope",
     .flag = "pipeline-scope",
     .metavar = "SCOPE",
     .type = EXT_CONFIG_SETTING_ENUM,
     .offset = FIELD(pipeline_scope),
     .def = "rack",
     .names = scopes,
     .nnames = COUNT(scopes),
     .help = "default scope of a replica: rack (default), block or zone"},
    {.key = "uncertain",
     .flag = "uncertain",
     .metavar = "MODE",
     .type = EXT_CONFIG_SETTING_ENUM,
     .offset = FIELD(uncertain),
     .def = "prefer",
     .names = uncertain_modes,
     .nnames = COUNT(uncertain_modes),
     .help = "a layout topox cannot read for certain: prefer (default: score only, never\n"
             "reject), reject (judge it as written) or ignore (no topology intent)"},
    {.key = "reservationTTL",
     .flag = "reservation-ttl",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(reservation_ttl_s),
     .def = "10m",
     .min = 1,
     .max = DURATION_MAX,
     .help = "how long a group's rest is reserved after a bind (default 10m)"},
    {.key = "reservationBudgetPerNamespace",
     .flag = "reservation-budget-ns",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(reservation_budget_ns),
     .max = 1u << 30,
     .help = "most accelerators held for the groups of one namespace (default 0: no limit)"},
    {.key = "reservationCap",
     .flag = "reservation-cap",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(reservation_cap),
     .max = 1u << 30,
     .help = "most accelerators held for all groups together (default 0: no limit)"},
    {.key = "podTableSize",
     .flag = "pod-table-size",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(pod_table_size),
     .def = "200000",
     .min = 16,
     .max = 100000000,
     .help = "pods remembered between filter and bind (default 200000); when\n"
             "full, the least recently filtered unbound ones are forgotten"},
    {.key = "podTableNamespaceMax",
     .flag = "pod-table-per-namespace",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(pod_table_ns_max),
     .def = "20000",
     .max = 100000000,
     .help = "unbound pods one namespace may have remembered; past it its own\n"
             "least recently filtered go (default 20000; 0: no limit)"},
    {.key = "maxBody",
     .flag = "max-body",
     .metavar = "SIZE",
     .type = EXT_CONFIG_SETTING_SIZE,
     .offset = FIELD(max_body),
     .def = "64Mi",
     .min = 1,
     .max = 1ULL << 40,
     .help = "request body cap (default 64Mi); larger bodies get 413"},
    {.key = "maxCandidates",
     .flag = "max-candidates",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(max_candidates),
     .def = "100000",
     .min = 1,
     .max = 10000000,
     .help = "candidate nodes per request (default 100000); more get 413"},
    {.key = "schedulerName",
     .flag = "scheduler-name",
     .metavar = "NAME",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(scheduler_name),
     .def = "topox-scheduler",
     .help = "the schedulerName served: --bind-mode=api binds only pods the watch saw with it "
             "(default topox-scheduler)"},
    {.key = "bindMode",
     .flag = "bind-mode",
     .metavar = "MODE",
     .type = EXT_CONFIG_SETTING_ENUM,
     .offset = FIELD(bind_mode),
     .def = "record",
     .names = bind_modes,
     .nnames = COUNT(bind_modes),
     .help = "record (default: record the placement, answer success) or api\n"
             "(also create the Binding through the API server)"},
    {.key = "nodes",
     .flag = "nodes",
     .metavar = "FILE",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(nodes_file),
     .help = "cluster from Node objects (kubectl get nodes -o json|yaml)"},
    {.key = "cluster",
     .flag = "cluster",
     .metavar = "SPEC",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(cluster_spec),
     .help = "synthetic cluster, e.g. racks=4,nodes-per-rack=4 or 'example'"},
    {.key = "threads",
     .flag = "threads",
     .metavar = "N",
     .type = EXT_CONFIG_SETTING_UINT,
     .offset = FIELD(threads),
     .max = 1024,
     .help =
         "HTTP worker threads (default: CPUs; with --bind-mode=api at least 16, as a /bind holds "
         "its thread for the Binding's round trip)"},
    {.key = "connectionTimeout",
     .flag = "conn-timeout",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(conn_timeout_s),
     .def = "120s",
     .min = 1,
     .max = DURATION_MAX,
     .help = "close idle connections after DUR (default 120s)"},
    /* at most an hour: the drain loop counts milliseconds in an unsigned */
    {.key = "drainTimeout",
     .flag = "drain-timeout",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(drain_s),
     .def = "10s",
     .max = 3600,
     .help = "on SIGTERM, wait up to DUR (at most 1h) for requests in flight\n(default 10s)"},
    {.key = "kubeconfig",
     .flag = "kubeconfig",
     .metavar = "FILE",
     .type = EXT_CONFIG_SETTING_STRING,
     .offset = FIELD(kubeconfig),
     .help = "reach the API server with this kubeconfig (default:\n"
             "$KUBECONFIG, then the pod's service account in a cluster)"},
    {.key = "apiInsecure",
     .flag = "insecure",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(api_insecure),
     .def = "false",
     .help = "allow a plain http:// API server (default false: refused)"},
    {.key = "apiMaxBody",
     .flag = "api-max-body",
     .metavar = "SIZE",
     .type = EXT_CONFIG_SETTING_SIZE,
     .offset = FIELD(api_max_body),
     .def = "256Mi",
     .min = 1024,
     .max = 1ULL << 40,
     .help = "cap on one API server response, a LIST page or a GET (default\n"
             "256Mi); a page over it is asked for again with half the items"},
    {.key = "clusterSource",
     .flag = "cluster-source",
     .metavar = "SRC",
     .type = EXT_CONFIG_SETTING_ENUM,
     .offset = FIELD(cluster_source),
     .def = "auto",
     .names = sources,
     .nnames = COUNT(sources),
     .help = "auto (default: api when no --nodes/--cluster and an API config\n"
             "exists), api (watch nodes and pods) or file (--nodes/--cluster)"},
    {.key = "bindTimeout",
     .flag = "bind-timeout",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(bind_timeout_s),
     .def = "4s",
     .min = 1,
     .max = 600,
     .help = "limit on one Binding POST (default 4s; the scheduler waits 5s)"},
    {.key = "apiBackoffMax",
     .flag = "api-backoff-max",
     .metavar = "DUR",
     .type = EXT_CONFIG_SETTING_DURATION,
     .offset = FIELD(api_backoff_max_s),
     .def = "30s",
     .min = 1,
     .max = 3600,
     .help = "longest wait between watch retries (default 30s)"},
    {.key = "events",
     .flag = "events",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(events),
     .def = "true",
     .help = "Events on placed pods and rejected groups (default true)"},
    {.key = "dra",
     .flag = "dra",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(dra),
     .def = "true",
     .help = "watch ResourceSlices, ResourceClaims, DeviceClasses and ComputeDomains: GPUs that "
             "DRA hands out (default true)"},
    {.key = "nominate",
     .flag = "nominate",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(nominate),
     .def = "true",
     .help = "with --bind-mode=api: set status.nominatedNodeName of a held group's pending members "
             "to the nodes held for them, so kube-scheduler tries that node first and alone "
             "(default true)"},
    {.key = "leanFilter",
     .flag = "lean-filter",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(lean_filter),
     .def = "true",
     .help = "where a filter passes any node, leave the nodes that can never take the pod out of "
             "the answer instead of listing them in FailedAndUnresolvableNodes: kube-scheduler "
             "reads a left-out node the same way, and reads the reasons only when no node passes "
             "(default true; false lists every node, e.g. to read reasons with a second extender)"},
    {.key = "oneHeldNode",
     .flag = "one-held-node",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(one_held_node),
     .def = "true",
     .help = "with --lean-filter: the filter of a member of a group topox holds room for passes "
             "the one node held for it, so kube-scheduler skips scoring; a pod filtered again in "
             "a later cycle gets the whole held rack (default true)"},
    {.key = "holdWaitingGroups",
     .flag = "hold-waiting-groups",
     .metavar = "BOOL",
     .type = EXT_CONFIG_SETTING_BOOL,
     .offset = FIELD(hold_waiting_groups),
     .def = "true",
     .help = "with --nominate: hold the room of a group (a PodGroup gang, an LWS group...) whose "
             "members have all waited pending for a second, none filtered yet, and nominate them "
             "to the held nodes before kube-scheduler starts their cycles (default true)"},
};

const size_t ext_config_nsettings = COUNT(ext_config_settings);

/* ---- the fields a setting points at ---- */

static void *field(const struct ext_config *c, const struct ext_config_setting *s)
{
    return (char *)c + s->offset;
}

/* List `level` of a LIST setting: its entries and its count. */
static char **list_of(const struct ext_config *c, const struct ext_config_setting *s, int level,
                      size_t **n)
{
    *n = (size_t *)((char *)c + s->count_offset) + level;
    return (char **)field(c, s) + (size_t)level * EXT_MAX_LIST;
}

static int nlevels(const struct ext_config_setting *s)
{
    return s->type == EXT_CONFIG_SETTING_LIST && s->names ? (int)s->nnames : 1;
}

static void free_list(char **v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free(v[i]);
    *n = 0;
}

static enum tpx_code set_str(char **dst, const char *v, struct tpx_err *err)
{
    char *d = v ? strdup(v) : NULL;

    if (v && !d)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    free(*dst);
    *dst = d;
    return TPX_OK;
}

/* "a,b,c" -> list (replacing it). */
static enum tpx_code set_list(char **v, size_t *n, const char *key, const char *csv,
                              struct tpx_err *err)
{
    const char *p = csv;

    free_list(v, n);
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);

        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        if (len) {
            if (*n >= EXT_MAX_LIST)
                return tpx_err_set(err, TPX_EINVAL, "%s: more than %d entries", key, EXT_MAX_LIST);
            v[*n] = strndup(p, len);
            if (!v[*n])
                return tpx_err_set(err, TPX_ENOMEM, "out of memory");
            (*n)++;
        }
        if (!e)
            break;
        p = e + 1;
    }
    return TPX_OK;
}

static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (!s || !*s || *s == '-')
        return false;
    v = strtoull(s, &end, 10);
    if (*end || v > max)
        return false;
    *out = v;
    return true;
}

static const char *name_of(const struct ext_config_setting *s, int value)
{
    for (size_t i = 0; i < s->nnames; i++) {
        if (s->names[i].value == value)
            return s->names[i].name;
    }
    return "?";
}

/* "10m" for 600, "1h" for 3600, "90s" for 90: the form --help and the file use. */
static void duration_text(unsigned long long v, char *buf, size_t cap)
{
    if (v && v % 3600 == 0)
        snprintf(buf, cap, "%lluh", v / 3600);
    else if (v && v % 60 == 0)
        snprintf(buf, cap, "%llum", v / 60);
    else
        snprintf(buf, cap, "%llus", v);
}

/* What a value of *s must look like, for the message that refuses one: "is not 0..1024". */
static void expected(const struct ext_config_setting *s, char *buf, size_t cap)
{
    char lo[32], hi[32];
    size_t len = 0;

    switch (s->type) {
    case EXT_CONFIG_SETTING_UINT:
        snprintf(buf, cap, "is not %llu..%llu", s->min, s->max);
        return;
    case EXT_CONFIG_SETTING_DURATION:
        duration_text(s->min, lo, sizeof(lo));
        duration_text(s->max, hi, sizeof(hi));
        if (s->max < DURATION_MAX)
            snprintf(buf, cap, "is not a duration between %s and %s", lo, hi);
        else if (s->min > 0)
            snprintf(buf, cap, "is not a positive duration like 10m or 90s");
        else
            snprintf(buf, cap, "is not a duration");
        return;
    case EXT_CONFIG_SETTING_SIZE:
        snprintf(buf, cap, "is not a size like 256Mi or 1000000");
        return;
    case EXT_CONFIG_SETTING_BOOL:
        snprintf(buf, cap, "is not true or false");
        return;
    case EXT_CONFIG_SETTING_ENUM:
        len = (size_t)snprintf(buf, cap, "is not");
        for (size_t i = 0; i < s->nnames && len < cap; i++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s",
                                    i == 0               ? " "
                                    : i + 1 == s->nnames ? " or "
                                                         : ", ",
                                    s->names[i].name);
        return;
    case EXT_CONFIG_SETTING_STRING:
    case EXT_CONFIG_SETTING_LIST:
        break;
    }
    snprintf(buf, cap, "is not valid");
}

/* Set *s (list `level`) from text; key names it in messages. */
static enum tpx_code set_value(struct ext_config *c, const struct ext_config_setting *s, int level,
                               const char *key, const char *v, struct tpx_err *err)
{
    void *f = field(c, s);
    unsigned long long n = 0;
    uint64_t u = 0;
    struct tpx_err ignored = TPX_ERR_INIT;
    bool ok = false;
    char want[160];

    switch (s->type) {
    case EXT_CONFIG_SETTING_STRING:
        return set_str(f, v, err);
    case EXT_CONFIG_SETTING_LIST: {
        size_t *count;
        char **list = list_of(c, s, level, &count);
        return set_list(list, count, key, v, err);
    }
    case EXT_CONFIG_SETTING_UINT:
        ok = parse_uint(v, s->max, &n) && n >= s->min;
        if (ok)
            *(unsigned *)f = (unsigned)n;
        break;
    case EXT_CONFIG_SETTING_DURATION:
        ok = tpx_parse_duration(v, &u, &ignored) == TPX_OK && u >= s->min && u <= s->max;
        if (ok)
            *(unsigned *)f = (unsigned)u;
        break;
    case EXT_CONFIG_SETTING_SIZE:
        ok = tpx_parse_size(v, &u, &ignored) == TPX_OK && u >= s->min && u <= s->max;
        if (ok)
            *(size_t *)f = (size_t)u;
        break;
    case EXT_CONFIG_SETTING_BOOL:
        /* the words a plain YAML scalar gives (issue 21, item 9): one rule for flags and file */
        ok = obj_yaml_bool_word(v) >= 0;
        if (ok)
            *(bool *)f = obj_yaml_bool_word(v) == 1;
        break;
    case EXT_CONFIG_SETTING_ENUM:
        for (size_t i = 0; i < s->nnames && !ok; i++) {
            ok = strcmp(v, s->names[i].name) == 0;
            if (ok)
                *(int *)f = s->names[i].value;
        }
        break;
    }
    if (ok)
        return TPX_OK;
    expected(s, want, sizeof(want));
    return tpx_err_set(err, TPX_EINVAL, "%s: '%s' %s", key, v, want);
}

/* The setting `name` stands for, and for a list with levels which level; NULL when none. name is
 * a key ("tlsCert", "labels.rack") or, when nested, a path in the file ("tls.cert"). */
static const struct ext_config_setting *find(const char *name, bool nested, int *level)
{
    *level = 0;
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];
        const char *n = nested && s->path ? s->path : s->key;
        size_t len = strlen(s->key);

        if (nlevels(s) == 1) {
            if (strcmp(name, n) == 0)
                return s;
            continue;
        }
        if (strncmp(name, s->key, len) != 0 || name[len] != '.')
            continue;
        for (size_t l = 0; l < s->nnames; l++) {
            if (strcmp(name + len + 1, s->names[l].name) == 0) {
                *level = s->names[l].value;
                return s;
            }
        }
    }
    return NULL;
}

/* Whether the file may hold a mapping under key: "tls", "labels". */
static bool is_parent(const char *key)
{
    size_t len = strlen(key);

    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];

        if (nlevels(s) > 1 && strcmp(key, s->key) == 0)
            return true;
        if (s->path && strncmp(s->path, key, len) == 0 && s->path[len] == '.')
            return true;
    }
    return false;
}

/* ---- life cycle ---- */

enum tpx_code ext_config_init(struct ext_config *c, struct tpx_err *err)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];

        if (s->def && set_value(c, s, 0, s->key, s->def, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

void ext_config_release(struct ext_config *c)
{
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];

        if (s->type == EXT_CONFIG_SETTING_STRING) {
            free(*(char **)field(c, s));
            continue;
        }
        for (int l = 0; s->type == EXT_CONFIG_SETTING_LIST && l < nlevels(s); l++) {
            size_t *n;
            char **v = list_of(c, s, l, &n);
            free_list(v, n);
        }
    }
    memset(c, 0, sizeof(*c));
}

/* ---- setting ---- */

enum tpx_code ext_config_set(struct ext_config *c, const char *key, const char *value,
                             struct tpx_err *err)
{
    int level;
    const struct ext_config_setting *s = find(key, false, &level);

    if (!s)
        return tpx_err_set(err, TPX_EINVAL, "unknown key '%s'", key);
    return set_value(c, s, level, key, value, err);
}

enum tpx_code ext_config_set_flag(struct ext_config *c, const struct ext_config_setting *s,
                                  const char *arg, struct tpx_err *err)
{
    const char *eq = strchr(arg, '=');
    char key[64];

    if (nlevels(s) == 1)
        return set_value(c, s, 0, s->key, arg, err);
    if (!eq || eq - arg > 40)
        return tpx_err_set(err, TPX_EINVAL, "--%s wants LEVEL=KEY,KEY", s->flag);
    snprintf(key, sizeof(key), "%s.%.*s", s->key, (int)(eq - arg), arg);
    return ext_config_set(c, key, eq + 1, err);
}

/* ---- the file ---- */

/* A scalar or a list of scalars as text ("a,b"). */
static enum tpx_code scalar_text(const json_t *v, char *buf, size_t cap, struct tpx_err *err)
{
    size_t len = 0;

    if (json_is_array(v)) {
        size_t i;
        json_t *e;

        buf[0] = '\0';
        json_array_foreach(v, i, e)
        {
            char one[512];
            size_t n;
            if (scalar_text(e, one, sizeof(one), err) != TPX_OK)
                return err->code;
            n = strlen(one);
            if (len + n + 2 > cap)
                return tpx_err_set(err, TPX_EINVAL, "list too long");
            if (i)
                buf[len++] = ',';
            memcpy(buf + len, one, n + 1);
            len += n;
        }
        return TPX_OK;
    }
    if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_true(v) || json_is_false(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
    else
        return tpx_err_set(err, TPX_EINVAL, "expected a string, a number or a list of them");
    return TPX_OK;
}

/* One "name: value" of the file; nested: name is "parent.child". */
static enum tpx_code load_one(struct ext_config *c, const char *name, bool nested, const json_t *v,
                              struct tpx_err *err)
{
    char text[4096];
    int level;
    const struct ext_config_setting *s;

    if (json_is_null(v))
        return TPX_OK; /* "key: null" keeps the default, so printed configs load back */
    s = find(name, nested, &level);
    if (!s)
        return tpx_err_set(err, TPX_EINVAL, "unknown key '%s'", name);
    if (scalar_text(v, text, sizeof(text), err) != TPX_OK) {
        tpx_err_prefix(err, "%s", name);
        return err->code;
    }
    return set_value(c, s, level, name, text, err);
}

enum tpx_code ext_config_load(struct ext_config *c, const char *path, struct tpx_err *err)
{
    struct obj_yaml_docs docs;
    const char *key;
    json_t *v, *root;
    enum tpx_code rc = TPX_OK;

    if (obj_yaml_load_file(path, CONFIG_MAX_BYTES, &docs, err) != TPX_OK)
        return err->code;
    if (docs.n != 1 || !json_is_object(docs.docs[0])) {
        obj_yaml_docs_release(&docs);
        return tpx_err_set(err, TPX_EINVAL, "%s: want one YAML mapping", path);
    }
    root = docs.docs[0];
    json_object_foreach(root, key, v)
    {
        if (json_is_object(v) && is_parent(key)) {
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2)
            {
                char full[128];
                snprintf(full, sizeof(full), "%.60s.%.60s", key, k2);
                rc = load_one(c, full, true, v2, err);
                if (rc != TPX_OK)
                    break;
            }
        } else {
            rc = load_one(c, key, false, v, err);
        }
        if (rc != TPX_OK)
            break;
    }
    obj_yaml_docs_release(&docs);
    if (rc != TPX_OK)
        tpx_err_prefix(err, "%s", path);
    return rc;
}

const struct topo_label_config *ext_config_labels(struct ext_config *c)
{
    const struct topo_label_config *def = topo_label_config_default();

    c->label_cfg = *def;
    for (int l = 0; l < TOPO_LEVEL_COUNT; l++) {
        if (!c->nlabel_keys[l])
            continue;
        for (size_t i = 0; i < c->nlabel_keys[l]; i++)
            c->key_ptrs[l][i] = c->label_keys[l][i];
        c->label_cfg.keys[l] = c->key_ptrs[l];
        c->label_cfg.nkeys[l] = c->nlabel_keys[l];
    }
    if (c->nresources) {
        for (size_t i = 0; i < c->nresources; i++)
            c->res_ptrs[i] = c->resources[i];
        c->label_cfg.resources = c->res_ptrs;
        c->label_cfg.nresources = c->nresources;
    }
    return &c->label_cfg;
}

/* ---- printing ---- */

/* v as a double-quoted YAML scalar. */
static void print_quoted(FILE *f, const char *v)
{
    fputc('"', f);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static void print_list(FILE *f, const char *indent, const char *key, const char *const *v, size_t n)
{
    fprintf(f, "%s%s:", indent, key);
    if (!n) {
        fputs(" []\n", f);
        return;
    }
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s  - ", indent);
        print_quoted(f, v[i]);
        fputc('\n', f);
    }
}

/* One list of *s: what is set, else the built-in list it stands for. */
static void print_one_list(FILE *f, const struct ext_config *c, const struct ext_config_setting *s,
                           int level, const char *indent, const char *name)
{
    size_t *n;
    char **v = list_of(c, s, level, &n);
    const char *const *shown = (const char *const *)v;
    size_t nshown = *n;

    if (!nshown && s->builtin)
        shown = s->builtin(level, &nshown);
    print_list(f, indent, name, shown, nshown);
}

static void print_value(FILE *f, const struct ext_config *c, const struct ext_config_setting *s,
                        const char *indent, const char *name)
{
    const void *v = field(c, s);

    if (s->type == EXT_CONFIG_SETTING_LIST && nlevels(s) > 1) {
        char sub[16];

        snprintf(sub, sizeof(sub), "%s  ", indent);
        fprintf(f, "%s%s:\n", indent, name);
        for (size_t l = 0; l < s->nnames; l++)
            print_one_list(f, c, s, s->names[l].value, sub, s->names[l].name);
        return;
    }
    if (s->type == EXT_CONFIG_SETTING_LIST) {
        print_one_list(f, c, s, 0, indent, name);
        return;
    }
    fprintf(f, "%s%s: ", indent, name);
    switch (s->type) {
    case EXT_CONFIG_SETTING_STRING:
        if (*(char *const *)v)
            print_quoted(f, *(char *const *)v);
        else
            fputs("null", f);
        break;
    case EXT_CONFIG_SETTING_UINT:
        fprintf(f, "%u", *(const unsigned *)v);
        break;
    case EXT_CONFIG_SETTING_DURATION:
        fprintf(f, "%us", *(const unsigned *)v);
        break;
    case EXT_CONFIG_SETTING_SIZE:
        fprintf(f, "%zu", *(const size_t *)v);
        break;
    case EXT_CONFIG_SETTING_BOOL:
        fputs(*(const bool *)v ? "true" : "false", f);
        break;
    case EXT_CONFIG_SETTING_ENUM:
        fputs(name_of(s, *(const int *)v), f);
        break;
    case EXT_CONFIG_SETTING_LIST:
        break;
    }
    fputc('\n', f);
}

void ext_config_print(const struct ext_config *c, FILE *f)
{
    const char *parent = NULL; /* the mapping the last setting was printed in, or NULL */
    size_t plen = 0;

    fputs("# topox serve: effective configuration (accepted by --config)\n", f);
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];
        const char *name = s->path ? s->path : s->key;
        const char *dot = strchr(name, '.');

        if (!dot) {
            parent = NULL;
            print_value(f, c, s, "", name);
            continue;
        }
        if (!parent || plen != (size_t)(dot - name) || strncmp(parent, name, plen) != 0) {
            parent = name;
            plen = (size_t)(dot - name);
            fprintf(f, "%.*s:\n", (int)plen, name);
        }
        print_value(f, c, s, "  ", dot + 1);
    }
}
