/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_serve.c - `topox serve` on a generated cluster (5 040 nodes unless --nodes), side by
 * side with the same cases against a second topox binary (--before PATH: the build before a
 * change) and a Go extender written as real ones are (--go-baseline PATH: bench/go-baseline,
 * net/http + encoding/json into k8s.io/kube-scheduler/extender/v1 over k8s.io/api/core/v1), all
 * in one run with the servers' turns interleaved, each answer checked against topox's:
 *   names     filter + prioritize with node names only, `--clients` keep-alive clients (8);
 *             calls/s, p50/p99 client side, server CPU per call, server-side p50/p99;
 *   names32   the same loop with `--load-clients` clients (32): server-side p50/p99;
 *   full      filter with every Node object in the request (NCC=false, ~7 KB a node), end to end:
 *             best, p50, p90, p99, worst over --full-reps turns, and topox's server side;
 *   tokenizer the nodescan tokenizer alone against a jansson DOM decode of that body (in process);
 *   soak      (--load SECONDS) names at --load-clients clients: errors and RSS before and after.
 * Server side is each request's "http request" log line of topox (dur_us: from its headers to its
 * answer queued, body upload included), read from the server's stderr. Without go, or without
 * the k8s modules in the e2e cache (E2E_CACHE), the Go column says why it was skipped and the rest
 * still runs. Not a test: prints markdown tables.
 *
 * usage: bench_serve [--nodes N] [--clients N] [--calls N] [--rounds N] [--full-reps N]
 *                    [--cases names,names32,full,tokenizer] [--load SECONDS] [--load-clients N]
 *                    [--topox PATH] [--before PATH] [--go-baseline PATH] */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "extender/nodescan.h"
#include "topology/synthetic.h"

extern char **environ;

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q)
{
    size_t i;

    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_d);
    i = (size_t)((double)n * q);
    return v[i < n ? i : n - 1];
}

/* ---- the servers ------------------------------------------------------------------------- */

struct target {
    const char *label;
    bool topox;
    pid_t pid;
    int port;
    int logfd;
    pthread_t reader;
    bool reading;
    pthread_mutex_t mu;
    bool record; /* collect server-side durations now */
    double *srv; /* seconds, of /filter and /prioritize */
    size_t nsrv, capsrv;
};

/* One log line of a topox server: keep the dur_us of "http request" lines of the verbs. */
static void log_line(struct target *t, const char *l)
{
    const char *d;

    if (!strstr(l, "\"msg\":\"http request\"") ||
        (!strstr(l, "\"path\":\"/filter\"") && !strstr(l, "\"path\":\"/prioritize\"")) ||
        !(d = strstr(l, "\"dur_us\":")))
        return;
    pthread_mutex_lock(&t->mu);
    if (t->record) {
        if (t->nsrv == t->capsrv) {
            size_t cap = t->capsrv ? 2 * t->capsrv : 4096;
            double *v = realloc(t->srv, cap * sizeof(*v));
            if (v) {
                t->srv = v;
                t->capsrv = cap;
            }
        }
        if (t->nsrv < t->capsrv)
            t->srv[t->nsrv++] = atof(d + 9) / 1e6;
    }
    pthread_mutex_unlock(&t->mu);
}

static void *log_reader(void *arg)
{
    struct target *t = arg;
    static __thread char buf[1 << 16];
    size_t len = 0;

    for (;;) {
        ssize_t n = read(t->logfd, buf + len, sizeof(buf) - 1 - len);
        char *l, *nl;

        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        for (l = buf; (nl = strchr(l, '\n')); l = nl + 1) {
            *nl = '\0';
            if (t->topox)
                log_line(t, l);
        }
        len -= (size_t)(l - buf);
        memmove(buf, l, len);
        if (len == sizeof(buf) - 1)
            len = 0; /* a line longer than the buffer: drop it */
    }
    return NULL;
}

/* Spawn argv with stderr into a pipe; wait for `"port":N` on it (the "listening" line), then read
 * the rest in a thread. */
static int spawn_server(struct target *t, char *const *argv)
{
    posix_spawn_file_actions_t fa;
    int p[2];
    char buf[65536];
    size_t len = 0;
    double deadline = now() + 60;

    pthread_mutex_init(&t->mu, NULL);
    if (pipe(p))
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    if (posix_spawn(&t->pid, argv[0], &fa, NULL, argv, environ) != 0)
        return -1;
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    while (now() < deadline && len < sizeof(buf) - 1) {
        ssize_t n = read(p[0], buf + len, sizeof(buf) - 1 - len);
        char *l;

        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        l = strstr(buf, "\"msg\":\"listening\"");
        if (l && strstr(l, "\"port\":")) {
            t->port = atoi(strstr(l, "\"port\":") + 7);
            break;
        }
    }
    t->logfd = p[0];
    t->reading = pthread_create(&t->reader, NULL, log_reader, t) == 0;
    return t->port > 0 ? 0 : -1;
}

