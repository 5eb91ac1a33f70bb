/* SPDX-License-Identifier: Apache-2.0 */
/* tools/drive.c - topox-drive, the `make run` demo: start `topox serve` on a synthetic cluster,
 * expand a job manifest into the pods its controller would create, and walk each pod through
 * the extender the way kube-scheduler does (POST /filter, /prioritize, /bind with the exact wire
 * format of extender-protocol.md sections 1-3), printing where each pod went; then print the
 * extender's view of racks and groups, stop it with SIGTERM and report its exit status.
 *
 * Talks to topox only over HTTP and through its log: the policy decisions are the server's. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "common/clock.h"
#include "common/banned.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hash.h"
#include "objects/manifest.h"
#include "objects/yamljson.h"
#include "topology/model.h"
#include "topology/synthetic.h"

extern char **environ;

#define RESP_CAP ((size_t)64 << 20) /* largest answer we read: a NodeList of thousands of nodes */
#define LOG_CAP ((size_t)16 << 20)  /* server log kept in memory */
#define START_TIMEOUT_S 20
#define HTTP_TIMEOUT_S 5 /* kube-scheduler's DefaultExtenderTimeout */
#define DEFAULT_SCHEDULER "topox-scheduler"

static const char usage_text[] =
    "usage: topox-drive --topox PATH -f FILE... [--cluster SPEC] [--ncc true|false]\n"
    "\n"
    "Start `topox serve` on a synthetic cluster, expand the job manifests into the pods their\n"
    "controllers would create, and send each pod, group by group and leader first, through\n"
    "POST /filter, /prioritize and /bind exactly as kube-scheduler would. Prints one line per\n"
    "pod (node, rack, domain, pipeline stage, score, nodes that passed the filter), then the\n"
    "extender's racks and groups, then stops the server with SIGTERM.\n"
    "\n"
    "  --topox PATH         the topox binary to run\n"
    "  -f, --filename FILE  job manifest (YAML or JSON; LeaderWorkerSet, JobSet, Job, ...)\n"
    "  --cluster SPEC       synthetic cluster (default 'example': 4 racks x 4 nodes x 8 GPUs)\n"
    "  --ncc true|false     nodeCacheCapable (default true): send NodeNames, or full Node objects\n"
    "  -h, --help           this text\n"
    "\n"
    "Exit status: 0 when every pod was bound and the server exited 0, 1 otherwise, 2 on a usage\n"
    "error.\n";

struct opts {
    const char *topox;
    const char **files;
    size_t nfiles;
    const char *cluster;
    bool ncc;
};

/* The `topox serve` child and what it has logged. */
struct server {
    pid_t pid;
    int err_fd;
    int port;
    struct tpx_buf log;
    size_t scanned; /* log bytes already searched for bind decisions */
};

/* One HTTP peer: one curl handle with keep-alive, as the scheduler's Go transport. */
struct client {
    CURL *h;
    struct curl_slist *hdr;
    char base[64];
    struct tpx_buf body;
    char curl_err[CURL_ERROR_SIZE];
};

/* One pod of the manifest, as kube-scheduler would hold it. */
struct pod {
    const char *name;
    char ns[128];
    char uid[40];
    json_t *obj;
    unsigned accel;       /* accelerators it requests */
    const char *resource; /* of which resource (borrowed from the manifest), or NULL */
};

/* What happened to one pod. */
struct outcome {
    bool bound;
    char node[128];
    char rack[128];
    char domain[128];
    char stage[16];
    char score[16];
    size_t passed;
    char why[1024];
};

