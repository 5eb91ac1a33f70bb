/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_serve.c - `topox serve` from outside: start the real binary on port 0 and
 * replay what kube-scheduler sends (filter -> prioritize -> bind per pod, over HTTP/1.1) for LWS
 * groups, NVL-like cliques, impossible TP sizes, reservations and their expiry, both
 * nodeCacheCapable modes, racing binds, and the operational endpoints and error paths. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void teardown(void)
{
    server_kill_all(); /* never through the test's own struct server: it may be gone */
}

TestSuite(serve, .fini = teardown);

static void start(struct server *s, const char *const *args)
{
    int rc = server_start(args, s);

    cr_assert_eq(rc, 0, "topox serve did not start:\n%s", s->log ? s->log : "");
}

static void stop(struct server *s)
{
    char why[6000];
    int status = server_stop_checked(s, why, sizeof(why));

    cr_expect_eq(status, 0, "SIGTERM must drain and exit 0, not %d; the log ends:\n%s", status,
                 why);
}

/* A pod of an LWS group (group NULL: no group labels) with topox.io parallelism annotations
 * (tp 0: no annotations, i.e. no topology intent). */
static char *pod_json(const char *name, const char *uid, const char *group, int index, int size,
                      int tp, int pp, int gpus)
{
    json_t *labels = json_object(), *ann = json_object();
    json_t *pod;
    char *s;
    char buf[32];

    if (group) {
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/name", json_string("vllm"));
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/group-key", json_string(group));
        snprintf(buf, sizeof(buf), "%d", index);
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/worker-index", json_string(buf));
        snprintf(buf, sizeof(buf), "%d", size);
        json_object_set_new(ann, "leaderworkerset.sigs.k8s.io/size", json_string(buf));
    }
    if (tp) {
        snprintf(buf, sizeof(buf), "%d", tp);
        json_object_set_new(ann, "topox.io/tensor-parallel-size", json_string(buf));
        snprintf(buf, sizeof(buf), "%d", pp);
        json_object_set_new(ann, "topox.io/pipeline-parallel-size", json_string(buf));
    }
    snprintf(buf, sizeof(buf), "%d", gpus);
    pod =
        json_pack("{s:{s:s,s:s,s:s,s:o,s:o},s:{s:s,s:[{s:s,s:{s:{s:s},s:{s:s}}}]}}", "metadata",
                  "name", name, "namespace", "llm", "uid", uid, "labels", labels, "annotations",
                  ann, "spec", "schedulerName", "topology-aware", "containers", "name", "vllm",
                  "resources", "requests", "nvidia.com/gpu", buf, "limits", "nvidia.com/gpu", buf);
    s = json_dumps(pod, JSON_COMPACT);
    json_decref(pod);
    return s;
}

/* Node names r01-n01 .. of a synthetic cluster (topo_cluster_synthetic pads to 2 digits). */
static size_t node_names(int racks, int per_rack, char names[][32])
{
    size_t n = 0;

    for (int r = 1; r <= racks; r++) {
        for (int i = 1; i <= per_rack; i++)
            snprintf(names[n++], 32, "r%02d-n%02d", r, i);
    }
    return n;
}

static json_t *call_json(int port, const char *path, const char *body, long *status)
{
    char *resp = NULL;
    json_t *j;

    *status = http_call("POST", port, path, body, &resp);
    j = json_loads(resp ? resp : "", 0, NULL);
    cr_assert_not_null(j, "%s answered non-JSON (%ld): %s", path, *status, resp ? resp : "");
    free(resp);
    return j;
}

static char *args_json(const char *pod, char names[][32], size_t n)
{
    json_t *arr = json_array();
    json_t *req;
    char *s, *out;
    size_t len;

    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(names[i]));
    req = json_pack("{s:n,s:o}", "Nodes", "NodeNames", arr);
    s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    /* splice the pod in as text: {"Pod":POD,...} */
    len = strlen(s) + strlen(pod) + 16;
    out = malloc(len);
    snprintf(out, len, "{\"Pod\":%s,%s", pod, s + 1);
    free(s);
    return out;
}

/* ExtenderArgs with full Node objects (nodeCacheCapable false): {"Pod":POD,"Nodes":{items}}.
 * items is borrowed. Free the result. */
static char *full_args(const char *pod, json_t *items)
{
    json_t *req = json_pack("{s:{s:{},s:O},s:n}", "Nodes", "metadata", "items", items, "NodeNames");
    char *body = json_dumps(req, JSON_COMPACT);
    size_t len = strlen(body) + strlen(pod) + 16;
    char *full = malloc(len);

    snprintf(full, len, "{\"Pod\":%s,%s", pod, body + 1);
    free(body);
    json_decref(req);
    return full;
}

/* What the scheduler does for one pod: filter, prioritize the survivors (skipped with one, as
 * upstream does), bind the best. Returns the chosen node (static storage) or NULL when filter
 * left nothing; *filter_out (may be NULL) receives the filter answer. */
static const char *schedule(int port, const char *pod, const char *uid, char names[][32], size_t n,
                            json_t **filter_out)
{
    static char chosen[32];
    char *req = args_json(pod, names, n);
    long status;
    json_t *f = call_json(port, "/filter", req, &status);
    json_t *left = json_object_get(f, "NodeNames");
    char pass[256][32];
    size_t npass = json_array_size(left);
    int best = -1;
    const char *bind_err;

    free(req);
    cr_assert_eq(status, 200);
    cr_assert_str_eq(json_string_value(json_object_get(f, "Error")), "", "filter Error");
    for (size_t i = 0; i < npass; i++)
        snprintf(pass[i], 32, "%s", json_string_value(json_array_get(left, i)));
    if (filter_out)
        *filter_out = f;
    else
        json_decref(f);
    if (npass == 0)
        return NULL;
    snprintf(chosen, sizeof(chosen), "%s", pass[0]);
    if (npass > 1) {
        json_t *p;
        req = args_json(pod, pass, npass);
        p = call_json(port, "/prioritize", req, &status);
        free(req);
        cr_assert_eq(status, 200);
        cr_assert(json_is_array(p), "prioritize must answer a bare array");
        for (size_t i = 0; i < json_array_size(p); i++) {
            json_t *h = json_array_get(p, i);
            json_t *sc = json_object_get(h, "Score");
            cr_assert(json_is_integer(sc), "Score must be an integer");
            cr_assert(json_integer_value(sc) >= 0 && json_integer_value(sc) <= 10);
            if ((int)json_integer_value(sc) > best) {
                best = (int)json_integer_value(sc);
                snprintf(chosen, sizeof(chosen), "%s",
                         json_string_value(json_object_get(h, "Host")));
            }
        }
        json_decref(p);
    }
    {
        char body[512];
        json_t *b;
        snprintf(body, sizeof(body),
                 "{\"PodName\":\"%s\",\"PodNamespace\":\"llm\",\"PodUID\":\"%s\",\"Node\":\"%s\"}",
                 uid, uid, chosen);
        b = call_json(port, "/bind", body, &status);
        cr_assert_eq(status, 200);
        bind_err = json_string_value(json_object_get(b, "Error"));
        cr_assert_str_eq(bind_err ? bind_err : "(none)", "", "bind failed");
        json_decref(b);
    }
    return chosen;
}

