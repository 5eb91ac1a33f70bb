/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_serve.c - `topox serve`: configuration, cluster knowledge (--nodes / --cluster,
 * or the API server's nodes and pods through watch.c and state_feed.c), the API binder, the HTTP
 * server, and the signal-driven lifetime (STYLE.md 2.6): SIGINT/SIGTERM are blocked
 * before any thread starts and taken with sigwait(); shutdown drains requests in flight. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "extender/binder.h"
#include "objects/cluster_load.h"
#include "cli/cmd.h"
#include "extender/config.h"
#include "extender/http.h"
#include "extender/routes.h"
#include "extender/state_feed.h"
#include "kube/watch.h"
#include "objects/yamljson.h"
#include "topology/synthetic.h"

static const char usage_text[] =
    "usage: topox serve [FLAGS]\n\n"
    "Run the kube-scheduler HTTP extender: POST /filter, /prioritize, /bind, /preempt;\n"
    "GET /healthz, /readyz, /metrics, /version, /debug/state.\n\n"
    "  --config FILE            YAML config; flags override it (see --print-config)\n"
    "  --print-config           print the effective config as YAML and exit\n"
    "  --listen ADDR:PORT       where to listen (default 127.0.0.1:8888; port 0 picks one)\n"
    "  --nodes FILE             cluster from Node objects (kubectl get nodes -o json|yaml)\n"
    "  --cluster SPEC           synthetic cluster, e.g. racks=4,nodes-per-rack=4 or 'example'\n"
    "  --kubeconfig FILE        reach the API server with this kubeconfig (default:\n"
    "                           $KUBECONFIG, then the pod's service account in a cluster)\n"
    "  --cluster-source SRC     auto (default: api when no --nodes/--cluster and an API config\n"
    "                           exists), api (watch nodes and pods) or file (--nodes/--cluster)\n"
    "  --reservation-ttl DUR    how long a group's rest is reserved after a bind (default 10m)\n"
    "  --max-body SIZE          request body cap (default 256Mi); larger bodies get 413\n"
    "  --bind-mode MODE         record (default: record the placement, answer success) or api\n"
    "                           (also create the Binding through the API server)\n"
    "  --bind-timeout DUR       limit on one Binding POST (default 4s; the scheduler waits 5s)\n"
    "  --api-backoff-max DUR    longest wait between watch retries (default 30s)\n"
    "  --events BOOL            Events on placed pods and rejected groups (default true)\n"
    "  --resources LIST         accelerator resource names in precedence order (comma list)\n"
    "  --label-keys LEVEL=LIST  label keys for domain, rack, block or zone, in precedence order\n"
    "  --pipeline-scope SCOPE   default scope of a replica: rack (default), block or zone\n"
    "  --tls-cert FILE          serve HTTPS with this certificate (PEM) ...\n"
    "  --tls-key FILE           ... and key\n"
    "  --client-ca FILE         require client certificates signed by this CA (mutual TLS)\n"
    "  --threads N              HTTP worker threads (default: CPUs)\n"
    "  --conn-timeout DUR       close idle connections after DUR (default 120s)\n"
    "  --drain-timeout DUR      on SIGTERM, wait up to DUR (at most 1h) for requests in flight\n"
    "                           (default 10s)\n"
    "  -h, --help               this text\n\n"
    "Exit status: 0 after SIGTERM/SIGINT, 1 on a startup failure, 2 on a usage error.\n";

struct flag_val {
    int opt;
    const char *arg;
};

static const char *key_for(int opt)
{
    switch (opt) {
    case 'l':
        return "listen";
    case 'n':
        return "nodes";
    case 'C':
        return "cluster";
    case 't':
        return "reservationTTL";
    case 'b':
        return "maxBody";
    case 'm':
        return "bindMode";
    case 'r':
        return "resources";
    case 's':
        return "pipelineScope";
    case 'c':
        return "tlsCert";
    case 'k':
        return "tlsKey";
    case 'a':
        return "clientCA";
    case 'T':
        return "threads";
    case 'o':
        return "connectionTimeout";
    case 'd':
        return "drainTimeout";
    case 'K':
        return "kubeconfig";
    case 'S':
        return "clusterSource";
    case 'B':
        return "bindTimeout";
    case 'x':
        return "apiBackoffMax";
    case 'e':
        return "events";
    default:
        return NULL;
    }
}

static char *read_pem(const char *path, struct tpx_err *err)
{
    char *data = NULL;
    size_t len = 0;

    if (!path)
        return NULL;
    if (ext_read_file(path, 1024 * 1024, &data, &len, err) != TPX_OK)
        return NULL;
    return data;
}

static struct topo_cluster *load_cluster(struct ext_serve_config *cfg, struct tpx_err *err)
{
    if (cfg->nodes_file) {
        struct ext_cluster_load_result res;
        const char *paths[] = {cfg->nodes_file};
        struct topo_cluster *c;

        if (ext_cluster_load(paths, 1, ext_serve_config_labels(cfg), &res, err) != TPX_OK)
            return NULL;
        for (size_t i = 0; i < res.nwarnings; i++)
            TPX_LOG(TPX_WARN, "cluster", TPX_S("file", cfg->nodes_file),
                    TPX_S("warning", res.warnings[i]));
        c = res.cluster;
        res.cluster = NULL;
        ext_cluster_load_release(&res);
        return c;
    }
    if (cfg->cluster_spec)
        return topo_cluster_synthetic(cfg->cluster_spec, err);
    return NULL;
}

/* Connect to the API server when the cluster comes from it or binds go through it: the watch of
 * nodes and pods feeding the state (readiness then waits for the first full sync), and the binder
 * for Bindings and Events. With clusterSource auto and no API configuration at all, serve runs
 * standalone (*use_api false) unless bind mode api needs the API. */
static enum tpx_code start_api(struct ext_serve_config *cfg, struct ext_state *state,
                               struct ext_kube_config *kcfg, bool *use_api,
                               struct ext_state_feed **feed, struct ext_watch **watch,
                               struct ext_binder **binder, struct tpx_err *err)
{
    bool files = cfg->nodes_file || cfg->cluster_spec;
    bool need_bind = cfg->bind_mode == EXT_BIND_API;
    struct tpx_err ke = TPX_ERR_INIT;

    ext_serve_config_labels(cfg); /* once, before any thread reads cfg->label_cfg */
    *use_api =
        cfg->cluster_source == EXT_SOURCE_API || (cfg->cluster_source == EXT_SOURCE_AUTO && !files);
    if (cfg->cluster_source == EXT_SOURCE_API && files)
        return tpx_err_set(err, TPX_EINVAL,
                           "clusterSource api takes the nodes from the API server: drop --nodes "
                           "and --cluster");
    if (!*use_api && !need_bind && !cfg->kubeconfig)
        return TPX_OK;
    if (ext_kube_config_load(cfg->kubeconfig, kcfg, &ke) != TPX_OK) {
        if (ke.code == TPX_ENOENT && !cfg->kubeconfig && !need_bind &&
            cfg->cluster_source == EXT_SOURCE_AUTO) {
            ext_kube_config_release(kcfg);
            *use_api = false;
            return TPX_OK; /* no API configuration anywhere: standalone */
        }
        *err = ke;
        tpx_err_prefix(err, "Kubernetes API configuration");
        return err->code;
    }
    if (*use_api) {
        struct ext_watch_config wc;
        struct ext_watch_sink sink;

        *feed = ext_state_feed_new(state, &cfg->label_cfg, err);
        if (!*feed)
            return err->code;
        ext_state_feed_sink(*feed, &sink);
        memset(&wc, 0, sizeof(wc));
        wc.backoff_max_ms = cfg->api_backoff_max_s * 1000;
        if (wc.backoff_max_ms < 500)
            wc.backoff_min_ms = wc.backoff_max_ms;
        *watch = ext_watch_start(kcfg, &wc, &sink, err);
        if (!*watch)
            return err->code;
    }
    if (need_bind || cfg->events) {
        struct ext_binder_config bc;

        memset(&bc, 0, sizeof(bc));
        bc.bind_timeout_ms = (long)cfg->bind_timeout_s * 1000;
        bc.clients = cfg->threads ? cfg->threads : 4;
        bc.no_events = !cfg->events;
        *binder = ext_binder_new(kcfg, &bc, err);
        if (!*binder)
            return err->code;
    }
    return TPX_OK;
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'f'},
        {"print-config", no_argument, NULL, 'p'},
        {"listen", required_argument, NULL, 'l'},
        {"nodes", required_argument, NULL, 'n'},
        {"cluster", required_argument, NULL, 'C'},
        {"reservation-ttl", required_argument, NULL, 't'},
        {"max-body", required_argument, NULL, 'b'},
        {"bind-mode", required_argument, NULL, 'm'},
        {"resources", required_argument, NULL, 'r'},
        {"label-keys", required_argument, NULL, 'L'},
        {"pipeline-scope", required_argument, NULL, 's'},
        {"tls-cert", required_argument, NULL, 'c'},
        {"tls-key", required_argument, NULL, 'k'},
        {"client-ca", required_argument, NULL, 'a'},
        {"threads", required_argument, NULL, 'T'},
        {"conn-timeout", required_argument, NULL, 'o'},
        {"drain-timeout", required_argument, NULL, 'd'},
        {"kubeconfig", required_argument, NULL, 'K'},
        {"cluster-source", required_argument, NULL, 'S'},
        {"bind-timeout", required_argument, NULL, 'B'},
        {"api-backoff-max", required_argument, NULL, 'x'},
        {"events", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct ext_serve_config cfg;
    struct flag_val *flags = calloc((size_t)argc + 1, sizeof(*flags));
    size_t nflags = 0;
    const char *config_path = NULL;
    bool print = false;
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_state *state = NULL;
    struct ext_metrics *metrics = NULL;
    struct ext_http *http = NULL;
    struct ext_routes routes;
    struct ext_http_config hc;
    struct topo_cluster *cluster;
    struct ext_kube_config kcfg;
    struct ext_state_feed *feed = NULL;
    struct ext_watch *watch = NULL;
    struct ext_binder *binder = NULL;
    bool use_api = false;
    char *cert = NULL, *key = NULL, *ca = NULL;
    sigset_t sigs;
    int status = CMD_FAILED;
    int c, sig = 0;

    if (!flags)
        return CMD_FAILED;
    memset(&kcfg, 0, sizeof(kcfg));
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_text, stdout);
            free(flags);
            return CMD_OK;
        }
        if (c == '?' || c == ':') {
            fprintf(stderr, "topox serve: unknown flag or missing value '%s'\n\n%s",
                    argv[optind - 1], usage_text);
            free(flags);
            return CMD_USAGE;
        }
        if (c == 'f')
            config_path = optarg;
        else if (c == 'p')
            print = true;
        else
            flags[nflags++] = (struct flag_val){c, optarg};
    }
    if (optind < argc) {
        fprintf(stderr, "topox serve: unexpected argument '%s'\n\n%s", argv[optind], usage_text);
        free(flags);
        return CMD_USAGE;
    }
    if (ext_serve_config_init(&cfg, &err) != TPX_OK ||
        (config_path && ext_serve_config_load(&cfg, config_path, &err) != TPX_OK)) {
        fprintf(stderr, "topox serve: %s\n", err.msg);
        goto usage_out;
    }
    for (size_t i = 0; i < nflags; i++) {
        enum tpx_code rc;

        if (flags[i].opt == 'L') {
            const char *eq = strchr(flags[i].arg, '=');
            char k[64];
            if (!eq || eq - flags[i].arg > 40) {
                fprintf(stderr, "topox serve: --label-keys wants LEVEL=KEY,KEY\n");
                goto usage_out;
            }
            snprintf(k, sizeof(k), "labels.%.*s", (int)(eq - flags[i].arg), flags[i].arg);
            rc = ext_serve_config_set(&cfg, k, eq + 1, &err);
        } else {
            rc = ext_serve_config_set(&cfg, key_for(flags[i].opt), flags[i].arg, &err);
        }
        if (rc != TPX_OK) {
            fprintf(stderr, "topox serve: %s\n", err.msg);
            goto usage_out;
        }
    }
    if (print) {
        ext_serve_config_print(&cfg, stdout);
        status = CMD_OK;
        goto out;
    }

    /* before any thread exists, so every thread inherits the mask and sigwait() gets them */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    cert = read_pem(cfg.tls_cert, &err);
    key = read_pem(cfg.tls_key, &err);
    ca = read_pem(cfg.client_ca, &err);
    if (err.code != TPX_OK)
        goto fail;
    state = ext_state_new(cfg.reservation_ttl_s, &err);
    metrics = state ? ext_metrics_new(&err) : NULL;
    if (!metrics)
        goto fail;
    cluster = load_cluster(&cfg, &err);
    if (!cluster && err.code != TPX_OK)
        goto fail;
    if (cluster && ext_state_set_cluster(state, cluster, &err) != TPX_OK)
        goto fail;
    if (start_api(&cfg, state, &kcfg, &use_api, &feed, &watch, &binder, &err) != TPX_OK)
        goto fail;
    if (!cluster && !use_api)
        TPX_LOG(TPX_WARN, "no --nodes, --cluster or API server: not ready until Node objects "
                          "arrive in a filter request");

    memset(&routes, 0, sizeof(routes));
    routes.state = state;
    routes.metrics = metrics;
    routes.opts.labels = &cfg.label_cfg; /* filled by start_api(); the watch reads it too */
    routes.opts.default_scope = cfg.pipeline_scope;
    routes.bind_mode = cfg.bind_mode;
    routes.max_response = cfg.max_body + 1024 * 1024;
    routes.binder = binder;
    memset(&hc, 0, sizeof(hc));
    hc.listen = cfg.listen;
    hc.max_body = cfg.max_body;
    hc.threads = cfg.threads;
    hc.conn_timeout_s = cfg.conn_timeout_s;
    hc.tls_cert_pem = cert;
    hc.tls_key_pem = key;
    hc.client_ca_pem = ca;
    http = ext_http_start(&hc, ext_routes_handle, &routes, &err);
    if (!http)
        goto fail;
    {
        const char *addr = cfg.listen;
        const char *colon = strrchr(addr, ':');
        char host[256];
        snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - addr) : 0, addr);
        TPX_LOG(TPX_INFO, "listening", TPX_S("addr", host), TPX_I("port", ext_http_port(http)),
                TPX_B("tls", cert != NULL), TPX_B("client_certs", ca != NULL),
                TPX_S("bind_mode", cfg.bind_mode == EXT_BIND_API ? "api" : "record"),
                TPX_S("cluster_source", use_api ? "api" : "file"),
                TPX_S("api_server", kcfg.server ? kcfg.server : ""));
    }
    while (sigwait(&sigs, &sig) != 0)
        ;
    TPX_LOG(TPX_INFO, "shutting down", TPX_I("signal", sig));
    ext_http_stop(http, cfg.drain_s * 1000);
    http = NULL;
    ext_watch_stop(watch);
    watch = NULL;
    TPX_LOG(TPX_INFO, "stopped");
    status = CMD_OK;
    goto out;
fail:
    TPX_LOG(TPX_ERROR, "serve failed", TPX_S("err", err.msg),
            TPX_S("code", tpx_code_name(err.code)));
    fprintf(stderr, "topox serve: %s\n", err.msg);
    status = CMD_FAILED;
out:
    ext_http_stop(http, 0);
    ext_watch_stop(watch); /* after the HTTP server: no handler runs any more */
    ext_state_feed_free(feed);
    ext_binder_free(binder);
    ext_kube_config_release(&kcfg);
    ext_metrics_free(metrics);
    ext_state_free(state);
    free(cert);
    free(key);
    free(ca);
    ext_serve_config_release(&cfg);
    free(flags);
    return status;
usage_out:
    ext_serve_config_release(&cfg);
    free(flags);
    return CMD_USAGE;
}
