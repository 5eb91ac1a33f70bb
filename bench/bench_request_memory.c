/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_request_memory.c - peak RSS growth of `topox serve` per request, by request size
 * (issue 12, item 3: a request may grow peak memory by at most 4x its body). The real binary runs
 * with --cluster racks=63,nodes-per-rack=80 (5 040 nodes); before each request the child's peak
 * (VmHWM) is reset through /proc/PID/clear_refs, and after the answer the growth is VmHWM minus
 * the VmRSS before. Cases: names-only filters (real and made-up names, up to the 100 000
 * candidate cap), full Node objects of about 7 KB each, and the old amplification: 10 MB of empty
 * NodeNames strings; and /preempt (issue 21): up to 3 000 000 MetaVictims on one node, 10 000
 * nodes (the cap), full victim Pods. Not a test: prints a table. Run it on the release build for
 * real figures (ASan's shadow memory and quarantine inflate the dev build's).
 *
 * usage: bench_request_memory */
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct text {
    char *p;
    size_t len, cap;
};

static void add(struct text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1 << 16;
        char *q;

        while (t->len + n + 1 > cap)
            cap *= 2;
        q = realloc(t->p, cap);
        if (!q) {
            fprintf(stderr, "bench_request_memory: out of memory\n");
            exit(1);
        }
        t->p = q;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void adds(struct text *t, const char *s)
{
    add(t, s, strlen(s));
}

static const char pod[] =
    "{\"metadata\":{\"name\":\"solo-0\",\"namespace\":\"llm\",\"uid\":\"solo-0\","
    "\"annotations\":{\"topox.io/tensor-parallel-size\":\"8\"}},\"spec\":{\"containers\":[{"
    "\"name\":\"c\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"8\"},\"limits\":{"
    "\"nvidia.com/gpu\":\"8\"}}}]}}";

/* A GPU Node as the API server writes one: labels, conditions and 24 images (~7 KB). */
static void node(struct text *t, const char *name, int rack)
{
    char buf[512];

    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"kubernetes.io/hostname\":\"%s\",\"topox.io/rack\":\"r%02d\","
             "\"topox.io/interconnect\":\"nvswitch\",\"nvidia.com/gpu.product\":"
             "\"NVIDIA-H100-80GB-HBM3\"}},\"spec\":{},\"status\":{\"allocatable\":{"
             "\"nvidia.com/gpu\":\"8\",\"cpu\":\"192\"},\"conditions\":[",
             name, name, rack);
    adds(t, buf);
    for (int k = 0; k < 5; k++) {
        snprintf(buf, sizeof(buf),
                 "%s{\"type\":\"%s\",\"status\":\"%s\",\"lastHeartbeatTime\":"
                 "\"2026-01-01T00:00:00Z\",\"reason\":\"KubeletReady\",\"message\":\"kubelet is "
                 "posting ready status\"}",
                 k ? "," : "", k == 4 ? "Ready" : "MemoryPressure", k == 4 ? "True" : "False");
        adds(t, buf);
    }
    adds(t, "],\"images\":[");
    for (int k = 0; k < 24; k++) {
        snprintf(buf, sizeof(buf),
                 "%s{\"names\":[\"registry.example.com/ml/serving-image-%d@sha256:0123456789abcdef"
                 "0123456789abcdef0123456789abcdef0123456789abcdef\",\"registry.example.com/ml/"
                 "serving-image-%d:v1.%d.0\"],\"sizeBytes\":%d}",
                 k ? "," : "", k, k, k, 1000000000 + k);
        adds(t, buf);
    }
    adds(t, "]}}");
}

static long status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, strlen(key)) == 0)
            v = strtol(line + strlen(key) + 1, NULL, 10);
    }
    fclose(f);
    return v;
}

static void reset_peak(pid_t pid)
{
    char path[64];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
    f = fopen(path, "w");
    if (f) {
        fputs("5", f); /* 5: reset the peak RSS (VmHWM) to the current RSS */
        fclose(f);
    }
}

static size_t count_bytes(char *d, size_t s, size_t n, void *ud)
{
    (void)d;
    *(size_t *)ud += s * n;
    return s * n;
}

struct drain {
    int fd;
    int port;
    pthread_mutex_t mu;
};

