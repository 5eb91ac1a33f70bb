/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cmd_serve.c - `topox serve`: configuration, cluster knowledge (--nodes / --cluster),
 * the HTTP server, and the signal-driven lifetime (STYLE.md 2.6): SIGINT/SIGTERM are blocked
 * before any thread starts and taken with sigwait(); shutdown drains requests in flight. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "extender/cluster_load.h"
#include "extender/cmd.h"
#include "extender/config.h"
#include "extender/http.h"
#include "extender/routes.h"
#include "extender/yamljson.h"
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
    "  --reservation-ttl DUR    how long a group's rest is reserved after a bind (default 10m)\n"
    "  --max-body SIZE          request body cap (default 256Mi); larger bodies get 413\n"
    "  --bind-mode MODE         record (default: record the placement, answer success) or api\n"
    "  --resources LIST         accelerator resource names in precedence order (comma list)\n"
    "  --label-keys LEVEL=LIST  label keys for domain, rack, block or zone, in precedence order\n"
    "  --pipeline-scope SCOPE   default scope of a replica: rack (default), block or zone\n"
    "  --tls-cert FILE          serve HTTPS with this certificate (PEM) ...\n"
    "  --tls-key FILE           ... and key\n"
    "  --client-ca FILE         require client certificates signed by this CA (mutual TLS)\n"
    "  --threads N              HTTP worker threads (default: CPUs)\n"
    "  --conn-timeout DUR       close idle connections after DUR (default 120s)\n"
    "  --drain-timeout DUR      on SIGTERM, wait up to DUR for requests in flight (default 10s)\n"
    "  -h, --help               this text\n\n"
    "Exit status: 0 after SIGTERM/SIGINT, 1 on a startup failure, 2 on a usage error.\n";

struct flag_val {
    int opt;
    const char *arg;
};

static const char *key_for(int opt)
{
    switch (opt) {
    case 'l': return "listen";
    case 'n': return "nodes";
    case 'C': return "cluster";
    case 't': return "reservationTTL";
    case 'b': return "maxBody";
    case 'm': return "bindMode";
    case 'r': return "resources";
    case 's': return "pipelineScope";
    case 'c': return "tlsCert";
    case 'k': return "tlsKey";
    case 'a': return "clientCA";
    case 'T': return "threads";
    case 'o': return "connectionTimeout";
    case 'd': return "drainTimeout";
    default: return NULL;
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
    char *cert = NULL, *key = NULL, *ca = NULL;
    sigset_t sigs;
    int status = CMD_FAILED;
    int c, sig = 0;

    if (!flags)
        return CMD_FAILED;
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
    if (err.code != TPX_OK) {
        TPX_LOG(TPX_ERROR, "cannot read TLS files", TPX_S("err", err.msg));
        goto out;
    }
    state = ext_state_new(cfg.reservation_ttl_s, &err);
    metrics = state ? ext_metrics_new(&err) : NULL;
    if (!metrics)
        goto fail;
    cluster = load_cluster(&cfg, &err);
    if (!cluster && err.code != TPX_OK)
        goto fail;
    if (cluster && ext_state_set_cluster(state, cluster, &err) != TPX_OK)
        goto fail;
    if (!cluster)
        TPX_LOG(TPX_WARN, "no --nodes or --cluster: not ready until Node objects arrive in a "
                          "filter request");

    memset(&routes, 0, sizeof(routes));
    routes.state = state;
    routes.metrics = metrics;
    routes.opts.labels = ext_serve_config_labels(&cfg);
    routes.opts.default_scope = cfg.pipeline_scope;
    routes.bind_mode = cfg.bind_mode;
    routes.max_response = cfg.max_body + 1024 * 1024;
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
                TPX_S("bind_mode", cfg.bind_mode == EXT_BIND_API ? "api" : "record"));
    }
    while (sigwait(&sigs, &sig) != 0)
        ;
    TPX_LOG(TPX_INFO, "shutting down", TPX_I("signal", sig));
    ext_http_stop(http, cfg.drain_s * 1000);
    http = NULL;
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
