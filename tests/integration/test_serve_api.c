/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_serve_api.c - `topox serve` wired to a Kubernetes API server: the real
 * binary against the in-process fake API server (fake_apiserver.c, port 0, reached through a
 * kubeconfig written here). Readiness waits for the first full list; binds create Bindings with
 * the uid and the topox.io annotations; a restarted extender rebuilds its groups from the bound
 * pods; 409/404/403 become clear Errors and give the capacity back; Events: a Normal one per
 * placed pod, one Warning per rejected group; a 30 s outage of the API server (a TCP proxy in
 * this file that cuts every connection) loses nothing and the extender recovers by itself.
 *
 * The fake server does not apply Bindings to its pod list, so the test does what the real API
 * server would: after each successful bind it sets spec.nodeName and merges the Binding's
 * annotations into the pod it serves. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fake_apiserver.h"
#include "harness.h"

#define RACKS 4
#define PER_RACK 2
#define NNODES (RACKS * PER_RACK)

/* ---- the world of one test ---------------------------------------------------------------- */

struct proxy;

struct world {
    struct fake_api *api;
    struct proxy *proxy;
    json_t *pods; /* the PodList the fake serves */
    char kubeconfig[64];
    struct server srv;
    bool running;
};

static struct world *cur;

static void proxy_stop(struct proxy *p);

/* With TPX_TEST_LOG_DIR set, what topox has logged so far and every request the fake API server
 * saw go to DIR/serve_api.TEST.PID.log (appended: a restart adds the next server's), to read
 * when a run under load fails somewhere the assertion alone does not explain. */
static void keep_log(struct world *w)
{
    const char *dir = getenv("TPX_TEST_LOG_DIR");
    char path[512];
    char *reqs;
    FILE *f;

    if (!dir || !*dir || !w->running)
        return;
    snprintf(path, sizeof(path), "%s/serve_api.%s.%ld.log", dir, criterion_current_test->name,
             (long)getpid());
    f = fopen(path, "a");
    if (!f)
        return;
    server_drain(&w->srv);
    reqs = fake_api_log(w->api);
    fprintf(f, "== topox (pid %ld) logged:\n%s== the fake API server was asked:\n%s",
            (long)w->srv.pid, w->srv.log ? w->srv.log : "", reqs);
    free(reqs);
    fclose(f);
}

static void teardown(void)
{
    if (!cur)
        return;
    keep_log(cur);
    if (cur->running)
        server_stop(&cur->srv);
    proxy_stop(cur->proxy);
    fake_api_stop(cur->api);
    json_decref(cur->pods);
    unlink(cur->kubeconfig);
    free(cur);
    cur = NULL;
}

TestSuite(serve_api, .fini = teardown);

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static const char *str_or(const char *s, const char *dflt)
{
    return s ? s : dflt;
}

static char *node_name(int rack, int i)
{
    static char buf[NNODES][16];
    int k = (rack - 1) * PER_RACK + (i - 1);

    snprintf(buf[k], sizeof(buf[k]), "r%d-n%d", rack, i);
    return buf[k];
}

static int rack_of(const char *node)
{
    return atoi(node + 1);
}

static char *nodes_list(void)
{
    json_t *items = json_array();
    json_t *list;
    char *s;

    for (int r = 1; r <= RACKS; r++) {
        for (int i = 1; i <= PER_RACK; i++) {
            char rack[8];

            snprintf(rack, sizeof(rack), "r%d", r);
            json_array_append_new(
                items, json_pack("{s:{s:s,s:s,s:{s:s,s:s}},s:{s:{s:s,s:s},s:[{s:s,s:s}]}}",
                                 "metadata", "name", node_name(r, i), "uid", node_name(r, i),
                                 "labels", "topox.io/rack", rack, "topox.io/domain-size", "8",
                                 "status", "allocatable", "nvidia.com/gpu", "8", "cpu", "96",
                                 "conditions", "type", "Ready", "status", "True"));
        }
    }
    list = json_pack("{s:s,s:s,s:{s:s},s:o}", "kind", "NodeList", "apiVersion", "v1", "metadata",
                     "resourceVersion", "1000", "items", items);
    s = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    return s;
}

static void push_pods(struct world *w)
{
    char *s = json_dumps(w->pods, JSON_COMPACT);

    cr_assert_eq(fake_api_set_list(w->api, "/api/v1/pods", s), 0);
    free(s);
}

static void write_kubeconfig(struct world *w, const char *server)
{
    FILE *f;

    snprintf(w->kubeconfig, sizeof(w->kubeconfig), "/tmp/topox-kc-XXXXXX");
    {
        int fd = mkstemp(w->kubeconfig);
        cr_assert(fd >= 0);
        close(fd);
    }
    f = fopen(w->kubeconfig, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
            "users:\n- name: tester\n  user:\n    token: test-token\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n"
            "    namespace: llm\n",
            server);
    fclose(f);
}

/* A fake API server with 4 racks x 2 nodes x 8 GPUs and no pods; via: a proxy in between. */
static struct world *world_new(bool via_proxy);

/* `topox serve --kubeconfig K --insecure true --bind-mode api ARGS...` (the fake is http) */
/* Waiting groups are held only where a test asks (--hold-waiting-groups true, the later flag
 * wins): elsewhere a group pending for a second before its first filter would be held and
 * nominated by then, and the tests of what a filter or a bind holds would race that second. */
static void start(struct world *w, const char *const *extra)
{
    const char *args[26] = {"--kubeconfig",          w->kubeconfig, "--insecure",        "true",
                            "--bind-mode",           "api",         "--api-backoff-max", "1s",
                            "--hold-waiting-groups", "false"};
    size_t n = 10;
    int rc;

    for (size_t i = 0; extra && extra[i] && n < 25; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    rc = server_start(args, &w->srv);
    w->running = rc == 0;
    cr_assert_eq(rc, 0, "topox serve did not start:\n%s", w->srv.log ? w->srv.log : "");
}

static void stop(struct world *w)
{
    char why[6000];
    int status;

    keep_log(w);
    w->running = false;
    status = server_stop_checked(&w->srv, why, sizeof(why));
    cr_expect_eq(status, 0, "SIGTERM must drain and exit 0, not %d; the log ends:\n%s", status,
                 why);
}

static void kill_hard(struct world *w)
{
    keep_log(w);
    kill(w->srv.pid, SIGKILL);
    w->running = false;
    server_stop(&w->srv);
}

static long get(struct world *w, const char *path, char **resp)
{
    return http_call("GET", w->srv.port, path, NULL, resp);
}

/* Poll /readyz until 200 (up to 30 s); returns the last status. When it never came, what the
 * server logged meanwhile is read into w->srv.log, for the failure message. */
static long wait_ready(struct world *w)
{
    long st = 0;

    for (int i = 0; i < 300 && st != 200; i++) {
        st = get(w, "/readyz", NULL);
        if (st != 200)
            sleep_ms(100);
    }
    if (st != 200)
        server_drain(&w->srv);
    return st;
}

/* ---- pods ----------------------------------------------------------------------------------- */

/* An LWS pod (group NULL: a lone pod with only topox.io annotations) asking for 8 GPUs per pod,
 * added to the fake's pod list (Pending, unbound). Returns it (borrowed from w->pods). */
static json_t *add_pod(struct world *w, const char *ns, const char *name, const char *uid,
                       const char *group, int index, int size, int tp, int pp)
{
    json_t *labels = json_object(), *ann = json_object();
    json_t *pod;
    char buf[32];

    if (group) {
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/name", json_string("vllm"));
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/group-index",
                            json_string(group + strlen(group) - 1));
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/group-key", json_string(group));
        snprintf(buf, sizeof(buf), "%d", index);
        json_object_set_new(labels, "leaderworkerset.sigs.k8s.io/worker-index", json_string(buf));
        snprintf(buf, sizeof(buf), "%d", size);
        json_object_set_new(ann, "leaderworkerset.sigs.k8s.io/size", json_string(buf));
    }
    snprintf(buf, sizeof(buf), "%d", tp);
    json_object_set_new(ann, "topox.io/tensor-parallel-size", json_string(buf));
    snprintf(buf, sizeof(buf), "%d", pp);
    json_object_set_new(ann, "topox.io/pipeline-parallel-size", json_string(buf));
    pod =
        json_pack("{s:{s:s,s:s,s:s,s:s,s:o,s:o},s:{s:s,s:[{s:s,s:{s:{s:s},s:{s:s}}}]},"
                  "s:{s:s}}",
                  "metadata", "name", name, "namespace", ns, "uid", uid, "resourceVersion", "1001",
                  "labels", labels, "annotations", ann, "spec", "schedulerName", "topox-scheduler",
                  "containers", "name", "vllm", "resources", "requests", "nvidia.com/gpu", "8",
                  "limits", "nvidia.com/gpu", "8", "status", "phase", "Pending");
    json_array_append_new(json_object_get(w->pods, "items"), pod);
    push_pods(w);
    return pod;
}

/* What the API server does on a Binding: nodeName, the Binding's annotations, Running. */
static void apply_binding(struct world *w, json_t *pod, const char *node)
{
    const char *name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
    char needle[128];
    char *body;
    json_t *b;

    snprintf(needle, sizeof(needle), "/pods/%s/binding", name);
    body = fake_api_last(w->api, "POST", needle, "body");
    cr_assert_not_null(body, "no Binding was POSTed for %s", name);
    b = json_loads(body, 0, NULL);
    free(body);
    cr_assert_not_null(b);
    json_object_update(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                       json_object_get(json_object_get(b, "metadata"), "annotations"));
    json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(node));
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Running"));
    json_decref(b);
    push_pods(w);
}

static char *all_nodes_args(json_t *pod, const char *const *names, size_t n)
{
    json_t *arr = json_array();
    json_t *req;
    char *s;

    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(names[i]));
    req = json_pack("{s:O,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames", arr);
    s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    return s;
}

static json_t *post(struct world *w, const char *path, const char *body)
{
    char *resp = NULL;
    long st = http_call("POST", w->srv.port, path, body, &resp);
    json_t *j = json_loads(resp ? resp : "", 0, NULL);

    cr_assert_eq(st, 200, "%s answered %ld: %s", path, st, resp ? resp : "");
    cr_assert_not_null(j, "%s answered non-JSON: %s", path, resp ? resp : "");
    free(resp);
    return j;
}

/* filter over every node; the names that pass go into pass[] */
static size_t filter(struct world *w, json_t *pod, char pass[][16], json_t **answer)
{
    const char *names[NNODES];
    char *req;
    json_t *f, *left;
    size_t n;

    for (int r = 1, k = 0; r <= RACKS; r++) {
        for (int i = 1; i <= PER_RACK; i++)
            names[k++] = node_name(r, i);
    }
    req = all_nodes_args(pod, names, NNODES);
    f = post(w, "/filter", req);
    free(req);
    cr_assert_str_eq(json_string_value(json_object_get(f, "Error")), "", "filter Error");
    left = json_object_get(f, "NodeNames");
    n = json_array_size(left);
    for (size_t i = 0; i < n; i++)
        snprintf(pass[i], 16, "%s", json_string_value(json_array_get(left, i)));
    if (answer)
        *answer = f;
    else
        json_decref(f);
    return n;
}

