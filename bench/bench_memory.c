/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_memory.c - memory of what `topox serve` caches with 10 000 nodes and 50 000 pods
 * (DESIGN.md: <= 128 MiB RSS), or, with --nodes 50000 --pods 250000, issue 14's size (<= 256 MiB
 * RSS after /readyz). Two measurements, the real binary first:
 *   1. `topox serve --kubeconfig` against the in-process fake API server
 *      (tests/integration/fake_apiserver.c) serving generated NodeList and PodList objects; after
 *      /readyz answers 200 the child's VmRSS and VmHWM are read from /proc/PID/status and
 *      topox_nodes / topox_pods_tracked from /metrics;
 *   2. the same objects fed in process, the way extender/state_feed.c does it (obj_node_from_json
 *      then one ext_state_upsert_nodes batch; per pod obj_pod_facts_from_json_cfg,
 *      pol_workload_infer, ext_state_upsert_pod), with VmRSS, VmHWM and malloc's bytes in use
 *      before and after, and the cost per node and per pod.
 * Pods: LWS group members (2 pods x 8 GPUs, tp 8 pp 2, topox.io annotations and the annotations a
 * topox bind leaves), plain 1-GPU Deployment pods, and CPU-only DaemonSet pods; all bound, all
 * Running. Not a test: prints a table.
 *
 * usage: bench_memory [--nodes N] [--pods N] [--in-process-only] [--binary-only] */
#include <curl/curl.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "objects/podfacts.h"
#include "extender/state.h"
#include "fake_apiserver.h"
#include "topology/synthetic.h"

extern char **environ;

#define PER_RACK 80

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- a growing text buffer (bench code: aborts on out-of-memory) -------------------------- */

