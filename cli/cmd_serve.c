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
#include <sys/stat.h>
#include <time.h>

#include "common/cgroup.h"
#include "common/file.h"
#include "common/log.h"
#include "extender/cpumembers.h"
#include "extender/binder.h"
#include "objects/cluster_load.h"
#include "cli/args.h"
#include "cli/cmd.h"
#include "extender/config.h"
#include "extender/http.h"
#include "extender/routes.h"
#include "extender/state_feed.h"
#include "kube/watch.h"
#include "objects/yamljson.h"
#include "topology/synthetic.h"

/* A flag that sets a setting, kept until the config file is read: flags override it. */
struct flag_val {
    const struct ext_config_setting *setting;
    const char *arg;
};

/* --help around the settings, whose lines ext_config_settings[] gives. */
static const char usage_head[] =
    "usage: topox serve [FLAGS]\n\n"
    "Run the kube-scheduler HTTP extender: POST /filter, /prioritize, /bind, /preempt;\n"
    "GET /healthz, /readyz, /metrics, /version, /debug/state.\n\n";
static const char usage_tail[] =
    "\nExit status: 0 after SIGTERM, SIGINT or SIGQUIT (each drains first), 1 on a startup\n"
    "failure, 2 on a usage error. SIGHUP reloads the TLS files; SIGUSR1 and SIGUSR2 are\n"
    "logged and ignored.\n";

/* Flags that are not settings; the settings' vals follow from OPT_SETTING on. */
enum { OPT_CONFIG = 256, OPT_PRINT, OPT_SETTING };

/* "  --flag VALUE   help", with the help's further lines under its first. */
static void usage_line(FILE *f, const char *flag, const char *metavar, const char *help)
{
    char left[64];

    snprintf(left, sizeof(left), "%s%s%s", flag, metavar && metavar[0] != '[' ? " " : "",
             metavar ? metavar : "");
    fprintf(f, "  %-24s ", left);
    for (const char *p = help; *p; p++) {
        fputc(*p, f);
        if (*p == '\n')
            fprintf(f, "%27s", "");
    }
    fputc('\n', f);
}