static void *drain_log(void *arg)
{
    struct drain *d = arg;
    char buf[4096];
    ssize_t n;

    while ((n = read(d->fd, buf, sizeof(buf) - 1)) > 0) {
        char *p;

        buf[n] = '\0';
        p = strstr(buf, "\"msg\":\"listening\"");
        if (p && (p = strstr(p, "\"port\":")) != NULL) {
            pthread_mutex_lock(&d->mu);
            d->port = (int)strtol(p + 7, NULL, 10);
            pthread_mutex_unlock(&d->mu);
        }
    }
    return NULL;
}

static void measure_at(CURL *h, pid_t pid, int port, const char *verb, const char *what,
                       const struct text *body)
{
    char url[64];
    size_t got = 0;
    long st = 0, rss0, hwm;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s", port, verb);
    rss0 = status_kb(pid, "VmRSS:");
    reset_peak(pid);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->p);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_bytes);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
    curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    hwm = status_kb(pid, "VmHWM:");
    printf("| %-44s | %8.2f | %3ld | %8.2f | %8.2f | %5.2f |\n", what, body->len / 1e6, st,
           got / 1e6, (hwm - rss0) / 1024.0, (hwm - rss0) * 1024.0 / (double)body->len);
    fflush(stdout);
}

static void measure(CURL *h, pid_t pid, int port, const char *what, const struct text *body)
{
    measure_at(h, pid, port, "filter", what, body);
}

/* t = {"Pod":POD then rest */
static void begin(struct text *t, const char *rest)
{
    t->len = 0;
    adds(t, "{\"Pod\":");
    adds(t, pod);
    adds(t, rest);
}

static void names_body(struct text *t, size_t n, bool real, bool empty)
{
    char buf[64];

    begin(t, ",\"Nodes\":null,\"NodeNames\":[");
    for (size_t i = 0; i < n; i++) {
        if (empty)
            snprintf(buf, sizeof(buf), "%s\"\"", i ? "," : "");
        else if (real)
            snprintf(buf, sizeof(buf), "%s\"r%02zu-n%02zu\"", i ? "," : "", 1 + i / 80 % 63,
                     1 + i % 80);
        else
            snprintf(buf, sizeof(buf), "%s\"made-up-node-%07zu\"", i ? "," : "", i);
        adds(t, buf);
    }
    adds(t, "]}");
}

static void full_body(struct text *t, size_t n)
{
    char name[32];

    begin(t, ",\"NodeNames\":null,\"Nodes\":{\"metadata\":{},\"items\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            adds(t, ",");
        snprintf(name, sizeof(name), "r%02zu-n%02zu", 1 + i / 80 % 63, 1 + i % 80);
        node(t, name, (int)(1 + i / 80 % 63));
    }
    adds(t, "]}}");
}

/* ExtenderPreemptionArgs: nodes x victims each, MetaPods ({"UID":...}) or full Pods of about
 * 1 KB (a GPU pod as the API server writes one); nodes without victims as null. */
static void preempt_body(struct text *t, size_t nodes, size_t victims, bool full)
{
    char buf[1536];

    begin(t, full ? ",\"NodeNameToVictims\":{" : ",\"NodeNameToMetaVictims\":{");
    for (size_t i = 0; i < nodes; i++) {
        snprintf(buf, sizeof(buf), "%s\"r%02zu-n%02zu-%zu\":", i ? "," : "", 1 + i / 80 % 63,
                 1 + i % 80, i);
        adds(t, buf);
        if (victims == 0) {
            adds(t, "null");
            continue;
        }
        adds(t, "{\"Pods\":[");
        for (size_t k = 0; k < victims; k++) {
            if (full)
                snprintf(buf, sizeof(buf),
                         "%s{\"metadata\":{\"name\":\"batch-%zu-%zu\",\"namespace\":\"batch\","
                         "\"uid\":\"6f1c2b9a-%08zx-4e1b-9c3d-%012zx\",\"labels\":{\"app\":"
                         "\"batch\",\"team\":\"research\"},\"annotations\":{\"topox.io/"
                         "tensor-parallel-size\":\"8\"}},\"spec\":{\"schedulerName\":"
                         "\"topox-scheduler\",\"priority\":100,\"containers\":[{\"name\":"
                         "\"train\",\"image\":\"registry.example.com/ml/train:v1.2.3\","
                         "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"32\","
                         "\"memory\":\"512Gi\"},\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]},"
                         "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.%zu.%zu\","
                         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                         "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
                         k ? "," : "", i, k, i, k, i % 250, k % 250);
            else
                snprintf(buf, sizeof(buf), "%s{\"UID\":\"u%zu-%zu\"}", k ? "," : "", i, k);
            adds(t, buf);
        }
        adds(t, "],\"NumPDBViolations\":0}");
    }
    adds(t, "}}");
}