/* The bind call; returns its Error text (malloc'd, "" on success). */
static char *bind_call(struct world *w, json_t *pod, const char *node)
{
    json_t *m = json_object_get(pod, "metadata");
    char body[512];
    json_t *b;
    char *err;

    snprintf(body, sizeof(body),
             "{\"PodName\":\"%s\",\"PodNamespace\":\"%s\",\"PodUID\":\"%s\",\"Node\":\"%s\"}",
             json_string_value(json_object_get(m, "name")),
             json_string_value(json_object_get(m, "namespace")),
             json_string_value(json_object_get(m, "uid")), node);
    b = post(w, "/bind", body);
    err = strdup(str_or(json_string_value(json_object_get(b, "Error")), "(no Error field)"));
    json_decref(b);
    return err;
}

/* What kube-scheduler does for one pod: filter, prioritize the survivors, bind the best. Returns
 * the node (static storage) or NULL when filter left nothing; *bind_err (may be NULL) receives
 * the bind's Error text (malloc'd). On success the fake applies the Binding. */
static const char *schedule(struct world *w, json_t *pod, char **bind_err)
{
    static char chosen[16];
    char pass[NNODES][16];
    size_t n = filter(w, pod, pass, NULL);
    char *err;

    if (n == 0)
        return NULL;
    snprintf(chosen, sizeof(chosen), "%s", pass[0]);
    if (n > 1) {
        const char *names[NNODES];
        char *req;
        json_t *p;
        json_int_t best = -1;

        for (size_t i = 0; i < n; i++)
            names[i] = pass[i];
        req = all_nodes_args(pod, names, n);
        p = post(w, "/prioritize", req);
        free(req);
        for (size_t i = 0; i < json_array_size(p); i++) {
            json_t *h = json_array_get(p, i);
            json_int_t sc = json_integer_value(json_object_get(h, "Score"));

            if (sc > best) {
                best = sc;
                snprintf(chosen, sizeof(chosen), "%s",
                         json_string_value(json_object_get(h, "Host")));
            }
        }
        json_decref(p);
    }
    err = bind_call(w, pod, chosen);
    if (err[0] == '\0')
        apply_binding(w, pod, chosen);
    if (bind_err)
        *bind_err = err;
    else
        free(err);
    return chosen;
}

/* schedule() that must succeed */
static const char *place(struct world *w, json_t *pod)
{
    char *err = NULL;
    const char *node = schedule(w, pod, &err);
    const char *name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));

    cr_assert_not_null(node, "%s found no node", name);
    cr_assert_str_eq(err, "", "bind of %s failed: %s", name, err);
    free(err);
    return node;
}

/* ---- a TCP proxy that can play dead ---------------------------------------------------------- */

#define PROXY_MAX_CONN 512

struct proxy {
    int lfd;
    int port;
    int backend;
    atomic_bool down;
    atomic_bool stopping;
    atomic_int active; /* pumps still forwarding */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_t pumps[PROXY_MAX_CONN];
    size_t npumps;
};

struct pump {
    struct proxy *p;
    int a;
    int b;
};

static void *pump_loop(void *arg)
{
    struct pump *pm = arg;
    char buf[16384];

    while (!atomic_load(&pm->p->down) && !atomic_load(&pm->p->stopping)) {
        struct pollfd fds[2] = {{pm->a, POLLIN, 0}, {pm->b, POLLIN, 0}};
        int rc = poll(fds, 2, 50);
        bool done = false;

        if (rc < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2 && rc > 0 && !done; i++) {
            ssize_t n;

            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(fds[i].fd, buf, sizeof(buf));
            /* MSG_NOSIGNAL: this process does not ignore SIGPIPE, and a write to a side that
             * was reset (read() above may have taken the error) would kill the test */
            if (n <= 0 || send(fds[1 - i].fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
                done = true;
        }
        if (done)
            break;
    }
    close(pm->a);
    close(pm->b);
    atomic_fetch_sub(&pm->p->active, 1);
    free(pm);
    return NULL;
}

static void *accept_loop(void *arg)
{
    struct proxy *p = arg;

    while (!atomic_load(&p->stopping)) {
        struct pollfd pf = {p->lfd, POLLIN, 0};
        struct sockaddr_in sa;
        struct pump *pm;
        int c, b;

        if (poll(&pf, 1, 50) <= 0)
            continue;
        c = accept(p->lfd, NULL, NULL);
        if (c < 0)
            continue;
        if (atomic_load(&p->down)) {
            close(c); /* the API server is gone: the client sees the connection drop */
            continue;
        }
        b = socket(AF_INET, SOCK_STREAM, 0);
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)p->backend);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (b < 0 || connect(b, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            if (b >= 0)
                close(b);
            close(c);
            continue;
        }
        pm = malloc(sizeof(*pm));
        pm->p = p;
        pm->a = c;
        pm->b = b;
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->active, 1);
        if (p->npumps < PROXY_MAX_CONN &&
            pthread_create(&p->pumps[p->npumps], NULL, pump_loop, pm) == 0) {
            p->npumps++;
        } else {
            atomic_fetch_sub(&p->active, 1);
            close(c);
            close(b);
            free(pm);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static struct proxy *proxy_start(int backend)
{
    struct proxy *p = calloc(1, sizeof(*p));
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int one = 1;

    cr_assert_not_null(p);
    p->backend = backend;
    pthread_mutex_init(&p->mu, NULL);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(p->lfd, 64), 0);
    getsockname(p->lfd, (struct sockaddr *)&sa, &len);
    p->port = ntohs(sa.sin_port);
    cr_assert_eq(pthread_create(&p->th, NULL, accept_loop, p), 0);
    return p;
}

/* down: cut every open connection (returns once they are closed) and drop new ones at once. */
static void proxy_set_down(struct proxy *p, bool down)
{
    atomic_store(&p->down, down);
    while (down && atomic_load(&p->active) > 0)
        sleep_ms(10);
}

static void proxy_stop(struct proxy *p)
{
    if (!p)
        return;
    atomic_store(&p->stopping, true);
    pthread_join(p->th, NULL);
    for (size_t i = 0; i < p->npumps; i++)
        pthread_join(p->pumps[i], NULL);
    close(p->lfd);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static struct world *world_new(bool via_proxy)
{
    struct world *w = calloc(1, sizeof(*w));
    char *nodes = nodes_list();
    char url[64];

    cr_assert_not_null(w);
    cur = w;
    w->api = fake_api_start(TPX_FIXTURES "/apiserver");
    cr_assert_not_null(w->api);
    fake_api_set_token(w->api, "test-token");
    cr_assert_eq(fake_api_set_list(w->api, "/api/v1/nodes", nodes), 0);
    free(nodes);
    w->pods = json_pack("{s:s,s:s,s:{s:s},s:[]}", "kind", "PodList", "apiVersion", "v1", "metadata",
                        "resourceVersion", "1000", "items");
    push_pods(w);
    if (via_proxy) {
        w->proxy = proxy_start(fake_api_port(w->api));
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", w->proxy->port);
    } else {
        snprintf(url, sizeof(url), "%s", fake_api_url(w->api));
    }
    write_kubeconfig(w, url);
    return w;
}

/* ---- checks ------------------------------------------------------------------------------- */

static json_t *debug_state(struct world *w)
{
    char *resp = NULL;
    long st = get(w, "/debug/state", &resp);
    json_t *j = json_loads(resp ? resp : "", 0, NULL);

    cr_assert_eq(st, 200, "/debug/state: %ld %s", st, resp ? resp : "");
    cr_assert_not_null(j);
    free(resp);
    return j;
}

static long free_gpus(struct world *w)
{
    json_t *d = debug_state(w);
    json_t *r;
    size_t i;
    long sum = 0;

    json_array_foreach(json_object_get(d, "racks"), i, r)
    {
        sum += (long)json_integer_value(json_object_get(r, "accel_free"));
    }
    json_decref(d);
    return sum;
}

/* members_placed of the group with this key in /debug/state; -1 when it is not there */
static long members_placed(struct world *w, const char *key)
{
    json_t *d = debug_state(w);
    json_t *g;
    size_t i;
    long n = -1;

    json_array_foreach(json_object_get(d, "groups"), i, g)
    {
        if (strcmp(str_or(json_string_value(json_object_get(g, "group")), ""), key) == 0)
            n = (long)json_integer_value(json_object_get(g, "members_placed"));
    }
    json_decref(d);
    return n;
}

/* Events created in ns (distinct names: a retry whose first answer was lost is not a second). */
static unsigned events_in(struct world *w, const char *ns)
{
    return fake_api_events(w->api, ns);
}

/* Wait (up to 30 s) for n Events in ns; returns how many there are. */
static unsigned wait_events(struct world *w, const char *ns, unsigned n)
{
    unsigned got = events_in(w, ns);

    for (int i = 0; i < 1500 && got < n; i++) {
        sleep_ms(20);
        got = events_in(w, ns);
    }
    return got;
}

/* ---- tests ------------------------------------------------------------------------------ */

Test(serve_api, help_lists_the_api_flags)
{
    const char *help[] = {"serve", "--help", NULL};
    const char *bad[] = {"serve", "--cluster-source", "cloud", NULL};
    const char *nokc[] = {
        "serve", "--listen", "127.0.0.1:0", "--kubeconfig", "/nonexistent/kubeconfig", NULL};
    struct run_result r;

    cr_assert_eq(run_topox(help, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "--kubeconfig") && strstr(r.out, "--cluster-source") &&
                  strstr(r.out, "--bind-timeout") && strstr(r.out, "--events"),
              "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(run_topox(bad, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "clusterSource") != NULL, "%s", r.err);
    run_result_release(&r);
    cr_assert_eq(run_topox(nokc, NULL, &r), 0);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "/nonexistent/kubeconfig") != NULL, "%s", r.err);
    run_result_release(&r);
}

/* Issue 12 item 11: serve refuses an http:// API server unless --insecure true; the message
 * names the server and the flag, and nothing is asked of the server. */
Test(serve_api, a_plain_http_server_is_refused_without_insecure)
{
    struct world *w = world_new(false);
    const char *args[] = {"serve", "--listen", "127.0.0.1:0", "--kubeconfig", w->kubeconfig, NULL};
    struct run_result r;

    cr_assert_eq(run_topox(args, NULL, &r), 0);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, fake_api_url(w->api)) != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "--insecure true") != NULL, "%s", r.err);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "GET", "/api/v1/"), 0);
}

Test(serve_api, readyz_503_until_the_first_full_sync, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    char *resp = NULL;
    json_t *d;

    /* every LIST fails until the test lets it through */
    fake_api_fail_next(w->api, 100000, 503);
    start(w, args);
    cr_expect_eq(get(w, "/readyz", &resp), 503, "%s", resp ? resp : "");
    cr_expect(resp && strstr(resp, "not ready"), "%s", resp ? resp : "");
    free(resp);
    cr_expect_eq(get(w, "/healthz", NULL), 200);
    fake_api_fail_next(w->api, 0, 0);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    d = debug_state(w);
    cr_expect_eq(json_integer_value(json_object_get(d, "nodes")), NNODES);
    json_decref(d);
    stop(w);
}