static int rack_of(const char *node)
{
    return atoi(node + 1);
}

Test(serve, help_and_usage)
{
    const char *help[] = {"serve", "--help", NULL};
    const char *bad[] = {"serve", "--no-such-flag", NULL};
    const char *badcfg[] = {"serve", "--config", "/nonexistent/topox.yaml", NULL};
    struct run_result r;

    cr_assert_eq(run_topox(help, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "--listen") != NULL);
    run_result_release(&r);
    cr_assert_eq(run_topox(bad, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "usage") != NULL);
    run_result_release(&r);
    cr_assert_eq(run_topox(badcfg, NULL, &r), 0);
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "/nonexistent/topox.yaml") != NULL, "%s", r.err);
    run_result_release(&r);
}

/* A TLS file that cannot be read stops serve like every other startup failure: exit 1 and a
 * plain "topox serve: ..." line naming the file, not only a JSON log line. */
Test(serve, unreadable_tls_file_is_a_plain_startup_error)
{
    const char *args[] = {"serve",
                          "--cluster",
                          "racks=1,nodes-per-rack=1",
                          "--listen",
                          "127.0.0.1:0",
                          "--tls-cert",
                          "/nonexistent/cert.pem",
                          "--tls-key",
                          "/nonexistent/key.pem",
                          NULL};
    struct run_result r;

    cr_assert_eq(run_topox(args, NULL, &r), 0);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "topox serve: cannot open '/nonexistent/cert.pem'") != NULL, "%s",
              r.err);
    run_result_release(&r);
}

Test(serve, lws_tp8_pp2_lands_one_replica_per_rack)
{
    const char *args[] = {"--cluster", "racks=4,nodes-per-rack=2,gpus-per-node=8", NULL};
    char names[8][32];
    size_t n = node_names(4, 2, names);
    struct server s;
    int rack_used[5] = {0};

    start(&s, args);
    for (int g = 0; g < 4; g++) {
        char group[16], uid[2][32], name[2][32];
        int racks[2];
        for (int k = 0; k < 2; k++) {
            char *pod;
            const char *node;
            snprintf(group, sizeof(group), "grp%d", g);
            snprintf(uid[k], 32, "u-%d-%d", g, k);
            snprintf(name[k], 32, "vllm-%d-%d", g, k);
            pod = pod_json(name[k], uid[k], group, k, 2, 8, 2, 8);
            node = schedule(s.port, pod, uid[k], names, n, NULL);
            free(pod);
            cr_assert_not_null(node, "group %d pod %d found no node", g, k);
            racks[k] = rack_of(node);
        }
        cr_expect_eq(racks[0], racks[1], "group %d split over racks %d and %d", g, racks[0],
                     racks[1]);
        rack_used[racks[0]]++;
    }
    for (int r = 1; r <= 4; r++)
        cr_expect_eq(rack_used[r], 1, "rack %d holds %d replicas", r, rack_used[r]);
    stop(&s);
}

/* The prioritize answer is streamed from a template per NodeNames list (issue 14): every
 * candidate in request order, names escaped as JSON needs, integer scores, the same bytes when the
 * list comes again (the cached template), and each host's score the same in a list of other
 * bytes (a template of its own). */
Test(serve, prioritize_answers_every_candidate_in_order_and_the_same_bytes_again)
{
    const char *args[] = {"--cluster", "racks=2,nodes-per-rack=2,gpus-per-node=8,used=3", NULL};
    char names[5][32] = {"r01-n01", "we\"ird\\", "r02-n02", "r01-n02", "r02-n01"};
    char back[5][32];
    char *pod = pod_json("vllm-p-0", "u-p-0", "grp-p", 0, 2, 8, 2, 8);
    char *req = args_json(pod, names, 5), *again, *first = NULL, *second = NULL, *other = NULL;
    json_t *a, *b;
    struct server s;

    start(&s, args);
    cr_assert_eq(http_call("POST", s.port, "/prioritize", req, &first), 200);
    cr_assert_eq(http_call("POST", s.port, "/prioritize", req, &second), 200);
    cr_expect_str_eq(second, first, "the cached list's answer is the same bytes");
    a = json_loads(first, 0, NULL);
    cr_assert(json_is_array(a), "a bare array: %s", first);
    cr_assert_eq(json_array_size(a), 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *h = json_array_get(a, i);
        cr_expect_str_eq(json_string_value(json_object_get(h, "Host")), names[i]);
        cr_expect(json_is_integer(json_object_get(h, "Score")));
    }
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(a, 1), "Score")), 0,
                 "an unknown node scores 0");
    /* the same hosts backwards: other bytes, so another template */
    for (size_t i = 0; i < 5; i++)
        memcpy(back[i], names[4 - i], 32);
    again = args_json(pod, back, 5);
    cr_assert_eq(http_call("POST", s.port, "/prioritize", again, &other), 200);
    b = json_loads(other, 0, NULL);
    cr_assert(json_is_array(b), "a bare array: %s", other);
    cr_assert_eq(json_array_size(b), 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *h = json_array_get(b, 4 - i);
        cr_expect_str_eq(json_string_value(json_object_get(h, "Host")), names[i]);
        cr_expect_eq(json_integer_value(json_object_get(h, "Score")),
                     json_integer_value(json_object_get(json_array_get(a, i), "Score")),
                     "%s scores alike in either list", names[i]);
    }
    json_decref(a);
    json_decref(b);
    free(first);
    free(second);
    free(other);
    free(again);
    free(req);
    free(pod);
    stop(&s);
}

Test(serve, tp16_on_nvl_like_cliques_lands_in_one_clique)
{
    /* one rack, two 16-GPU multi-node domains of 4 nodes x 4 GPUs */
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=8,gpus-per-node=4,domain-nodes=4",
                          NULL};
    char names[8][32];
    size_t n = node_names(1, 8, names);
    struct server s;
    int clique = -1;

    start(&s, args);
    for (int k = 0; k < 4; k++) {
        char uid[32], name[32];
        char *pod;
        const char *node;
        snprintf(uid, sizeof(uid), "c-%d", k);
        snprintf(name, sizeof(name), "big-0-%d", k);
        pod = pod_json(name, uid, "big", k, 4, 16, 1, 4);
        node = schedule(s.port, pod, uid, names, n, NULL);
        free(pod);
        cr_assert_not_null(node, "pod %d found no node", k);
        if (clique < 0)
            clique = (atoi(strchr(node, 'n') + 1) - 1) / 4;
        cr_expect_eq((atoi(strchr(node, 'n') + 1) - 1) / 4, clique,
                     "pod %d on %s left the first member's clique", k, node);
    }
    stop(&s);
}