static void stop_server(struct target *t, bool report)
{
    int ws = 0;

    if (t->pid <= 0)
        return;
    kill(t->pid, SIGTERM);
    waitpid(t->pid, &ws, 0);
    if (t->reading)
        pthread_join(t->reader, NULL);
    close(t->logfd);
    if (report)
        printf("| %s exit after SIGTERM | %d |\n", t->label, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    free(t->srv);
    t->pid = 0;
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    }
    fclose(f);
    return kb;
}

/* CPU seconds (user + system) the process pid has used so far; -1 when unreadable. */
static double cpu_s(pid_t pid)
{
    char path[64], line[1024], *q;
    unsigned long ut = 0, st = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    q = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
    fclose(f);
    /* after "comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime */
    if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Minor page faults the process pid has taken so far; 0 when unreadable. */
static double minflt(pid_t pid)
{
    char path[64], line[1024], *q;
    unsigned long mf = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    q = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
    fclose(f);
    if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %lu", &mf) != 1)
        return 0;
    return (double)mf;
}

/* ---- the client ---------------------------------------------------------------------------- */

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += s * n;
    return s * n;
}

/* libcurl write callback: append to a tpx_buf (uncapped: the bench reads its own servers). */
static size_t keep(char *d, size_t s, size_t n, void *ud)
{
    struct tpx_err err = TPX_ERR_INIT;

    return tpx_buf_add(ud, d, s * n, &err) == TPX_OK ? s * n : 0;
}

/* POST body to port/path; the answer is kept in *out when out is given. HTTP status or 0. */
static long post(CURL *h, int port, const char *path, const char *body, size_t len,
                 struct tpx_buf *out)
{
    char url[128];
    long status = 0;
    size_t got = 0;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, out ? keep : discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out ? (void *)out : (void *)&got);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    if (curl_easy_perform(h) != CURLE_OK)
        return 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static const char pod[] =
    "{\"metadata\":{\"name\":\"bench-0\",\"namespace\":\"llm\",\"uid\":\"bench-uid\","
    "\"labels\":{\"leaderworkerset.sigs.k8s.io/name\":\"vllm\","
    "\"leaderworkerset.sigs.k8s.io/group-key\":\"bench\","
    "\"leaderworkerset.sigs.k8s.io/worker-index\":\"0\"},"
    "\"annotations\":{\"leaderworkerset.sigs.k8s.io/size\":\"2\","
    "\"topox.io/tensor-parallel-size\":\"8\",\"topox.io/pipeline-parallel-size\":\"2\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"vllm\",\"resources\":{\"requests\":"
    "{\"nvidia.com/gpu\":\"8\"},\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}";

static char *names_body;
static size_t names_len;

struct worker {
    int port;
    size_t calls;
    double *lat;
    size_t nlat;
    size_t errors;
    size_t done;
    double stop_at; /* soak */
};

static void *names_worker(void *arg)
{
    struct worker *w = arg;
    CURL *h = curl_easy_init();

    for (size_t i = 0; (w->stop_at > 0 ? now() < w->stop_at : i < w->calls); i++) {
        const char *path = (i % 2 == 0) ? "/filter" : "/prioritize";
        double t0 = now();
        long st = post(h, w->port, path, names_body, names_len, NULL);
        double dt = now() - t0;
        w->done++;
        if (st != 200)
            w->errors++;
        if (w->lat && w->nlat < w->calls)
            w->lat[w->nlat++] = dt;
    }
    curl_easy_cleanup(h);
    return NULL;
}

struct run {
    bool done;
    double cps, p50, p99; /* client side */
    double cpu;           /* server CPU seconds per call */
    double srv50, srv99;  /* server side (topox) */
    size_t errors, calls;
};

/* One names-only filter+prioritize run: 20 warm-up calls, then `calls` over `clients` clients. */
static struct run names_run(struct target *t, int clients, size_t calls)
{
    struct run r = {0};
    struct worker *w = calloc((size_t)clients, sizeof(*w));
    pthread_t *th = calloc((size_t)clients, sizeof(*th));
    double *all = calloc(calls ? calls : 1, sizeof(double)), t0, el, c0;
    size_t nall = 0;