Test(serve_api, groups_bound_through_the_api_survive_a_restart, .timeout = 180)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    const char *listed[] = {"--lean-filter", "false", NULL};
    json_t *pods[4][2];
    char nodes[4][2][16];
    int used[RACKS + 1] = {0};
    char *body;
    json_t *b, *ann;
    char pass[NNODES][16];
    json_t *f = NULL;
    size_t n;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    for (int g = 0; g < 4; g++) {
        for (int k = 0; k < 2; k++) {
            char name[32], uid[32], group[16];

            snprintf(name, sizeof(name), k ? "vllm-%d-%d" : "vllm-%d", g, k);
            snprintf(uid, sizeof(uid), "uid-%d-%d", g, k);
            snprintf(group, sizeof(group), "gkey%d", g);
            pods[g][k] = add_pod(w, "llm", name, uid, group, k, 2, 8, 2);
        }
    }
    /* group 0 whole, group 1 half, then the extender dies */
    snprintf(nodes[0][0], 16, "%s", place(w, pods[0][0]));
    snprintf(nodes[0][1], 16, "%s", place(w, pods[0][1]));
    snprintf(nodes[1][0], 16, "%s", place(w, pods[1][0]));
    cr_expect_eq(rack_of(nodes[0][0]), rack_of(nodes[0][1]));

    /* the Binding: name, uid precondition, target node, the three annotations */
    body = fake_api_last(w->api, "POST", "/namespaces/llm/pods/vllm-0-1/binding", "body");
    cr_assert_not_null(body);
    b = json_loads(body, 0, NULL);
    cr_assert_not_null(b, "%s", body);
    cr_expect_str_eq(json_string_value(json_object_get(b, "kind")), "Binding");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")),
                     "uid-0-1");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(b, "target"), "name")),
                     nodes[0][1]);
    ann = json_object_get(json_object_get(b, "metadata"), "annotations");
    {
        char rack[8];
        snprintf(rack, sizeof(rack), "r%d", rack_of(nodes[0][1]));
        cr_expect_str_eq(str_or(json_string_value(json_object_get(ann, "topox.io/rack")), ""), rack,
                         "%s", body);
    }
    cr_expect_str_eq(str_or(json_string_value(json_object_get(ann, "topox.io/stage")), ""), "1",
                     "%s", body);
    cr_expect(json_string_value(json_object_get(ann, "topox.io/domain")) != NULL, "%s", body);
    json_decref(b);
    free(body);
    cr_assert_eq(wait_events(w, "llm", 3), 3, "a Normal event per placed pod");

    /* restarted listing every node it rejects (--lean-filter false), so the answer says what the
     * rebuilt ledger knows about each rack */
    kill_hard(w);
    start(w, listed);
    cr_assert_eq(wait_ready(w), 200, "never ready after the restart:\n%s", w->srv.log);

    /* the rebuilt ledger confines group 1's second pod to its leader's rack */
    n = filter(w, pods[1][1], pass, &f);
    cr_assert_gt(n, 0, "group 1's rack must still fit its second pod");
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(rack_of(pass[i]), rack_of(nodes[1][0]), "%s is outside group 1's rack",
                     pass[i]);
    {
        json_t *un = json_object_get(f, "FailedAndUnresolvableNodes");
        const char *why =
            json_string_value(json_object_get(un, node_name(rack_of(nodes[1][0]) % RACKS + 1, 1)));

        cr_expect(why && strstr(why, "rack"),
                  "other racks are unresolvable with the group's "
                  "rack as reason: %s",
                  why ? why : "(none)");
    }
    json_decref(f);
    snprintf(nodes[1][1], 16, "%s", place(w, pods[1][1]));
    for (int g = 2; g < 4; g++) {
        snprintf(nodes[g][0], 16, "%s", place(w, pods[g][0]));
        snprintf(nodes[g][1], 16, "%s", place(w, pods[g][1]));
    }
    /* every group in one rack, four groups in four racks, no node twice */
    for (int g = 0; g < 4; g++) {
        cr_expect_eq(rack_of(nodes[g][0]), rack_of(nodes[g][1]), "group %d split: %s %s", g,
                     nodes[g][0], nodes[g][1]);
        used[rack_of(nodes[g][0])]++;
        for (int h = 0; h < 4; h++) {
            for (int k = 0; k < 2; k++) {
                for (int l = 0; l < 2; l++) {
                    if (h != g || k != l)
                        cr_expect(strcmp(nodes[g][k], nodes[h][l]) != 0, "node %s booked twice",
                                  nodes[g][k]);
                }
            }
        }
    }
    for (int r = 1; r <= RACKS; r++)
        cr_expect_eq(used[r], 1, "rack %d holds %d groups", r, used[r]);
    cr_expect_eq(free_gpus(w), 0, "every GPU is in use, none twice");
    cr_expect_eq(wait_events(w, "llm", 8), 8, "a Normal event per placed pod");
    body = fake_api_last(w->api, "POST", "/namespaces/llm/events", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "\"Normal\"") && strstr(body, "placed replica vllm/3 stage 1 in rack"),
              "%s", body);
    free(body);
    stop(w);
}

Test(serve_api, api_refusals_are_clear_errors_and_give_the_capacity_back, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    json_t *solo, *again, *ghost, *locked;
    char *err = NULL;
    const char *node;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    cr_assert_eq(free_gpus(w), NNODES * 8);
    solo = add_pod(w, "llm", "solo", "solo-1", NULL, 0, 1, 8, 1);
    place(w, solo);
    cr_expect_eq(free_gpus(w), NNODES * 8 - 8);

    /* "solo" re-created under a new uid: the API server answers 409 */
    again = json_deep_copy(solo);
    json_object_set_new(json_object_get(again, "metadata"), "uid", json_string("solo-2"));
    json_object_del(json_object_get(again, "spec"), "nodeName");
    node = schedule(w, again, &err);
    cr_assert_not_null(node);
    cr_expect(strstr(err, "409") && strstr(err, "already bound"), "409 must read clearly: %s", err);
    cr_expect(strstr(err, "llm/solo") != NULL, "the Error names the pod: %s", err);
    free(err);
    cr_expect_eq(free_gpus(w), NNODES * 8 - 8, "the refused bind must give its GPUs back");
    json_decref(again);

    /* a pod the API server does not have: 404 */
    ghost = json_pack("{s:{s:s,s:s,s:s,s:{s:s}},s:{s:[{s:s,s:{s:{s:s}}}]}}", "metadata", "name",
                      "ghost", "namespace", "llm", "uid", "ghost-1", "annotations",
                      "topox.io/tensor-parallel-size", "8", "spec", "containers", "name", "c",
                      "resources", "requests", "nvidia.com/gpu", "8");
    node = schedule(w, ghost, &err);
    cr_assert_not_null(node);
    cr_expect(strstr(err, "404") && strstr(err, "no longer exists"), "%s", err);
    free(err);
    json_decref(ghost);
    cr_expect_eq(free_gpus(w), NNODES * 8 - 8);

    /* RBAC says no: 403 */
    locked = add_pod(w, "locked", "lk", "lk-1", NULL, 0, 1, 8, 1);
    node = schedule(w, locked, &err);
    cr_assert_not_null(node);
    cr_expect(strstr(err, "403") && strstr(err, "pods/binding"), "%s", err);
    free(err);
    cr_expect_eq(free_gpus(w), NNODES * 8 - 8);
    {
        char *m = NULL;

        cr_expect_eq(get(w, "/metrics", &m), 200);
        cr_expect(m && strstr(m, "topox_api_binds_total{result=\"ok\"} 1\n") &&
                      strstr(m, "topox_api_binds_total{result=\"error\"} 3\n"),
                  "%s", m ? m : "");
        free(m);
    }
    stop(w);
}

/* issue 12, item 4: in api mode topox creates a Binding only for a pod it filtered, and never for
 * a pod that the watch reports for another scheduler. */
Test(serve_api, binds_only_its_own_filtered_pods, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    json_t *other, *unfiltered;
    char *err = NULL, *posted;
    const char *node;

    other = add_pod(w, "llm", "other", "other-1", NULL, 0, 1, 8, 1);
    json_object_set_new(json_object_get(other, "spec"), "schedulerName",
                        json_string("default-scheduler"));
    unfiltered = add_pod(w, "llm", "unfiltered", "unf-1", NULL, 0, 1, 8, 1);
    push_pods(w);
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    node = schedule(w, other, &err);
    cr_assert_not_null(node);
    cr_expect(strstr(err, "not for scheduler 'topox-scheduler'") != NULL, "%s", err);
    free(err);
    err = bind_call(w, unfiltered, node_name(1, 1));
    cr_expect(strstr(err, "was not filtered by this topox") != NULL, "%s", err);
    free(err);
    posted = fake_api_last(w->api, "POST", "/binding", "body");
    cr_expect_null(posted, "no Binding may be POSTed: %s", posted ? posted : "");
    free(posted);
    cr_expect_eq(free_gpus(w), NNODES * 8, "a refused bind books nothing");
    stop(w);
}

Test(serve_api, a_rejected_group_gets_one_warning, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    json_t *big, *other;
    char pass[NNODES][16];
    char *body;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    /* TP 16 on 8-GPU nodes: rejected on every retry of the scheduler */
    big = add_pod(w, "reject", "big-0", "big-0", "bigkey0", 0, 2, 16, 1);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(filter(w, big, pass, NULL), 0);
    /* a second rejected group afterwards: once its Warning arrived, the queue (FIFO) has sent
     * everything queued before it */
    other = add_pod(w, "sentinel", "big2-0", "big2-0", "bigkey1", 0, 2, 16, 1);
    cr_expect_eq(filter(w, other, pass, NULL), 0);
    cr_assert_eq(wait_events(w, "sentinel", 1), 1, "the sentinel group's Warning");
    cr_expect_eq(events_in(w, "reject"), 1, "five rejections of one group: one Warning");
    body = fake_api_last(w->api, "POST", "/namespaces/reject/events", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "\"Warning\"") && strstr(body, "GroupRejected") && strstr(body, "16"),
              "%s", body);
    free(body);
    stop(w);
}