Test(serve, tp16_on_8gpu_nodes_is_unresolvable_with_the_reason)
{
    const char *args[] = {"--cluster", "racks=2,nodes-per-rack=2,gpus-per-node=8", NULL};
    char names[4][32];
    size_t n = node_names(2, 2, names);
    struct server s;
    json_t *f = NULL;
    char *pod = pod_json("tp16-0", "t-0", "tp16", 0, 2, 16, 1, 8);
    json_t *un;
    const char *why;

    start(&s, args);
    cr_expect_null(schedule(s.port, pod, "t-0", names, n, &f));
    un = json_object_get(f, "FailedAndUnresolvableNodes");
    cr_expect_eq(json_object_size(un), 4, "every node must be unresolvable");
    why = json_string_value(json_object_get(un, names[0]));
    cr_assert_not_null(why);
    cr_expect(strstr(why, "16") != NULL && strstr(why, "8") != NULL,
              "the reason must explain the sizes: %s", why);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedNodes")), 0);
    json_decref(f);
    free(pod);
    stop(&s);
}

Test(serve, reserved_rack_refused_to_another_group_until_expiry)
{
    /* topox books reservations in whole seconds (time(NULL)): one made at second t with TTL T
     * goes at the first filter or bind in second t + T, so it holds between T - 1 and T seconds.
     * With 1s it could be gone by the very next call (1 run in ~40 under load, every third when
     * the bind came at .999 s); 2s holds at least one second, ample for the filter right after. */
    const char *args[] = {"--cluster", "racks=2,nodes-per-rack=2,gpus-per-node=8",
                          "--reservation-ttl", "2s", NULL};
    char names[4][32];
    size_t n = node_names(2, 2, names);
    struct server s;
    char *lead = pod_json("a-0", "a-0", "grpA", 0, 2, 8, 2, 8);
    char *other = pod_json("b-0", "b-0", "grpB", 0, 1, 8, 1, 8);
    const char *node;
    char mate[32];
    int rack;
    json_t *f = NULL;
    const char *why;
    char *req;
    long status;
    struct timespec ts = {2, 200 * 1000 * 1000};

    start(&s, args);
    node = schedule(s.port, lead, "a-0", names, n, NULL);
    cr_assert_not_null(node);
    rack = rack_of(node);
    /* the other node of that rack is held for grpA's worker */
    snprintf(mate, sizeof(mate), "r%02d-n%02d", rack, strcmp(node + 4, "n01") == 0 ? 2 : 1);
    {
        char one[1][32];
        snprintf(one[0], 32, "%s", mate);
        req = args_json(other, one, 1);
    }
    f = call_json(s.port, "/filter", req, &status);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 0,
                 "grpB must not take %s, reserved for grpA", mate);
    why = json_string_value(json_object_get(json_object_get(f, "FailedNodes"), mate));
    if (!why)
        why = json_string_value(
            json_object_get(json_object_get(f, "FailedAndUnresolvableNodes"), mate));
    cr_expect_not_null(why, "the refusal needs a reason");
    json_decref(f);
    /* 2.2 s after the filter, so more than 2 s after the bind: the TTL has passed, the
     * reservation is released and the node is free again */
    nanosleep(&ts, NULL);
    /* issue 21, item 9: /debug/state, asked first, no longer shows the expired hold */
    {
        char *dbg = NULL;
        json_t *d, *g;
        size_t i;

        cr_assert_eq(http_call("GET", s.port, "/debug/state", NULL, &dbg), 200);
        d = json_loads(dbg, 0, NULL);
        cr_assert_not_null(d, "%s", dbg);
        json_array_foreach(json_object_get(d, "groups"), i, g)
            cr_expect_eq(json_integer_value(json_object_get(g, "accel_reserved")), 0,
                         "an expired reservation in /debug/state: %s", dbg);
        json_decref(d);
        free(dbg);
    }
    f = call_json(s.port, "/filter", req, &status);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 1,
                 "after expiry %s must be free", mate);
    json_decref(f);
    free(req);
    free(lead);
    free(other);
    stop(&s);
}

/* NCC=false: full Node objects in, surviving objects out; the server had no cluster before, and
 * has none after: the objects are used for that request only. */
Test(serve, full_node_objects_serve_one_request_and_come_back)
{
    const char *args[] = {NULL};
    struct server s;
    json_t *items = json_array(), *f, *got;
    char *pod = pod_json("solo-0", "s-0", "solo", 0, 1, 8, 1, 8);
    char *full, *resp = NULL;
    long status;

    start(&s, args);
    status = http_call("GET", s.port, "/readyz", NULL, NULL);
    cr_expect_eq(status, 503, "not ready without a cluster");
    for (int i = 1; i <= 4; i++) {
        char name[32], rack[8];
        snprintf(name, sizeof(name), "full-n%d", i);
        snprintf(rack, sizeof(rack), "r%d", (i + 1) / 2);
        json_array_append_new(
            items, json_pack("{s:{s:s,s:{s:s,s:s,s:s}},s:{},s:{s:{s:s,s:s},s:[{s:s,s:s}]}}",
                             "metadata", "name", name, "labels", "topox.io/rack", rack,
                             "topox.io/interconnect", "nvswitch", "kubernetes.io/hostname", name,
                             "spec", "status", "allocatable", "nvidia.com/gpu", "8", "cpu", "96",
                             "conditions", "type", "Ready", "status", "True"));
    }
    full = full_args(pod, items);
    f = call_json(s.port, "/filter", full, &status);
    cr_expect_eq(status, 200);
    cr_expect_str_eq(json_string_value(json_object_get(f, "Error")), "");
    cr_expect(json_is_null(json_object_get(f, "NodeNames")));
    got = json_object_get(json_object_get(f, "Nodes"), "items");
    cr_expect_eq(json_array_size(got), 4, "%s", json_dumps(f, 0));
    cr_expect(json_equal(json_array_get(got, 0), json_array_get(items, 0)),
              "surviving Node objects must come back unchanged");
    json_decref(f);
    /* issue 12 item 4: the objects served this request only; what topox knows is unchanged */
    status = http_call("GET", s.port, "/readyz", NULL, NULL);
    cr_expect_eq(status, 503, "Node objects in a request never load a cluster");
    status = http_call("GET", s.port, "/debug/state", NULL, &resp);
    cr_expect_eq(status, 503, "%s", resp ? resp : "");
    free(resp);
    json_decref(items);
    free(full);
    free(pod);
    stop(&s);
}

/* issue 12 item 4: a /filter with full Nodes never rewrites the cached cluster: a made-up node in
 * a new rack is not in /debug/state afterwards, and the known nodes keep the cache's labels. */