/* Append printf-style to a growing text; the bench aborts when memory runs out. */
static void text_addf(struct tpx_buf *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void text_addf(struct tpx_buf *t, const char *fmt, ...)
{
    struct tpx_err err = TPX_ERR_INIT;
    char small[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if ((size_t)n < sizeof(small)) {
        if (tpx_buf_add(t, small, (size_t)n, &err) != TPX_OK)
            abort();
        return;
    }
    if (tpx_buf_reserve(t, (size_t)n + 1, &err) != TPX_OK)
        abort();
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* ---- generated objects -------------------------------------------------------------------- */

/* One Node object as the API server lists it (~2.5 KB). */
static void node_json(struct tpx_buf *t, const struct topo_cluster *c, size_t i)
{
    const struct topo_node_info *info = topo_cluster_node(c, i);
    struct topo_kv kv[16];
    char storage[16][64];
    size_t n = topo_synthetic_node_labels(c, i, kv, storage, 16);

    text_addf(t,
              "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
              "\"uid\":\"9b1c%08zx-5a7e-4c1d-9f00-0123456789ab\",\"resourceVersion\":\"%zu\","
              "\"creationTimestamp\":\"2025-11-02T10:00:00Z\",\"labels\":{",
              info->name, i, 100000 + i);
    for (size_t k = 0; k < n; k++)
        text_addf(t, "\"%s\":\"%s\",", kv[k].key, kv[k].value);
    text_addf(t,
              "\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\","
              "\"kubernetes.io/arch\":\"amd64\",\"node.kubernetes.io/instance-type\":"
              "\"p5.48xlarge\",\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\","
              "\"nvidia.com/gpu.count\":\"%u\",\"nvidia.com/cuda.driver.major\":\"550\","
              "\"topology.kubernetes.io/region\":\"us-east-1\"},\"annotations\":{"
              "\"node.alpha.kubernetes.io/ttl\":\"0\","
              "\"volumes.kubernetes.io/controller-managed-attach-detach\":\"true\"}},"
              "\"spec\":{\"providerID\":\"aws:///us-east-1a/i-0%016zx\",\"podCIDR\":"
              "\"10.%zu.%zu.0/24\"},\"status\":{\"capacity\":{\"cpu\":\"192\",\"memory\":"
              "\"2097152000Ki\",\"%s\":\"%u\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"191\","
              "\"memory\":\"2000000000Ki\",\"%s\":\"%u\",\"pods\":\"110\"},\"conditions\":[",
              info->name, info->accel_alloc, i, (i / 256) % 256, i % 256, info->resource,
              info->accel_alloc, info->resource, info->accel_alloc);
    {
        static const char *const types[] = {"MemoryPressure", "DiskPressure", "PIDPressure",
                                            "Ready"};
        for (int k = 0; k < 4; k++)
            text_addf(t,
                      "%s{\"type\":\"%s\",\"status\":\"%s\",\"lastHeartbeatTime\":"
                      "\"2026-01-01T00:00:00Z\",\"lastTransitionTime\":\"2025-12-01T00:00:00Z\","
                      "\"reason\":\"Kubelet%s\",\"message\":\"kubelet is posting ready status\"}",
                      k ? "," : "", types[k], k == 3 ? "True" : "False", types[k]);
    }
    text_addf(t,
              "],\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.%zu.%zu.10\"},"
              "{\"type\":\"Hostname\",\"address\":\"%s\"}],\"nodeInfo\":{\"kubeletVersion\":"
              "\"v1.31.0\",\"containerRuntimeVersion\":\"containerd://1.7.20\",\"osImage\":"
              "\"Ubuntu 22.04.4 LTS\",\"kernelVersion\":\"5.15.0-1062-aws\"},\"images\":[",
              (i / 256) % 256, i % 256, info->name);
    for (int k = 0; k < 6; k++)
        text_addf(t,
                  "%s{\"names\":[\"registry.example.com/ml/serving-%d@sha256:0123456789abcdef"
                  "0123456789abcdef0123456789abcdef0123456789abcdef\","
                  "\"registry.example.com/ml/serving-%d:v1.%d.0\"],\"sizeBytes\":%d}",
                  k ? "," : "", k, k, k, 1000000000 + k);
    text_addf(t, "]}}");
}

enum pod_kind { POD_LWS, POD_GPU, POD_DAEMON };

struct pod_plan {
    size_t lws, gpu, daemon; /* counts */
    size_t nodes;
};

/*
 * Pod i of the plan: kind and node. LWS groups (2 pods x 8 GPUs) fill nodes whose index in the
 * rack is below 64, pairwise in one rack; 1-GPU pods fill the other 16 nodes of each rack, 8 per
 * node; the rest are CPU-only DaemonSet pods spread over all nodes.
 */
static enum pod_kind pod_where(const struct pod_plan *pl, size_t i, size_t *node)
{
    size_t lws_nodes_per_rack = PER_RACK * 4 / 5;

    if (i < pl->lws) {
        size_t rack = i / lws_nodes_per_rack, k = i % lws_nodes_per_rack;

        *node = rack * PER_RACK + k;
        return POD_LWS;
    }
    i -= pl->lws;
    if (i < pl->gpu) {
        size_t slot = i / 8, per = PER_RACK - lws_nodes_per_rack;

        *node = (slot / per) * PER_RACK + lws_nodes_per_rack + slot % per;
        return POD_GPU;
    }
    i -= pl->gpu;
    *node = i % pl->nodes;
    return POD_DAEMON;
}

static void pod_status(struct tpx_buf *t, size_t i, size_t node)
{
    text_addf(t,
              "\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.%zu.%zu.10\",\"podIP\":"
              "\"100.%zu.%zu.%zu\",\"startTime\":\"2026-01-02T03:04:05Z\",\"qosClass\":"
              "\"Burstable\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
              "\"lastTransitionTime\":\"2026-01-02T03:05:00Z\"},{\"type\":\"PodScheduled\","
              "\"status\":\"True\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\"}]}}",
              (node / 256) % 256, node % 256, (i / 65536) % 256, (i / 256) % 256, i % 256);
}

/* One Pod object (~2 KB for LWS members, ~1.2 KB for the others), bound to its node. */
static void pod_json(struct tpx_buf *t, const struct topo_cluster *c, const struct pod_plan *pl,
                     size_t i)
{
    size_t node;
    enum pod_kind kind = pod_where(pl, i, &node);
    const struct topo_node_info *info = topo_cluster_node(c, node);

    if (kind == POD_LWS) {
        size_t group = i / 2;
        unsigned worker = (unsigned)(i % 2);
        unsigned ns = (unsigned)(group % 16);
        size_t rep = group / 16;
        char name[64];

        if (worker == 0)
            snprintf(name, sizeof(name), "vllm-%zu", rep);
        else
            snprintf(name, sizeof(name), "vllm-%zu-1", rep);
        text_addf(t,
                  "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"llm-%u\",\"uid\":"
                  "\"4f0e%08zx-1c2d-4e5f-8a9b-0123456789ab\",\"resourceVersion\":\"%zu\","
                  "\"creationTimestamp\":\"2026-01-02T03:04:00Z\",\"labels\":{"
                  "\"leaderworkerset.sigs.k8s.io/name\":\"vllm\","
                  "\"leaderworkerset.sigs.k8s.io/group-index\":\"%zu\","
                  "\"leaderworkerset.sigs.k8s.io/group-key\":\"%040zx\","
                  "\"leaderworkerset.sigs.k8s.io/worker-index\":\"%u\","
                  "\"leaderworkerset.sigs.k8s.io/template-revision-hash\":\"5d8f7c9b4\","
                  "\"app\":\"vllm\"},\"annotations\":{"
                  "\"leaderworkerset.sigs.k8s.io/size\":\"2\","
                  "\"leaderworkerset.sigs.k8s.io/leader-name\":\"vllm-%zu\","
                  "\"topox.io/tensor-parallel-size\":\"8\","
                  "\"topox.io/pipeline-parallel-size\":\"2\",\"topox.io/rack\":\"%s\","
                  "\"topox.io/domain\":\"%s\",\"topox.io/stage\":\"%u\"},"
                  "\"ownerReferences\":[{\"apiVersion\":\"leaderworkerset.x-k8s.io/v1\","
                  "\"kind\":\"LeaderWorkerSet\",\"name\":\"vllm\",\"uid\":"
                  "\"0a1b2c3d-0000-4000-8000-%012u\",\"controller\":true}]},"
                  "\"spec\":{\"nodeName\":\"%s\",\"schedulerName\":\"topox-scheduler\","
                  "\"containers\":[{\"name\":\"vllm\",\"image\":"
                  "\"vllm/vllm-openai:v0.6.3\",\"command\":[\"/bin/sh\",\"-c\","
                  "\"python3 -m vllm.entrypoints.openai.api_server --model /models/llama-405b "
                  "--tensor-parallel-size 8 --pipeline-parallel-size 2 --port 8080\"],"
                  "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":"
                  "\"VLLM_HOST_IP\",\"value\":\"$(POD_IP)\"}],\"ports\":[{\"containerPort\":8080,"
                  "\"protocol\":\"TCP\"}],\"resources\":{\"requests\":{\"cpu\":\"96\",\"memory\":"
                  "\"1000Gi\",\"nvidia.com/gpu\":\"8\"},\"limits\":{\"nvidia.com/gpu\":\"8\"}},"
                  "\"volumeMounts\":[{\"name\":\"models\",\"mountPath\":\"/models\"},{\"name\":"
                  "\"dshm\",\"mountPath\":\"/dev/shm\"}]}],\"volumes\":[{\"name\":\"models\","
                  "\"persistentVolumeClaim\":{\"claimName\":\"models\"}},{\"name\":\"dshm\","
                  "\"emptyDir\":{\"medium\":\"Memory\"}}],\"tolerations\":[{\"key\":"
                  "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]},",
                  name, ns, i, 200000 + i, rep, group * 2654435761u, worker, rep,
                  info->rack ? info->rack : "", info->name, worker, ns, info->name);
    } else if (kind == POD_GPU) {
        text_addf(t,
                  "{\"metadata\":{\"name\":\"embed-7c9d8f-%05zx\",\"namespace\":\"search\","
                  "\"uid\":\"7a2b%08zx-3c4d-4e5f-9a0b-0123456789ab\",\"resourceVersion\":\"%zu\","
                  "\"creationTimestamp\":\"2026-01-02T03:04:00Z\",\"labels\":{\"app\":\"embed\","
                  "\"pod-template-hash\":\"7c9d8f\"},\"ownerReferences\":[{\"apiVersion\":"
                  "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"embed-7c9d8f\",\"uid\":"
                  "\"0a1b2c3d-1111-4000-8000-000000000001\",\"controller\":true}]},"
                  "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"embed\",\"image\":"
                  "\"registry.example.com/search/embed:v3\",\"args\":[\"--port\",\"9000\"],"
                  "\"resources\":{\"requests\":{\"cpu\":\"8\",\"memory\":\"64Gi\","
                  "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},",
                  i, i, 200000 + i, info->name);
    } else {
        static const char *const ds[] = {"node-exporter", "nvidia-dcgm-exporter",
                                         "nvidia-device-plugin", "topox-labeler", "cilium"};
        const char *d = ds[(i / pl->nodes) % 5];

        text_addf(t,
                  "{\"metadata\":{\"name\":\"%s-%05zx\",\"namespace\":\"kube-system\","
                  "\"uid\":\"3e1d%08zx-2b3c-4d5e-8f9a-0123456789ab\",\"resourceVersion\":\"%zu\","
                  "\"creationTimestamp\":\"2025-12-01T00:00:00Z\",\"labels\":{"
                  "\"app.kubernetes.io/name\":\"%s\",\"controller-revision-hash\":\"6b7c8d9e\","
                  "\"pod-template-generation\":\"3\"},\"ownerReferences\":[{\"apiVersion\":"
                  "\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"%s\",\"uid\":"
                  "\"0a1b2c3d-2222-4000-8000-000000000002\",\"controller\":true}]},"
                  "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"%s\",\"image\":"
                  "\"registry.example.com/infra/%s:v1.8.2\",\"resources\":{\"requests\":"
                  "{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}],\"tolerations\":[{\"operator\":"
                  "\"Exists\"}]},",
                  d, i, i, 200000 + i, d, d, info->name, d, d);
    }
    pod_status(t, i, node);
}

static struct pod_plan make_plan(size_t nodes, size_t pods)
{
    struct pod_plan pl = {0, 0, 0, nodes};
    size_t lws_nodes = nodes / PER_RACK * (PER_RACK * 4 / 5);
    size_t gpu_nodes = nodes / PER_RACK * (PER_RACK - PER_RACK * 4 / 5);

    pl.lws = lws_nodes < pods ? lws_nodes : pods & ~(size_t)1;
    pl.gpu = gpu_nodes * 8 < pods - pl.lws ? gpu_nodes * 8 : pods - pl.lws;
    pl.daemon = pods - pl.lws - pl.gpu;
    return pl;
}

/* ---- memory readings ---------------------------------------------------------------------- */

struct mem {
    long rss_kb, hwm_kb;
    size_t heap; /* malloc's bytes in use (in process only) */
};

static struct mem read_status(pid_t pid)
{
    char path[64], line[256];
    struct mem m = {-1, -1, 0};
    FILE *f;

    if (pid)
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/status");
    f = fopen(path, "r");
    if (!f)
        return m;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            m.rss_kb = atol(line + 6);
        else if (strncmp(line, "VmHWM:", 6) == 0)
            m.hwm_kb = atol(line + 6);
    }
    fclose(f);
    return m;
}

static struct mem self_mem(void)
{
    struct mem m;
    struct mallinfo2 mi;

    malloc_trim(0);
    m = read_status(0);
    mi = mallinfo2();
    m.heap = mi.uordblks + mi.hblkhd;
    return m;
}

static double mib(long kb)
{
    return (double)kb / 1024.0;
}

/* ---- 1. the real binary against the fake API server --------------------------------------- */

struct drain {
    int fd;
};

static void *drain_log(void *arg)
{
    struct drain *d = arg;
    char buf[4096];

    while (read(d->fd, buf, sizeof(buf)) > 0)
        ;
    return NULL;
}

/* libcurl write callback: append to a tpx_buf (uncapped: the bench reads its own server). */
static size_t keep(char *d, size_t s, size_t n, void *ud)
{
    struct tpx_err err = TPX_ERR_INIT;

    return tpx_buf_add(ud, d, s * n, &err) == TPX_OK ? s * n : 0;
}

static long get(int port, const char *path, char **body)
{
    CURL *h = curl_easy_init();
    struct tpx_buf g;

    tpx_buf_init(&g, SIZE_MAX);
    char url[128];
    long st = 0;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &g);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(h);
    if (body)
        *body = tpx_buf_detach(&g, NULL);
    else
        tpx_buf_release(&g);
    return st;
}

static double metric(const char *text, const char *name)
{
    char pat[96];
    const char *p;

    snprintf(pat, sizeof(pat), "\n%s ", name);
    p = text ? strstr(text, pat) : NULL;
    return p ? atof(p + strlen(pat)) : -1;
}

static int run_binary(const struct topo_cluster *c, const struct pod_plan *pl)
{
    struct fake_api *api = fake_api_start(BENCH_FIXTURES);
    struct tpx_buf t;

    tpx_buf_init(&t, SIZE_MAX);
    size_t nodes = topo_cluster_node_count(c), pods = pl->lws + pl->gpu + pl->daemon;
    char kc[] = "/tmp/bench-memory-kc-XXXXXX";
    int fd, p[2], port = 0;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    char buf[65536], *metrics = NULL;
    size_t len = 0, node_bytes, pod_bytes;
    double t0, deadline, ready_s;
    long st = 0;
    struct mem m;
    pthread_t drainer;
    struct drain dr;
    FILE *f;

    if (!api) {
        fprintf(stderr, "bench_memory: cannot start the fake API server\n");
        return 1;
    }
    text_addf(&t, "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":"
                  "{\"resourceVersion\":\"5000\"},\"items\":[");
    for (size_t i = 0; i < nodes; i++) {
        if (i)
            text_addf(&t, ",");
        node_json(&t, c, i);
    }
    text_addf(&t, "]}");
    node_bytes = t.len;
    fake_api_set_list(api, "/api/v1/nodes", t.data);
    tpx_buf_reset(&t);
    text_addf(&t, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":"
                  "{\"resourceVersion\":\"6000\"},\"items\":[");
    for (size_t i = 0; i < pods; i++) {
        if (i)
            text_addf(&t, ",");
        pod_json(&t, c, pl, i);
    }
    text_addf(&t, "]}");
    pod_bytes = t.len;
    fake_api_set_list(api, "/api/v1/pods", t.data);
    tpx_buf_release(&t);

    fd = mkstemp(kc);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "bench_memory: cannot write a kubeconfig in /tmp\n");
        fake_api_stop(api);
        return 1;
    }
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
            "users:\n- name: bench\n  user:\n    token: bench-token\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: bench\n",
            fake_api_url(api));
    fclose(f);

    {
        /* the fake is http://, which serve refuses without --insecure */
        char *argv[] = {(char *)TOPOX_BIN,
                        (char *)"serve",
                        (char *)"--listen",
                        (char *)"127.0.0.1:0",
                        (char *)"--kubeconfig",
                        kc,
                        (char *)"--events",
                        (char *)"false",
                        (char *)"--insecure",
                        (char *)"true",
                        NULL};

        if (pipe(p)) {
            fake_api_stop(api);
            return 1;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 2);
        posix_spawn_file_actions_addclose(&fa, p[0]);
        t0 = now();
        if (posix_spawn(&pid, TOPOX_BIN, &fa, NULL, argv, environ) != 0) {
            fprintf(stderr, "bench_memory: cannot start %s\n", TOPOX_BIN);
            fake_api_stop(api);
            return 1;
        }
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
    }
    deadline = now() + 60;
    while (now() < deadline && len < sizeof(buf) - 1 && port == 0) {
        ssize_t n = read(p[0], buf + len, sizeof(buf) - 1 - len);
        char *l;

        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        l = strstr(buf, "\"msg\":\"listening\"");
        if (l && strstr(l, "\"port\":"))
            port = atoi(strstr(l, "\"port\":") + 7);
    }
    dr.fd = p[0];
    pthread_create(&drainer, NULL, drain_log, &dr);
    deadline = now() + 600;
    while (port && now() < deadline && (st = get(port, "/readyz", NULL)) != 200) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ready_s = now() - t0;
    m = read_status(pid);
    if (st == 200)
        get(port, "/metrics", &metrics);
    printf("| topox serve, API source: %zu nodes (NodeList %.1f MB), %zu pods (PodList %.1f MB) "
           "| ready in %.1f s |\n",
           nodes, (double)node_bytes / 1e6, pods, (double)pod_bytes / 1e6, ready_s);
    if (st != 200) {
        printf("| /readyz | %ld (never 200: no figure) |\n", st);
    } else {
        printf("| server topox_nodes / topox_pods_tracked / topox_groups | %.0f / %.0f / %.0f |\n",
               metric(metrics, "topox_nodes"), metric(metrics, "topox_pods_tracked"),
               metric(metrics, "topox_groups"));
        /* issue 14: 50 000 nodes and 250 000 pods in 256 MiB; DESIGN.md: 10 000 / 50 000 in 128 */
        double target = nodes >= 50000 || pods >= 250000 ? 256 : 128;

        printf("| **server VmRSS after /readyz 200** | **%.1f MiB** (target <= %.0f MiB: %s) |\n",
               mib(m.rss_kb), target, mib(m.rss_kb) <= target ? "met" : "MISSED");
        printf("| server VmHWM (peak, during the initial list) | %.1f MiB |\n", mib(m.hwm_kb));
    }
    free(metrics);
    kill(pid, SIGTERM);
    {
        int ws = 0;
        waitpid(pid, &ws, 0);
        printf("| server exit after SIGTERM | %d |\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    }
    pthread_join(drainer, NULL);
    close(p[0]);
    unlink(kc);
    fake_api_stop(api);
    return st == 200 ? 0 : 1;
}

/* ---- 2. in process: the state the watch feeds --------------------------------------------- */

static void count_pods(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    (void)l;
    *(size_t *)ctx = pods_seen;
}

static int run_in_process(struct topo_cluster *c, const struct pod_plan *pl)
{
    const struct topo_label_config *cfg = topo_label_config_default();
    size_t nodes = topo_cluster_node_count(c), pods = pl->lws + pl->gpu + pl->daemon;
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_state *st;
    struct mem m0, m1, m2;
    struct topo_node_info *infos;
    json_t **docs;
    struct tpx_buf t;

    tpx_buf_init(&t, SIZE_MAX);
    size_t refused = 0, tracked = 0, with_wl = 0;
    double t0, t_nodes, t_pods;

    m0 = self_mem();
    st = ext_state_new(600, &err);
    if (!st) {
        fprintf(stderr, "bench_memory: %s\n", err.msg);
        return 1;
    }
    /* nodes: as state_feed's apply_nodes, one batch */
    infos = calloc(nodes, sizeof(*infos));
    docs = calloc(nodes, sizeof(*docs));
    if (!infos || !docs)
        abort();
    t0 = now();
    for (size_t i = 0; i < nodes; i++) {
        json_error_t je;
        struct tpx_err ne = TPX_ERR_INIT;

        tpx_buf_reset(&t);
        node_json(&t, c, i);
        docs[i] = json_loadb(t.data, t.len, 0, &je);
        if (!docs[i] || obj_node_from_json(docs[i], cfg, &infos[i], NULL, &ne) != TPX_OK) {
            fprintf(stderr, "bench_memory: node %zu: %s\n", i, docs[i] ? ne.msg : je.text);
            return 1;
        }
    }
    if (ext_state_upsert_nodes(st, infos, nodes, NULL, &err) != TPX_OK) {
        fprintf(stderr, "bench_memory: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < nodes; i++)
        json_decref(docs[i]);
    free(docs);
    free(infos);
    t_nodes = now() - t0;
    m1 = self_mem();
    /* pods: as state_feed's apply_pod */
    t0 = now();
    for (size_t i = 0; i < pods; i++) {
        json_error_t je;
        json_t *pod;
        struct obj_pod_facts store;
        struct pol_workload wl;
        struct tpx_err e = TPX_ERR_INIT, ignore = TPX_ERR_INIT;
        bool has_wl;
        const char *uid, *name, *node;

        tpx_buf_reset(&t);
        pod_json(&t, c, pl, i);
        pod = json_loadb(t.data, t.len, 0, &je);
        if (!pod) {
            fprintf(stderr, "bench_memory: pod %zu: %s\n", i, je.text);
            return 1;
        }
        uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        memset(&store, 0, sizeof(store));
        if (obj_pod_facts_from_json_cfg(pod, cfg, &store, &e) != TPX_OK) {
            refused++;
        } else {
            has_wl = pol_workload_infer(&store.facts, &wl, &ignore) == TPX_OK;
            with_wl += has_wl && wl.has_intent;
            if (ext_state_upsert_pod(st, uid, name, node, store.facts.accel, has_wl ? &wl : NULL,
                                     &e) != TPX_OK) {
                if (refused++ < 3)
                    fprintf(stderr, "bench_memory: pod %zu refused: %s\n", i, e.msg);
            }
            obj_pod_facts_release(&store);
        }
        json_decref(pod);
    }
    t_pods = now() - t0;
    tpx_buf_release(&t);
    ext_state_read(st, count_pods, &tracked);
    m2 = self_mem();
    printf("| in process (extender/state as the watch feeds it): %zu nodes, %zu pods (%zu LWS "
           "members with intent, %zu 1-GPU, %zu CPU-only) | %zu tracked, %zu refused |\n",
           nodes, pods, with_wl, pl->gpu, pl->daemon, tracked, refused);
    printf("| VmRSS before / after nodes / after pods | %.1f / %.1f / %.1f MiB |\n", mib(m0.rss_kb),
           mib(m1.rss_kb), mib(m2.rss_kb));
    printf("| VmHWM after pods (peak, includes the generator) | %.1f MiB |\n", mib(m2.hwm_kb));
    printf("| malloc bytes in use: nodes / pods / total state | %.1f / %.1f / %.1f MiB |\n",
           (double)(m1.heap - m0.heap) / 1048576.0, (double)(m2.heap - m1.heap) / 1048576.0,
           (double)(m2.heap - m0.heap) / 1048576.0);
    printf("| cost per node / per pod (malloc bytes in use) | %.0f B / %.0f B |\n",
           (double)(m1.heap - m0.heap) / (double)nodes, (double)(m2.heap - m1.heap) / (double)pods);
    printf("| feed time: nodes / pods (decode + facts + upsert) | %.2f s / %.2f s (%.1f us per "
           "pod) |\n",
           t_nodes, t_pods, t_pods * 1e6 / (double)pods);
    ext_state_free(st);
    return refused ? 1 : 0;
}

int main(int argc, char **argv)
{
    size_t nodes = 10000, pods = 50000;
    bool in_process = true, binary = true;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c;
    struct pod_plan pl;
    char spec[160];
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
            nodes = (size_t)atol(argv[++i]);
        } else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc) {
            pods = (size_t)atol(argv[++i]);
        } else if (strcmp(argv[i], "--in-process-only") == 0) {
            binary = false;
        } else if (strcmp(argv[i], "--binary-only") == 0) {
            in_process = false;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: bench_memory [--nodes N] [--pods N] [--in-process-only] "
                   "[--binary-only]\n\nMemory of topox serve's cache: N nodes (a multiple of "
                   "%d, default 10000) and N pods\n(default 50000), measured on the real binary "
                   "against the fake API server, then in process.\n",
                   PER_RACK);
            return 0;
        } else {
            fprintf(stderr, "usage: bench_memory [--nodes N] [--pods N] [--in-process-only] "
                            "[--binary-only]\n");
            return 2;
        }
    }
    if (nodes < PER_RACK || nodes % PER_RACK != 0) {
        fprintf(stderr, "bench_memory: --nodes must be a positive multiple of %d\n", PER_RACK);
        return 2;
    }
    snprintf(spec, sizeof(spec),
             "racks=%zu,nodes-per-rack=%d,gpus-per-node=8,interconnect=nvswitch", nodes / PER_RACK,
             PER_RACK);
    c = topo_cluster_synthetic(spec, &err);
    if (!c) {
        fprintf(stderr, "bench_memory: %s\n", err.msg);
        return 1;
    }
    pl = make_plan(nodes, pods);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("topox serve memory benchmark: cluster %s\n\n| case | value |\n|---|---|\n", spec);
    if (binary)
        rc |= run_binary(c, &pl);
    if (in_process)
        rc |= run_in_process(c, &pl);
    topo_cluster_free(c);
    curl_global_cleanup();
    return rc;
}