Test(serve_api, a_pod_deleted_during_a_watch_gap_is_released_by_the_relist, .timeout = 120)
{
    struct world *w = world_new(true);
    const char *args[] = {NULL};
    json_t *items;
    char *gone410;
    long total;
    int i;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    total = free_gpus(w);
    /* bound through the API; the fake sends no watch event for it, so topox knows the pod only
     * from its own bind */
    place(w, add_pod(w, "llm", "gone", "gone-1", NULL, 0, 1, 8, 1));
    cr_expect_eq(free_gpus(w), total - 8);
    sleep_ms(1100); /* bookings carry whole seconds: the relist must start after this one */

    /* the watch drops; meanwhile the pod is deleted and the resourceVersion topox would resume
     * from is compacted away, so its next watch gets 410 and it relists */
    proxy_set_down(w->proxy, true);
    items = json_object_get(w->pods, "items");
    json_array_remove(items, json_array_size(items) - 1);
    push_pods(w);
    gone410 = read_file(TPX_FIXTURES "/apiserver/status-410-expired.json", NULL);
    cr_assert_not_null(gone410);
    fake_api_push_watch_status(w->api, "/api/v1/pods", 410, gone410);
    free(gone410);
    proxy_set_down(w->proxy, false);

    for (i = 0; i < 300 && free_gpus(w) != total; i++)
        sleep_ms(100);
    cr_expect_eq(free_gpus(w), total, "the relist must release the deleted pod's 8 GPUs");
    /* the line is written after the release, which /debug/state may show first: wait for it */
    cr_expect(server_wait_log(&w->srv, "relist: released pods no longer listed", 10000),
              "the log says why:\n%s", str_or(w->srv.log, ""));
    stop(w);
}

Test(serve_api, an_api_outage_loses_nothing_and_heals_by_itself, .timeout = 300)
{
    struct world *w = world_new(true);
    const char *args[] = {NULL};
    const char *env = getenv("TPX_TEST_OUTAGE_S");
    long outage_s = env ? atol(env) : 30;
    json_t *p0, *p1, *bad;
    char n0[16], pass[NNODES][16];
    char *err = NULL;
    const char *node;
    unsigned watches;
    long before;
    size_t n;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    p0 = add_pod(w, "llm", "vllm-0", "o-0", "okey0", 0, 2, 8, 2);
    p1 = add_pod(w, "llm", "vllm-0-1", "o-1", "okey0", 1, 2, 8, 2);
    snprintf(n0, sizeof(n0), "%s", place(w, p0));
    cr_assert_eq(wait_events(w, "llm", 1), 1);

    proxy_set_down(w->proxy, true);
    /* filter keeps working from what topox knows: the group stays in its rack */
    n = filter(w, p1, pass, NULL);
    cr_assert_gt(n, 0);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(rack_of(pass[i]), rack_of(n0), "%s is outside the group's rack", pass[i]);
    /* bind cannot reach the API server: a clear Error, and the placement is taken back */
    before = free_gpus(w);
    err = bind_call(w, p1, pass[0]);
    cr_expect(err[0] != '\0', "a bind without an API server must fail");
    free(err);
    cr_expect_eq(free_gpus(w), before, "the failed bind must give its GPUs back");
    cr_expect_eq(members_placed(w, "llm/lws:okey0"), 1, "the failed bind must leave its group");
    /* a Warning raised during the outage waits in the queue */
    bad = add_pod(w, "outage", "big-0", "big-0", "bigkey", 0, 2, 16, 1);
    cr_expect_eq(filter(w, bad, pass, NULL), 0);
    cr_expect_eq(get(w, "/readyz", NULL), 200, "what topox knows is still good");
    sleep_ms(outage_s * 1000);
    cr_expect_eq(events_in(w, "outage"), 0);
    watches = fake_api_count(w->api, "GET", "watch=");

    proxy_set_down(w->proxy, false);
    /* the scheduler retries the pod: same rack, bound this time */
    node = place(w, p1);
    cr_expect_eq(rack_of(node), rack_of(n0));
    cr_expect_str_neq(node, n0);
    cr_expect_eq(wait_events(w, "outage", 1), 1, "the Warning queued during the outage");
    cr_expect_eq(wait_events(w, "llm", 2), 2, "the Normal event of the pod bound after it");
    cr_expect_geq(fake_api_wait_count(w->api, "GET", "watch=", watches + 2, 30000), watches + 2,
                  "both watches must come back by themselves");
    cr_expect_eq(free_gpus(w), NNODES * 8 - 16);
    cr_expect_eq(members_placed(w, "llm/lws:okey0"), 2);
    stop(w);
}

/* The certainty rule through the API: a layout with an unknown flag passes the filter (placed as
 * preferred) and its pod gets one Warning "UncertainLayout" however often it is filtered. */
Test(serve_api, an_uncertain_layout_passes_and_gets_one_warning, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    json_t *p, *other, *ann;
    char pass[NNODES][16];
    char *body;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    p = add_pod(w, "unsure", "moe-0", "moe-0", "moekey0", 0, 2, 8, 1);
    ann = json_object_get(json_object_get(p, "metadata"), "annotations");
    json_object_del(ann, "topox.io/tensor-parallel-size");
    json_object_del(ann, "topox.io/pipeline-parallel-size");
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "args",
        json_pack("[s,s,s,s,s]", "vllm", "serve", "m", "-tp", "$(TP)"));
    push_pods(w);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(filter(w, p, pass, NULL), NNODES, "never unresolvable");
    other = add_pod(w, "sentinel", "big2-0", "big2-0", "bigkey1", 0, 2, 16, 1);
    cr_expect_eq(filter(w, other, pass, NULL), 0);
    cr_assert_eq(wait_events(w, "sentinel", 1), 1, "the sentinel group's Warning");
    cr_expect_eq(events_in(w, "unsure"), 1, "three filters of one group: one Warning");
    body = fake_api_last(w->api, "POST", "/namespaces/unsure/events", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "UncertainLayout") && strstr(body, "placed as preferred"), "%s", body);
    free(body);
    stop(w);
}

/* A pod as an operator's controller makes it: labels, annotations, one container with command
 * and env (NULL-terminated name/value pairs), gpus GPUs. Added to the PodList. */
static json_t *operator_pod(struct world *w, const char *ns, const char *name, json_t *labels,
                            json_t *ann, json_t *command, const char *const *env, int gpus)
{
    json_t *envs = json_array();
    char g[16];
    json_t *pod;

    for (size_t i = 0; env && env[i]; i += 2)
        json_array_append_new(envs, json_pack("{s:s,s:s}", "name", env[i], "value", env[i + 1]));
    snprintf(g, sizeof(g), "%d", gpus);
    pod = json_pack("{s:{s:s,s:s,s:s,s:s,s:o,s:o},s:{s:s,s:[{s:s,s:o,s:o,s:{s:{s:s},s:{s:s}}}]},"
                    "s:{s:s}}",
                    "metadata", "name", name, "namespace", ns, "uid", name, "resourceVersion",
                    "1001", "labels", labels, "annotations", ann, "spec", "schedulerName",
                    "topox-scheduler", "containers", "name", "main", "command", command, "env",
                    envs, "resources", "requests", "nvidia.com/gpu", g, "limits", "nvidia.com/gpu",
                    g, "status", "phase", "Pending");
    json_array_append_new(json_object_get(w->pods, "items"), pod);
    push_pods(w);
    return pod;
}

/* issue 19 item 4: Dynamo's DeepSeek-R1 SGLang decode (TP16 with DP-attention and EP16 on two
 * 8-GPU pods of an LWS) is MoE traffic: it passes the filter, gets one Warning
 * "CrossNodeParallelism"; the same group read as dense TP16 is unresolvable, and its message
 * names the escape hatch. */
Test(serve_api, moe_tp_over_nodes_passes_with_an_event_dense_is_refused, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    json_t *moe, *dense, *answer = NULL;
    char pass[NNODES][16];
    char *body;

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    moe = add_pod(w, "moe", "dsr1-decode-0", "dsr1-decode-0", "dkey0", 0, 2, 8, 1);
    dense = add_pod(w, "dense", "tp16-0", "tp16-0", "tkey0", 0, 2, 8, 1);
    for (int k = 0; k < 2; k++) {
        json_t *p = k ? dense : moe;
        json_t *ann = json_object_get(json_object_get(p, "metadata"), "annotations");
        json_object_del(ann, "topox.io/tensor-parallel-size");
        json_object_del(ann, "topox.io/pipeline-parallel-size");
        json_object_set_new(
            json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "command",
            json_pack("[s,s,s]", "/bin/sh", "-c",
                      k ? "python3 -m sglang.launch_server --tp 16 --nnodes 2"
                        : "python3 -m dynamo.sglang --tp 16 --dp 16 --enable-dp-attention "
                          "--ep-size 16 --disaggregation-mode decode --nnodes 2"));
    }
    push_pods(w);
    cr_expect_gt(filter(w, moe, pass, NULL), 0, "a MoE TP group across nodes is placed");
    cr_expect_gt(filter(w, moe, pass, NULL), 0);
    cr_expect_eq(filter(w, dense, pass, &answer), 0, "a dense TP16 over 8-GPU nodes is not");
    body = json_dumps(answer, 0);
    cr_expect(strstr(body, "topox.io/cross-node-tp: allow"), "%s", body);
    free(body);
    json_decref(answer);
    cr_assert_eq(wait_events(w, "moe", 1), 1, "the MoE group's Warning");
    cr_expect_eq(events_in(w, "moe"), 1, "two filters of one group: one Warning");
    body = fake_api_last(w->api, "POST", "/namespaces/moe/events", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "CrossNodeParallelism") && strstr(body, "with DP-attention"), "%s",
              body);
    free(body);
    stop(w);
}

/* issue 19 item 7: pods of operators topox does not know, as their controllers make them, are
 * never refused for their layout: KubeRay's head running vLLM over Ray (TP16 on 8 GPUs; the
 * workers carry no engine flags), AIBrix StormService's SGLang pods (--tp-size 2 --nnodes 2 on 1
 * GPU each), and a NIM whose LWS asks NIM_TENSOR_PARALLEL_SIZE=16 on 8-GPU pods (the NIM's
 * profile decides its expert parallelism). Each passes every node. */
Test(serve_api, pods_of_unknown_operators_are_never_refused_for_their_layout, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    const char *nim_env[] = {"NIM_TENSOR_PARALLEL_SIZE", "16", NULL};
    char pass[NNODES][16];
    json_t *pods[4];

    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    /* ray-project/kuberay ray-operator/controllers/ray/common/pod.go: ray.io/cluster,
     * ray.io/node-type, ray.io/group, ray.io/is-ray-node */
    pods[0] =
        operator_pod(w, "ray", "fleet-head-x7k2p",
                     json_pack("{s:s,s:s,s:s,s:s}", "ray.io/cluster", "fleet", "ray.io/node-type",
                               "head", "ray.io/group", "headgroup", "ray.io/is-ray-node", "yes"),
                     json_object(),
                     json_pack("[s,s,s]", "/bin/bash", "-lc",
                               "ray start --head && vllm serve m --tensor-parallel-size 16 "
                               "--distributed-executor-backend ray"),
                     NULL, 8);
    pods[1] = operator_pod(
        w, "ray", "fleet-worker-gpu-9z8rq",
        json_pack("{s:s,s:s,s:s}", "ray.io/cluster", "fleet", "ray.io/node-type", "worker",
                  "ray.io/group", "gpu"),
        json_object(), json_pack("[s,s,s]", "/bin/bash", "-lc", "ray start --address=$RAY_ADDR"),
        NULL, 8);
    /* vllm-project/aibrix pkg/controller/stormservice: storm-service-name, role-name,
     * role-replica-index labels on each pod of a podGroupSize group */
    pods[2] = operator_pod(w, "aibrix", "sglang-prefill-0-1",
                           json_pack("{s:s,s:s,s:s}", "storm-service-name", "sglang", "role-name",
                                     "prefill", "role-replica-index", "0"),
                           json_object(),
                           json_pack("[s,s,s,s,s,s,s]", "python3", "-m", "sglang.launch_server",
                                     "--tp-size", "2", "--nnodes", "2"),
                           NULL, 1);
    pods[3] = operator_pod(w, "nim", "llama-405b-0-1",
                           json_pack("{s:s,s:s,s:s}", "leaderworkerset.sigs.k8s.io/name",
                                     "llama-405b", "leaderworkerset.sigs.k8s.io/group-index", "0",
                                     "leaderworkerset.sigs.k8s.io/worker-index", "1"),
                           json_pack("{s:s}", "leaderworkerset.sigs.k8s.io/size", "2"),
                           json_array(), nim_env, 8);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(filter(w, pods[i], pass, NULL), NNODES, "pod %zu is refused somewhere", i);
    stop(w);
}