Test(serve, full_nodes_in_a_request_never_overwrite_the_cache)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL};
    struct server s;
    json_t *items = json_array(), *f;
    char *pod = pod_json("solo-0", "s-0", "solo", 0, 1, 8, 1, 8);
    char *full, *resp = NULL;
    const char *names[] = {"r01-n01", "evil-n1"};
    long status;

    start(&s, args);
    for (int i = 0; i < 2; i++)
        json_array_append_new(items, json_pack("{s:{s:s,s:{s:s,s:s}},s:{},s:{s:{s:s}}}", "metadata",
                                               "name", names[i], "labels", "topox.io/rack", "r99",
                                               "topox.io/interconnect", "nvswitch", "spec",
                                               "status", "allocatable", "nvidia.com/gpu", "64"));
    full = full_args(pod, items);
    f = call_json(s.port, "/filter", full, &status);
    cr_expect_eq(status, 200);
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(f, "FailedNodes"), "evil-n1")),
        "unknown node (not in topox's cluster view)");
    json_decref(f);
    status = http_call("GET", s.port, "/debug/state", NULL, &resp);
    cr_expect_eq(status, 200);
    cr_expect(resp && strstr(resp, "evil-n1") == NULL, "the fake node stayed: %s", resp);
    cr_expect(resp && strstr(resp, "r99") == NULL, "the fake rack stayed: %s", resp);
    cr_expect(resp && strstr(resp, "\"nodes\":2") != NULL, "%s", resp);
    free(resp);
    json_decref(items);
    free(full);
    free(pod);
    stop(&s);
}

/* issue 12, items 4, 6 and 3: /bind books only pods this process filtered; a node name that is
 * not one is 400, too many candidates 413. */
Test(serve, bind_needs_a_filter_and_bad_names_are_refused)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=2,gpus-per-node=8",
                          "--max-candidates", "2", NULL};
    struct server s;
    char names[3][32] = {"r01-n01", "r01-n02", "r01-n03"};
    char *pod = pod_json("web", "w-1", NULL, 0, 0, 0, 0, 0);
    char *req;
    const char *err;
    long status;
    json_t *j;

    start(&s, args);
    j = call_json(s.port, "/bind",
                  "{\"PodName\":\"ghost\",\"PodNamespace\":\"llm\",\"PodUID\":\"g-1\","
                  "\"Node\":\"r01-n01\"}",
                  &status);
    err = json_string_value(json_object_get(j, "Error"));
    cr_expect(err && strstr(err, "was not filtered by this topox"), "%s", err ? err : "(none)");
    json_decref(j);
    /* filtered first (a pod without intent), the same bind is accepted */
    req = args_json(pod, names, 2);
    cr_expect_eq(http_call("POST", s.port, "/filter", req, NULL), 200);
    free(req);
    j = call_json(s.port, "/bind",
                  "{\"PodName\":\"web\",\"PodNamespace\":\"llm\",\"PodUID\":\"w-1\","
                  "\"Node\":\"r01-n01\"}",
                  &status);
    cr_expect_str_eq(json_string_value(json_object_get(j, "Error")), "");
    json_decref(j);
    /* each answer counted by what it said (record mode: nothing reaches an API server) */
    {
        char *m = NULL;

        cr_expect_eq(http_call("GET", s.port, "/metrics", NULL, &m), 200);
        cr_expect(m && strstr(m, "topox_binds_total{result=\"refused\"} 1\n"), "%s", m);
        cr_expect(m && strstr(m, "topox_binds_total{result=\"bound\"} 1\n"), "%s", m);
        cr_expect(m && strstr(m, "topox_binds_total{result=\"failed\"} 0\n"), "%s", m);
        free(m);
    }
    /* the refused bind is logged at warn (the default level keeps it), the bound one at info */
    cr_expect(server_wait_log(&s,
                              "\"level\":\"warn\",\"msg\":\"decision\",\"verb\":\"bind\","
                              "\"pod\":\"ghost\"",
                              5000),
              "%s", s.log ? s.log : "");
    cr_expect(server_wait_log(&s,
                              "\"level\":\"info\",\"msg\":\"decision\",\"verb\":\"bind\","
                              "\"pod\":\"web\"",
                              5000),
              "%s", s.log ? s.log : "");
    /* three candidates over a cap of two: 413 */
    req = args_json(pod, names, 3);
    cr_expect_eq(http_call("POST", s.port, "/filter", req, NULL), 413);
    free(req);
    /* a NUL inside a name: 400 with a message, never truncated to r01-n01 */
    req = malloc(strlen(pod) + 64);
    sprintf(req, "{\"Pod\":%s,\"NodeNames\":[\"r01-n01\\u0000evil\"]}", pod);
    j = call_json(s.port, "/filter", req, &status);
    cr_expect_eq(status, 400);
    err = json_string_value(json_object_get(j, "Error"));
    cr_expect(err && strstr(err, "NUL or control byte"), "%s", err ? err : "(none)");
    json_decref(j);
    free(req);
    free(pod);
    stop(&s);
}

Test(serve, pods_without_intent_pass_every_node_even_unknown_ones)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=2", NULL};
    struct server s;
    char names[3][32] = {"r01-n01", "r01-n02", "elsewhere"};
    char *pod = pod_json("web", "w-1", NULL, 0, 0, 0, 0, 0);
    char *req = args_json(pod, names, 3);
    long status;
    json_t *f;

    start(&s, args);
    f = call_json(s.port, "/filter", req, &status);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 3);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedNodes")), 0);
    json_decref(f);
    free(req);
    free(pod);
    /* with intent, an unknown name is listed in FailedNodes, not dropped */
    pod = pod_json("solo", "x-1", "solo", 0, 1, 8, 1, 8);
    req = args_json(pod, names, 3);
    f = call_json(s.port, "/filter", req, &status);
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(f, "FailedNodes"), "elsewhere")),
        "unknown node (not in topox's cluster view)");
    json_decref(f);
    free(req);
    free(pod);
    stop(&s);
}

Test(serve, bound_pods_without_intent_take_their_gpus)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL};
    struct server s;
    char names[2][32] = {"r01-n01", "r01-n02"};
    char *plain = pod_json("web", "w-1", NULL, 0, 0, 0, 0, 8);
    char *solo = pod_json("solo", "x-1", "solo", 0, 1, 8, 1, 8);
    const char *where;
    char first[32];
    json_t *f = NULL;
    json_t *left;

    start(&s, args);
    /* An 8-GPU pod without topology intent passes every node; once bound, its GPUs are taken,
     * so a TP 8 pod may only go to the other node (standalone mode has no watch to say so). */
    where = schedule(s.port, plain, "w-1", names, 2, NULL);
    cr_assert_not_null(where);
    snprintf(first, sizeof(first), "%s", where);
    where = schedule(s.port, solo, "x-1", names, 2, &f);
    left = json_object_get(f, "NodeNames");
    cr_expect_eq(json_array_size(left), 1, "the node the plain pod filled is not offered");
    cr_expect_str_neq(json_string_value(json_array_get(left, 0)), first);
    cr_expect_not_null(json_object_get(json_object_get(f, "FailedNodes"), first),
                       "the full node is in FailedNodes (eviction could free it)");
    cr_expect(where && strcmp(where, first) != 0);
    json_decref(f);
    free(plain);
    free(solo);
    stop(&s);
}