/* --- options -----------------------------------------------------------------------------------
 */

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"topox", required_argument, NULL, 't'},   {"filename", required_argument, NULL, 'f'},
        {"cluster", required_argument, NULL, 'c'}, {"ncc", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    struct cmd_args a = {"topox-drive", usage_text, ":hf:", longopts, argc, argv, NULL, 0, 0};
    int ch;

    memset(o, 0, sizeof(*o));
    o->cluster = "example";
    o->ncc = true;
    o->files = calloc((size_t)argc + 1, sizeof(*o->files));
    if (!o->files)
        return 1;
    while ((ch = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (ch) {
        case CMD_ARGS_EXIT:
            return a.status == 0 ? -1 : a.status;
        case 't':
            o->topox = optarg;
            break;
        case 'f':
            o->files[o->nfiles++] = optarg;
            break;
        case 'c':
            o->cluster = optarg;
            break;
        case 'n':
            if (strcmp(optarg, "true") == 0) {
                o->ncc = true;
            } else if (strcmp(optarg, "false") == 0) {
                o->ncc = false;
            } else {
                return cmd_args_usage_error(&a, "--ncc: '%s' is not true or false", optarg);
            }
            break;
        }
    }
    if (!o->topox || o->nfiles == 0)
        return cmd_args_usage_error(&a, "%s", "--topox and -f are required");
    return 0;
}

/* --- the server child --------------------------------------------------------------------------
 */

static int exit_status(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return -1;
}

/* Read what the server has logged so far, without blocking. */
static void server_drain(struct server *s)
{
    char chunk[65536];
    ssize_t n;
    struct tpx_err err = TPX_ERR_INIT;

    while (s->err_fd >= 0 && (n = read(s->err_fd, chunk, sizeof(chunk))) > 0) {
        if (tpx_buf_add(&s->log, chunk, (size_t)n, &err) != TPX_OK) {
            /* keep only the recent log: decisions are looked up right after each bind */
            tpx_buf_reset(&s->log);
            s->scanned = 0;
            tpx_err_clear(&err);
        }
    }
}

/* The last complete line of the log, for error messages. */
static void last_line(const struct server *s, char *out, size_t n)
{
    const char *d = s->log.data ? s->log.data : "";
    size_t len = s->log.len;
    size_t start;

    while (len > 0 && d[len - 1] == '\n')
        len--;
    start = len;
    while (start > 0 && d[start - 1] != '\n')
        start--;
    snprintf(out, n, "%.*s", (int)(len - start), d + start);
}

static enum tpx_code server_start(const char *topox, const char *spec, struct server *s,
                                  struct tpx_err *err)
{
    char *argv[] = {(char *)topox,
                    (char *)"serve",
                    (char *)"--listen",
                    (char *)"127.0.0.1:0",
                    (char *)"--cluster",
                    (char *)spec,
                    NULL};
    posix_spawn_file_actions_t fa;
    int errp[2];
    int rc;
    double deadline = tpx_mono_s() + START_TIMEOUT_S;

    s->pid = 0;
    s->err_fd = -1;
    s->port = 0;
    s->scanned = 0;
    tpx_buf_init(&s->log, LOG_CAP);
    if (pipe(errp) != 0)
        return tpx_err_errno(err, errno, "pipe");
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawn_file_actions_addclose(&fa, errp[0]);
    posix_spawn_file_actions_addclose(&fa, errp[1]);
    rc = posix_spawn(&s->pid, topox, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(errp[1]);
    if (rc != 0) {
        close(errp[0]);
        s->pid = 0;
        return tpx_err_errno(err, rc, "cannot run '%s'", topox);
    }
    s->err_fd = errp[0];
    fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
    while (tpx_mono_s() < deadline) {
        struct pollfd p = {s->err_fd, POLLIN, 0};
        const char *line;
        int ws;

        poll(&p, 1, 100);
        server_drain(s);
        line = s->log.data ? strstr(s->log.data, "\"msg\":\"listening\"") : NULL;
        if (line && strchr(line, '\n')) {
            const char *port = strstr(line, "\"port\":");
            s->port = port ? (int)strtol(port + 7, NULL, 10) : 0;
            if (s->port <= 0)
                return tpx_err_set(err, TPX_EPARSE, "'%s serve' logged no port", topox);
            s->scanned = s->log.len;
            return TPX_OK;
        }
        if (waitpid(s->pid, &ws, WNOHANG) == s->pid) {
            char last[512];
            s->pid = 0;
            server_drain(s);
            last_line(s, last, sizeof(last));
            return tpx_err_set(err, TPX_EIO, "'%s serve' exited with status %d: %s", topox,
                               exit_status(ws), last);
        }
    }
    return tpx_err_set(err, TPX_ETIMEOUT, "'%s serve' did not log \"listening\" within %d s", topox,
                       START_TIMEOUT_S);
}

/* SIGTERM, wait; the exit status (128 + signal), or -1 when there was no child. */
static int server_stop(struct server *s)
{
    int ws = 0;
    int status = -1;

    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        while (waitpid(s->pid, &ws, 0) < 0 && errno == EINTR)
            ;
        status = exit_status(ws);
        s->pid = 0;
    }
    if (s->err_fd >= 0) {
        server_drain(s);
        close(s->err_fd);
        s->err_fd = -1;
    }
    return status;
}

/* The bind decision the server logged for pod name: rack, domain and pipeline stage. */
static bool find_bind_decision(struct server *s, const char *name, struct outcome *o)
{
    bool found = false;
    char *p;

    server_drain(s);
    if (!s->log.data)
        return false;
    p = s->log.data + s->scanned;
    while (*p) {
        char *nl = strchr(p, '\n');
        json_t *line;

        if (!nl)
            break; /* a partial line: read it next time */
        line = strstr(p, "\"verb\":\"bind\"") && strstr(p, "\"decision\"")
                   ? json_loadb(p, (size_t)(nl - p), 0, NULL)
                   : NULL;
        if (line) {
            const char *pod = json_string_value(json_object_get(line, "pod"));
            const char *rack = json_string_value(json_object_get(line, "rack"));
            const char *dom = json_string_value(json_object_get(line, "domain"));
            json_t *stage = json_object_get(line, "stage");

            if (pod && strcmp(pod, name) == 0 && rack && rack[0]) {
                snprintf(o->rack, sizeof(o->rack), "%s", rack);
                snprintf(o->domain, sizeof(o->domain), "%s", dom && dom[0] ? dom : "-");
                if (json_is_integer(stage))
                    snprintf(o->stage, sizeof(o->stage), "%lld",
                             (long long)json_integer_value(stage));
                found = true;
            }
            json_decref(line);
        }
        p = nl + 1;
    }
    s->scanned = (size_t)(p - s->log.data);
    return found;
}

/* --- HTTP --------------------------------------------------------------------------------------
 */

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct client *c = ctx;
    struct tpx_err err = TPX_ERR_INIT;

    if (tpx_buf_add(&c->body, data, size * nmemb, &err) != TPX_OK)
        return 0; /* over the cap: curl fails the transfer */
    return size * nmemb;
}