/* ---- DRA ------------------------------------------------------------------------------------ */

/* A ResourceSlice of 8 GPUs on node, as the NVIDIA driver publishes one (driver gpu.nvidia.com,
 * pool = node, attributes type=gpu, pcieRoot). */
static json_t *slice_on(const char *node)
{
    json_t *devs = json_array();
    char name[64];

    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "gpu-%d", i);
        json_array_append_new(devs,
                              json_pack("{s:s,s:{s:{s:s},s:{s:s}}}", "name", name, "attributes",
                                        "type", "string", "gpu", "resource.kubernetes.io/pcieRoot",
                                        "string", i < 4 ? "pci0000:00" : "pci0000:80"));
    }
    snprintf(name, sizeof(name), "%s-gpu.nvidia.com-x1", node);
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", name, "uid",
                     name, "spec", "driver", "gpu.nvidia.com", "nodeName", node, "pool", "name",
                     node, "generation", 1, "resourceSliceCount", 1, "devices", devs);
}

/* A ResourceClaim in llm for 8 GPUs; allocated on node (all of its slice) unless node is NULL. */
static json_t *claim_of(const char *name, const char *node)
{
    json_t *c = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:[{s:s,s:{s:s,s:s,s:i}}]}}}",
                          "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata",
                          "name", name, "namespace", "llm", "uid", name, "spec", "devices",
                          "requests", "name", "gpus", "exactly", "deviceClassName",
                          "gpu.nvidia.com", "allocationMode", "ExactCount", "count", 8);
    json_t *results = json_array();
    char dev[16];

    if (!node)
        return c;
    for (int i = 0; i < 8; i++) {
        snprintf(dev, sizeof(dev), "gpu-%d", i);
        json_array_append_new(results, json_pack("{s:s,s:s,s:s,s:s}", "request", "gpus", "driver",
                                                 "gpu.nvidia.com", "pool", node, "device", dev));
    }
    json_object_set_new(c, "status",
                        json_pack("{s:{s:{s:o}}}", "allocation", "devices", "results", results));
    return c;
}

static void set_dra_list(struct world *w, const char *what, json_t *items)
{
    char path[128];
    json_t *list =
        json_pack("{s:s,s:s,s:{s:s},s:o}", "kind", "List", "apiVersion", "resource.k8s.io/v1",
                  "metadata", "resourceVersion", "2000", "items", items);
    char *s = json_dumps(list, JSON_COMPACT);

    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/%s", what);
    cr_assert_eq(fake_api_set_list(w->api, path, s), 0);
    free(s);
    json_decref(list);
}

/* The NVIDIA driver's DeviceClass, and a slice of 8 GPUs on r1-n1 and on r1-n2. */
static void gpu_class_and_slices(struct world *w)
{
    set_dra_list(w, "deviceclasses",
                 json_pack("[{s:s,s:{s:s},s:{s:[{s:{s:s}}]}}]", "kind", "DeviceClass", "metadata",
                           "name", "gpu.nvidia.com", "spec", "selectors", "cel", "expression",
                           "device.driver == 'gpu.nvidia.com'"));
    set_dra_list(w, "resourceslices", json_pack("[o,o]", slice_on("r1-n1"), slice_on("r1-n2")));
}

static bool passes(char pass[][16], size_t n, const char *node)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(pass[i], node) == 0)
            return true;
    }
    return false;
}

/* Issue 13 section 3 through serve: r1-n1's 8 GPUs come from a ResourceSlice and an allocated
 * ResourceClaim holds them all (Node allocatable still says 8, as the scheduler's own fit sees
 * it). A pod asking for 8 is steered to the free nodes; a pod whose only demand is its claim is
 * placed and booked for 8; and when the held claim goes away (a relist after a 410), r1-n1 is
 * free again. */
Test(serve_api, dra_held_gpus_steer_a_pod_to_the_free_node, .timeout = 120)
{
    struct world *w = world_new(true);
    const char *args[] = {NULL};
    char pass[NNODES][16];
    json_t *claimer, *spec;
    const char *node;
    char *gone410;
    size_t n;
    long total;
    int i;

    gpu_class_and_slices(w);
    set_dra_list(w, "resourceclaims",
                 json_pack("[o,o]", claim_of("held", "r1-n1"), claim_of("want-8", NULL)));
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    total = free_gpus(w);
    cr_expect_eq(total, NNODES * 8 - 8, "r1-n1's 8 GPUs are held by the claim");

    n = filter(w, add_pod(w, "llm", "plain", "plain-1", NULL, 0, 1, 8, 1), pass, NULL);
    cr_expect(!passes(pass, n, "r1-n1"), "r1-n1's GPUs are all held");
    cr_expect(passes(pass, n, "r1-n2"), "r1-n2's slice is free");
    cr_expect_eq(n, NNODES - 1);

    /* the pod asks for nothing but its claim's 8 GPUs */
    claimer = add_pod(w, "llm", "claimer", "claimer-1", NULL, 0, 1, 8, 1);
    spec = json_object_get(claimer, "spec");
    json_object_del(json_array_get(json_object_get(spec, "containers"), 0), "resources");
    json_object_set_new(spec, "resourceClaims",
                        json_pack("[{s:s,s:s}]", "name", "gpus", "resourceClaimName", "want-8"));
    push_pods(w);
    node = place(w, claimer);
    cr_expect_str_neq(node, "r1-n1");
    cr_expect_eq(free_gpus(w), total - 8, "booked for its claim's 8 GPUs");

    /* the held claim is deleted while the watch is away; its resourceVersion is gone, so the
     * claims are listed anew */
    proxy_set_down(w->proxy, true);
    set_dra_list(w, "resourceclaims", json_pack("[o]", claim_of("want-8", NULL)));
    gone410 = read_file(TPX_FIXTURES "/apiserver/status-410-expired.json", NULL);
    cr_assert_not_null(gone410);
    fake_api_push_watch_status(w->api, "/apis/resource.k8s.io/v1/resourceclaims", 410, gone410);
    free(gone410);
    proxy_set_down(w->proxy, false);
    for (i = 0; i < 300 && free_gpus(w) != total; i++)
        sleep_ms(100);
    cr_expect_eq(free_gpus(w), total, "r1-n1's 8 GPUs are free once the claim is gone");
    n = filter(w, add_pod(w, "llm", "plain2", "plain-2", NULL, 0, 1, 8, 1), pass, NULL);
    cr_expect(passes(pass, n, "r1-n1"), "r1-n1 takes pods again");
    stop(w);
}

/* topox_dra_view_rebuilds_total from /metrics; -1 when it is not there. */
static long dra_rebuilds(struct world *w)
{
    char *m = NULL;
    const char *at;
    long n = -1;

    if (get(w, "/metrics", &m) == 200 && m &&
        (at = strstr(m, "\ntopox_dra_view_rebuilds_total ")) != NULL)
        n = strtol(at + strlen("\ntopox_dra_view_rebuilds_total "), NULL, 10);
    free(m);
    return n;
}

/* A burst of 1 000 ResourceClaim events on the claims' first watch (one stream, sent at once):
 * the view is built anew per read of the stream, not per event, so the rebuilds counted in
 * /metrics stay far below the events; and the view ends with the burst's last claim, which holds
 * r1-n2's 8 GPUs. */
Test(serve_api, dra_a_burst_of_claim_events_rebuilds_the_view_per_read, .timeout = 120)
{
    struct world *w = world_new(true);
    const char *args[] = {NULL};
    char *body = NULL;
    size_t blen = 0;
    FILE *bf = open_memstream(&body, &blen);
    long rebuilds, total;
    int i;

    gpu_class_and_slices(w);
    cr_assert_not_null(bf);
    for (i = 0; i < 1000; i++) {
        char name[32], rv[16];
        json_t *c;
        char *line;

        snprintf(name, sizeof(name), "burst-%d", i);
        snprintf(rv, sizeof(rv), "%d", 3000 + i);
        c = claim_of(name, i == 999 ? "r1-n2" : NULL);
        json_object_set_new(json_object_get(c, "metadata"), "resourceVersion", json_string(rv));
        line = json_dumps(json_pack("{s:s,s:o}", "type", "ADDED", "object", c), JSON_COMPACT);
        cr_assert_not_null(line);
        fprintf(bf, "%s\n", line);
        free(line);
    }
    cr_assert_eq(fclose(bf), 0);
    fake_api_push_watch(w->api, "/apis/resource.k8s.io/v1/resourceclaims", body, 0,
                        FAKE_WATCH_HOLD);
    free(body);
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    total = NNODES * 8;
    for (i = 0; i < 300 && free_gpus(w) != total - 8; i++)
        sleep_ms(100);
    cr_expect_eq(free_gpus(w), total - 8, "the burst's last claim holds r1-n2's 8 GPUs");
    rebuilds = dra_rebuilds(w);
    cr_log_info("%ld DRA view rebuilds for the lists and 1000 claim events", rebuilds);
    cr_expect_gt(rebuilds, 0);
    cr_expect_lt(rebuilds, 200, "%ld rebuilds for the lists and 1000 claim events", rebuilds);
    stop(w);
}

/* Nodes for the ComputeDomain test: r1-n1 and r1-n2 share one NVLink clique (16 GPUs, rack r1),
 * r2-n1 and r2-n2 have an NVLink domain of 8 each. */