    {
        CURL *h = curl_easy_init();
        for (int i = 0; i < 20; i++)
            post(h, t->port, (i % 2) ? "/prioritize" : "/filter", names_body, names_len, NULL);
        curl_easy_cleanup(h);
    }
    pthread_mutex_lock(&t->mu);
    t->nsrv = 0;
    t->record = true;
    pthread_mutex_unlock(&t->mu);
    c0 = cpu_s(t->pid);
    t0 = now();
    for (int i = 0; i < clients; i++) {
        w[i].port = t->port;
        w[i].calls = calls / (size_t)clients;
        w[i].lat = calloc(w[i].calls ? w[i].calls : 1, sizeof(double));
        pthread_create(&th[i], NULL, names_worker, &w[i]);
    }
    for (int i = 0; i < clients; i++)
        pthread_join(th[i], NULL);
    el = now() - t0;
    r.cpu = cpu_s(t->pid) - c0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + nall, w[i].lat, w[i].nlat * sizeof(double));
        nall += w[i].nlat;
        r.errors += w[i].errors;
        free(w[i].lat);
    }
    if (t->topox) { /* the last log lines may still be in the pipe */
        for (int k = 0; k < 100; k++) {
            size_t got;
            pthread_mutex_lock(&t->mu);
            got = t->nsrv;
            pthread_mutex_unlock(&t->mu);
            if (got >= nall)
                break;
            usleep(10000);
        }
    }
    pthread_mutex_lock(&t->mu);
    t->record = false;
    r.srv50 = quantile(t->srv, t->nsrv, 0.50);
    r.srv99 = quantile(t->srv, t->nsrv, 0.99);
    pthread_mutex_unlock(&t->mu);
    r.calls = nall;
    r.cpu = nall ? r.cpu / (double)nall : 0;
    r.p50 = quantile(all, nall, 0.50);
    r.p99 = quantile(all, nall, 0.99);
    r.cps = nall ? (double)nall / el : 0;
    r.done = true;
    free(all);
    free(w);
    free(th);
    return r;
}

/* Names in NodeNames (or items in Nodes) of one /filter answer (-1 when unreadable). */
static long fit_count(struct target *t, const char *body, size_t len)
{
    CURL *h = curl_easy_init();
    struct tpx_buf g;
    long n = -1;
    json_t *res;

    tpx_buf_init(&g, SIZE_MAX);
    if (post(h, t->port, "/filter", body, len, &g) == 200 && g.data) {
        res = json_loadb(g.data, g.len, 0, NULL);
        if (json_is_array(json_object_get(res, "NodeNames")))
            n = (long)json_array_size(json_object_get(res, "NodeNames"));
        else if (json_is_array(json_object_get(json_object_get(res, "Nodes"), "items")))
            n = (long)json_array_size(json_object_get(json_object_get(res, "Nodes"), "items"));
        json_decref(res);
    }
    tpx_buf_release(&g);
    curl_easy_cleanup(h);
    return n;
}

/* The answer of path to body as a set: the names passing a /filter (NodeNames or Nodes.items)
 * with "!" + each FailedNodes key, or each "host=score" of a /prioritize. NULL when unreadable. */
static json_t *answer_set(struct target *t, const char *path, const char *body, size_t len)
{
    CURL *h = curl_easy_init();
    struct tpx_buf g;
    json_t *res = NULL, *set = NULL, *v, *arr;
    const char *k;
    size_t i;

    tpx_buf_init(&g, SIZE_MAX);
    if (post(h, t->port, path, body, len, &g) == 200 && g.data)
        res = json_loadb(g.data, g.len, 0, NULL);
    tpx_buf_release(&g);
    curl_easy_cleanup(h);
    if (!res)
        return NULL;
    set = json_object();
    if (json_is_array(res)) {
        json_array_foreach(res, i, v)
        {
            char hs[320];
            snprintf(hs, sizeof(hs), "%s=%lld", json_string_value(json_object_get(v, "Host")),
                     (long long)json_integer_value(json_object_get(v, "Score")));
            json_object_set_new(set, hs, json_true());
        }
    } else {
        arr = json_object_get(res, "NodeNames");
        json_array_foreach(arr, i, v) json_object_set_new(set, json_string_value(v), json_true());
        arr = json_object_get(json_object_get(res, "Nodes"), "items");
        json_array_foreach(arr, i, v) json_object_set_new(
            set, json_string_value(json_object_get(json_object_get(v, "metadata"), "name")),
            json_true());
        json_object_foreach(json_object_get(res, "FailedNodes"), k, v)
        {
            char fk[320];
            snprintf(fk, sizeof(fk), "!%s", k);
            json_object_set_new(set, fk, json_true());
        }
    }
    json_decref(res);
    return set;
}

/* One row: does each target answer path as topox (t[0]) does? "yes", or how many entries differ. */
static void same_answer_row(const char *what, struct target *t, size_t nt, const char *path,
                            const char *body, size_t len)
{
    json_t *ref = answer_set(&t[0], path, body, len);

    printf("| same answer as topox: %s |", what);
    for (size_t k = 0; k < nt; k++) {
        json_t *got = k == 0 ? NULL : answer_set(&t[k], path, body, len);
        const char *key;
        json_t *v;
        size_t diff = 0;

        if (k == 0) {
            printf(" %zu entries |", ref ? json_object_size(ref) : 0);
            continue;
        }
        if (!ref || !got) {
            printf(" unreadable |");
            json_decref(got);
            continue;
        }
        json_object_foreach(ref, key, v) diff += json_object_get(got, key) == NULL;
        json_object_foreach(got, key, v) diff += json_object_get(ref, key) == NULL;
        if (diff)
            printf(" no: %zu differ |", diff);
        else
            printf(" yes |");
        json_decref(got);
    }
    for (size_t k = 1; k < nt; k++)
        printf(" |");
    printf("\n");
    json_decref(ref);
}