static enum tpx_code client_init(struct client *c, int port, struct tpx_err *err)
{
    memset(c, 0, sizeof(*c));
    tpx_buf_init(&c->body, RESP_CAP);
    snprintf(c->base, sizeof(c->base), "http://127.0.0.1:%d", port);
    c->h = curl_easy_init();
    c->hdr = curl_slist_append(NULL, "Content-Type: application/json");
    if (c->hdr)
        c->hdr = curl_slist_append(c->hdr, "Expect:");
    if (!c->h || !c->hdr)
        return tpx_err_set(err, TPX_ENOMEM, "curl: out of memory");
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(c->h, CURLOPT_USERAGENT, "topox-drive (kube-scheduler extender client)");
    return TPX_OK;
}

static void client_release(struct client *c)
{
    if (c->h)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->hdr);
    tpx_buf_release(&c->body);
    c->h = NULL;
    c->hdr = NULL;
}

/* POST body (or GET when body is NULL) to path; *status is the HTTP status. The answer is in
 * c->body until the next call. TPX_EIO when the request could not be made. */
static enum tpx_code client_call(struct client *c, const char *path, const char *body, long *status,
                                 struct tpx_err *err)
{
    char url[128];
    CURLcode cc;

    snprintf(url, sizeof(url), "%s%s", c->base, path);
    tpx_buf_reset(&c->body);
    c->curl_err[0] = '\0';
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    if (body) {
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdr);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    } else {
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
    }
    cc = curl_easy_perform(c->h);
    if (cc != CURLE_OK)
        return tpx_err_set(err, TPX_EIO, "%s %s: %s", body ? "POST" : "GET", url,
                           c->curl_err[0] ? c->curl_err : curl_easy_strerror(cc));
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, status);
    return TPX_OK;
}

/* POST a JSON value; the answer parsed into *out (NULL when it is not JSON). */
static enum tpx_code post_json(struct client *c, const char *path, const json_t *v, long *status,
                               json_t **out, struct tpx_err *err)
{
    char *body = json_dumps(v, JSON_COMPACT);
    enum tpx_code rc;

    *out = NULL;
    if (!body)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    rc = client_call(c, path, body, status, err);
    free(body);
    if (rc == TPX_OK && c->body.data)
        *out = json_loadb(c->body.data, c->body.len, 0, NULL);
    return rc;
}

/* --- pods and nodes ----------------------------------------------------------------------------
 */

/* A stable UUID-shaped uid from the pod's namespace and name (the fixed hash key: the same in
 * every run). */
static void make_uid(const char *ns, const char *name, char *out, size_t n)
{
    uint64_t h =
        tpx_hash_step(&tpx_hash_fixed_key, tpx_hash_step(&tpx_hash_fixed_key, 0, ns), name);
    uint64_t h2 = tpx_hash_step(&tpx_hash_fixed_key, h, "uid");

    snprintf(out, n, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(h >> 32),
             (unsigned)(h >> 16) & 0xffffu, (unsigned)h & 0xfffu, (unsigned)(h2 >> 52) & 0xfffu,
             (unsigned long long)(h2 & 0xffffffffffffULL));
}