static void clique_nodes(struct world *w)
{
    json_t *items = json_array();
    json_t *list;
    char *s;

    for (int r = 1; r <= 2; r++) {
        for (int i = 1; i <= 2; i++) {
            json_t *labels = json_pack("{s:s,s:s}", "topox.io/rack", r == 1 ? "r1" : "r2",
                                       "topox.io/domain-size", "8");

            if (r == 1)
                json_object_set_new(labels, "nvidia.com/gpu.clique",
                                    json_string("7a1c0e4e-5f3b-4d8e-9c1a-2b3c4d5e6f70.1"));
            json_array_append_new(
                items, json_pack("{s:{s:s,s:s,s:o},s:{s:{s:s,s:s},s:[{s:s,s:s}]}}", "metadata",
                                 "name", node_name(r, i), "uid", node_name(r, i), "labels", labels,
                                 "status", "allocatable", "nvidia.com/gpu", "8", "cpu", "96",
                                 "conditions", "type", "Ready", "status", "True"));
        }
    }
    list = json_pack("{s:s,s:s,s:{s:s},s:o}", "kind", "NodeList", "apiVersion", "v1", "metadata",
                     "resourceVersion", "1000", "items", items);
    s = json_dumps(list, JSON_COMPACT);
    cr_assert_eq(fake_api_set_list(w->api, "/api/v1/nodes", s), 0);
    free(s);
    json_decref(list);
}

/* A ComputeDomain in llm, as the NVIDIA DRA driver's CRD spells it. */
static json_t *compute_domain(const char *name, int nodes)
{
    char tmpl[64];

    snprintf(tmpl, sizeof(tmpl), "%s-channel", name);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:i,s:{s:{s:s}}}}", "apiVersion",
                     "resource.nvidia.com/v1beta1", "kind", "ComputeDomain", "metadata", "name",
                     name, "namespace", "llm", "uid", name, "spec", "numNodes", nodes, "channel",
                     "resourceClaimTemplate", "name", tmpl);
}

/* The API server serves these ComputeDomains (items: a JSON array, taken). */
static void serve_domains(struct world *w, json_t *items)
{
    json_t *list = json_pack("{s:s,s:s,s:{s:s},s:o}", "kind", "ComputeDomainList", "apiVersion",
                             "resource.nvidia.com/v1beta1", "metadata", "resourceVersion", "3000",
                             "items", items);
    char *s = json_dumps(list, JSON_COMPACT);

    cr_assert_eq(fake_api_set_list(w->api, "/apis/resource.nvidia.com/v1beta1/computedomains", s),
                 0);
    free(s);
    json_decref(list);
}

/* A pod of 8 nvidia.com/gpu that claims the domain's channel, nothing topox-specific on it. */
static json_t *claimant(struct world *w, const char *name, const char *domain)
{
    json_t *pod = add_pod(w, "llm", name, name, NULL, 0, 1, 8, 1);
    char tmpl[64];

    snprintf(tmpl, sizeof(tmpl), "%s-channel", domain);
    json_object_del(json_object_get(pod, "metadata"), "annotations");
    json_object_set_new(json_object_get(pod, "metadata"), "annotations", json_object());
    json_object_set_new(
        json_object_get(pod, "spec"), "resourceClaims",
        json_pack("[{s:s,s:s}]", "name", "channel", "resourceClaimTemplateName", tmpl));
    push_pods(w);
    return pod;
}

static size_t filter_some(struct world *w, json_t *pod, char pass[][16], json_t **answer)
{
    const char *names[4] = {node_name(1, 1), node_name(1, 2), node_name(2, 1), node_name(2, 2)};
    char *req = all_nodes_args(pod, names, 4);
    json_t *f = post(w, "/filter", req);
    json_t *left = json_object_get(f, "NodeNames");
    size_t n = json_array_size(left);

    free(req);
    for (size_t i = 0; i < n; i++)
        snprintf(pass[i], 16, "%s", json_string_value(json_array_get(left, i)));
    *answer = f;
    return n;
}

/* Issue 13 section 3: the claimants of one ComputeDomain's channel are one group that must share
 * one clique. Placed whole (the first member's bind reserves the rest of the clique), and a
 * domain no clique can hold is rejected on every node with the shortfall. */
Test(serve_api, a_compute_domain_is_placed_inside_one_clique_or_rejected, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    char pass[NNODES][16];
    json_t *answer, *failed, *w0, *w1;
    const char *node;
    const char *why;
    size_t n;

    clique_nodes(w);
    serve_domains(w, json_pack("[o,o]", compute_domain("cd-2", 2), compute_domain("cd-3", 3)));
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);

    /* 2 pods x 8 GPUs over one NVLink domain: only the clique of 16 can hold it */
    w0 = claimant(w, "cd2-w-0", "cd-2");
    n = filter_some(w, w0, pass, &answer);
    cr_expect_eq(n, 2, "only r1-n1 and r1-n2 share a clique: %s", json_dumps(answer, JSON_COMPACT));
    cr_expect(passes(pass, n, "r1-n1") && passes(pass, n, "r1-n2"));
    json_decref(answer);
    node = place(w, w0);
    cr_expect_eq(rack_of(node), 1);
    cr_expect_eq(members_placed(w, "llm/computedomain:cd-2"), 1, "one group, named by its domain");
    /* the rest of the clique is the group's: the second claimant goes to the other node */
    w1 = claimant(w, "cd2-w-1", "cd-2");
    n = filter_some(w, w1, pass, &answer);
    json_decref(answer);
    cr_expect_eq(n, 1);
    cr_expect_str_neq(pass[0], node);
    cr_expect_eq(rack_of(pass[0]), 1);
    place(w, w1);
    cr_expect_eq(members_placed(w, "llm/computedomain:cd-2"), 2);

    /* 3 pods x 8 = 24 GPUs over one clique: none has them, and that is certain */
    n = filter_some(w, claimant(w, "cd3-w-0", "cd-3"), pass, &answer);
    cr_expect_eq(n, 0);
    failed = json_object_get(answer, "FailedAndUnresolvableNodes");
    if (!json_object_size(failed))
        failed = json_object_get(answer, "FailedNodes");
    why = json_string_value(json_object_get(failed, "r2-n1"));
    cr_expect(why && strstr(why, "llm/cd-3 (ComputeDomain) needs one multi-node NVLink domain "
                                 "(clique) with 24 free GPUs for its 3 pods; the largest here "
                                 "has 16 (nvlink, 2 nodes)"),
              "the shortfall, in the domain's words: %s", why ? why : "(none)");
    json_decref(answer);
    stop(w);
}

/* Issue 19 item 5: one ComputeDomain shared by several groups (NVIDIA's GB200 recipes: a prefill
 * worker and a decode worker in one domain). Each claimant here is pod 0 of its own one-pod LWS
 * group, so both count their index from 0; in the domain's group they are two pods of one clique,
 * and the second must get the other node of the clique, never a refusal for a taken index. */
Test(serve_api, a_compute_domain_shared_by_two_groups_holds_both, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {NULL};
    char pass[NNODES][16];
    json_t *answer, *p, *d;
    const char *node;
    size_t n;

    clique_nodes(w);
    serve_domains(w, json_pack("[o]", compute_domain("cd-pd", 2)));
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);

    p = add_pod(w, "llm", "prefill-0", "prefill-0", "prefill-0", 0, 1, 8, 1);
    d = add_pod(w, "llm", "decode-0", "decode-0", "decode-0", 0, 1, 8, 1);
    for (int i = 0; i < 2; i++)
        json_object_set_new(json_object_get(i ? d : p, "spec"), "resourceClaims",
                            json_pack("[{s:s,s:s}]", "name", "channel", "resourceClaimTemplateName",
                                      "cd-pd-channel"));
    push_pods(w);
    node = place(w, p);
    cr_expect_eq(rack_of(node), 1, "the clique is in rack r1");
    n = filter_some(w, d, pass, &answer);
    cr_expect_eq(n, 1, "the rest of the clique is the decode pod's: %s",
                 json_dumps(answer, JSON_COMPACT));
    json_decref(answer);
    cr_expect(n == 1 && strcmp(pass[0], node) != 0 && rack_of(pass[0]) == 1);
    place(w, d);
    cr_expect_eq(members_placed(w, "llm/computedomain:cd-pd"), 2, "both groups in the domain");
    stop(w);
}

/* The cap on one API response is the setting apiMaxBody (it was a fixed 256 MiB): a node LIST
 * page over it is refused, never truncated, and the log names the cap in force; the page is then
 * asked for again with half the limit until it fits, so all 8 nodes arrive and topox gets ready. */
Test(serve_api, the_api_response_cap_is_a_setting, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {"--api-max-body", "1Ki", NULL};

    start(w, args);
    cr_expect(server_wait_log(&w->srv, "response body over 1024 bytes", 20000),
              "no page refused at the cap:\n%s", w->srv.log);
    cr_expect(server_wait_log(&w->srv, "\"kind\":\"node\",\"items\":8", 60000),
              "the nodes did not all arrive in smaller pages:\n%s", w->srv.log);
    cr_expect_eq(wait_ready(w), 200, "not ready once every node was listed:\n%s", w->srv.log);
    stop(w);
}

/* ---- PodGroups (scheduling.k8s.io/v1beta1, Kubernetes 1.37) --------------------------------- */

/* n PodGroups gang-0.. in llm, gang minCount min, topology key topology.kubernetes.io/rack (as
 * upstream's scheduler_perf podgroup/tas/templates/podgroup.yaml writes them). */
static void set_podgroups(struct world *w, int n, int min)
{
    json_t *items = json_array();
    json_t *list;
    char *s;

    for (int k = 0; k < n; k++) {
        char name[16];

        snprintf(name, sizeof(name), "gang-%d", k);
        json_array_append_new(
            items, json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:{s:i}},s:{s:[{s:s}]}}}",
                             "apiVersion", "scheduling.k8s.io/v1beta1", "kind", "PodGroup",
                             "metadata", "name", name, "namespace", "llm", "uid", name, "spec",
                             "schedulingPolicy", "gang", "minCount", min, "schedulingConstraints",
                             "topology", "key", "topology.kubernetes.io/rack"));
    }
    list = json_pack("{s:s,s:s,s:{s:s},s:o}", "kind", "PodGroupList", "apiVersion",
                     "scheduling.k8s.io/v1beta1", "metadata", "resourceVersion", "1000", "items",
                     items);
    s = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    cr_assert_eq(fake_api_set_list(w->api, "/apis/scheduling.k8s.io/v1beta1/podgroups", s), 0);
    free(s);
}

/* A Pending pod of PodGroup pg asking for 8 GPUs, nothing else: no labels, no annotations (as
 * upstream's gang-pod.yaml, with GPUs). Borrowed from w->pods. */
static json_t *gang_pod(struct world *w, const char *name, const char *pg)
{
    json_t *pod = json_pack(
        "{s:{s:s,s:s,s:s,s:s},s:{s:s,s:{s:s},s:[{s:s,s:{s:{s:s},s:{s:s}}}]},s:{s:s}}", "metadata",
        "name", name, "namespace", "llm", "uid", name, "resourceVersion", "1001", "spec",
        "schedulerName", "topox-scheduler", "schedulingGroup", "podGroupName", pg, "containers",
        "name", "w", "resources", "requests", "nvidia.com/gpu", "8", "limits", "nvidia.com/gpu",
        "8", "status", "phase", "Pending");

    json_array_append_new(json_object_get(w->pods, "items"), pod);
    push_pods(w);
    return pod;
}

/* filter over every node but `taken` (a node the scheduler assumed for an earlier member of the
 * cycle: its own resource filter drops it before the extender is asked); the names that pass go
 * into pass[] */
