/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_serve.c - `topox serve` against a generated ~5 000-node cluster: filter +
 * prioritize with node names only (p50/p99 per call, calls/s, 8 concurrent keep-alive clients),
 * filter with 5 000 full Node objects (~30 MB, end to end) side by side with a jansson DOM decode
 * and with the tokenizer alone, and optionally (--load SECONDS) a soak at 32 clients reporting
 * errors and the server's RSS before and after. Not a test: prints a table.
 * With --go-baseline PATH (bench/go-baseline, or a go-baseline binary) it also builds and starts
 * the Go extender there (net/http + encoding/json) on the same 5 040 nodes and runs the same
 * names-only filter+prioritize client loop against topox and against Go, interleaved, printing both
 * side by side with the ratio; without golang-go it says "go baseline skipped: install golang-go".
 *
 * usage: bench_serve [--clients N] [--calls N] [--load SECONDS] [--load-clients N]
 *                    [--go-baseline PATH] */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "extender/nodescan.h"
#include "topology/synthetic.h"

extern char **environ;

#define SPEC "racks=63,nodes-per-rack=80,gpus-per-node=8,interconnect=nvswitch"

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static pid_t server_pid;
static int server_port;

static int start_server(void)
{
    /* at info level: the "listening" line carries the port; later lines go to a drain */
    char *argv[] = {(char *)TOPOX_BIN,
                    (char *)"serve",
                    (char *)"--listen",
                    (char *)"127.0.0.1:0",
                    (char *)"--cluster",
                    (char *)SPEC,
                    NULL};
    posix_spawn_file_actions_t fa;
    int p[2];
    char buf[65536];
    size_t len = 0;
    double deadline = now() + 30;

    if (pipe(p))
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    if (posix_spawn(&server_pid, TOPOX_BIN, &fa, NULL, argv, environ) != 0)
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
            server_port = atoi(strstr(l, "\"port\":") + 7);
            break;
        }
    }
    /* keep draining the server's log in the background: redirect the pipe to /dev/null */
    if (fork() == 0) {
        while (read(p[0], buf, sizeof(buf)) > 0)
            ;
        _exit(0);
    }
    close(p[0]);
    return server_port > 0 ? 0 : -1;
}

static long server_rss_kb(void)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)server_pid);
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

struct sink {
    size_t len;
};

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    ((struct sink *)ud)->len += s * n;
    return s * n;
}

static long post(CURL *h, const char *path, const char *body, size_t len)
{
    char url[128];
    long status = 0;
    struct sink sk = {0};

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", server_port, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sk);
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
    size_t calls;
    double *lat;
    size_t nlat;
    size_t errors;
    size_t done;
    double stop_at; /* load mode */
};