/* The first spec.schedulerName anywhere in v, or NULL. Borrowed from v. */
static const char *find_scheduler_name(const json_t *v, unsigned depth)
{
    const char *key;
    const json_t *x;
    size_t i;

    if (depth > 64)
        return NULL;
    if (json_is_object(v)) {
        const char *s = json_string_value(json_object_get(v, "schedulerName"));
        if (s)
            return s;
        json_object_foreach((json_t *)v, key, x)
        {
            s = find_scheduler_name(x, depth + 1);
            if (s)
                return s;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            const char *s = find_scheduler_name(x, depth + 1);
            if (s)
                return s;
        }
    }
    return NULL;
}

static void set_kv(json_t *obj, const struct topo_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* the first pair wins, as in the lookups of the policy core */
        if (kv[i].key && kv[i].value && !json_object_get(obj, kv[i].key))
            json_object_set_new(obj, kv[i].key, json_string(kv[i].value));
    }
}

/* The Pod object a controller would create from these facts. NULL when out of memory. */
static json_t *pod_object(const struct pol_pod_facts *f, const struct pod *p, const char *sched)
{
    json_t *labels = json_object();
    json_t *ann = json_object();
    json_t *cmd = json_array();
    json_t *ctr;
    json_t *pod;

    set_kv(labels, f->labels, f->nlabels);
    set_kv(ann, f->annotations, f->nannotations);
    for (size_t i = 0; i < f->nargv; i++)
        json_array_append_new(cmd, json_string(f->argv[i]));
    ctr = json_pack("{s:s,s:o}", "name", "main", "command", cmd);
    if (ctr && f->resource && f->accel > 0) {
        char q[16];
        snprintf(q, sizeof(q), "%u", f->accel);
        json_object_set_new(
            ctr, "resources",
            json_pack("{s:{s:s},s:{s:s}}", "limits", f->resource, q, "requests", f->resource, q));
    }
    pod = json_pack("{s:{s:s,s:s,s:s,s:o,s:o},s:{s:s,s:[o]},s:{s:s}}", "metadata", "name", p->name,
                    "namespace", p->ns, "uid", p->uid, "labels", labels, "annotations", ann, "spec",
                    "schedulerName", sched, "containers", ctr, "status", "phase", "Pending");
    return pod;
}

/* A Ready Node object for synthetic node i (NodeList item, for --ncc false). */
static json_t *node_object(const struct topo_cluster *c, size_t i)
{
    const struct topo_node_info *n = topo_cluster_node(c, i);
    struct topo_kv kv[16];
    char storage[16][64];
    size_t nl = topo_synthetic_node_labels(c, i, kv, storage, 16);
    json_t *labels = json_object();
    json_t *alloc = json_object();
    char q[16];

    json_object_set_new(labels, "kubernetes.io/hostname", json_string(n->name));
    set_kv(labels, kv, nl);
    snprintf(q, sizeof(q), "%u", n->accel_alloc);
    if (n->resource)
        json_object_set_new(alloc, n->resource, json_string(q));
    return json_pack("{s:s,s:s,s:{s:s,s:o},s:{},s:{s:O,s:o,s:[{s:s,s:s}]}}", "kind", "Node",
                     "apiVersion", "v1", "metadata", "name", n->name, "labels", labels, "spec",
                     "status", "capacity", alloc, "allocatable", alloc, "conditions", "type",
                     "Ready", "status", "True");
}

/* --- one pod through filter, prioritize, bind --------------------------------------------------
 */