/* A realistic Node object: the synthetic labels plus the labels, conditions and images a GPU
 * node carries in practice (~7 KB). */
static void append_node(json_t *items, const struct topo_cluster *c, size_t i)
{
    struct topo_kv kv[16];
    char storage[16][64];
    size_t n = topo_synthetic_node_labels(c, i, kv, storage, 16);
    const struct topo_node_info *info = topo_cluster_node(c, i);
    json_t *labels = json_object(), *images = json_array(), *conds = json_array();
    char buf[64];

    for (size_t k = 0; k < n; k++)
        json_object_set_new(labels, kv[k].key, json_string(kv[k].value));
    json_object_set_new(labels, "kubernetes.io/hostname", json_string(info->name));
    json_object_set_new(labels, "kubernetes.io/os", json_string("linux"));
    json_object_set_new(labels, "kubernetes.io/arch", json_string("amd64"));
    json_object_set_new(labels, "node.kubernetes.io/instance-type", json_string("p5.48xlarge"));
    json_object_set_new(labels, "nvidia.com/gpu.product", json_string("NVIDIA-H100-80GB-HBM3"));
    json_object_set_new(labels, "nvidia.com/gpu.count", json_string("8"));
    json_object_set_new(labels, "nvidia.com/gpu.memory", json_string("81559"));
    json_object_set_new(labels, "nvidia.com/cuda.driver.major", json_string("550"));
    json_object_set_new(labels, "feature.node.kubernetes.io/cpu-model.vendor_id",
                        json_string("Intel"));
    json_object_set_new(labels, "topology.kubernetes.io/region", json_string("us-east-1"));
    for (int k = 0; k < 5; k++) {
        const char *t[] = {"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable",
                           "Ready"};
        json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", t[k], "status",
                                               k == 4 ? "True" : "False", "lastHeartbeatTime",
                                               "2026-01-01T00:00:00Z", "lastTransitionTime",
                                               "2025-12-01T00:00:00Z", "reason", "KubeletReady",
                                               "message", "kubelet is posting ready status"));
    }
    for (int k = 0; k < 24; k++) {
        char a[160], b[160];
        snprintf(a, sizeof(a),
                 "registry.example.com/ml/serving-image-%d@sha256:"
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                 k);
        snprintf(b, sizeof(b), "registry.example.com/ml/serving-image-%d:v1.%d.0", k, k);
        json_array_append_new(images, json_pack("{s:[s,s],s:I}", "names", a, b, "sizeBytes",
                                                (json_int_t)(1000000000 + k)));
    }
    snprintf(buf, sizeof(buf), "%u", info->accel_alloc);
    json_array_append_new(
        items,
        json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:o},s:{s:s,s:s},s:{s:{s:s,s:s,s:s,s:s},"
                  "s:{s:s,s:s,s:s,s:s},s:o,s:o,s:{s:s,s:s,s:s,s:s}}}",
                  "kind", "Node", "apiVersion", "v1", "metadata", "name", info->name, "uid",
                  "5f0c6a6e-1111-2222-3333-444455556666", "resourceVersion", "123456789", "labels",
                  labels, "spec", "providerID", "aws:///us-east-1a/i-0123456789abcdef0", "podCIDR",
                  "10.1.0.0/24", "status", "capacity", "cpu", "192", "memory", "2097152000Ki",
                  "nvidia.com/gpu", buf, "pods", "110", "allocatable", "cpu", "191", "memory",
                  "2000000000Ki", "nvidia.com/gpu", buf, "pods", "110", "conditions", conds,
                  "images", images, "nodeInfo", "kubeletVersion", "v1.31.0",
                  "containerRuntimeVersion", "containerd://1.7.20", "osImage", "Ubuntu 22.04.4 LTS",
                  "kernelVersion", "5.15.0-1062-aws"));
}

/* ---- starting the servers ------------------------------------------------------------------ */

static int start_topox(struct target *t, const char *bin, const char *spec)
{
    char *argv[] = {(char *)bin,
                    (char *)"serve",
                    (char *)"--listen",
                    (char *)"127.0.0.1:0",
                    (char *)"--cluster",
                    (char *)spec,
                    NULL};

    t->topox = true;
    return spawn_server(t, argv);
}

static char go_tmp[64];

static void go_cleanup(void)
{
    char cmd[256];

    if (!go_tmp[0])
        return;
    snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", go_tmp, go_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_serve: cannot remove %s\n", go_tmp);
    go_tmp[0] = '\0';
}

/* Build (when path is a directory with main.go) and start the Go baseline on the cluster's nodes.
 * Prints why and returns -1 when it cannot. */