static size_t filter_but(struct world *w, json_t *pod, const char *taken, char pass[][16])
{
    const char *names[NNODES];
    size_t k = 0, n;
    char *req;
    json_t *f, *left;

    for (int r = 1; r <= RACKS; r++) {
        for (int i = 1; i <= PER_RACK; i++) {
            if (!taken || strcmp(taken, node_name(r, i)) != 0)
                names[k++] = node_name(r, i);
        }
    }
    req = all_nodes_args(pod, names, k);
    f = post(w, "/filter", req);
    free(req);
    cr_assert_str_eq(str_or(json_string_value(json_object_get(f, "Error")), ""), "");
    left = json_object_get(f, "NodeNames");
    n = json_array_size(left);
    for (size_t i = 0; i < n; i++)
        snprintf(pass[i], 16, "%s", json_string_value(json_array_get(left, i)));
    json_decref(f);
    return n;
}

/* Issue 20: kube-scheduler 1.37 filters every member of a PodGroup gang before it binds any
 * (pkg/scheduler/schedule_one_podgroup.go). topox holds the gang's room at the first member's
 * filter, so every member is answered inside one rack and no bind is refused, however the
 * scheduler picks among the nodes that pass (here: the last that passes for the first member, and
 * for the second one in another rack when one passes). */
Test(serve_api, podgroup_gangs_filtered_whole_then_bound_are_never_refused, .timeout = 120)
{
    struct world *w = world_new(false);
    unsigned refused = 0;

    set_podgroups(w, 3, 2);
    start(w, NULL);
    cr_assert_eq(wait_ready(w), 200);
    for (int g = 0; g < 3; g++) {
        char pg[16], n0[32], n1[32], pass[NNODES][16];
        char c0[16], c1[16];
        json_t *p0, *p1;
        size_t n;
        char *e0, *e1;

        snprintf(pg, sizeof(pg), "gang-%d", g);
        snprintf(n0, sizeof(n0), "%s-0", pg);
        snprintf(n1, sizeof(n1), "%s-1", pg);
        p0 = gang_pod(w, n0, pg);
        p1 = gang_pod(w, n1, pg);
        /* the gang cycle: both filters, then both binds */
        n = filter_but(w, p0, NULL, pass);
        cr_assert_gt(n, 0, "%s: nothing passes", n0);
        snprintf(c0, sizeof(c0), "%.15s", pass[n - 1]);
        n = filter_but(w, p1, c0, pass);
        cr_assert_gt(n, 0, "%s: nothing passes", n1);
        snprintf(c1, sizeof(c1), "%.15s", pass[0]);
        for (size_t i = 0; i < n; i++) {
            if (rack_of(pass[i]) != rack_of(c0)) {
                snprintf(c1, sizeof(c1), "%.15s", pass[i]);
                break;
            }
        }
        e0 = bind_call(w, p0, c0);
        e1 = bind_call(w, p1, c1);
        refused += e0[0] != '\0';
        refused += e1[0] != '\0';
        cr_expect_str_eq(e0, "", "%s on %s: %s", n0, c0, e0);
        cr_expect_str_eq(e1, "", "%s on %s: %s", n1, c1, e1);
        cr_expect_eq(rack_of(c0), rack_of(c1), "%s: %s and %s", pg, c0, c1);
        if (e0[0] == '\0')
            apply_binding(w, p0, c0);
        if (e1[0] == '\0')
            apply_binding(w, p1, c1);
        free(e0);
        free(e1);
        cr_expect_eq(members_placed(w, "llm/podgroup:gang-0"), 2);
    }
    cr_expect_eq(refused, 0);
    cr_expect_eq(free_gpus(w), 16, "three gangs of 2 x 8 GPUs, nothing else held");
    stop(w);
}

/* ---- nominatedNodeName (issue 20, item 2) ---------------------------------------------------- */

/* The node the last pods/status PATCH of pod `name` in llm nominated it to ("" for null), or NULL
 * when no such PATCH came within 10 s (at least `n` of them). Static storage. */
static const char *nominated(struct world *w, const char *name, unsigned n)
{
    static char node[64];
    char needle[128];
    char *body, *ct;
    json_t *b, *v;

    snprintf(needle, sizeof(needle), "/namespaces/llm/pods/%s/status", name);
    if (fake_api_wait_count(w->api, "PATCH", needle, n, 10000) < n)
        return NULL;
    ct = fake_api_last(w->api, "PATCH", needle, "content-type");
    cr_expect_str_eq(str_or(ct, ""), "application/merge-patch+json");
    free(ct);
    body = fake_api_last(w->api, "PATCH", needle, "body");
    cr_assert_not_null(body);
    b = json_loads(body, 0, NULL);
    cr_assert_not_null(b, "%s", body);
    v = json_object_get(json_object_get(b, "status"), "nominatedNodeName");
    cr_assert(v && (json_is_string(v) || json_is_null(v)), "not a nomination: %s", body);
    cr_expect_eq(json_object_size(b), 1, "only status: %s", body);
    snprintf(node, sizeof(node), "%s", str_or(json_string_value(v), ""));
    json_decref(b);
    free(body);
    return node;
}

static unsigned patches_of(struct world *w, const char *name)
{
    char needle[128];

    snprintf(needle, sizeof(needle), "/namespaces/llm/pods/%s/status", name);
    return fake_api_count(w->api, "PATCH", needle);
}

/* kube-scheduler's call for a pod with a nominated node: that one node alone
 * (pkg/scheduler/schedule_one.go, evaluateNominatedNode); true when topox passes it. */
static bool passes_alone(struct world *w, json_t *pod, const char *node)
{
    char *req = all_nodes_args(pod, &node, 1);
    json_t *f = post(w, "/filter", req);
    bool ok = json_array_size(json_object_get(f, "NodeNames")) == 1;

    free(req);
    json_decref(f);
    return ok;
}

/* An LWS group of 3 pods x 8 GPUs per rack is too big for 2-node racks here: 2 pods, leader and
 * worker, pending before topox starts (so the watch lists them). After the leader's bind the
 * worker, and only it, is nominated to the node held for it, in the leader's rack; topox's filter
 * passes it there alone, and the bind there succeeds. */
Test(serve_api, after_a_first_bind_the_pending_members_are_nominated_to_the_held_nodes,
     .timeout = 120)
{
    struct world *w = world_new(false);
    json_t *lead = add_pod(w, "llm", "vllm-0", "uid-l", "gkey0", 0, 2, 8, 2);
    json_t *work = add_pod(w, "llm", "vllm-0-1", "uid-w", "gkey0", 1, 2, 8, 2);
    char at[16], to[64];
    const char *got;
    char *m = NULL, *err;

    start(w, NULL);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    sleep_ms(300);
    cr_expect_eq(patches_of(w, "vllm-0-1") + patches_of(w, "vllm-0"), 0,
                 "nothing is held before the first bind: no nomination");
    snprintf(at, sizeof(at), "%s", place(w, lead));
    got = nominated(w, "vllm-0-1", 1);
    cr_assert_not_null(got, "the worker was not nominated after the leader's bind");
    snprintf(to, sizeof(to), "%s", got);
    cr_expect_neq(strcmp(to, at), 0, "nominated to the leader's own node %s", at);
    cr_expect_eq(rack_of(to), rack_of(at), "nominated to %s, outside the leader's rack (%s)", to,
                 at);
    cr_expect_eq(patches_of(w, "vllm-0"), 0, "the bound leader is not nominated");
    cr_expect(passes_alone(w, work, to), "topox's filter refuses the node it nominated");
    get(w, "/metrics", &m);
    cr_expect(m && strstr(m, "topox_nominations_total{result=\"set\"} 1\n") &&
                  strstr(m, "topox_nominations_total{result=\"failed\"} 0\n"),
              "%s", m ? m : "");
    free(m);
    err = bind_call(w, work, to);
    cr_expect_str_eq(err, "", "bind on the nominated node: %s", err);
    free(err);
    stop(w);
}

/* true when the last pods/status PATCH of `name` in llm names `node` ("" for null), within
 * timeout_ms. */
static bool last_nominated(struct world *w, const char *name, const char *node, long timeout_ms)
{
    char needle[128];

    snprintf(needle, sizeof(needle), "/namespaces/llm/pods/%s/status", name);
    for (long waited = 0; waited <= timeout_ms; waited += 50) {
        char *body = fake_api_last(w->api, "PATCH", needle, "body");
        json_t *b = body ? json_loads(body, 0, NULL) : NULL;
        json_t *v = json_object_get(json_object_get(b, "status"), "nominatedNodeName");
        bool yes = b && strcmp(str_or(json_string_value(v), ""), node) == 0;

        json_decref(b);
        free(body);
        if (yes)
            return true;
        sleep_ms(50);
    }
    return false;
}

/* A PodGroup gang: the whole group's room is held at the first member's filter, but nobody is
 * nominated while the gang's cycle runs (kube-scheduler filters every member in it, and a
 * nomination landing then helps no one). Once the cycle is over (2 s here) and the members are
 * still pending (the cycle failed), both are nominated to the two held nodes of the rack the
 * filter held. Each passes topox's filter alone on its own node. A bind elsewhere in the hold
 * moves the mate's nomination. */
Test(serve_api, a_gang_is_nominated_once_its_cycle_is_over, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {"--hold-waiting-groups", "false", NULL}; /* its cycle comes first */
    json_t *p0, *p1;
    char pass[NNODES][16], n0[64], n1[64];
    const char *got;
    char *err;

    set_podgroups(w, 1, 2);
    p0 = gang_pod(w, "gang-0-0", "gang-0");
    p1 = gang_pod(w, "gang-0-1", "gang-0");
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    cr_assert_gt(filter_but(w, p0, NULL, pass), 0);
    cr_expect_eq(fake_api_wait_count(w->api, "PATCH", "/status", 1, 1000), 0,
                 "a member was nominated while the gang's cycle runs");
    got = nominated(w, "gang-0-1", 1);
    cr_assert_not_null(got, "the mate was never nominated once the cycle was over");
    snprintf(n1, sizeof(n1), "%s", got);
    cr_expect_eq(rack_of(n1), rack_of(pass[0]), "%s is not in the rack the filter held (%s)", n1,
                 pass[0]);
    got = nominated(w, "gang-0-0", 1);
    cr_assert_not_null(got, "the first member was never nominated once its cycle was over");
    snprintf(n0, sizeof(n0), "%s", got);
    cr_expect_neq(strcmp(n0, n1), 0, "both nominated to %s", n0);
    cr_expect_eq(rack_of(n0), rack_of(n1), "%s and %s", n0, n1);
    cr_expect(passes_alone(w, p0, n0), "gang-0-0 refused on %s", n0);
    cr_expect(passes_alone(w, p1, n1), "gang-0-1 refused on %s", n1);
    cr_expect_eq(patches_of(w, "gang-0-0") + patches_of(w, "gang-0-1"), 2,
                 "a second filter moves nothing");
    /* the scheduler binds gang-0-0 on its mate's node (the watch here never says it is bound):
     * the mate moves to the node left, and the bound pod is not nominated again */
    err = bind_call(w, p0, n1);
    cr_expect_str_eq(err, "", "%s", err);
    free(err);
    cr_expect(last_nominated(w, "gang-0-1", n0, 10000), "gang-0-1 not moved to %s", n0);
    sleep_ms(1500);
    cr_expect_eq(patches_of(w, "gang-0-0"), 1, "the bound member was PATCHed again");
    stop(w);
}