static void *names_worker(void *arg)
{
    struct worker *w = arg;
    CURL *h = curl_easy_init();

    for (size_t i = 0; (w->stop_at > 0 ? now() < w->stop_at : i < w->calls); i++) {
        const char *path = (i % 2 == 0) ? "/filter" : "/prioritize";
        double t0 = now();
        long st = post(h, path, names_body, names_len);
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

/* libcurl write callback: append to a tpx_buf (uncapped: the bench reads its own server). */
static size_t keep(char *d, size_t s, size_t n, void *ud)
{
    struct tpx_err err = TPX_ERR_INIT;

    return tpx_buf_add(ud, d, s * n, &err) == TPX_OK ? s * n : 0;
}

/* Server-side latency quantiles from the /metrics histogram (upper bucket bounds). */
static void server_quantiles(const char *verb)
{
    CURL *h = curl_easy_init();
    struct tpx_buf g;

    tpx_buf_init(&g, SIZE_MAX);
    char url[128], pat[96];
    double le[32];
    unsigned long long cnt[32];
    size_t nb = 0;
    const char *p;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", server_port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &g);
    curl_easy_perform(h);
    curl_easy_cleanup(h);
    snprintf(pat, sizeof(pat), "topox_request_duration_seconds_bucket{verb=\"%s\",le=\"", verb);
    for (p = g.data; p && (p = strstr(p, pat)) && nb < 32; p++) {
        const char *v = p + strlen(pat);
        le[nb] = strncmp(v, "+Inf", 4) == 0 ? 1e9 : atof(v);
        cnt[nb++] = strtoull(strstr(v, "} ") + 2, NULL, 10);
    }
    if (nb) {
        unsigned long long total = cnt[nb - 1];
        double q50 = -1, q99 = -1;
        for (size_t i = 0; i < nb; i++) {
            if (q50 < 0 && cnt[i] * 2 >= total)
                q50 = le[i];
            if (q99 < 0 && cnt[i] * 100 >= total * 99)
                q99 = le[i];
        }
        printf("| server-side %s latency (histogram bucket bound) | p50 <= %.2f ms, p99 <= %.2f ms"
               " (%llu calls) |\n",
               verb, q50 * 1e3, q99 * 1e3, total);
    }
    tpx_buf_release(&g);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A realistic Node object: the synthetic labels plus the labels, conditions and images a GPU
 * node carries in practice (~6 KB). */
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

/* ---- --go-baseline: the same names-only loop against a typical Go extender ------------------ */

/* One names-only filter+prioritize run (warm-up, then `calls` over `clients` keep-alive clients)
 * against the server on port; calls per second, p50/p99 and errors. */
static double names_run(int port, int clients, size_t calls, double *p50, double *p99,
                        size_t *errors)
{
    int saved = server_port;
    struct worker *w = calloc((size_t)clients, sizeof(*w));
    pthread_t *t = calloc((size_t)clients, sizeof(*t));
    double *all = calloc(calls ? calls : 1, sizeof(double)), t0, el;
    size_t nall = 0;

    server_port = port;
    {
        CURL *h = curl_easy_init();
        for (int i = 0; i < 20; i++)
            post(h, (i % 2) ? "/prioritize" : "/filter", names_body, names_len);
        curl_easy_cleanup(h);
    }
    t0 = now();
    for (int i = 0; i < clients; i++) {
        w[i].calls = calls / (size_t)clients;
        w[i].lat = calloc(w[i].calls ? w[i].calls : 1, sizeof(double));
        pthread_create(&t[i], NULL, names_worker, &w[i]);
    }
    for (int i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    el = now() - t0;
    *errors = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + nall, w[i].lat, w[i].nlat * sizeof(double));
        nall += w[i].nlat;
        *errors += w[i].errors;
        free(w[i].lat);
    }
    qsort(all, nall, sizeof(double), cmp_d);
    *p50 = nall ? all[nall / 2] : 0;
    *p99 = nall ? all[(size_t)((double)nall * 0.99)] : 0;
    server_port = saved;
    free(all);
    free(w);
    free(t);
    return nall ? (double)nall / el : 0;
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

/* Names in NodeNames of one /filter answer from the server on port (-1 when unreadable). */
static long filter_fit_count(int port)
{
    CURL *h = curl_easy_init();
    struct tpx_buf g;

    tpx_buf_init(&g, SIZE_MAX);
    char url[128];
    long n = -1;
    json_t *res;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/filter", port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, names_body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)names_len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &g);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(h) == CURLE_OK && g.data) {
        res = json_loads(g.data, 0, NULL);
        if (json_is_array(json_object_get(res, "NodeNames")))
            n = (long)json_array_size(json_object_get(res, "NodeNames"));
        json_decref(res);
    }
    tpx_buf_release(&g);
    curl_easy_cleanup(h);
    return n;
}

static void *drain_fd(void *arg)
{
    int fd = *(int *)arg;
    char buf[4096];

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    return NULL;
}

/* Build (when path is a directory with main.go) and start the Go baseline on the cluster's nodes,
 * run the names-only loop against topox and Go, interleaved, and print both. */
static void go_baseline(const char *path, const struct topo_cluster *c, int clients, size_t calls)
{
    char tmp[] = "/tmp/bench-go-XXXXXX", bin[512], nodes_file[600], cmd[2048];
    struct stat sb;
    json_t *arr = json_array();
    pid_t gpid;
    int p[2], gport = 0;
    char buf[4096];
    size_t len = 0;
    pthread_t drainer;
    posix_spawn_file_actions_t fa;
    double best[2] = {0, 0}, p50[2] = {0, 0}, p99[2] = {0, 0}, cpu[2] = {0, 0};
    size_t errs[2] = {0, 0};
    long fit[2];

    if (!mkdtemp(tmp) || strchr(path, '\'')) {
        printf("go baseline skipped: cannot make a temporary directory\n");
        return;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (system("command -v go >/dev/null 2>&1") != 0) {
            printf("go baseline skipped: install golang-go\n");
            rmdir(tmp);
            return;
        }
        snprintf(bin, sizeof(bin), "%s/go-baseline", tmp);
        /* standard library only: builds offline with a private cache */
        snprintf(cmd, sizeof(cmd),
                 "cd '%s' && GOCACHE='%s/cache' GOPATH='%s/gopath' GOPROXY=off GOFLAGS= "
                 "GOTOOLCHAIN=local GO111MODULE=on go build -o '%s' . >&2",
                 path, tmp, tmp, bin);
        if (system(cmd) != 0) {
            printf("go baseline skipped: `go build` failed in %s\n", path);
            snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", tmp, tmp);
            if (system(cmd) != 0)
                fprintf(stderr, "bench_serve: cannot remove %s\n", tmp);
            return;
        }
    } else if (access(path, X_OK) == 0) {
        snprintf(bin, sizeof(bin), "%s", path);
    } else {
        printf("go baseline skipped: %s is neither the go-baseline folder nor a binary\n", path);
        rmdir(tmp);
        return;
    }
    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        const struct topo_node_info *info = topo_cluster_node(c, i);
        json_array_append_new(arr,
                              json_pack("{s:s,s:s,s:i,s:i}", "name", info->name, "rack",
                                        info->rack ? info->rack : "", "gpus",
                                        (int)info->accel_alloc, "used", (int)info->accel_used));
    }
    snprintf(nodes_file, sizeof(nodes_file), "%s/nodes.json", tmp);
    json_dump_file(arr, nodes_file, JSON_COMPACT);
    json_decref(arr);
    {
        char *argv[] = {bin, (char *)"-listen", (char *)"127.0.0.1:0", (char *)"-nodes", nodes_file,
                        NULL};

        if (pipe(p))
            return;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 2);
        posix_spawn_file_actions_addclose(&fa, p[0]);
        if (posix_spawn(&gpid, bin, &fa, NULL, argv, environ) != 0) {
            printf("go baseline skipped: cannot start %s\n", bin);
            return;
        }
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
    }
    while (gport == 0 && len < sizeof(buf) - 1) {
        ssize_t n = read(p[0], buf + len, sizeof(buf) - 1 - len);
        char *l;

        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        l = strstr(buf, "\"port\":");
        if (l)
            gport = atoi(l + 7);
    }
    pthread_create(&drainer, NULL, drain_fd, &p[0]);
    if (gport > 0) {
        /* interleaved: topox, Go, topox, Go; the best run of each counts */
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < 2; k++) {
                double a, b;
                size_t er;
                pid_t who = k == 0 ? server_pid : gpid;
                double c0 = cpu_s(who);
                double r = names_run(k == 0 ? server_port : gport, clients, calls, &a, &b, &er);

                /* server CPU per call over both runs (warm-up calls included) */
                cpu[k] += (cpu_s(who) - c0) / (double)(calls + 20) / 2;

                if (r > best[k]) {
                    best[k] = r;
                    p50[k] = a;
                    p99[k] = b;
                    errs[k] = er;
                }
            }
        }
        fit[0] = filter_fit_count(server_port);
        fit[1] = filter_fit_count(gport);
        printf("\n| names-only filter+prioritize, %zu nodes, %d clients, %zu calls a run, best of "
               "2 interleaved runs | topox | Go baseline (net/http + encoding/json) | ratio |\n"
               "|---|---|---|---|\n",
               topo_cluster_node_count(c), clients, calls);
        printf("| calls per second | %.0f | %.0f | **%.1fx** (target >= 5x: %s) |\n", best[0],
               best[1], best[1] > 0 ? best[0] / best[1] : 0,
               best[1] > 0 && best[0] / best[1] >= 5 ? "met" : "MISSED");
        printf("| p50 per call (client side) | %.3f ms | %.3f ms | %.1fx |\n", p50[0] * 1e3,
               p50[1] * 1e3, p50[0] > 0 ? p50[1] / p50[0] : 0);
        printf("| p99 per call (client side) | %.3f ms | %.3f ms | %.1fx |\n", p99[0] * 1e3,
               p99[1] * 1e3, p99[0] > 0 ? p99[1] / p99[0] : 0);
        printf("| server CPU per call (user + system, /proc/PID/stat) | %.3f ms | %.3f ms | "
               "**%.1fx** |\n",
               cpu[0] * 1e3, cpu[1] * 1e3, cpu[0] > 0 ? cpu[1] / cpu[0] : 0);
        printf("| errors | %zu | %zu | |\n", errs[0], errs[1]);
        printf("| names passing one /filter call | %ld | %ld | |\n", fit[0], fit[1]);
    } else {
        printf("go baseline skipped: %s did not say its port\n", bin);
    }
    kill(gpid, SIGTERM);
    waitpid(gpid, NULL, 0);
    pthread_join(drainer, NULL);
    close(p[0]);
    snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", tmp, tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_serve: cannot remove %s\n", tmp);
}