static int start_go(struct target *t, const char *path, const struct topo_cluster *c)
{
    char bin[512], nodes_file[600], cmd[2048];
    const char *go_cache = getenv("E2E_CACHE") ? getenv("E2E_CACHE") : "/var/cache/topox-e2e";
    struct stat sb;
    json_t *arr = json_array();

    snprintf(go_tmp, sizeof(go_tmp), "/tmp/bench-go-XXXXXX");
    if (!mkdtemp(go_tmp) || strchr(path, '\'')) {
        printf("go baseline skipped: cannot make a temporary directory\n");
        go_tmp[0] = '\0';
        return -1;
    }
    if (strchr(go_cache, '\'')) {
        printf("go baseline skipped: E2E_CACHE has a quote\n");
        return -1;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (system("command -v go >/dev/null 2>&1") != 0) {
            printf("go baseline skipped: install golang-go\n");
            return -1;
        }
        snprintf(bin, sizeof(bin), "%s/go-baseline", go_tmp);
        /* k8s.io/api and k8s.io/kube-scheduler at e2e/go.mod's versions, from the module and
         * build caches `make e2e-build` fills (E2E_CACHE): offline, niced, one package at a time */
        snprintf(cmd, sizeof(cmd),
                 "cd '%s' && GOMODCACHE='%s/mod' GOCACHE='%s/build' GOPROXY=off CGO_ENABLED=0 "
                 "GOFLAGS='-mod=readonly -p=1' GOTOOLCHAIN=local GO111MODULE=on "
                 "nice -n 19 go build -o '%s' . >&2",
                 path, go_cache, go_cache, bin);
        if (system(cmd) != 0) {
            printf("go baseline skipped: `go build` failed in %s (it needs k8s.io/api and "
                   "k8s.io/kube-scheduler v0.37.2 in %s/mod: `make e2e-build` fetches them)\n",
                   path, go_cache);
            return -1;
        }
    } else if (access(path, X_OK) == 0) {
        snprintf(bin, sizeof(bin), "%s", path);
    } else {
        printf("go baseline skipped: %s is neither the go-baseline folder nor a binary\n", path);
        return -1;
    }
    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        const struct topo_node_info *info = topo_cluster_node(c, i);
        json_array_append_new(arr,
                              json_pack("{s:s,s:s,s:i,s:i}", "name", info->name, "rack",
                                        info->rack ? info->rack : "", "gpus",
                                        (int)info->accel_alloc, "used", (int)info->accel_used));
    }
    snprintf(nodes_file, sizeof(nodes_file), "%s/nodes.json", go_tmp);
    json_dump_file(arr, nodes_file, JSON_COMPACT);
    json_decref(arr);
    {
        char *argv[] = {bin, (char *)"-listen", (char *)"127.0.0.1:0", (char *)"-nodes", nodes_file,
                        NULL};

        t->topox = false;
        if (spawn_server(t, argv) != 0) {
            printf("go baseline skipped: %s did not start or say its port\n", bin);
            return -1;
        }
    }
    return 0;
}

/* ---- the cases ----------------------------------------------------------------------------- */

#define MAXT 3

static void print_ratio_header(const char *title, struct target *t, size_t nt)
{
    printf("\n| %s |", title);
    for (size_t k = 0; k < nt; k++)
        printf(" %s |", t[k].label);
    for (size_t k = 1; k < nt; k++)
        printf(" %s / %s |", t[0].label, t[k].label);
    printf("\n|---|");
    for (size_t k = 0; k < 2 * nt - 1; k++)
        printf("---|");
    printf("\n");
}

/* One row; lower_is_better: the ratio is other / topox, else topox / other. */
static void print_row(const char *what, const double *v, size_t nt, double scale, int decimals,
                      const char *unit, bool lower_is_better, const bool *have)
{
    printf("| %s |", what);
    for (size_t k = 0; k < nt; k++) {
        if (!have[k]) {
            printf(" - |");
            continue;
        }
        printf(" %.*f%s |", decimals, v[k] * scale, unit);
    }
    for (size_t k = 1; k < nt; k++) {
        double r = lower_is_better ? (v[0] > 0 ? v[k] / v[0] : 0) : (v[k] > 0 ? v[0] / v[k] : 0);
        if (!have[k] || !have[0])
            printf(" - |");
        else
            printf(" **%.1fx** |", r);
    }
    printf("\n");
}