struct binder {
    int port;
    int id;
    char node[32];
    int ok;
};

static void *bind_thread(void *arg)
{
    struct binder *b = arg;
    char uid[32], name[32], group[32], body[512];
    char one[1][32];
    char *pod, *req, *resp = NULL;
    long status;

    snprintf(uid, sizeof(uid), "race-%d", b->id);
    snprintf(name, sizeof(name), "race-%d", b->id);
    snprintf(group, sizeof(group), "race-group-%d", b->id);
    snprintf(one[0], 32, "%s", b->node);
    pod = pod_json(name, uid, group, 0, 1, 8, 1, 8);
    req = args_json(pod, one, 1);
    http_call("POST", b->port, "/filter", req, NULL);
    snprintf(body, sizeof(body),
             "{\"PodName\":\"%s\",\"PodNamespace\":\"llm\",\"PodUID\":\"%s\",\"Node\":\"%s\"}",
             name, uid, b->node);
    status = http_call("POST", b->port, "/bind", body, &resp);
    b->ok = status == 200 && resp && strstr(resp, "\"Error\":\"\"") != NULL;
    free(resp);
    free(req);
    free(pod);
    return NULL;
}

Test(serve, concurrent_binds_and_filters_never_double_book)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL};
    struct server s;
    struct binder b[12];
    pthread_t t[12];
    int wins[2] = {0, 0};

    start(&s, args);
    for (int i = 0; i < 12; i++) {
        b[i].port = s.port;
        b[i].id = i;
        snprintf(b[i].node, sizeof(b[i].node), "r01-n%02d", 1 + i % 2);
        pthread_create(&t[i], NULL, bind_thread, &b[i]);
    }
    for (int i = 0; i < 12; i++) {
        pthread_join(t[i], NULL);
        wins[i % 2] += b[i].ok;
    }
    cr_expect_eq(wins[0], 1, "r01-n01 booked %d times", wins[0]);
    cr_expect_eq(wins[1], 1, "r01-n02 booked %d times", wins[1]);
    stop(&s);
}

/* Requests on fresh connections, one after the other, until told to stop. */
struct pounder {
    int port;
    atomic_bool stop;
};

static void *pound(void *arg)
{
    struct pounder *p = arg;

    while (!atomic_load(&p->stop))
        http_call("GET", p->port, "/healthz", NULL, NULL);
    return NULL;
}

/* SIGTERM while connections come and go: the drain stops accepting (MHD_quiesce_daemon) while the
 * server threads handle those connections' events, which with MHD's epoll loop raced its own
 * removal of the listen socket and aborted the process ("Failed to remove listen FD from epoll
 * set", exit 134), 1 stop in a few hundred under load in it_serve_api. Twenty stops under
 * traffic, each of which must exit 0. */
Test(serve, sigterm_during_traffic_exits_0, .timeout = 240)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=1", "--threads", "4", NULL};

    for (int round = 0; round < 20; round++) {
        struct server s;
        struct pounder p[2];
        pthread_t t[2];
        char why[6000];
        int status;

        start(&s, args);
        for (int i = 0; i < 2; i++) {
            p[i].port = s.port;
            atomic_init(&p[i].stop, false);
            pthread_create(&t[i], NULL, pound, &p[i]);
        }
        for (int i = 0; i < 20; i++)
            http_call("GET", s.port, "/healthz", NULL, NULL);
        status = server_stop_checked(&s, why, sizeof(why));
        for (int i = 0; i < 2; i++) {
            atomic_store(&p[i].stop, true);
            pthread_join(t[i], NULL);
        }
        cr_assert_eq(status, 0, "round %d: SIGTERM under traffic must exit 0, not %d:\n%s", round,
                     status, why);
    }
}

Test(serve, endpoints_and_error_paths)
{
    const char *args[] = {
        "--cluster", "racks=1,nodes-per-rack=2", "--max-body", "4096", "--reservation-budget-ns",
        "16",        "--reservation-cap",        "24",         NULL};
    struct server s;
    char *resp = NULL;
    char big[8192];
    long st;
    json_t *j;

    start(&s, args);
    cr_expect_eq(http_call("GET", s.port, "/healthz", NULL, NULL), 200);
    cr_expect_eq(http_call("GET", s.port, "/readyz", NULL, NULL), 200);
    cr_expect_eq(http_call("GET", s.port, "/version", NULL, NULL), 200);
    cr_expect_eq(http_call("GET", s.port, "/nope", NULL, NULL), 404);
    cr_expect_eq(http_call("GET", s.port, "/filter", NULL, NULL), 405);
    cr_expect_eq(http_call("POST", s.port, "/metrics", "{}", NULL), 405);
    /* malformed JSON: filter and bind answer 200 with Error, prioritize and preempt non-200 */
    j = call_json(s.port, "/filter", "{\"Pod\":", &st);
    cr_expect_eq(st, 200);
    cr_expect_str_not_empty(json_string_value(json_object_get(j, "Error")));
    json_decref(j);
    j = call_json(s.port, "/bind", "not json", &st);
    cr_expect_eq(st, 200);
    cr_expect_str_not_empty(json_string_value(json_object_get(j, "Error")));
    json_decref(j);
    cr_expect_neq(http_call("POST", s.port, "/prioritize", "[1,2", NULL), 200);
    cr_expect_neq(http_call("POST", s.port, "/preempt", "", NULL), 200);
    memset(big, ' ', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    big[0] = '{';
    big[sizeof(big) - 2] = '}';
    cr_expect_eq(http_call("POST", s.port, "/filter", big, NULL), 413);
    /* bind of an unknown node is an Error, never a crash */
    j = call_json(s.port, "/bind",
                  "{\"PodName\":\"p\",\"PodNamespace\":\"n\",\"PodUID\":\"u\",\"Node\":\"zz\"}",
                  &st);
    cr_expect_str_not_empty(json_string_value(json_object_get(j, "Error")));
    json_decref(j);
    st = http_call("GET", s.port, "/metrics", NULL, &resp);
    cr_expect_eq(st, 200);
    cr_expect(strstr(resp, "# TYPE topox_request_duration_seconds histogram") != NULL);
    cr_expect(strstr(resp, "topox_requests_total{verb=\"filter\",code=\"2xx\"} 1") != NULL, "%s",
              resp);
    cr_expect(strstr(resp, "topox_rack_largest_tp_placeable{rack=") != NULL, "%s", resp);
    cr_expect(strstr(resp, "topox_reservation_budget_refusals_total 0\n") != NULL, "%s", resp);
    free(resp);
    stop(&s);
}

/* A chunked upload (no Content-Length) of `total` bytes, or endless with total 0. */
struct stream {
    size_t total;
    size_t sent;
};

static size_t stream_read(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct stream *st = userdata;
    size_t n = size * nitems;

    if (st->total && n > st->total - st->sent)
        n = st->total - st->sent;
    memset(buf, ' ', n);
    if (st->sent == 0 && n)
        buf[0] = '{';
    st->sent += n;
    return n;
}

static size_t discard(char *data, size_t size, size_t nmemb, void *userdata)
{
    (void)data;
    (void)userdata;
    return size * nmemb;
}

/* POST it to /filter; returns the HTTP status (0 when the connection was cut off). */
static long post_chunked(int port, struct stream *st)
{
    struct curl_slist *hdr = curl_slist_append(NULL, "Transfer-Encoding: chunked");
    CURL *h = curl_easy_init();
    char url[128];
    long status = 0;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/filter", port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, stream_read);
    curl_easy_setopt(h, CURLOPT_READDATA, st);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return status;
}

Test(serve, chunked_bodies_over_the_cap_get_413_and_endless_ones_are_cut_off, .timeout = 120)
{
    const char *args[] = {"--cluster", "racks=1,nodes-per-rack=2", "--max-body", "65536", NULL};
    struct server s;
    struct stream over = {100000, 0};
    struct stream endless = {0, 0};

    start(&s, args);
    cr_expect_eq(post_chunked(s.port, &over), 413, "a chunked body a little over the cap");
    cr_expect_eq(post_chunked(s.port, &endless), 0, "an endless body gets no answer");
    cr_expect_lt(endless.sent, (size_t)64 * 1024 * 1024,
                 "the server stops reading soon after twice the cap (sent %zu bytes)",
                 endless.sent);
    cr_expect_eq(http_call("GET", s.port, "/healthz", NULL, NULL), 200, "and serves on");
    stop(&s);
}

Test(serve, print_config_reflects_file_and_flags)
{
    char path[] = "/tmp/topox-serve-cfg-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    const char *args[] = {"serve",  "--config",       path, "--bind-mode",
                          "record", "--print-config", NULL};
    struct run_result r;

    fputs("reservationTTL: 3m\nlisten: 127.0.0.1:9999\n", f);
    fclose(f);
    cr_assert_eq(run_topox(args, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "reservationTTL: 180s") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "listen: \"127.0.0.1:9999\"") != NULL, "%s", r.out);
    run_result_release(&r);
    unlink(path);
}