/* The --help text, malloc'd, or NULL when out of memory. */
static char *usage_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    fputs(usage_head, f);
    usage_line(f, "--config", "FILE", "YAML config; flags override it (see --print-config)");
    usage_line(f, "--print-config", NULL, "print the effective config as YAML and exit");
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        char flag[64];

        snprintf(flag, sizeof(flag), "--%s", ext_config_settings[i].flag);
        usage_line(f, flag, ext_config_settings[i].metavar, ext_config_settings[i].help);
    }
    usage_line(f, "-h, --help", NULL, "this text");
    fputs(usage_tail, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* getopt_long()'s table: the flags above, then one per setting. Free with free(). */
static struct option *long_options(void)
{
    struct option *o = calloc(ext_config_nsettings + 4, sizeof(*o));
    size_t n = 0;

    if (!o)
        return NULL;
    o[n++] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
    o[n++] = (struct option){"print-config", no_argument, NULL, OPT_PRINT};
    o[n++] = (struct option){"help", no_argument, NULL, 'h'};
    for (size_t i = 0; i < ext_config_nsettings; i++) /* "[=BOOL]": a switch, --flag=false */
        o[n++] = (struct option){ext_config_settings[i].flag,
                                 ext_config_settings[i].metavar[0] == '[' ? optional_argument
                                                                          : required_argument,
                                 NULL, OPT_SETTING + (int)i};
    return o; /* calloc left the terminating {NULL, 0, NULL, 0} */
}

/* Anyone who can reach a non-loopback listener can rewrite placements: it needs TLS and client
 * certificates, or an explicit --insecure-listen (and then one warning line). */
static enum tpx_code check_listen(const struct ext_config *cfg, struct tpx_err *err)
{
    /* what is wrong with the address itself comes first (issue 21, item 7) */
    if (ext_http_check_listen(cfg->listen, err) != TPX_OK) {
        tpx_err_prefix(err, "--listen (listen)");
        return err->code;
    }
    if (ext_http_is_loopback(cfg->listen) || (cfg->tls_cert && cfg->client_ca))
        return TPX_OK;
    if (!cfg->insecure_listen)
        return tpx_err_set(err, TPX_EINVAL,
                           "--listen '%s' is not loopback: give --tls-cert, --tls-key and "
                           "--client-ca, or --insecure-listen",
                           cfg->listen);
    TPX_LOG(TPX_WARN, "insecure listener: any client that reaches it can filter and bind",
            TPX_S("listen", cfg->listen));
    return TPX_OK;
}

/* The host part of "ADDR:PORT" ("" for ":PORT"), for the log line that says where it listens. */
static void listen_host(const char *addr, char *host, size_t cap)
{
    const char *colon = strrchr(addr, ':');

    snprintf(host, cap, "%.*s", colon ? (int)(colon - addr) : 0, addr);
}

/* The admin listener (--admin-listen): plain HTTP, GET only, read-only paths; its own small pool,
 * so a flood on --listen does not keep /metrics from answering, and the reverse. */
static struct ext_http *start_admin(const struct ext_config *cfg, struct ext_routes *routes,
                                    struct tpx_err *err)
{
    struct ext_http_config hc;
    struct ext_http *h;
    char host[256];

    memset(&hc, 0, sizeof(hc));
    hc.listen = cfg->admin_listen;
    hc.max_body = 64 * 1024; /* GET only: a body has no use here */
    hc.threads = 2;
    hc.conn_timeout_s = cfg->conn_timeout_s;
    hc.max_conns = cfg->max_conns;
    hc.max_conns_per_ip = cfg->max_conns_per_ip;
    hc.request_timeout_s = cfg->request_timeout_s;
    hc.send_timeout_s = cfg->send_timeout_s;
    hc.answer_budget = cfg->answer_budget;
    h = ext_http_start(&hc, ext_routes_handle_admin, routes, err);
    if (!h) {
        tpx_err_prefix(err, "--admin-listen");
        return NULL;
    }
    listen_host(cfg->admin_listen, host, sizeof(host));
    TPX_LOG(TPX_INFO, "admin listening", TPX_S("addr", host), TPX_I("port", ext_http_port(h)),
            TPX_S("serves", "/metrics /debug/state /healthz /readyz /version"));
    return h;
}

static char *read_pem(const char *path, struct tpx_err *err)
{
    char *data = NULL;
    size_t len = 0;

    if (!path)
        return NULL;
    if (tpx_read_file(path, 1024 * 1024, &data, &len, err) != TPX_OK)
        return NULL;
    return data;
}

/* What identifies a version of the TLS files: a Secret volume swaps a symlink, so the inode
 * changes; an edit in place changes the time or the size. */
struct tls_files_id {
    struct stat st[3];
};

static void tls_files_stat(const struct ext_config *cfg, struct tls_files_id *id)
{
    const char *paths[3] = {cfg->tls_cert, cfg->tls_key, cfg->client_ca};

    memset(id, 0, sizeof(*id));
    for (int i = 0; i < 3; i++)
        if (paths[i] && stat(paths[i], &id->st[i]) != 0)
            memset(&id->st[i], 0, sizeof(id->st[i]));
}

static bool tls_files_changed(const struct tls_files_id *a, const struct tls_files_id *b)
{
    for (int i = 0; i < 3; i++) {
        const struct stat *x = &a->st[i], *y = &b->st[i];

        if (x->st_dev != y->st_dev || x->st_ino != y->st_ino || x->st_size != y->st_size ||
            x->st_mtim.tv_sec != y->st_mtim.tv_sec || x->st_mtim.tv_nsec != y->st_mtim.tv_nsec)
            return true;
    }
    return false;
}

/* The files changed since *last: read them and hand them to the server. A failure (a half-written
 * pair, a bad file) is one log line and the old certificates keep serving; the next change
 * tries again. */
static void tls_reload_if_changed(const struct ext_config *cfg, struct ext_http *http,
                                  struct tls_files_id *last)
{
    struct tls_files_id now;
    struct tpx_err err = TPX_ERR_INIT;
    char *cert, *key, *ca;

    tls_files_stat(cfg, &now);
    if (!tls_files_changed(last, &now))
        return;
    *last = now;
    cert = read_pem(cfg->tls_cert, &err);
    key = read_pem(cfg->tls_key, &err);
    ca = read_pem(cfg->client_ca, &err);
    if (err.code == TPX_OK && ext_http_reload_tls(http, cert, key, ca, &err) == TPX_OK)
        TPX_LOG(TPX_INFO, "tls certificates reloaded", TPX_S("cert", cfg->tls_cert));
    else
        TPX_LOG(TPX_WARN, "tls reload failed: the old certificates keep serving",
                TPX_S("err", err.msg));
    free(cert);
    free(key);
    free(ca);
}

static struct topo_cluster *load_cluster(struct ext_config *cfg, struct tpx_err *err)
{
    if (cfg->nodes_file) {
        struct obj_cluster_load_result res;
        const char *paths[] = {cfg->nodes_file};
        struct topo_cluster *c;

        if (obj_cluster_load(paths, 1, ext_config_labels(cfg), &res, err) != TPX_OK)
            return NULL;
        for (size_t i = 0; i < res.nwarnings; i++)
            TPX_LOG(TPX_WARN, "cluster", TPX_S("file", cfg->nodes_file),
                    TPX_S("warning", res.warnings[i]));
        c = res.cluster;
        res.cluster = NULL;
        obj_cluster_load_release(&res);
        return c;
    }
    if (cfg->cluster_spec)
        return topo_cluster_synthetic(cfg->cluster_spec, err);
    return NULL;
}

/* HTTP worker threads: --threads, else the CPUs (extender/http.c). With --bind-mode=api at
 * least EXT_API_BIND_THREADS: a /bind holds its worker for the Binding's round trip to the API
 * server (tens of ms on a busy one), and libmicrohttpd's pool gives each connection one worker,
 * so kube-scheduler's next /filter, on a connection of that worker, waited for it: measured with
 * bench/scheduler, every filter came right after the previous pod's bind. */
#define EXT_API_BIND_THREADS 16
static unsigned http_threads(const struct ext_config *cfg)
{
    unsigned cpus;

    if (cfg->threads || cfg->bind_mode != EXT_BIND_API)
        return cfg->threads;
    cpus = tpx_cpus_available(); /* as extender/http.c counts them, up to its 64 */
    return cpus > 64 ? 64 : cpus > EXT_API_BIND_THREADS ? cpus : EXT_API_BIND_THREADS;
}

/* Connect to the API server when the cluster comes from it or binds go through it: the watch of
 * nodes and pods feeding the state (readiness then waits for the first full sync), and the binder
 * for Bindings and Events. With clusterSource auto and no API configuration at all, serve runs
 * standalone (*use_api false) unless bind mode api needs the API. */
static enum tpx_code start_api(struct ext_config *cfg, struct ext_state *state,
                               struct ext_metrics *metrics, struct kube_config *kcfg, bool *use_api,
                               struct ext_state_feed **feed, struct kube_watch **watch,
                               struct ext_binder **binder, struct ext_nominator **nom,
                               struct ext_cpu_members *cpu, struct tpx_err *err)
{
    bool files = cfg->nodes_file || cfg->cluster_spec;
    bool need_bind = cfg->bind_mode == EXT_BIND_API;
    struct tpx_err ke = TPX_ERR_INIT;

    ext_config_labels(cfg); /* once, before any thread reads cfg->label_cfg */
    *use_api =
        cfg->cluster_source == EXT_SOURCE_API || (cfg->cluster_source == EXT_SOURCE_AUTO && !files);
    if (cfg->cluster_source == EXT_SOURCE_API && files)
        return tpx_err_set(err, TPX_EINVAL,
                           "clusterSource api takes the nodes from the API server: drop --nodes "
                           "and --cluster");
    if (!*use_api && !need_bind && !cfg->kubeconfig)
        return TPX_OK;
    if (kube_config_load(cfg->kubeconfig, kcfg, &ke) != TPX_OK) {
        if (ke.code == TPX_ENOENT && !cfg->kubeconfig && !need_bind &&
            cfg->cluster_source == EXT_SOURCE_AUTO) {
            kube_config_release(kcfg);
            *use_api = false;
            return TPX_OK; /* no API configuration anywhere: standalone */
        }
        *err = ke;
        tpx_err_prefix(err, "Kubernetes API configuration");
        return err->code;
    }
    if (kube_config_check_scheme(kcfg, cfg->api_insecure, "--insecure true", err) != TPX_OK)
        return err->code;
    kcfg->max_body = cfg->api_max_body; /* before the watch and the binder copy it */
    if (*use_api) {
        struct kube_watch_config wc;
        struct kube_watch_sink sink;

        *feed = ext_state_feed_new(state, &cfg->label_cfg, err);
        if (!*feed)
            return err->code;
        ext_state_feed_sink(*feed, &sink);
        ext_state_feed_watch_dra(*feed, cfg->dra);
        ext_state_feed_watch_podgroups(*feed, true);
        ext_state_feed_set_metrics(*feed, metrics);
        ext_state_feed_set_cpu_members(*feed, cpu);
        if (need_bind && cfg->nominate) { /* issue 20, item 2: only api mode holds for the watch */
            *nom = ext_nominator_new(kcfg, state, cfg->scheduler_name, err);
            if (!*nom)
                return err->code;
            ext_nominator_hold_waiting(*nom, cfg->hold_waiting_groups);
            ext_state_feed_set_nominator(*feed, *nom);
        }
        memset(&wc, 0, sizeof(wc));
        wc.dra = cfg->dra;
        wc.podgroups = true;
        wc.backoff_max_ms = cfg->api_backoff_max_s * 1000;
        if (wc.backoff_max_ms < 500)
            wc.backoff_min_ms = wc.backoff_max_ms;
        *watch = kube_watch_start(kcfg, &wc, &sink, err);
        if (!*watch)
            return err->code;
    }
    if (need_bind || cfg->events) {
        struct ext_binder_config bc;

        memset(&bc, 0, sizeof(bc));
        bc.bind_timeout_ms = (long)cfg->bind_timeout_s * 1000;
        bc.clients = cfg->threads ? cfg->threads : 4; /* a client per HTTP worker */
        bc.no_events = !cfg->events;
        *binder = ext_binder_new(kcfg, &bc, err);
        if (!*binder)
            return err->code;
    }
    return TPX_OK;
}

int cmd_serve(int argc, char **argv)
{
    struct ext_config cfg;
    struct flag_val *flags = calloc((size_t)argc + 1, sizeof(*flags));
    struct option *opts = long_options();
    char *usage = usage_text();
    struct cmd_args args = {"topox serve", usage, ":h", opts, argc, argv, NULL, 0, 0};
    size_t nflags = 0;
    const char *config_path = NULL;
    bool print = false;
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_state *state = NULL;
    struct ext_metrics *metrics = NULL;
    struct ext_codec_names_cache *names_cache = NULL;
    struct ext_held *held = NULL;
    struct ext_http *http = NULL, *admin = NULL;
    struct ext_routes routes;
    struct ext_http_config hc;
    struct topo_cluster *cluster;
    struct kube_config kcfg;
    struct ext_state_feed *feed = NULL;
    struct kube_watch *watch = NULL;
    struct ext_binder *binder = NULL;
    struct ext_nominator *nom = NULL;
    struct ext_cpu_members *cpu = NULL;
    bool use_api = false;
    char *cert = NULL, *key = NULL, *ca = NULL;
    sigset_t sigs;
    int status = CMD_FAILED;
    int c, sig = 0;

    memset(&cfg, 0, sizeof(cfg));
    memset(&kcfg, 0, sizeof(kcfg));
    if (!flags || !opts || !usage) {
        fprintf(stderr, "topox serve: out of memory\n");
        goto out;
    }
    while ((c = cmd_args_next(&args)) != CMD_ARGS_END) {
        if (c == CMD_ARGS_EXIT) {
            status = args.status;
            goto out;
        }
        if (c == OPT_CONFIG)
            config_path = optarg;
        else if (c == OPT_PRINT)
            print = true;
        else
            flags[nflags++] =
                (struct flag_val){&ext_config_settings[c - OPT_SETTING], optarg ? optarg : "true"};
    }
    if (ext_config_init(&cfg, &err) != TPX_OK ||
        (config_path && ext_config_load(&cfg, config_path, &err) != TPX_OK)) {
        fprintf(stderr, "topox serve: %s\n", err.msg);
        status = CMD_USAGE;
        goto out;
    }
    for (size_t i = 0; i < nflags; i++) {
        if (ext_config_set_flag(&cfg, flags[i].setting, flags[i].arg, &err) != TPX_OK) {
            fprintf(stderr, "topox serve: %s\n", err.msg);
            status = CMD_USAGE;
            goto out;
        }
    }
    if (print) {
        ext_config_print(&cfg, stdout);
        status = CMD_OK;
        goto out;
    }

    /* before any thread exists, so every thread inherits the mask and sigwait() gets them */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    /* issue 21, item 9: no signal whose default is to end the process does so without a drain
     * and a log line; SIGHUP reloads the certificates, SIGUSR1 and SIGUSR2 are logged and ignored
     */
    sigaddset(&sigs, SIGQUIT);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGUSR1);
    sigaddset(&sigs, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    if (check_listen(&cfg, &err) != TPX_OK) {
        fprintf(stderr, "topox serve: %s\n", err.msg);
        status = CMD_USAGE;
        goto out;
    }
    cert = read_pem(cfg.tls_cert, &err);
    key = read_pem(cfg.tls_key, &err);
    ca = read_pem(cfg.client_ca, &err);
    if (err.code != TPX_OK)
        goto fail;
    state = ext_state_new(cfg.reservation_ttl_s, &err);
    if (state) {
        ext_state_set_budgets(state, cfg.reservation_budget_ns, cfg.reservation_cap);
        ext_state_set_pod_max(state, cfg.pod_table_size);
        ext_state_set_pod_ns_max(state, cfg.pod_table_ns_max);
    }
    metrics = state ? ext_metrics_new(&err) : NULL;
    if (!metrics)
        goto fail;
    cluster = load_cluster(&cfg, &err);
    if (!cluster && err.code != TPX_OK)
        goto fail;
    if (cluster && ext_state_set_cluster(state, cluster, &err) != TPX_OK)
        goto fail;
    ext_state_set_scheduler(state, cfg.scheduler_name);
    cfg.threads = http_threads(&cfg); /* once: the binder and the HTTP server both size by it */
    /* a CPU member only filters have seen (no watch) lasts as a reservation does */
    cpu = ext_cpu_members_new(cfg.reservation_ttl_s);
    if (!cpu) {
        tpx_err_set(&err, TPX_ENOMEM, "out of memory");
        goto fail;
    }
    if (start_api(&cfg, state, metrics, &kcfg, &use_api, &feed, &watch, &binder, &nom, cpu, &err) !=
        TPX_OK)
        goto fail;
    /* no watch: nothing ever says a pod bound through /bind is gone (issue 21, item 3) */
    ext_state_set_bound_ageing(state, !use_api);
    if (!cluster && !use_api)
        TPX_LOG(TPX_WARN, "no --nodes, --cluster or API server: not ready until Node objects "
                          "arrive in a filter request");

    memset(&routes, 0, sizeof(routes));
    routes.state = state;
    routes.metrics = metrics;
    routes.opts.labels = &cfg.label_cfg; /* filled by start_api(); the watch reads it too */
    routes.opts.default_scope = cfg.pipeline_scope;
    routes.opts.max_candidates = cfg.max_candidates;
    names_cache = ext_codec_names_cache_new(&err);
    if (!names_cache)
        goto fail;
    routes.opts.names_cache = names_cache;
    if (feed) { /* claims' demand and PodGroups, from what the watch holds */
        routes.opts.pod_facts = ext_state_feed_pod_facts;
        routes.opts.pod_workload = ext_state_feed_pod_workload;
        routes.opts.pod_ctx = feed;
    }
    routes.scheduler_name = cfg.scheduler_name;
    routes.bind_mode = cfg.bind_mode;
    routes.uncertain = cfg.uncertain;
    routes.max_response = cfg.max_body + 1024 * 1024;
    routes.binder = binder;
    routes.nominator = nom;
    routes.cpu_members = cpu;
    routes.admin_elsewhere = cfg.admin_listen != NULL;
    routes.lean_filter = cfg.lean_filter;
    if (cfg.lean_filter && cfg.one_held_node && !(routes.held = held = ext_held_new(&err)))
        goto fail;
    memset(&hc, 0, sizeof(hc));
    hc.listen = cfg.listen;
    hc.max_body = cfg.max_body;
    hc.threads = cfg.threads;
    hc.conn_timeout_s = cfg.conn_timeout_s;
    hc.tls_cert_pem = cert;
    hc.tls_key_pem = key;
    hc.client_ca_pem = ca;
    hc.max_conns = cfg.max_conns;
    hc.max_conns_per_ip = cfg.max_conns_per_ip;
    hc.request_timeout_s = cfg.request_timeout_s;
    hc.send_timeout_s = cfg.send_timeout_s;
    hc.answer_budget = cfg.answer_budget;
    hc.tls_priorities = cfg.tls_priorities;
    hc.client_allow = (const char *const *)cfg.client_allow;
    hc.nclient_allow = cfg.nclient_allow;
    if (cfg.admin_listen && !(admin = start_admin(&cfg, &routes, &err)))
        goto fail;
    http = ext_http_start(&hc, ext_routes_handle, &routes, &err);
    if (!http)
        goto fail;
    {
        char host[256];
        listen_host(cfg.listen, host, sizeof(host));
        TPX_LOG(TPX_INFO, "listening", TPX_S("addr", host), TPX_I("port", ext_http_port(http)),
                TPX_B("tls", cert != NULL), TPX_B("client_certs", ca != NULL),
                TPX_S("bind_mode", cfg.bind_mode == EXT_BIND_API ? "api" : "record"),
                TPX_S("cluster_source", use_api ? "api" : "file"),
                TPX_S("api_server", kcfg.server ? kcfg.server : ""));
    }
    {
        struct tls_files_id tls_id;
        struct timespec tick = {cfg.tls_reload_s ? (time_t)cfg.tls_reload_s : 3600, 0};

        tls_files_stat(&cfg, &tls_id);
        while ((sig = sigtimedwait(&sigs, NULL, &tick)) <= 0 || sig == SIGHUP || sig == SIGUSR1 ||
               sig == SIGUSR2) {
            if (sig == SIGHUP && cert) { /* now, changed or not: forget what was seen */
                memset(&tls_id, 0, sizeof(tls_id));
                TPX_LOG(TPX_INFO, "SIGHUP: reloading the certificate files; other settings "
                                  "take a restart");
            } else if (sig > 0) {
                TPX_LOG(TPX_INFO, "signal ignored", TPX_S("signal", strsignal(sig)),
                        TPX_S("why", sig == SIGHUP ? "no certificates to reload; settings "
                                                     "take a restart"
                                                   : "topox serve has no use for it"));
                continue;
            }
            if (cert && (cfg.tls_reload_s || sig == SIGHUP))
                tls_reload_if_changed(&cfg, http, &tls_id);
        }
    }
    TPX_LOG(TPX_INFO, "shutting down", TPX_I("signal", sig));
    ext_http_stop(http, cfg.drain_s * 1000);
    http = NULL;
    ext_http_stop(admin, 0);
    admin = NULL;
    kube_watch_stop(watch);
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
    ext_http_stop(admin, 0);
    kube_watch_stop(watch); /* after the HTTP server: no handler runs any more */
    ext_state_feed_free(feed);
    ext_nominator_free(nom); /* after the watch and the HTTP server: nobody touches it now */
    ext_cpu_members_free(cpu);
    ext_binder_free(binder);
    kube_config_release(&kcfg);
    ext_metrics_free(metrics);
    ext_codec_names_cache_free(names_cache); /* after the HTTP server: no request holds it */
    ext_held_free(held);
    ext_state_free(state);
    free(cert);
    free(key);
    free(ca);
    ext_config_release(&cfg);
    free(flags);
    free(opts);
    free(usage);
    return status;
}