struct reason_count {
    char *reason;
    size_t n;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kube-scheduler's FitError text: "0/N nodes are available: <count> <reason>, ... ." with the
 * "<count> <reason>" strings sorted, and failures of the unresolvable map taking precedence. */
static void fit_error(const json_t *res, size_t nnodes, char *out, size_t n)
{
    json_t *merged = json_object();
    json_t *hist = json_object();
    const char *key;
    json_t *v;
    char **items = NULL;
    size_t ni = 0;
    size_t off;

    json_object_update(merged, json_object_get(res, "FailedNodes"));
    json_object_update(merged, json_object_get(res, "FailedAndUnresolvableNodes"));
    json_object_foreach(merged, key, v)
    {
        const char *r = json_string_value(v) ? json_string_value(v) : "rejected";
        json_int_t c = json_integer_value(json_object_get(hist, r));
        json_object_set_new(hist, r, json_integer(c + 1));
    }
    items = calloc(json_object_size(hist) + 1, sizeof(*items));
    json_object_foreach(hist, key, v)
    {
        char line[512];
        if (!items)
            break;
        snprintf(line, sizeof(line), "%lld %s", (long long)json_integer_value(v), key);
        items[ni] = strdup(line);
        if (items[ni])
            ni++;
    }
    if (items)
        qsort(items, ni, sizeof(*items), cmp_str);
    off = (size_t)snprintf(out, n, "0/%zu nodes are available: ", nnodes);
    for (size_t i = 0; i < ni; i++) {
        if (off < n)
            off += (size_t)snprintf(out + off, n - off, "%s%s", i ? ", " : "", items[i]);
        free(items[i]);
    }
    if (off < n)
        snprintf(out + off, n - off, ".");
    free(items);
    json_decref(hist);
    json_decref(merged);
}

/* The names of the nodes that passed, from NodeNames (NCC) or Nodes.items (full objects). */
static json_t *passed_names(const json_t *res, bool ncc)
{
    json_t *names = json_array();
    const json_t *x;
    size_t i;

    if (ncc) {
        json_array_foreach(json_object_get(res, "NodeNames"), i, x)
        {
            if (json_is_string(x))
                json_array_append(names, (json_t *)x);
        }
        return names;
    }
    json_array_foreach(json_object_get(json_object_get(res, "Nodes"), "items"), i, x)
    {
        json_t *nm = json_object_get(json_object_get(x, "metadata"), "name");
        if (json_is_string(nm))
            json_array_append(names, nm);
    }
    return names;
}

/* ExtenderArgs for pod over the given nodes: names (NCC) or a NodeList (full). */
static json_t *extender_args(const struct pod *p, bool ncc, json_t *names, json_t *nodelist)
{
    if (ncc)
        return json_pack("{s:O,s:n,s:O}", "Pod", p->obj, "Nodes", "NodeNames", names);
    return json_pack("{s:O,s:O,s:n}", "Pod", p->obj, "Nodes", nodelist, "NodeNames");
}

struct drive {
    struct opts o;
    struct topo_cluster *cluster;
    json_t *all_names;
    json_t *all_nodes; /* NodeList, for --ncc false */
    unsigned *used;    /* accelerators of the pods bound to each node */
    struct server srv;
    struct client cli;
};

/* The nodes NodeResourcesFit passes for p: names (NCC) or a NodeList, of the nodes that have
 * p's resource with p's accelerators free after the pods bound so far. NULL when out of memory. */
static json_t *fit_nodes(const struct drive *d, const struct pod *p)
{
    json_t *out = d->o.ncc ? json_array() : json_pack("{s:{},s:[]}", "metadata", "items");
    size_t n = topo_cluster_node_count(d->cluster);

    for (size_t i = 0; out && i < n; i++) {
        const struct topo_node_info *ni = topo_cluster_node(d->cluster, i);
        if (p->accel > 0 &&
            (!ni->resource || !p->resource || strcmp(ni->resource, p->resource) != 0 ||
             ni->accel_alloc < d->used[i] + p->accel))
            continue;
        if (d->o.ncc)
            json_array_append(out, json_array_get(d->all_names, i));
        else
            json_array_append(json_object_get(out, "items"),
                              json_array_get(json_object_get(d->all_nodes, "items"), i));
    }
    return out;
}

static void schedule_pod(struct drive *d, const struct pod *p, struct outcome *o)
{
    size_t nnodes = topo_cluster_node_count(d->cluster);
    struct tpx_err err = TPX_ERR_INIT;
    json_t *args = NULL;
    json_t *res = NULL;
    json_t *names = NULL;
    json_t *prio = NULL;
    json_t *bind = NULL;
    json_t *fit = NULL;
    const char *error;
    long status = 0;
    size_t best = 0;
    long long best_score = -1;

    memset(o, 0, sizeof(*o));
    snprintf(o->stage, sizeof(o->stage), "-");
    snprintf(o->score, sizeof(o->score), "-");

    /* kube-scheduler's own filters first: NodeResourcesFit leaves the extender only the nodes
     * that have the pod's resource free (its other filters pass every synthetic node) */
    fit = fit_nodes(d, p);
    if (!fit) {
        snprintf(o->why, sizeof(o->why), "out of memory");
        goto out;
    }
    if (json_array_size(d->o.ncc ? fit : json_object_get(fit, "items")) == 0) {
        snprintf(o->why, sizeof(o->why), "0/%zu nodes are available: %zu Insufficient %s", nnodes,
                 nnodes, p->resource ? p->resource : "resources");
        goto out;
    }
    args = extender_args(p, d->o.ncc, fit, fit);
    if (!args || post_json(&d->cli, "/filter", args, &status, &res, &err) != TPX_OK) {
        snprintf(o->why, sizeof(o->why), "%s", err.code ? err.msg : "out of memory");
        goto out;
    }
    if (status != 200) {
        snprintf(o->why, sizeof(o->why), "failed filter with extender at URL %s/filter, code %ld",
                 d->cli.base, status);
        goto out;
    }
    error = json_string_value(json_object_get(res, "Error"));
    if (!json_is_object(res) || (error && error[0])) {
        snprintf(o->why, sizeof(o->why), "filter: %s",
                 error ? error : "the answer is not an ExtenderFilterResult");
        goto out;
    }
    names = passed_names(res, d->o.ncc);
    o->passed = json_array_size(names);
    if (o->passed == 0) {
        fit_error(res, nnodes, o->why, sizeof(o->why));
        goto out;
    }

    /* prioritize: only with more than one node left (one node is chosen directly) */
    if (o->passed > 1) {
        json_t *pa = extender_args(p, d->o.ncc, names, json_object_get(res, "Nodes"));
        json_t *x;
        size_t i;

        if (!pa || post_json(&d->cli, "/prioritize", pa, &status, &prio, &err) != TPX_OK) {
            json_decref(pa);
            snprintf(o->why, sizeof(o->why), "%s", err.code ? err.msg : "out of memory");
            goto out;
        }
        json_decref(pa);
        /* a failed prioritize is ignored by the scheduler: every node then scores 0 */
        json_array_foreach(names, i, x)
        {
            long long sc = 0;
            const json_t *hp;
            size_t k;
            json_array_foreach(status == 200 ? prio : NULL, k, hp)
            {
                const char *host = json_string_value(json_object_get(hp, "Host"));
                if (host && strcmp(host, json_string_value(x)) == 0)
                    sc = (long long)json_integer_value(json_object_get(hp, "Score"));
            }
            if (sc > best_score) {
                best_score = sc;
                best = i;
            }
        }
        snprintf(o->score, sizeof(o->score), "%lld", best_score);
    }
    snprintf(o->node, sizeof(o->node), "%s", json_string_value(json_array_get(names, best)));

    /* bind */
    bind = json_pack("{s:s,s:s,s:s,s:s}", "PodName", p->name, "PodNamespace", p->ns, "PodUID",
                     p->uid, "Node", o->node);
    json_decref(res);
    res = NULL;
    if (!bind || post_json(&d->cli, "/bind", bind, &status, &res, &err) != TPX_OK) {
        snprintf(o->why, sizeof(o->why), "%s", err.code ? err.msg : "out of memory");
        goto out;
    }
    error = json_string_value(json_object_get(res, "Error"));
    if (status != 200) {
        snprintf(o->why, sizeof(o->why), "failed bind with extender at URL %s/bind, code %ld",
                 d->cli.base, status);
        goto out;
    }
    if (!json_is_object(res) || (error && error[0])) {
        snprintf(o->why, sizeof(o->why), "bind to '%s': %s", o->node,
                 error ? error : "the answer is not an ExtenderBindingResult");
        goto out;
    }
    o->bound = true;
    {
        size_t ni = topo_cluster_find(d->cluster, o->node);
        if (ni != TOPO_NONE)
            d->used[ni] += p->accel;
    }
    if (!find_bind_decision(&d->srv, p->name, o)) {
        /* a pod without topology intent: only the node's rack is known */
        size_t ni = topo_cluster_find(d->cluster, o->node);
        snprintf(o->rack, sizeof(o->rack), "%s",
                 ni == TOPO_NONE
                     ? "-"
                     : topo_cluster_rack_name(d->cluster, topo_cluster_node_rack(d->cluster, ni)));
        snprintf(o->domain, sizeof(o->domain), "-");
    }
out:
    server_drain(&d->srv);
    json_decref(args);
    json_decref(res);
    json_decref(names);
    json_decref(prio);
    json_decref(bind);
    json_decref(fit);
}

/* --- the summary -------------------------------------------------------------------------------
 */

static void print_state(struct drive *d)
{
    struct tpx_err err = TPX_ERR_INIT;
    long status = 0;
    json_t *st;
    const json_t *x;
    size_t i;

    if (client_call(&d->cli, "/debug/state", NULL, &status, &err) != TPX_OK || status != 200) {
        printf("\n(no /debug/state: %s)\n", err.code ? err.msg : "HTTP error");
        return;
    }
    st = json_loadb(d->cli.body.data, d->cli.body.len, 0, NULL);
    printf("\nracks (the extender's view):\n");
    json_array_foreach(json_object_get(st, "racks"), i, x)
    {
        printf("  %-8s %3lld/%-3lld GPUs free, %3lld reserved, largest TP placeable now %lld\n",
               json_string_value(json_object_get(x, "rack")),
               (long long)json_integer_value(json_object_get(x, "accel_free")),
               (long long)json_integer_value(json_object_get(x, "accel_total")),
               (long long)json_integer_value(json_object_get(x, "accel_reserved")),
               (long long)json_integer_value(json_object_get(x, "largest_tp_now")));
    }
    printf("groups:\n");
    if (json_array_size(json_object_get(st, "groups")) == 0)
        printf("  (none)\n");
    json_array_foreach(json_object_get(st, "groups"), i, x)
    {
        const char *rack = json_string_value(json_object_get(x, "rack"));
        printf("  %-28s rack %-6s %lld/%lld pods placed, %lld GPUs reserved\n",
               json_string_value(json_object_get(x, "display")), rack ? rack : "-",
               (long long)json_integer_value(json_object_get(x, "members_placed")),
               (long long)json_integer_value(json_object_get(x, "group_size")),
               (long long)json_integer_value(json_object_get(x, "accel_reserved")));
    }
    json_decref(st);
}

/* --- main --------------------------------------------------------------------------------------
 */

/* Namespace of pod i: from the name ("ns/name") of the job it belongs to. */
static void pod_ns(const struct obj_manifest *m, size_t i, char *out, size_t n)
{
    snprintf(out, n, "default");
    for (size_t j = 0; j < m->njobs; j++) {
        const struct obj_manifest_job *jb = &m->jobs[j];
        size_t first = m->replica_first_pod[jb->first_replica];
        size_t end = m->replica_first_pod[jb->first_replica + jb->nreplicas];
        const char *slash = strchr(jb->name, '/');

        if (i >= first && i < end && slash) {
            snprintf(out, n, "%.*s", (int)(slash - jb->name), jb->name);
            return;
        }
    }
}

static enum tpx_code load_pods(struct drive *d, struct obj_manifest *m, struct pod **pods,
                               const char **sched_out, struct obj_yaml_docs *sched_docs,
                               struct tpx_err *err)
{
    const char *sched = NULL;