int main(int argc, char **argv)
{
    int clients = 8, load_s = 0, load_clients = 32;
    const char *go_path = NULL;
    size_t calls = 2000;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c;
    size_t n;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
            clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc)
            load_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--load-clients") == 0 && i + 1 < argc)
            load_clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--go-baseline") == 0 && i + 1 < argc)
            go_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_serve [--clients N] [--calls N] [--load SECONDS] "
                            "[--load-clients N] [--go-baseline PATH]\n");
            return 2;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c = topo_cluster_synthetic(SPEC, &err);
    if (!c) {
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        return 1;
    }
    n = topo_cluster_node_count(c);
    if (start_server() != 0) {
        fprintf(stderr, "bench_serve: cannot start %s\n", TOPOX_BIN);
        return 1;
    }
    printf("topox serve benchmark: cluster %s (%zu nodes), server pid %d port %d\n", SPEC, n,
           (int)server_pid, server_port);

    /* 1. names only */
    {
        json_t *arr = json_array();
        json_t *req;
        char *tail;
        struct worker *w = calloc((size_t)clients, sizeof(*w));
        pthread_t *t = calloc((size_t)clients, sizeof(*t));
        double *all, t0, el;
        size_t nall = 0, errors = 0;

        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_string(topo_cluster_node(c, i)->name));
        req = json_pack("{s:n,s:o}", "Nodes", "NodeNames", arr);
        tail = json_dumps(req, JSON_COMPACT);
        names_len = strlen(pod) + strlen(tail) + 16;
        names_body = malloc(names_len);
        snprintf(names_body, names_len, "{\"Pod\":%s,%s", pod, tail + 1);
        names_len = strlen(names_body);
        free(tail);
        json_decref(req);
        /* warm up */
        {
            CURL *h = curl_easy_init();
            for (int i = 0; i < 20; i++)
                post(h, "/filter", names_body, names_len);
            curl_easy_cleanup(h);
        }
        t0 = now();
        for (int i = 0; i < clients; i++) {
            w[i].calls = calls / (size_t)clients;
            w[i].lat = calloc(w[i].calls, sizeof(double));
            pthread_create(&t[i], NULL, names_worker, &w[i]);
        }
        for (int i = 0; i < clients; i++)
            pthread_join(t[i], NULL);
        el = now() - t0;
        all = calloc(calls, sizeof(double));
        for (int i = 0; i < clients; i++) {
            memcpy(all + nall, w[i].lat, w[i].nlat * sizeof(double));
            nall += w[i].nlat;
            errors += w[i].errors;
            free(w[i].lat);
        }
        qsort(all, nall, sizeof(double), cmp_d);
        printf("\n| case | value |\n|---|---|\n");
        printf("| names-only filter+prioritize, %zu nodes, body %zu KB | %d clients, %zu calls, "
               "%zu errors |\n",
               n, names_len / 1024, clients, nall, errors);
        printf("| p50 per call (client side, HTTP included) | %.3f ms |\n", all[nall / 2] * 1e3);
        printf("| p99 per call | %.3f ms |\n", all[(size_t)((double)nall * 0.99)] * 1e3);
        printf("| calls per second | %.0f |\n", (double)nall / el);
        server_quantiles("filter");
        server_quantiles("prioritize");
        free(all);
        free(w);
        free(t);
    }

    /* 2. full Node objects */
    {
        json_t *items = json_array(), *req;
        char *tail, *body;
        size_t len;
        CURL *h = curl_easy_init();
        double best_srv = 1e9, best_dom = 1e9, best_scan = 1e9;

        for (size_t i = 0; i < n; i++)
            append_node(items, c, i);
        req = json_pack("{s:{s:{},s:o},s:n}", "Nodes", "metadata", "items", items, "NodeNames");
        tail = json_dumps(req, JSON_COMPACT);
        len = strlen(pod) + strlen(tail) + 16;
        body = malloc(len);
        snprintf(body, len, "{\"Pod\":%s,%s", pod, tail + 1);
        len = strlen(body);
        free(tail);
        json_decref(req);
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now();
            long st = post(h, "/filter", body, len);
            double dt = now() - t0;
            json_error_t je;
            json_t *dom;
            struct ext_nodescan_nodes sn;

            if (st != 200)
                printf("full-object filter answered %ld\n", st);
            if (dt < best_srv)
                best_srv = dt;
            t0 = now();
            dom = json_loadb(body, len, 0, &je);
            dt = now() - t0;
            json_decref(dom);
            if (dt < best_dom)
                best_dom = dt;
            t0 = now();
            {
                const char *p = strstr(body, "\"Nodes\":") + 8;
                size_t plen = len - (size_t)(p - body) - 1;
                ext_nodescan_nodelist(p, plen - strlen(",\"NodeNames\":null"), &sn, &err);
            }
            dt = now() - t0;
            ext_nodescan_nodes_release(&sn);
            if (dt < best_scan)
                best_scan = dt;
        }
        printf("| full Node objects: %zu nodes, body %.1f MB | best of 5 |\n", n,
               (double)len / 1e6);
        printf("| filter end to end (HTTP upload, decode, policy, 30 MB answer) | %.1f ms |\n",
               best_srv * 1e3);
        printf("| jansson json_loadb of the same body (DOM only, no policy) | %.1f ms |\n",
               best_dom * 1e3);
        printf("| nodescan tokenizer alone on the same body | %.1f ms |\n", best_scan * 1e3);
        printf("| tokenizer vs jansson DOM | %.1fx faster |\n", best_dom / best_scan);
        free(body);
        curl_easy_cleanup(h);
    }

    /* 3. soak */
    if (load_s > 0) {
        struct worker *w = calloc((size_t)load_clients, sizeof(*w));
        pthread_t *t = calloc((size_t)load_clients, sizeof(*t));
        long rss0, rss1;
        size_t errors = 0, total = 0;
        double stop_at, t0 = now();

        /* warm-up a tenth of the time, then measure RSS */
        stop_at = now() + load_s / 10.0;
        for (int i = 0; i < load_clients; i++) {
            w[i].stop_at = stop_at;
            w[i].calls = (size_t)-1;
            pthread_create(&t[i], NULL, names_worker, &w[i]);
        }
        for (int i = 0; i < load_clients; i++)
            pthread_join(t[i], NULL);
        rss0 = server_rss_kb();
        stop_at = now() + load_s;
        t0 = now();
        for (int i = 0; i < load_clients; i++) {
            w[i].stop_at = stop_at;
            w[i].errors = 0;
            w[i].calls = (size_t)-1;
            w[i].nlat = 0;
            w[i].done = 0;
            w[i].lat = NULL;
            pthread_create(&t[i], NULL, names_worker, &w[i]);
        }
        for (int i = 0; i < load_clients; i++) {
            pthread_join(t[i], NULL);
            errors += w[i].errors;
            total += w[i].done;
        }
        rss1 = server_rss_kb();
        printf("| soak: %d clients for %d s (after %d s warm-up) | %zu calls, %zu errors, "
               "%.0f calls/s |\n",
               load_clients, load_s, load_s / 10, total, errors, (double)total / (now() - t0));
        printf("| server RSS after warm-up / after soak | %ld KB / %ld KB |\n", rss0, rss1);
        free(w);
        free(t);
    }
    /* 4. the same names-only loop against a typical Go extender, side by side */
    if (go_path)
        go_baseline(go_path, c, clients, calls);
    kill(server_pid, SIGTERM);
    {
        int ws = 0;
        waitpid(server_pid, &ws, 0);
        printf("| server exit after SIGTERM | %d |\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    }
    topo_cluster_free(c);
    curl_global_cleanup();
    return 0;
}