int main(void)
{
    static char bin[] = TOPOX_BIN, serve[] = "serve", listen_flag[] = "--listen",
                listen[] = "127.0.0.1:0", cluster_flag[] = "--cluster",
                cluster[] = "racks=63,nodes-per-rack=80,gpus-per-node=8";
    char *argv[] = {bin, serve, listen_flag, listen, cluster_flag, cluster, NULL};
    posix_spawn_file_actions_t fa;
    struct drain d = {.fd = -1, .port = 0, .mu = PTHREAD_MUTEX_INITIALIZER};
    struct text t = {0};
    pthread_t th;
    int p[2], port = 0;
    pid_t pid;
    CURL *h;

    if (pipe(p) != 0)
        return 1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    if (posix_spawn(&pid, TOPOX_BIN, &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench_request_memory: cannot start %s\n", TOPOX_BIN);
        return 1;
    }
    close(p[1]);
    d.fd = p[0];
    pthread_create(&th, NULL, drain_log, &d);
    for (int i = 0; i < 300 && port == 0; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};

        nanosleep(&ts, NULL);
        pthread_mutex_lock(&d.mu);
        port = d.port;
        pthread_mutex_unlock(&d.mu);
    }
    if (port == 0) {
        fprintf(stderr, "bench_request_memory: topox never said where it listens\n");
        kill(pid, SIGKILL);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    h = curl_easy_init();
    printf("| request | body MB | status | answer MB | peak RSS growth MiB | growth / body |\n");
    printf("|---|---|---|---|---|---|\n");
    names_body(&t, 5040, true, false);
    measure(h, pid, port, "NodeNames: 5 040 known nodes", &t);
    names_body(&t, 100000, false, false);
    measure(h, pid, port, "NodeNames: 100 000 made-up names (the cap)", &t);
    names_body(&t, 100001, false, false);
    measure(h, pid, port, "NodeNames: 100 001 made-up names", &t);
    names_body(&t, 3500000, false, true);
    measure(h, pid, port, "NodeNames: 10 MB of empty strings", &t);
    full_body(&t, 1000);
    measure(h, pid, port, "Nodes: 1 000 full objects", &t);
    full_body(&t, 5040);
    measure(h, pid, port, "Nodes: 5 040 full objects", &t);
    full_body(&t, 9000);
    measure(h, pid, port, "Nodes: 9 000 full objects", &t);
    names_body(&t, 100000, false, false);
    measure_at(h, pid, port, "prioritize", "prioritize: 100 000 made-up names", &t);
    full_body(&t, 5040);
    measure_at(h, pid, port, "prioritize", "prioritize: 5 040 full Node objects", &t);
    t.len = 0;
    adds(&t, "{\"PodName\":\"p\",\"PodNamespace\":\"llm\",\"PodUID\":\"u-1\",\"Node\":"
             "\"r01-n01\",\"Pad\":[");
    for (size_t i = 0; i < 1000000; i++)
        adds(&t, i ? ",\"padding\"" : "\"padding\"");
    adds(&t, "]}");
    measure_at(h, pid, port, "bind", "bind: 10 MB of unknown fields", &t);
    preempt_body(&t, 10000, 0, false);
    measure_at(h, pid, port, "preempt", "preempt: 10 000 nodes, null victims", &t);
    preempt_body(&t, 10000, 1, false);
    measure_at(h, pid, port, "preempt", "preempt: 10 000 nodes (the cap), 1 MetaVictim each", &t);
    preempt_body(&t, 10001, 1, false);
    measure_at(h, pid, port, "preempt", "preempt: 10 001 nodes", &t);
    preempt_body(&t, 5040, 8, true);
    measure_at(h, pid, port, "preempt", "preempt: 5 040 nodes x 8 full Pods", &t);
    preempt_body(&t, 1, 500000, false);
    measure_at(h, pid, port, "preempt", "preempt: 500 000 MetaVictims on one node", &t);
    preempt_body(&t, 1, 1000000, false);
    measure_at(h, pid, port, "preempt", "preempt: 1 000 000 MetaVictims (the cap)", &t);
    preempt_body(&t, 1, 3000000, false);
    measure_at(h, pid, port, "preempt", "preempt: 3 000 000 MetaVictims", &t);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    free(t.p);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    pthread_join(th, NULL);
    return 0;
}