    for (size_t f = 0; f < d->o.nfiles; f++) {
        if (obj_manifest_add_file(m, d->o.files[f], err) != TPX_OK)
            return err->code;
    }
    if (obj_manifest_finish(m, err) != TPX_OK) {
        tpx_err_prefix(err, "%s", d->o.files[0]);
        return err->code;
    }
    /* the scheduler name is not part of the facts: read it from the first manifest */
    if (obj_yaml_load_file(d->o.files[0], (size_t)64 << 20, sched_docs, err) != TPX_OK)
        return err->code;
    for (size_t k = 0; k < sched_docs->n && !sched; k++)
        sched = find_scheduler_name(sched_docs->docs[k], 0);
    *sched_out = sched ? sched : DEFAULT_SCHEDULER;
    *pods = calloc(m->npods ? m->npods : 1, sizeof(**pods));
    if (!*pods)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->npods; i++) {
        struct pod *p = &(*pods)[i];
        p->name = m->names[i];
        pod_ns(m, i, p->ns, sizeof(p->ns));
        make_uid(p->ns, p->name, p->uid, sizeof(p->uid));
        p->obj = pod_object(obj_manifest_pod_facts(m, i), p, *sched_out);
        p->accel = obj_manifest_pod_facts(m, i)->accel;
        p->resource = obj_manifest_pod_facts(m, i)->resource;
        if (!p->obj)
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    return TPX_OK;
}

static enum tpx_code load_cluster(struct drive *d, struct tpx_err *err)
{
    size_t n;