/* pod_json() with the engine's command line as the container's args. */
static char *pod_with_args(const char *name, const char *uid, const char *group, int index,
                           int size, int gpus, const char *const *argv)
{
    char *base = pod_json(name, uid, group, index, size, 0, 0, gpus);
    json_t *pod = json_loads(base, 0, NULL);
    json_t *args = json_array();
    char *s;

    for (size_t i = 0; argv[i]; i++)
        json_array_append_new(args, json_string(argv[i]));
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0), "args",
        args);
    s = json_dumps(pod, JSON_COMPACT);
    json_decref(pod);
    free(base);
    return s;
}

static json_t *filter_of(int port, const char *pod, char names[][32], size_t n)
{
    char *req = args_json(pod, names, n);
    long st;
    json_t *f = call_json(port, "/filter", req, &st);

    cr_expect_eq(st, 200);
    free(req);
    return f;
}

/* The certainty rule: a layout read from flags that are unknown or do not add up is never
 * unresolvable; it is placed as preferred, counted once per group, and says so. */
Test(serve, uncertain_layout_is_never_unresolvable)
{
    const char *args[] = {"--cluster", "racks=2,nodes-per-rack=2,gpus-per-node=8", NULL};
    static const char *const unknown[] = {"vllm", "serve", "m", "-tp", "$(TP)", NULL};
    static const char *const odd[] = {"vllm", "serve", "m", "-tp", "8", NULL}; /* 8 of 16 */
    char names[4][32];
    size_t n = node_names(2, 2, names);
    struct server s;
    char *p1 = pod_with_args("u-0", "u-0", "unk", 0, 2, 8, unknown);
    char *p2 = pod_with_args("o-0", "o-0", "odd", 0, 2, 8, odd);
    char *p2b = pod_with_args("o-0-1", "o-1", "odd", 1, 2, 8, odd);
    char *resp = NULL;
    json_t *f;

    start(&s, args);
    f = filter_of(s.port, p1, names, n);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedAndUnresolvableNodes")), 0);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 4);
    json_decref(f);
    f = filter_of(s.port, p2, names, n);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedAndUnresolvableNodes")), 0);
    json_decref(f);
    f = filter_of(s.port, p2b, names, n);
    json_decref(f);
    cr_expect_eq(http_call("GET", s.port, "/metrics", NULL, &resp), 200);
    cr_expect(strstr(resp, "topox_uncertain_layouts_total{action=\"prefer\"} 2") != NULL,
              "once per group: %s", resp);
    free(resp);
    stop(&s);
    free(p1);
    free(p2);
    free(p2b);
}

/* ... but dense TP16 over 8-GPU nodes read from flags is certain, and still rejected with the
 * fix; with `uncertain: reject` the inconsistent layout is judged as written. */
Test(serve, certain_dense_tp16_from_flags_and_uncertain_reject)
{
    const char *args[] = {"--cluster", "racks=2,nodes-per-rack=2,gpus-per-node=8", "--uncertain",
                          "reject", NULL};
    static const char *const tp16[] = {"vllm", "serve", "m", "--tensor-parallel-size", "16", NULL};
    static const char *const odd[] = {"vllm", "serve", "m", "-tp", "8", NULL};
    char names[4][32];
    size_t n = node_names(2, 2, names);
    struct server s;
    char *p1 = pod_with_args("d-0", "d-0", "dense", 0, 2, 8, tp16);
    char *p2 = pod_with_args("o-0", "o-0", "odd", 0, 2, 8, odd);
    json_t *f, *un;
    const char *why;

    start(&s, args);
    f = filter_of(s.port, p1, names, n);
    un = json_object_get(f, "FailedAndUnresolvableNodes");
    cr_expect_eq(json_object_size(un), 4);
    why = json_string_value(json_object_get(un, names[0]));
    cr_assert_not_null(why);
    cr_expect(strstr(why, "Try tensor-parallel-size 8 with pipeline-parallel-size 2") != NULL, "%s",
              why);
    json_decref(f);
    f = filter_of(s.port, p2, names, n);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedAndUnresolvableNodes")), 4);
    json_decref(f);
    stop(&s);
    free(p1);
    free(p2);
}

/* RDMA NICs: the nodes of r01 say topox.io/rdma-nics 0. A certain vLLM tp 8 x dp 2 with expert
 * parallelism (EP 16) over two 8-GPU pods sends its all-to-all between nodes: r01 is
 * FailedAndUnresolvable with the reason, r02 fits. A certain tp 8 x pp 2 group (pipeline sends
 * only, which NCCL carries over TCP) and the EP group read from flags it cannot resolve are never
 * unresolvable. --lean-filter false: every node is listed, as the answer was before it. */