static const char *const hold_waiting[] = {"--hold-waiting-groups", "true", NULL};

/* The two members a and b of one waiting group were nominated (into na, nb): to two nodes of
 * one rack. */
static void nominated_together(struct world *w, const char *a, const char *b, char na[64],
                               char nb[64])
{
    const char *got = nominated(w, a, 1);

    cr_assert(got && got[0], "%s was never nominated while its group waited", a);
    snprintf(na, 64, "%s", got);
    got = nominated(w, b, 1);
    cr_assert(got && got[0], "%s was never nominated while its group waited", b);
    snprintf(nb, 64, "%s", got);
    cr_expect_neq(strcmp(na, nb), 0, "%s and %s both nominated to %s", a, b, na);
    cr_expect_eq(rack_of(na), rack_of(nb), "%s and %s: not one rack", na, nb);
}

/* holdWaitingGroups (the default): a PodGroup gang whose members have all waited pending, none
 * filtered (kube-scheduler has not started its gang cycle), is held whole and its members are
 * nominated before any filter: to two nodes of one rack, each passed by topox's filter alone
 * there (kube-scheduler's evaluateNominatedNode), and both binds there go through. A gang with a
 * member missing (minCount 2, one pod) is not held: kube-scheduler will not start its cycle; nor
 * one with a gated member (Kueue's admission gate): it is not in kube-scheduler's queue. */
Test(serve_api, a_waiting_gang_is_held_and_nominated_before_its_cycle, .timeout = 120)
{
    struct world *w = world_new(false);
    json_t *p0, *p1;
    char n0[64], n1[64], *m = NULL, *err;

    set_podgroups(w, 3, 2);
    p0 = gang_pod(w, "gang-0-0", "gang-0");
    p1 = gang_pod(w, "gang-0-1", "gang-0");
    gang_pod(w, "gang-1-0", "gang-1");
    gang_pod(w, "gang-2-0", "gang-2");
    json_object_set_new(json_object_get(gang_pod(w, "gang-2-1", "gang-2"), "spec"),
                        "schedulingGates",
                        json_pack("[{s:s}]", "name", "kueue.x-k8s.io/admission"));
    push_pods(w);
    start(w, hold_waiting);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    nominated_together(w, "gang-0-0", "gang-0-1", n0, n1);
    sleep_ms(2500); /* two more sweeps */
    cr_expect_eq(patches_of(w, "gang-1-0"), 0, "a gang missing a member was held");
    cr_expect_eq(patches_of(w, "gang-2-0") + patches_of(w, "gang-2-1"), 0,
                 "a gang with a gated member was held");
    cr_expect_eq(patches_of(w, "gang-0-0") + patches_of(w, "gang-0-1"), 2, "nominated twice");
    get(w, "/metrics", &m);
    cr_expect(m && strstr(m, "topox_waiting_group_holds_total 1\n"), "%s", m ? m : "");
    free(m);
    /* the gang cycle: each member on its nominated node alone */
    cr_expect(passes_alone(w, p0, n0), "gang-0-0 refused on its nominated node %s", n0);
    cr_expect(passes_alone(w, p1, n1), "gang-0-1 refused on its nominated node %s", n1);
    err = bind_call(w, p0, n0);
    cr_expect_str_eq(err, "", "gang-0-0 on %s: %s", n0, err);
    free(err);
    err = bind_call(w, p1, n1);
    cr_expect_str_eq(err, "", "gang-0-1 on %s: %s", n1, err);
    free(err);
    stop(w);
}

/* The same for a group that is no gang (an LWS group of 2 x 8 GPUs, kube-scheduler schedules its
 * pods one by one): both pending for a second, none filtered, so both are nominated before the
 * leader's cycle, in one rack. The leader's one-node call passes, and its bind there moves
 * nobody: the worker keeps its node. A second such group whose held rack kube-scheduler's own
 * filters take out (its leader filtered on the other racks only) has its hold moved among them
 * instead of its pod refused. */
Test(serve_api, a_waiting_lws_group_is_held_and_nominated_before_its_first_cycle, .timeout = 120)
{
    struct world *w = world_new(false);
    json_t *lead = add_pod(w, "llm", "vllm-0", "uid-l", "gkey0", 0, 2, 8, 2);
    json_t *lead1 = add_pod(w, "llm", "vllm-1", "uid-l1", "gkey1", 0, 2, 8, 2);
    char nl[64], nw[64], n1[64], *err;
    const char *got;

    add_pod(w, "llm", "vllm-0-1", "uid-w", "gkey0", 1, 2, 8, 2);
    add_pod(w, "llm", "vllm-1-1", "uid-w1", "gkey1", 1, 2, 8, 2);
    start(w, hold_waiting);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    nominated_together(w, "vllm-0", "vllm-0-1", nl, nw);
    cr_expect(passes_alone(w, lead, nl), "the leader refused on its nominated node %s", nl);
    err = bind_call(w, lead, nl);
    cr_expect_str_eq(err, "", "the leader on %s: %s", nl, err);
    free(err);
    sleep_ms(1500);
    cr_expect_eq(patches_of(w, "vllm-0-1"), 1, "the worker moved after its leader's bind");
    got = nominated(w, "vllm-1", 1);
    cr_assert(got && got[0], "the second waiting leader was never nominated");
    snprintf(n1, sizeof(n1), "%s", got);
    {
        /* kube-scheduler's own filters took the held rack out: the hold follows the candidates */
        const char *names[NNODES];
        size_t k = 0;
        char *req;
        json_t *f;

        for (int r = 1; r <= RACKS; r++) {
            for (int i = 1; r != rack_of(n1) && i <= PER_RACK; i++) {
                if (strcmp(node_name(r, i), nl) != 0 && strcmp(node_name(r, i), nw) != 0)
                    names[k++] = node_name(r, i);
            }
        }
        req = all_nodes_args(lead1, names, k);
        f = post(w, "/filter", req);
        free(req);
        cr_expect_gt(json_array_size(json_object_get(f, "NodeNames")), 0,
                     "the leader refused everywhere once its held rack was gone: %s",
                     json_dumps(f, 0));
        json_decref(f);
    }
    stop(w);
}

/* --hold-waiting-groups false: the same waiting gang is neither held nor nominated before its
 * cycle. */
Test(serve_api, hold_waiting_groups_false_nominates_no_waiting_gang, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {"--hold-waiting-groups", "false", NULL};
    char *m = NULL;

    set_podgroups(w, 1, 2);
    gang_pod(w, "gang-0-0", "gang-0");
    gang_pod(w, "gang-0-1", "gang-0");
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    cr_expect_eq(fake_api_wait_count(w->api, "PATCH", "/status", 1, 3000), 0);
    get(w, "/metrics", &m);
    cr_expect(m && strstr(m, "topox_waiting_group_holds_total 0\n"), "%s", m ? m : "");
    free(m);
    stop(w);
}

/* --nominate false: the same group sends no PATCH at all. */
Test(serve_api, nominate_false_sends_no_patch, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {"--nominate", "false", NULL};
    json_t *lead = add_pod(w, "llm", "vllm-0", "uid-l", "gkey0", 0, 2, 8, 2);
    char *m = NULL;

    add_pod(w, "llm", "vllm-0-1", "uid-w", "gkey0", 1, 2, 8, 2);
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    place(w, lead);
    cr_expect_eq(fake_api_wait_count(w->api, "PATCH", "/status", 1, 2000), 0);
    get(w, "/metrics", &m);
    cr_expect(m && !strstr(m, "topox_nominations_total"), "%s", m ? m : "");
    free(m);
    stop(w);
}

/* The hold expires (--reservation-ttl 4s) while the worker is still pending: the nomination
 * topox set is cleared (null), once. */
Test(serve_api, a_nomination_is_cleared_when_its_hold_expires, .timeout = 120)
{
    struct world *w = world_new(false);
    const char *args[] = {"--reservation-ttl", "4s", NULL};
    json_t *lead = add_pod(w, "llm", "vllm-0", "uid-l", "gkey0", 0, 2, 8, 2);
    const char *got;

    add_pod(w, "llm", "vllm-0-1", "uid-w", "gkey0", 1, 2, 8, 2);
    start(w, args);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    place(w, lead);
    got = nominated(w, "vllm-0-1", 1);
    cr_assert(got && got[0], "not nominated first");
    got = nominated(w, "vllm-0-1", 2);
    cr_assert_not_null(got, "the nomination was not cleared after the hold expired");
    cr_expect_str_eq(got, "", "cleared with null");
    sleep_ms(1500);
    cr_expect_eq(patches_of(w, "vllm-0-1"), 2, "cleared once");
    stop(w);
}

/* The API server refuses the nomination (404: the pod went, as a 409 or 403 would): counted as
 * failed, logged, and nothing else changes: the worker's filter passes the held node and its bind
 * there goes through. */
Test(serve_api, a_refused_nomination_is_counted_and_changes_no_verdict, .timeout = 120)
{
    struct world *w = world_new(false);
    json_t *lead = add_pod(w, "llm", "vllm-0", "uid-l", "gkey0", 0, 2, 8, 2);
    json_t *work = add_pod(w, "llm", "vllm-0-1", "uid-w", "gkey0", 1, 2, 8, 2);
    char pass[NNODES][16];
    char at[16], *m = NULL, *err;
    size_t n;
    bool failed = false;

    start(w, NULL);
    cr_assert_eq(wait_ready(w), 200, "never ready:\n%s", w->srv.log);
    fake_api_fail_method(w->api, "PATCH", 1, 404, "status-404-pod.json");
    snprintf(at, sizeof(at), "%s", place(w, lead));
    cr_assert_eq(fake_api_wait_count(w->api, "PATCH", "/pods/vllm-0-1/status", 1, 10000), 1);
    for (int i = 0; i < 100 && !failed; i++) {
        free(m);
        m = NULL;
        get(w, "/metrics", &m);
        failed = m && strstr(m, "topox_nominations_total{result=\"failed\"} 1\n");
        if (!failed)
            sleep_ms(50);
    }
    cr_expect(failed, "%s", m ? m : "");
    cr_expect(m && strstr(m, "topox_nominations_total{result=\"set\"} 0\n"), "%s", m ? m : "");
    free(m);
    n = filter(w, work, pass, NULL);
    cr_expect_eq(n, 1, "the held node, and only it");
    cr_expect_eq(rack_of(pass[0]), rack_of(at));
    err = bind_call(w, work, pass[0]);
    cr_expect_str_eq(err, "", "%s", err);
    free(err);
    server_drain(&w->srv);
    cr_expect(w->srv.log && strstr(w->srv.log, "nomination not written"), "not logged");
    stop(w);
}