/* names-only loop over every target, `rounds` interleaved rounds, the best (calls/s) kept. */
static void names_case(struct target *t, size_t nt, int clients, size_t calls, int rounds,
                       size_t nodes)
{
    struct run best[MAXT] = {{0}};
    double v[MAXT];
    bool have[MAXT], srv[MAXT];
    char title[256];

    for (int round = 0; round < rounds; round++) {
        for (size_t k = 0; k < nt; k++) {
            struct run r = names_run(&t[k], clients, calls);
            if (!best[k].done || r.cps > best[k].cps)
                best[k] = r;
        }
    }
    snprintf(title, sizeof(title),
             "names-only filter+prioritize, %zu nodes, body %zu KB, %d clients, %zu calls a run, "
             "best of %d interleaved",
             nodes, names_len / 1024, clients, calls, rounds);
    print_ratio_header(title, t, nt);
    for (size_t k = 0; k < nt; k++) {
        have[k] = best[k].done;
        srv[k] = best[k].done && t[k].topox;
    }
#define ROW(name, field, scale, dec, unit, low, h)                                                 \
    do {                                                                                           \
        for (size_t k = 0; k < nt; k++)                                                            \
            v[k] = best[k].field;                                                                  \
        print_row(name, v, nt, scale, dec, unit, low, h);                                          \
    } while (0)
    ROW("calls per second", cps, 1, 0, "", false, have);
    ROW("p50 per call (client side)", p50, 1e3, 3, " ms", true, have);
    ROW("p99 per call (client side)", p99, 1e3, 3, " ms", true, have);
    ROW("server CPU per call (user + system)", cpu, 1e3, 3, " ms", true, have);
    ROW("server side p50 (http request log)", srv50, 1e3, 3, " ms", true, srv);
    ROW("server side p99 (http request log)", srv99, 1e3, 3, " ms", true, srv);
#undef ROW
    printf("| errors |");
    for (size_t k = 0; k < nt; k++)
        printf(" %zu |", best[k].errors);
    for (size_t k = 1; k < nt; k++)
        printf(" |");
    printf("\n| names passing one /filter |");
    for (size_t k = 0; k < nt; k++)
        printf(" %ld |", fit_count(&t[k], names_body, names_len));
    for (size_t k = 1; k < nt; k++)
        printf(" |");
    printf("\n");
    same_answer_row("/filter", t, nt, "/filter", names_body, names_len);
    same_answer_row("/prioritize (host=score)", t, nt, "/prioritize", names_body, names_len);
}

static char *full_body(const struct topo_cluster *c, size_t *len)
{
    json_t *items = json_array(), *req;
    char *tail, *body;
    size_t n = topo_cluster_node_count(c);

    for (size_t i = 0; i < n; i++)
        append_node(items, c, i);
    req = json_pack("{s:{s:{},s:o},s:n}", "Nodes", "metadata", "items", items, "NodeNames");
    tail = json_dumps(req, JSON_COMPACT);
    *len = strlen(pod) + strlen(tail) + 16;
    body = malloc(*len);
    snprintf(body, *len, "{\"Pod\":%s,%s", pod, tail + 1);
    *len = strlen(body);
    free(tail);
    json_decref(req);
    return body;
}

/* Server-side durations of topox's "http request" lines since the last call, into *p50 and *p99;
 * starts recording afresh. */
static void srv_quantiles(struct target *t, double *p50, double *p99)
{
    pthread_mutex_lock(&t->mu);
    *p50 = quantile(t->srv, t->nsrv, 0.50);
    *p99 = quantile(t->srv, t->nsrv, 0.99);
    t->nsrv = 0;
    t->record = true;
    pthread_mutex_unlock(&t->mu);
}

/* filter with full Node objects, end to end, `reps` interleaved turns: best, p50, p90, p99 and
 * the worst, client side, and topox's own p50/p99 server side. */