    d->cluster = topo_cluster_synthetic(d->o.cluster, err);
    if (!d->cluster) {
        tpx_err_prefix(err, "--cluster '%s'", d->o.cluster);
        return err->code;
    }
    n = topo_cluster_node_count(d->cluster);
    d->all_names = json_array();
    d->all_nodes = json_pack("{s:{},s:[]}", "metadata", "items");
    d->used = calloc(n + 1, sizeof(*d->used));
    if (!d->all_names || !d->all_nodes || !d->used)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(d->all_names, json_string(topo_cluster_node(d->cluster, i)->name));
        if (!d->o.ncc)
            json_array_append_new(json_object_get(d->all_nodes, "items"),
                                  node_object(d->cluster, i));
    }
    return TPX_OK;
}

int main(int argc, char **argv)
{
    struct drive d;
    struct obj_manifest m;
    struct obj_yaml_docs sched_docs = {0};
    struct tpx_err err = TPX_ERR_INIT;
    struct pod *pods = NULL;
    const char *sched = DEFAULT_SCHEDULER;
    size_t bound = 0;
    int rc;
    int srv_status = -1;
    int status = 1;

    memset(&d, 0, sizeof(d));
    d.srv.err_fd = -1;
    obj_manifest_init(&m);
    rc = parse_args(argc, argv, &d.o);
    if (rc != 0) {
        free(d.o.files);
        return rc < 0 ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "topox-drive: curl_global_init failed\n");
        free(d.o.files);
        return 1;
    }
    if (load_cluster(&d, &err) != TPX_OK ||
        load_pods(&d, &m, &pods, &sched, &sched_docs, &err) != TPX_OK) {
        fprintf(stderr, "topox-drive: %s\n", err.msg);
        goto out;
    }
    if (server_start(d.o.topox, d.o.cluster, &d.srv, &err) != TPX_OK ||
        client_init(&d.cli, d.srv.port, &err) != TPX_OK) {
        fprintf(stderr, "topox-drive: %s\n", err.msg);
        goto out;
    }
    printf("topox serve is listening on 127.0.0.1:%d (pid %ld); cluster '%s': %zu nodes in %zu "
           "racks\n",
           d.srv.port, (long)d.srv.pid, d.o.cluster, topo_cluster_node_count(d.cluster),
           topo_cluster_rack_count(d.cluster));
    for (size_t j = 0; j < m.njobs; j++)
        printf("%s: %s %s, %zu replica%s\n", m.jobs[j].source, m.jobs[j].kind, m.jobs[j].name,
               m.jobs[j].nreplicas, m.jobs[j].nreplicas == 1 ? "" : "s");
    printf("%zu pods (schedulerName %s), sent as kube-scheduler does with nodeCacheCapable: %s\n\n",
           m.npods, sched, d.o.ncc ? "true (NodeNames)" : "false (full Node objects)");
    printf("%-22s %-12s %-6s %-12s %-5s %-5s %s\n", "POD", "NODE", "RACK", "DOMAIN", "STAGE",
           "SCORE", "FILTER");
    for (size_t i = 0; i < m.npods; i++) {
        struct outcome o;
        char pod[300];

        snprintf(pod, sizeof(pod), "%s/%s", pods[i].ns, pods[i].name);
        schedule_pod(&d, &pods[i], &o);
        if (o.bound) {
            bound++;
            printf("%-22s %-12s %-6s %-12s %-5s %-5s %zu/%zu nodes passed\n", pod, o.node, o.rack,
                   o.domain, o.stage, o.score, o.passed, topo_cluster_node_count(d.cluster));
        } else {
            printf("%-22s not scheduled: %s\n", pod, o.why);
        }
        fflush(stdout);
    }
    printf("(SCORE is the extender's 0..10; '-' means one node passed the filter, so the scheduler "
           "skips prioritize)\n");
    print_state(&d);
    status = bound == m.npods ? 0 : 1;
out:
    client_release(&d.cli);
    if (d.srv.pid > 0) {
        srv_status = server_stop(&d.srv);
        printf("\ntopox serve stopped with SIGTERM: exit status %d\n", srv_status);
        if (srv_status != 0) {
            char last[512];
            last_line(&d.srv, last, sizeof(last));
            fprintf(stderr, "topox-drive: topox serve exited with status %d: %s\n", srv_status,
                    last);
            status = 1;
        }
        printf("%zu/%zu pods bound\n", bound, m.npods);
    }
    server_stop(&d.srv);
    tpx_buf_release(&d.srv.log);
    for (size_t i = 0; pods && i < m.npods; i++)
        json_decref(pods[i].obj);
    free(pods);
    obj_yaml_docs_release(&sched_docs);
    obj_manifest_release(&m);
    json_decref(d.all_names);
    free(d.used);
    json_decref(d.all_nodes);
    topo_cluster_free(d.cluster);
    free(d.o.files);
    curl_global_cleanup();
    return status;
}