Test(serve, group_crossing_nodes_skips_nodes_without_rdma_nics_only_when_certain)
{
    const char *args[] = {"--cluster",
                          "racks=2,nodes-per-rack=2,gpus-per-node=8,rdma-nics=8,no-rdma-racks=1",
                          "--lean-filter", "false", NULL};
    static const char *const ep[] = {
        "vllm", "serve", "m", "-tp", "8", "-dp", "2", "--enable-expert-parallel", NULL};
    static const char *const unknown[] = {
        "vllm", "serve", "m", "-tp", "8", "-dp", "$(DP)", "--enable-expert-parallel", NULL};
    char names[4][32];
    size_t n = node_names(2, 2, names);
    struct server s;
    char *certain = pod_with_args("ep-0", "ep-0", "ep", 0, 2, 8, ep);
    char *pipeline = pod_json("pp-0", "pp-0", "pp", 0, 2, 8, 2, 8);
    char *unsure = pod_with_args("u-0", "u-0", "unsure", 0, 2, 8, unknown);
    json_t *f, *un;
    const char *why;

    start(&s, args);
    f = filter_of(s.port, certain, names, n);
    un = json_object_get(f, "FailedAndUnresolvableNodes");
    cr_expect_eq(json_object_size(un), 2, "the two nodes of r01");
    why = json_string_value(json_object_get(un, "r01-n01"));
    cr_assert_not_null(why);
    cr_expect(strstr(why, "topox.io/rdma-nics 0") != NULL, "%s", why);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 2);
    json_decref(f);
    f = filter_of(s.port, pipeline, names, n);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedAndUnresolvableNodes")), 0);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 4);
    json_decref(f);
    f = filter_of(s.port, unsure, names, n);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedAndUnresolvableNodes")), 0);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 4);
    json_decref(f);
    stop(&s);
    free(certain);
    free(pipeline);
    free(unsure);
}

/* Issue 20, item 2: a filter that passes any node leaves the nodes that can never take the pod
 * out of its answer (kube-scheduler reads a left-out node as UnschedulableAndUnresolvable, as
 * FailedAndUnresolvableNodes says, and reads no reason while a node passes). FailedNodes (room
 * that eviction could make; here a name topox does not know) stay listed, and a filter that
 * passes nothing still says why for every node. */
Test(serve, a_filter_that_passes_a_node_leaves_the_unresolvable_ones_out)
{
    const char *args[] = {
        "--cluster", "racks=2,nodes-per-rack=2,gpus-per-node=8,rdma-nics=8,no-rdma-racks=1", NULL};
    static const char *const ep[] = {
        "vllm", "serve", "m", "-tp", "8", "-dp", "2", "--enable-expert-parallel", NULL};
    char names[5][32];
    size_t n = node_names(2, 2, names);
    struct server s;
    char *certain = pod_with_args("ep-0", "ep-0", "ep", 0, 2, 8, ep);
    json_t *f, *pass, *un;
    const char *why;

    snprintf(names[n++], sizeof(names[0]), "ghost-n01");
    start(&s, args);
    f = filter_of(s.port, certain, names, n);
    pass = json_object_get(f, "NodeNames");
    cr_expect_eq(json_array_size(pass), 2, "r02 fits");
    for (size_t i = 0; i < json_array_size(pass); i++)
        cr_expect(strncmp(json_string_value(json_array_get(pass, i)), "r02-", 4) == 0);
    cr_expect_eq(json_object_size(json_object_get(f, "FailedAndUnresolvableNodes")), 0,
                 "r01 is left out, not listed");
    cr_expect_eq(json_object_size(json_object_get(f, "FailedNodes")), 1);
    cr_expect_not_null(json_object_get(json_object_get(f, "FailedNodes"), "ghost-n01"),
                       "an unknown node stays in FailedNodes");
    json_decref(f);
    /* r01 alone: nothing passes, so both nodes are listed with the reason */
    f = filter_of(s.port, certain, names, 2);
    cr_expect_eq(json_array_size(json_object_get(f, "NodeNames")), 0);
    un = json_object_get(f, "FailedAndUnresolvableNodes");
    cr_expect_eq(json_object_size(un), 2, "the two nodes of r01");
    why = json_string_value(json_object_get(un, "r01-n02"));
    cr_expect(why && strstr(why, "topox.io/rdma-nics 0") != NULL, "%s", why ? why : "(none)");
    json_decref(f);
    stop(&s);
    free(certain);
}

/* A pod of group `group` (topox.io/group annotations, size members of tp 8 x pp size, 8 GPUs)
 * without a pod index. */
static char *pod_unindexed(const char *name, const char *group, int size)
{
    char n[16];
    json_t *pod;
    char *s;

    snprintf(n, sizeof(n), "%d", size);
    pod =
        json_pack("{s:{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s}},s:{s:s,s:[{s:s,s:{s:{s:s},s:{s:s}}}]}}",
                  "metadata", "name", name, "namespace", "llm", "uid", name, "annotations",
                  "topox.io/group", group, "topox.io/group-size", n,
                  "topox.io/tensor-parallel-size", "8", "topox.io/pipeline-parallel-size", n,
                  "spec", "schedulerName", "topology-aware", "containers", "name", "vllm",
                  "resources", "requests", "nvidia.com/gpu", "8", "limits", "nvidia.com/gpu", "8");
    s = json_dumps(pod, JSON_COMPACT);
    json_decref(pod);
    return s;
}

/* How many nodes a filter of pod over names passes; the first into one (when one is given). */
static size_t passes_of(int port, const char *pod, char names[][32], size_t n, char one[32])
{
    json_t *f = filter_of(port, pod, names, n);
    json_t *pass = json_object_get(f, "NodeNames");
    size_t k = json_array_size(pass);

    if (one)
        snprintf(one, 32, "%s", k ? json_string_value(json_array_get(pass, 0)) : "");
    json_decref(f);
    return k;
}

/* Issue 20, item 2: once topox holds room for a group, a later member's filter passes the one
 * node held for it (kube-scheduler then skips scoring). Members without a pod index (an indexed
 * one is passed its own slot's node anyway, policy/judge.c) are each passed one node in the
 * held rack, bind there, and fill the rack, one to a node. With --one-held-node false each is
 * passed the held rack's free nodes. */