static void full_case(struct target *t, size_t nt, const char *body, size_t len, int reps,
                      size_t nodes)
{
    double *lat[MAXT], best[MAXT], med[MAXT], cpu[MAXT], p90[MAXT], p99[MAXT], worst[MAXT];
    double faults[MAXT] = {0};
    double s50[MAXT] = {0}, s99[MAXT] = {0};
    bool have[MAXT], srv[MAXT];
    long bad[MAXT] = {0};
    char title[256];
    size_t answer[MAXT] = {0};

    for (size_t k = 0; k < nt; k++) {
        lat[k] = calloc((size_t)reps, sizeof(double));
        cpu[k] = 0;
        have[k] = true;
    }
    for (int rep = 0; rep < reps + 1; rep++) {
        for (size_t k = 0; rep == 1 && k < nt; k++) /* after the warm-up */
            srv_quantiles(&t[k], &s50[k], &s99[k]);
        for (size_t k = 0; k < nt; k++) {
            CURL *h = curl_easy_init();
            struct tpx_buf g;
            double c0 = cpu_s(t[k].pid), f0 = minflt(t[k].pid), t0 = now(), dt;
            long st;

            tpx_buf_init(&g, SIZE_MAX);
            st = post(h, t[k].port, "/filter", body, len, &g);
            dt = now() - t0;
            if (st != 200)
                bad[k]++;
            answer[k] = g.len;
            tpx_buf_release(&g);
            curl_easy_cleanup(h);
            if (rep == 0)
                continue; /* warm-up */
            cpu[k] += (cpu_s(t[k].pid) - c0) / reps;
            faults[k] += (minflt(t[k].pid) - f0) / reps;
            lat[k][rep - 1] = dt;
        }
    }
    usleep(200000); /* the last log lines */
    for (size_t k = 0; k < nt; k++) {
        srv[k] = t[k].topox;
        srv_quantiles(&t[k], &s50[k], &s99[k]);
        pthread_mutex_lock(&t[k].mu);
        t[k].record = false;
        pthread_mutex_unlock(&t[k].mu);
        med[k] = quantile(lat[k], (size_t)reps, 0.5);
        p90[k] = quantile(lat[k], (size_t)reps, 0.9);
        p99[k] = quantile(lat[k], (size_t)reps, 0.99);
        worst[k] = quantile(lat[k], (size_t)reps, 1.0);
        best[k] = quantile(lat[k], (size_t)reps, 0.0);
        free(lat[k]);
    }
    snprintf(title, sizeof(title),
             "filter with full Node objects, %zu nodes, body %.1f MB, end to end (new connection, "
             "upload, answer read), %d interleaved turns",
             nodes, (double)len / 1e6, reps);
    print_ratio_header(title, t, nt);
    print_row("best", best, nt, 1e3, 1, " ms", true, have);
    print_row("median (p50)", med, nt, 1e3, 1, " ms", true, have);
    print_row("p90", p90, nt, 1e3, 1, " ms", true, have);
    print_row("p99", p99, nt, 1e3, 1, " ms", true, have);
    print_row("worst", worst, nt, 1e3, 1, " ms", true, have);
    print_row("server side p50 (http request log)", s50, nt, 1e3, 1, " ms", true, srv);
    print_row("server side p99 (http request log)", s99, nt, 1e3, 1, " ms", true, srv);
    print_row("server CPU per call", cpu, nt, 1e3, 1, " ms", true, have);
    print_row("server minor page faults per call", faults, nt, 1, 0, "", true, have);
    printf("| answer size / non-200 answers |");
    for (size_t k = 0; k < nt; k++)
        printf(" %.1f MB / %ld |", (double)answer[k] / 1e6, bad[k]);
    for (size_t k = 1; k < nt; k++)
        printf(" |");
    printf("\n| Node objects passing one /filter |");
    for (size_t k = 0; k < nt; k++)
        printf(" %ld |", fit_count(&t[k], body, len));
    for (size_t k = 1; k < nt; k++)
        printf(" |");
    printf("\n");
    same_answer_row("/filter, full Nodes", t, nt, "/filter", body, len);
}

static void tokenizer_case(const char *body, size_t len)
{
    double best_dom = 1e9, best_scan = 1e9;
    struct tpx_err err = TPX_ERR_INIT;

    for (int rep = 0; rep < 5; rep++) {
        double t0 = now(), dt;
        json_error_t je;
        json_t *dom = json_loadb(body, len, 0, &je);
        struct ext_nodescan_nodes sn;
        const char *p = strstr(body, "\"Nodes\":") + 8;
        size_t plen = len - (size_t)(p - body) - 1;

        dt = now() - t0;
        json_decref(dom);
        if (dt < best_dom)
            best_dom = dt;
        t0 = now();
        ext_nodescan_nodelist(p, plen - strlen(",\"NodeNames\":null"), &sn, &err);
        dt = now() - t0;
        ext_nodescan_nodes_release(&sn);
        if (dt < best_scan)
            best_scan = dt;
    }
    printf("\n| in process, the full-object body (%.1f MB), best of 5 | value |\n|---|---|\n",
           (double)len / 1e6);
    printf("| jansson json_loadb (DOM only, no policy) | %.1f ms |\n", best_dom * 1e3);
    printf("| nodescan tokenizer alone (the Nodes list) | %.1f ms |\n", best_scan * 1e3);
    printf("| tokenizer vs jansson DOM | %.1fx faster |\n", best_dom / best_scan);
}

static void soak_case(struct target *t, int clients, int load_s)
{
    struct worker *w = calloc((size_t)clients, sizeof(*w));
    pthread_t *th = calloc((size_t)clients, sizeof(*th));
    long rss0 = -1, rss1;
    size_t errors = 0, total = 0;
    double stop_at, t0;

    for (int phase = 0; phase < 2; phase++) { /* a tenth of the time as warm-up, then the soak */
        stop_at = now() + (phase ? load_s : load_s / 10.0);
        t0 = now();
        for (int i = 0; i < clients; i++) {
            memset(&w[i], 0, sizeof(w[i]));
            w[i].port = t->port;
            w[i].stop_at = stop_at;
            w[i].calls = (size_t)-1;
            pthread_create(&th[i], NULL, names_worker, &w[i]);
        }
        for (int i = 0; i < clients; i++)
            pthread_join(th[i], NULL);
        if (phase == 0)
            rss0 = rss_kb(t->pid);
    }
    for (int i = 0; i < clients; i++) {
        errors += w[i].errors;
        total += w[i].done;
    }
    rss1 = rss_kb(t->pid);
    printf("\n| soak (%s) | value |\n|---|---|\n", t->label);
    printf("| %d clients for %d s (after %d s warm-up) | %zu calls, %zu errors, %.0f calls/s |\n",
           clients, load_s, load_s / 10, total, errors, (double)total / (now() - t0));
    printf("| server RSS after warm-up / after soak | %ld KB / %ld KB |\n", rss0, rss1);
    free(w);
    free(th);
}

static bool want(const char *cases, const char *c)
{
    size_t n = strlen(c);

    for (const char *p = cases; (p = strstr(p, c)); p += n) {
        if ((p == cases || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    int clients = 8, load_s = 0, load_clients = 32, rounds = 2, reps = 5;
    const char *go_path = NULL, *before = NULL, *topox = TOPOX_BIN;
    const char *cases = "names,names32,full,tokenizer";
    size_t calls = 2000, nodes = 5040, nt = 0;
    struct tpx_err err = TPX_ERR_INIT;
    struct target t[MAXT];
    struct topo_cluster *c;
    char spec[128];

    memset(t, 0, sizeof(t));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
            clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
            nodes = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--full-reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = argv[++i];
        else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc)
            load_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--load-clients") == 0 && i + 1 < argc)
            load_clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--go-baseline") == 0 && i + 1 < argc)
            go_path = argv[++i];
        else if (strcmp(argv[i], "--before") == 0 && i + 1 < argc)
            before = argv[++i];
        else if (strcmp(argv[i], "--topox") == 0 && i + 1 < argc)
            topox = argv[++i];
        else {
            fprintf(stderr,
                    "usage: bench_serve [--nodes N] [--clients N] [--calls N] [--rounds N] "
                    "[--full-reps N] [--cases names,names32,full,tokenizer] [--load SECONDS] "
                    "[--load-clients N] [--topox PATH] [--before PATH] [--go-baseline PATH]\n");
            return 2;
        }
    }
    if (nodes < 80 || nodes % 80 || clients < 1 || load_clients < 1 || rounds < 1 || reps < 1) {
        fprintf(stderr, "bench_serve: --nodes must be a multiple of 80; counts at least 1\n");
        return 2;
    }
    snprintf(spec, sizeof(spec),
             "racks=%zu,nodes-per-rack=80,gpus-per-node=8,interconnect=nvswitch", nodes / 80);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c = topo_cluster_synthetic(spec, &err);
    if (!c) {
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        return 1;
    }
    t[nt].label = "topox";
    if (start_topox(&t[nt], topox, spec) != 0) {
        fprintf(stderr, "bench_serve: cannot start %s\n", topox);
        return 1;
    }
    nt++;
    if (before) {
        t[nt].label = "before";
        if (start_topox(&t[nt], before, spec) != 0) {
            fprintf(stderr, "bench_serve: cannot start %s\n", before);
            return 1;
        }
        nt++;
    }
    if (go_path) {
        t[nt].label = "Go";
        if (start_go(&t[nt], go_path, c) == 0)
            nt++;
        else
            t[nt].label = NULL;
    }
    printf("topox serve benchmark: cluster %s (%zu nodes); %s %s", spec, nodes, topox,
           before ? "against " : "");
    printf("%s%s\n", before ? before : "", nt > (before ? 2U : 1U) ? " and the Go baseline" : "");
    {
        json_t *arr = json_array(), *req;
        char *tail;

        for (size_t i = 0; i < nodes; i++)
            json_array_append_new(arr, json_string(topo_cluster_node(c, i)->name));
        req = json_pack("{s:n,s:o}", "Nodes", "NodeNames", arr);
        tail = json_dumps(req, JSON_COMPACT);
        names_len = strlen(pod) + strlen(tail) + 16;
        names_body = malloc(names_len);
        snprintf(names_body, names_len, "{\"Pod\":%s,%s", pod, tail + 1);
        names_len = strlen(names_body);
        free(tail);
        json_decref(req);
    }
    if (want(cases, "names"))
        names_case(t, nt, clients, calls, rounds, nodes);
    if (want(cases, "names32"))
        names_case(t, nt, load_clients, calls, rounds, nodes);
    if (want(cases, "full") || want(cases, "tokenizer")) {
        size_t len;
        char *body = full_body(c, &len);

        if (want(cases, "full"))
            full_case(t, nt, body, len, reps, nodes);
        if (want(cases, "tokenizer"))
            tokenizer_case(body, len);
        free(body);
    }
    if (load_s > 0)
        soak_case(&t[0], load_clients, load_s);
    printf("\n| server | value |\n|---|---|\n");
    for (size_t k = 0; k < nt; k++) {
        printf("| %s RSS at the end | %ld KB |\n", t[k].label, rss_kb(t[k].pid));
        stop_server(&t[k], t[k].topox);
    }
    go_cleanup();
    free(names_body);
    topo_cluster_free(c);
    curl_global_cleanup();
    return 0;
}