Test(serve, a_held_member_is_passed_its_one_held_node)
{
    const char *on[] = {"--cluster", "racks=2,nodes-per-rack=4,gpus-per-node=8", NULL};
    const char *off[] = {"--cluster", "racks=2,nodes-per-rack=4,gpus-per-node=8", "--one-held-node",
                         "false", NULL};
    char names[8][32], uid[8], one[32], used[4][32];
    size_t n = node_names(2, 4, names);
    struct server s;

    for (int mode = 0; mode < 2; mode++) {
        char *pods[4];
        const char *node;

        start(&s, mode ? off : on);
        for (int k = 0; k < 4; k++) {
            snprintf(uid, sizeof(uid), "m-%d", k);
            pods[k] = pod_unindexed(uid, "g", 4);
        }
        node = schedule(s.port, pods[0], "m-0", names, n, NULL);
        cr_assert_not_null(node);
        snprintf(used[0], 32, "%s", node);
        for (int k = 1; k < 4; k++) {
            size_t got = passes_of(s.port, pods[k], names, n, one);

            snprintf(uid, sizeof(uid), "m-%d", k);
            if (mode) {
                cr_expect_eq(got, (size_t)(4 - k), "member %d: the held rack's %d free nodes", k,
                             4 - k);
            } else {
                cr_expect_eq(got, 1, "member %d: its one held node", k);
                cr_expect_eq(rack_of(one), rack_of(used[0]), "%s outside the held rack", one);
            }
            node = schedule(s.port, pods[k], uid, names, n, NULL);
            cr_assert_not_null(node);
            snprintf(used[k], 32, "%s", node);
            if (!mode)
                cr_expect_str_eq(node, one, "member %d binds where it was sent", k);
        }
        for (int k = 0; k < 4; k++) {
            cr_expect_eq(rack_of(used[k]), rack_of(used[0]), "member %d left the rack", k);
            for (int j = 0; j < k; j++)
                cr_expect_str_neq(used[k], used[j], "members %d and %d on one node", j, k);
            free(pods[k]);
        }
        stop(&s);
    }
}

/* A member given one held node that is filtered again more than 2 s later (a later cycle: its
 * last one failed after the filter) is passed the whole held rack; within the same cycle (in-tree
 * TAS filters a gang once per placement) the same one node again. */
Test(serve, an_unindexed_member_is_passed_one_held_node_once_per_cycle)
{
    const char *args[] = {"--cluster", "racks=2,nodes-per-rack=4,gpus-per-node=8", NULL};
    char names[8][32], one[32], again[32];
    size_t n = node_names(2, 4, names);
    struct server s;
    char *lead = pod_unindexed("u-0", "u", 4), *mate = pod_unindexed("u-1", "u", 4);
    const char *node;
    int rack;
    struct timespec ts = {2, 200 * 1000 * 1000};

    start(&s, args);
    node = schedule(s.port, lead, "u-0", names, n, NULL);
    cr_assert_not_null(node);
    rack = rack_of(node);
    cr_expect_eq(passes_of(s.port, mate, names, n, one), 1);
    cr_expect_eq(rack_of(one), rack);
    /* the same cycle (in-tree TAS filters a gang once per placement): one node again */
    cr_expect_eq(passes_of(s.port, mate, names, n, again), 1);
    cr_expect_str_eq(again, one);
    nanosleep(&ts, NULL);
    cr_expect_eq(passes_of(s.port, mate, names, n, NULL), 3, "a later cycle: the held rack");
    stop(&s);
    free(lead);
    free(mate);
}

/* The port of the admin listener, from its "admin listening" log line; 0 when it never came. */
static int admin_port(struct server *s)
{
    const char *line, *port;

    if (!server_wait_log(s, "\"msg\":\"admin listening\"", 10000))
        return 0;
    line = strstr(s->log, "\"msg\":\"admin listening\"");
    port = strstr(line, "\"port\":");
    return port ? (int)strtol(port + 7, NULL, 10) : 0;
}

/* --admin-listen moves /metrics and /debug/state to a second listener (issue 12, item 4): the
 * main one answers 404 for them, the admin one serves nothing that changes state, and both keep
 * the probes. One setting: flag, file, --print-config and --help all know it. */
Test(serve, admin_listener_takes_metrics_and_debug_state_off_the_main_one)
{
    const char *args[] = {"--cluster", "example", "--admin-listen", "127.0.0.1:0", NULL};
    const char *plain[] = {"--cluster", "example", NULL};
    const char *help[] = {"serve", "--help", NULL};
    const char *print[] = {"serve", "--admin-listen", "127.0.0.1:9100", "--print-config", NULL};
    const char *bad[] = {"serve", "--cluster", "example", "--admin-listen", "no-port", NULL};
    char names[1][32] = {"r01-n01"};
    char *pod = pod_json("p", "uid-admin", NULL, 0, 0, 8, 1, 8);
    char *req = args_json(pod, names, 1);
    struct run_result r;
    struct server s;
    char *body = NULL;
    int admin;

    start(&s, args);
    admin = admin_port(&s);
    cr_assert_gt(admin, 0, "no admin listening line:\n%s", s.log);
    cr_expect_neq(admin, s.port);
    cr_expect_eq(http_call("GET", admin, "/metrics", NULL, &body), 200);
    cr_expect(body && strstr(body, "topox_pod_table_evictions_total{reason=\"namespace\"} 0") &&
                  strstr(body, "topox_pod_table_size 200000"),
              "%s", body ? body : "");
    free(body);
    cr_expect_eq(http_call("GET", admin, "/debug/state", NULL, NULL), 200);
    cr_expect_eq(http_call("GET", s.port, "/metrics", NULL, NULL), 404);
    cr_expect_eq(http_call("GET", s.port, "/debug/state", NULL, NULL), 404);
    for (int i = 0; i < 2; i++) {
        int port = i ? admin : s.port;
        cr_expect_eq(http_call("GET", port, "/healthz", NULL, NULL), 200, "port %d", port);
        cr_expect_eq(http_call("GET", port, "/readyz", NULL, NULL), 200, "port %d", port);
        cr_expect_eq(http_call("GET", port, "/version", NULL, NULL), 200, "port %d", port);
    }
    /* the extender's verbs stay on the main listener only */
    cr_expect_eq(http_call("POST", s.port, "/filter", req, NULL), 200);
    cr_expect_eq(http_call("POST", admin, "/filter", req, NULL), 404);
    cr_expect_eq(http_call("POST", admin, "/bind", "{}", NULL), 404);
    cr_expect_eq(http_call("POST", admin, "/metrics", "{}", NULL), 405);
    stop(&s);

    /* without it, the main listener serves everything, as before */
    start(&s, plain);
    cr_expect_eq(http_call("GET", s.port, "/metrics", NULL, NULL), 200);
    cr_expect_eq(http_call("GET", s.port, "/debug/state", NULL, NULL), 200);
    stop(&s);

    cr_assert_eq(run_topox(help, NULL, &r), 0);
    cr_expect(strstr(r.out, "--admin-listen") != NULL, "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(run_topox(print, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "adminListen: \"127.0.0.1:9100\"") != NULL, "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(run_topox(bad, NULL, &r), 0);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "--admin-listen") != NULL, "%s", r.err);
    run_result_release(&r);
    free(req);
    free(pod);
}
