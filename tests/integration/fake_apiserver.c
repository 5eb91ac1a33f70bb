/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/fake_apiserver.c - in-process fake Kubernetes API server (MHD, a thread per
 * connection so that a held watch or a slow answer blocks nobody else). Test code: aborts on
 * out-of-memory instead of handling it. */
#include "fake_apiserver.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NLISTS 7
#define MAX_WATCH_SCRIPTS 32
#define MAX_BINDS 256

struct watch_script {
    char *path;
    char *body;
    size_t chunk;
    enum fake_watch_end end;
    int status; /* > 0: a plain status answer instead of a stream */
};

struct record {
    char *line; /* "METHOD PATH?query" */
    char *method;
    char *body;
    char *ctype;
    char *auth;
};

struct fake_api {
    struct MHD_Daemon *d;
    int port;
    char url[64];
    char *fixtures;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    char *token;
    json_t *lists[NLISTS]; /* nodes, pods, then the DRA kinds (list_paths) */
    struct watch_script scripts[MAX_WATCH_SCRIPTS];
    size_t nscripts;
    unsigned fail_n;
    int fail_status;
    unsigned delay_n;
    unsigned delay_ms;
    char *failm_method; /* fake_api_fail_method() */
    unsigned failm_n;
    int failm_status;
    char *failm_fixture;
    char *bound[MAX_BINDS];
    size_t nbound;
    json_t *events;     /* "ns/name" -> Event: what was created */
    unsigned lose_n;    /* fake_api_lose_answers(): events created, then no answer */
    unsigned event_seq; /* names for generateName */
    struct record *recs;
    size_t nrecs;
    size_t arecs;
};

/* Per-connection upload. */
struct req {
    char *body;
    size_t len;
};

/* A streaming answer in progress. */
struct stream {
    struct fake_api *f;
    char *data;
    size_t len;
    size_t off;
    size_t chunk;
    enum fake_watch_end end;
    int held_ms;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        abort();
    return p;
}

static char *xstrdup(const char *s)
{
    char *p;

    if (!s)
        return NULL;
    p = strdup(s);
    if (!p)
        abort();
    return p;
}

static char *slurp(const char *dir, const char *name)
{
    char path[1024];
    FILE *fp;
    long n;
    char *p;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    p = xmalloc((size_t)n + 1);
    if (fread(p, 1, (size_t)n, fp) != (size_t)n) {
        fclose(fp);
        free(p);
        return NULL;
    }
    p[n] = '\0';
    fclose(fp);
    return p;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* What is listed and watched. ComputeDomains (no CRD) and PodGroups (scheduling.k8s.io/v1beta1
 * off, as in a 1.37 cluster without the beta API) are not served (404) until set. */
static const char *const list_paths[NLISTS] = {
    "/api/v1/nodes",
    "/api/v1/pods",
    "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/resource.k8s.io/v1/resourceclaims",
    "/apis/resource.k8s.io/v1/deviceclasses",
    "/apis/resource.nvidia.com/v1beta1/computedomains",
    "/apis/scheduling.k8s.io/v1beta1/podgroups",
};
static const char *const list_files[NLISTS] = {
    "nodes-list.json",          "pods-list.json",          "resourceslices-list.json",
    "resourceclaims-list.json", "deviceclasses-list.json", "computedomains-list.json",
    "podgroups-list.json",
};
#define FIRST_ABSENT 5 /* lists from here on are not served until set */

static int list_index(const char *path)
{
    for (int i = 0; i < NLISTS; i++) {
        if (strcmp(path, list_paths[i]) == 0)
            return i;
    }
    return -1;
}

/* ---- answers ---------------------------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", "application/json");
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    enum MHD_Result rc = answer(c, status, s);

    free(s);
    json_decref(j);
    return rc;
}

static enum MHD_Result answer_status(struct MHD_Connection *c, unsigned status, const char *reason,
                                     const char *msg)
{
    json_t *j = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                          "v1", "metadata", "status", "Failure", "message", msg, "reason", reason,
                          "code", (int)status);

    return answer_json(c, status, j);
}

static enum MHD_Result answer_fixture(struct fake_api *f, struct MHD_Connection *c, unsigned status,
                                      const char *name)
{
    char *s = slurp(f->fixtures, name);
    enum MHD_Result rc;

    if (!s)
        return answer_status(c, 500, "InternalError", "fake: fixture missing");
    rc = answer(c, status, s);
    free(s);
    return rc;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *s = cls;
    size_t n;

    (void)pos;
    if (s->off < s->len) {
        n = s->len - s->off;
        if (s->chunk && n > s->chunk)
            n = s->chunk;
        if (n > max)
            n = max;
        memcpy(buf, s->data + s->off, n);
        s->off += n;
        /* A pause between pieces so the client's reads see them apart, mid-event. */
        if (s->chunk && s->off < s->len)
            sleep_ms(2);
        return (ssize_t)n;
    }
    if (s->end == FAKE_WATCH_CLOSE)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (s->end == FAKE_WATCH_DROP)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    /* Held: nothing to send; wake up now and then to notice a stop. */
    for (;;) {
        bool stop;

        pthread_mutex_lock(&s->f->mu);
        stop = s->f->stopping;
        pthread_mutex_unlock(&s->f->mu);
        if (stop || s->held_ms > 60000)
            return MHD_CONTENT_READER_END_OF_STREAM;
        sleep_ms(20);
        s->held_ms += 20;
    }
}

static void stream_free(void *cls)
{
    struct stream *s = cls;

    free(s->data);
    free(s);
}

static enum MHD_Result answer_watch(struct fake_api *f, struct MHD_Connection *c, const char *path)
{
    struct watch_script ws = {0};
    bool found = false;
    struct stream *s;
    struct MHD_Response *r;
    enum MHD_Result rc;

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nscripts; i++) {
        if (strcmp(f->scripts[i].path, path) == 0) {
            ws = f->scripts[i];
            memmove(&f->scripts[i], &f->scripts[i + 1],
                    (f->nscripts - i - 1) * sizeof(f->scripts[0]));
            f->nscripts--;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&f->mu);
    if (found && ws.status > 0) {
        rc = answer(c, (unsigned)ws.status, ws.body);
        free(ws.path);
        free(ws.body);
        return rc;
    }
    s = xmalloc(sizeof(*s));
    memset(s, 0, sizeof(*s));
    s->f = f;
    if (found) {
        s->data = ws.body;
        s->len = strlen(ws.body);
        s->chunk = ws.chunk;
        s->end = ws.end;
        free(ws.path);
    } else {
        s->end = FAKE_WATCH_HOLD;
    }
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
    MHD_add_response_header(r, "Content-Type", "application/json");
    rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* A body cut in the middle: the declared length is never reached. */
static ssize_t cut_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    const char *half = "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":[";
    size_t n = strlen(half);

    (void)cls;
    if (pos > 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (n > max)
        n = max;
    memcpy(buf, half, n);
    return (ssize_t)n;
}

static enum MHD_Result answer_cut(struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_callback(4096, 1024, cut_read, NULL, NULL);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", "application/json");
    rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer_list(struct fake_api *f, struct MHD_Connection *c, int idx)
{
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
    size_t limit = lim ? (size_t)strtoul(lim, NULL, 10) : 0;
    size_t off = 0;
    const char *key;
    json_t *items;
    json_t *page;
    json_t *out;
    json_t *v;
    size_t total;

    if (cont && strncmp(cont, "loop", 4) == 0) {
        /* a faulty server: the token it was given, back again with the same page */
        out = json_pack("{s:s,s:s,s:{s:s,s:s},s:[]}", "kind", "List", "apiVersion", "v1",
                        "metadata", "resourceVersion", "1", "continue", cont, "items");
        return answer_json(c, 200, out);
    }
    if (cont) {
        if (strncmp(cont, "off-", 4) != 0)
            return answer_status(c, 410, "Expired",
                                 "The provided continue parameter is too old to display a "
                                 "consistent list result. You can start a new list without the "
                                 "continue parameter.");
        off = (size_t)strtoul(cont + 4, NULL, 10);
    }
    /* Copy only this page's items (and the list's small top level): copying the whole list for
     * every page made a 50 000-pod list quadratic. */
    out = json_object();
    page = json_array();
    pthread_mutex_lock(&f->mu);
    json_object_foreach(f->lists[idx], key, v)
    {
        if (strcmp(key, "items") != 0)
            json_object_set_new(out, key, json_deep_copy(v));
    }
    items = json_object_get(f->lists[idx], "items");
    total = json_array_size(items);
    for (size_t i = off; i < total && (limit == 0 || i < off + limit); i++)
        json_array_append_new(page, json_deep_copy(json_array_get(items, i)));
    pthread_mutex_unlock(&f->mu);
    json_object_set_new(out, "items", page);
    if (limit && off + limit < total) {
        char tok[64];

        snprintf(tok, sizeof(tok), "off-%zu", off + limit);
        json_object_set_new(json_object_get(out, "metadata"), "continue", json_string(tok));
        json_object_set_new(json_object_get(out, "metadata"), "remainingItemCount",
                            json_integer((json_int_t)(total - off - limit)));
    }
    return answer_json(c, 200, out);
}

/* The served item `name` (in namespace ns; NULL: any) of list idx, itself (borrowed), or NULL. */
static json_t *served_item(struct fake_api *f, int idx, const char *ns, const char *name)
{
    json_t *it;
    size_t i;

    json_array_foreach(json_object_get(f->lists[idx], "items"), i, it)
    {
        json_t *m = json_object_get(it, "metadata");
        const char *n = json_string_value(json_object_get(m, "name"));
        const char *s = json_string_value(json_object_get(m, "namespace"));

        if (n && strcmp(n, name) == 0 && (!ns || (s && strcmp(s, ns) == 0)))
            return it;
    }
    return NULL;
}

static json_t *find_item(struct fake_api *f, int idx, const char *ns, const char *name)
{
    json_t *it = served_item(f, idx, ns, name);

    return it ? json_deep_copy(it) : NULL;
}

/* RFC 7386 JSON merge patch of target (an object) by patch (an object): null deletes a key,
 * an object merges into the member (replacing a non-object), anything else replaces it. */
static void merge_patch(json_t *target, json_t *patch)
{
    const char *key;
    json_t *v;

    json_object_foreach(patch, key, v)
    {
        json_t *t = json_object_get(target, key);

        if (json_is_null(v)) {
            json_object_del(target, key);
        } else if (json_is_object(v)) {
            if (!json_is_object(t)) {
                t = json_object();
                json_object_set_new(target, key, t);
            }
            merge_patch(t, v);
        } else {
            json_object_set(target, key, v);
        }
    }
}

/* Apply a merge patch to the served item `name` of list idx (0 nodes, 1 pods; ns NULL for
 * nodes); its new copy with kind and apiVersion (as the API server answers a PATCH), or NULL when
 * there is no such item. Call with f->mu held. */
static json_t *patch_locked(struct fake_api *f, int idx, const char *ns, const char *name,
                            json_t *patch)
{
    json_t *it = served_item(f, idx, ns, name);
    json_t *out;

    if (!it)
        return NULL;
    merge_patch(it, patch);
    out = json_deep_copy(it);
    json_object_set_new(out, "kind", json_string(idx == 0 ? "Node" : "Pod"));
    json_object_set_new(out, "apiVersion", json_string("v1"));
    return out;
}

static enum MHD_Result answer_bind(struct fake_api *f, struct MHD_Connection *c, const char *ns,
                                   const char *name, const char *body)
{
    json_t *b = body ? json_loads(body, 0, NULL) : NULL;
    const char *bn = json_string_value(json_object_get(json_object_get(b, "metadata"), "name"));
    char key[512];
    json_t *pod;
    bool again = false;

    if (!b || !bn || strcmp(bn, name) != 0) {
        json_decref(b);
        return answer_status(c, 400, "BadRequest",
                             "name in URL does not match name in Binding object");
    }
    json_decref(b);
    if (strcmp(ns, "locked") == 0)
        return answer_fixture(f, c, 403, "status-403-bind.json");
    pthread_mutex_lock(&f->mu);
    pod = find_item(f, 1, ns, name);
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    for (size_t i = 0; i < f->nbound; i++) {
        if (strcmp(f->bound[i], key) == 0)
            again = true;
    }
    if (pod && !again && f->nbound < MAX_BINDS)
        f->bound[f->nbound++] = xstrdup(key);
    pthread_mutex_unlock(&f->mu);
    if (!pod)
        return answer_fixture(f, c, 404, "status-404-pod.json");
    json_decref(pod);
    if (again)
        return answer_fixture(f, c, 409, "status-409-bind.json");
    return answer_fixture(f, c, 201, "status-201-success.json");
}

/* ---- dispatch --------------------------------------------------------------------------- */

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    char *line = cls;
    size_t n = strlen(line);

    (void)kind;
    snprintf(line + n, 2048 - n, "%s%s=%s", strchr(line, '?') ? "&" : "?", key, value ? value : "");
    return MHD_YES;
}

static void record(struct fake_api *f, struct MHD_Connection *c, const char *method,
                   const char *url, const char *body)
{
    char line[2048];
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    const char *au = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    struct record *r;

    snprintf(line, sizeof(line), "%s %s", method, url);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, line);
    pthread_mutex_lock(&f->mu);
    if (f->nrecs == f->arecs) {
        f->arecs = f->arecs ? f->arecs * 2 : 64;
        f->recs = realloc(f->recs, f->arecs * sizeof(*f->recs));
        if (!f->recs)
            abort();
    }
    r = &f->recs[f->nrecs++];
    r->line = xstrdup(line);
    r->method = xstrdup(method);
    r->body = xstrdup(body ? body : "");
    r->ctype = xstrdup(ct ? ct : "");
    r->auth = xstrdup(au ? au : "");
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static enum MHD_Result route(struct fake_api *f, struct MHD_Connection *c, const char *method,
                             const char *url, const char *body)
{
    const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    bool is_watch = watch && (strcmp(watch, "1") == 0 || strcmp(watch, "true") == 0);
    const char *au = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    unsigned delay = 0;
    int fail = -1;
    int failm = -1;
    char failm_fixture[256];
    bool auth_ok = true;
    char ns[256];
    char name[256];
    int idx;

    pthread_mutex_lock(&f->mu);
    if (f->token) {
        char want[512];

        snprintf(want, sizeof(want), "Bearer %s", f->token);
        auth_ok = au && strcmp(au, want) == 0;
    }
    if (!is_watch && auth_ok && f->delay_n > 0) {
        f->delay_n--;
        delay = f->delay_ms;
    }
    if (!is_watch && auth_ok && f->fail_n > 0) {
        f->fail_n--;
        fail = f->fail_status;
    }
    if (!is_watch && auth_ok && fail < 0 && f->failm_n > 0 &&
        (!f->failm_method || strcmp(f->failm_method, method) == 0)) {
        f->failm_n--;
        failm = f->failm_status;
        snprintf(failm_fixture, sizeof(failm_fixture), "%s",
                 f->failm_fixture ? f->failm_fixture : "status-500.json");
    }
    pthread_mutex_unlock(&f->mu);
    if (!auth_ok)
        return answer_fixture(f, c, 401, "status-401.json");
    if (failm > 0)
        return answer_fixture(f, c, (unsigned)failm, failm_fixture);
    if (delay)
        sleep_ms(delay);
    if (fail == 0)
        return answer_cut(c);
    if (fail > 0)
        return answer_fixture(f, c, (unsigned)fail, "status-500.json");

    idx = list_index(url);
    pthread_mutex_lock(&f->mu);
    if (idx >= 0 && !f->lists[idx])
        idx = -1; /* not served (yet): 404 */
    pthread_mutex_unlock(&f->mu);
    if (strcmp(method, "GET") == 0 && idx >= 0)
        return is_watch ? answer_watch(f, c, url) : answer_list(f, c, idx);
    if (strcmp(method, "GET") == 0 && sscanf(url, "/api/v1/nodes/%255[^/]", name) == 1) {
        json_t *n;

        pthread_mutex_lock(&f->mu);
        n = find_item(f, 0, NULL, name);
        pthread_mutex_unlock(&f->mu);
        if (!n)
            return answer_status(c, 404, "NotFound", "nodes not found");
        /* A single object carries kind and apiVersion (list items do not). */
        json_object_set_new(n, "kind", json_string("Node"));
        json_object_set_new(n, "apiVersion", json_string("v1"));
        return answer_json(c, 200, n);
    }
    if (strcmp(method, "POST") == 0 &&
        sscanf(url, "/api/v1/namespaces/%255[^/]/pods/%255[^/]/binding", ns, name) == 2)
        return answer_bind(f, c, ns, name, body);
    if (strcmp(method, "POST") == 0 && sscanf(url, "/api/v1/namespaces/%255[^/]/events", ns) == 1) {
        json_t *ev = body ? json_loads(body, 0, NULL) : NULL;

        json_t *md = ev ? json_object_get(ev, "metadata") : NULL;
        const char *nm = json_string_value(json_object_get(md, "name"));
        const char *gen = json_string_value(json_object_get(md, "generateName"));
        char key[600];
        char made[300];
        bool lose;

        if (!json_is_object(md) || (!nm && !gen)) {
            json_decref(ev);
            return answer_status(c, 400, "BadRequest", "bad Event body");
        }
        /* as the API server does: a name is unique per namespace, generateName gets a suffix */
        pthread_mutex_lock(&f->mu);
        if (!nm) {
            snprintf(made, sizeof(made), "%s%05x", gen, ++f->event_seq);
            json_object_set_new(md, "name", json_string(made));
            nm = made;
        }
        snprintf(key, sizeof(key), "%s/%s", ns, nm);
        if (json_object_get(f->events, key)) {
            pthread_mutex_unlock(&f->mu);
            json_decref(ev);
            return answer_status(c, 409, "AlreadyExists", "events already exists");
        }
        json_object_set(f->events, key, ev);
        lose = f->lose_n > 0;
        if (lose)
            f->lose_n--;
        pthread_mutex_unlock(&f->mu);
        if (lose) { /* created, and the connection drops before the answer */
            json_decref(ev);
            return MHD_NO;
        }
        return answer_json(c, 201, ev);
    }
    if (strcmp(method, "PATCH") == 0 && sscanf(url, "/api/v1/nodes/%255[^/]", name) == 1) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        json_t *n;

        if (!ct || strcmp(ct, "application/merge-patch+json") != 0)
            return answer_status(c, 415, "UnsupportedMediaType",
                                 "the body of the request was in an unknown format");
        json_t *p = body ? json_loads(body, 0, NULL) : NULL;

        if (!json_is_object(p)) {
            json_decref(p);
            return answer_status(c, 400, "BadRequest", "bad merge patch");
        }
        /* Applied to the served node, so that later GETs, lists and PATCHes see it. */
        pthread_mutex_lock(&f->mu);
        n = patch_locked(f, 0, NULL, name, p);
        pthread_mutex_unlock(&f->mu);
        json_decref(p);
        if (!n)
            return answer_status(c, 404, "NotFound", "nodes not found");
        return answer_json(c, 200, n);
    }
    if (strcmp(method, "PATCH") == 0 &&
        sscanf(url, "/api/v1/namespaces/%255[^/]/pods/%255[^/]/status", ns, name) == 2) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        json_t *p = body ? json_loads(body, 0, NULL) : NULL;
        json_t *pod;

        if (!ct || strcmp(ct, "application/merge-patch+json") != 0) {
            json_decref(p);
            return answer_status(c, 415, "UnsupportedMediaType",
                                 "the body of the request was in an unknown format");
        }
        if (!json_is_object(p)) {
            json_decref(p);
            return answer_status(c, 400, "BadRequest", "bad merge patch");
        }
        if (strcmp(ns, "locked") == 0) {
            json_decref(p);
            return answer_status(c, 403, "Forbidden", "pods is forbidden");
        }
        pthread_mutex_lock(&f->mu);
        pod = patch_locked(f, 1, ns, name, p);
        pthread_mutex_unlock(&f->mu);
        json_decref(p);
        if (!pod)
            return answer_status(c, 404, "NotFound", "pods not found");
        return answer_json(c, 200, pod);
    }
    return answer_status(c, 404, "NotFound", "the server could not find the requested resource");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    struct fake_api *f = cls;
    struct req *r = *req_cls;

    (void)version;
    if (!r) {
        r = xmalloc(sizeof(*r));
        memset(r, 0, sizeof(*r));
        *req_cls = r;
        return MHD_YES;
    }
    if (*upload_size) {
        r->body = realloc(r->body, r->len + *upload_size + 1);
        if (!r->body)
            abort();
        memcpy(r->body + r->len, upload, *upload_size);
        r->len += *upload_size;
        r->body[r->len] = '\0';
        *upload_size = 0;
        return MHD_YES;
    }
    record(f, c, method, url, r->body);
    return route(f, c, method, url, r->body);
}

static void on_done(void *cls, struct MHD_Connection *c, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
    struct req *r = *req_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (r) {
        free(r->body);
        free(r);
    }
    *req_cls = NULL;
}

/* ---- public ----------------------------------------------------------------------------- */

struct fake_api *fake_api_start(const char *fixtures_dir)
{
    struct fake_api *f = xmalloc(sizeof(*f));
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    memset(f, 0, sizeof(*f));
    f->fixtures = xstrdup(fixtures_dir);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->events = json_object();
    for (int i = 0; i < NLISTS; i++) {
        char *s = i < 2 ? slurp(fixtures_dir, list_files[i]) : NULL;

        /* the DRA kinds start empty (fake_api_set_list() fills them); ComputeDomains and
         * PodGroups absent */
        f->lists[i] = s ? json_loads(s, 0, NULL) : NULL;
        if (i >= 2 && i < FIRST_ABSENT)
            f->lists[i] = json_pack("{s:s,s:s,s:{s:s},s:[]}", "kind", "List", "apiVersion", "v1",
                                    "metadata", "resourceVersion", "1", "items");
        free(s);
        if (!f->lists[i] && i < FIRST_ABSENT) {
            fprintf(stderr, "fake_api: cannot load %s/%s\n", fixtures_dir, list_files[i]);
            fake_api_stop(f);
            return NULL;
        }
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                            NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_done, f, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)120, MHD_OPTION_END);
    if (!f->d) {
        fprintf(stderr, "fake_api: MHD_start_daemon failed\n");
        fake_api_stop(f);
        return NULL;
    }
    info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    f->port = info ? (int)info->port : 0;
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
    return f;
}

int fake_api_port(const struct fake_api *f)
{
    return f->port;
}

const char *fake_api_url(const struct fake_api *f)
{
    return f->url;
}

void fake_api_stop(struct fake_api *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    pthread_mutex_unlock(&f->mu);
    if (f->d)
        MHD_stop_daemon(f->d);
    for (size_t i = 0; i < f->nscripts; i++) {
        free(f->scripts[i].path);
        free(f->scripts[i].body);
    }
    for (size_t i = 0; i < f->nbound; i++)
        free(f->bound[i]);
    for (size_t i = 0; i < f->nrecs; i++) {
        free(f->recs[i].line);
        free(f->recs[i].method);
        free(f->recs[i].body);
        free(f->recs[i].ctype);
        free(f->recs[i].auth);
    }
    free(f->recs);
    json_decref(f->events);
    for (int i = 0; i < NLISTS; i++)
        json_decref(f->lists[i]);
    free(f->token);
    free(f->failm_method);
    free(f->failm_fixture);
    free(f->fixtures);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void fake_api_set_token(struct fake_api *f, const char *token)
{
    pthread_mutex_lock(&f->mu);
    free(f->token);
    f->token = xstrdup(token);
    pthread_mutex_unlock(&f->mu);
}

int fake_api_set_list(struct fake_api *f, const char *path, const char *json_text)
{
    int idx = list_index(path);
    json_t *j = json_text ? json_loads(json_text, 0, NULL) : NULL;

    if (idx < 0 || (json_text && !j)) {
        json_decref(j);
        return -1;
    }
    pthread_mutex_lock(&f->mu);
    json_decref(f->lists[idx]);
    f->lists[idx] = j;
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static void push(struct fake_api *f, struct watch_script ws)
{
    pthread_mutex_lock(&f->mu);
    if (f->nscripts < MAX_WATCH_SCRIPTS)
        f->scripts[f->nscripts++] = ws;
    pthread_mutex_unlock(&f->mu);
}

void fake_api_push_watch(struct fake_api *f, const char *path, const char *body, size_t chunk,
                         enum fake_watch_end end)
{
    struct watch_script ws = {xstrdup(path), xstrdup(body ? body : ""), chunk, end, 0};

    push(f, ws);
}

void fake_api_push_watch_status(struct fake_api *f, const char *path, int status, const char *body)
{
    struct watch_script ws = {xstrdup(path), xstrdup(body ? body : "{}"), 0, FAKE_WATCH_CLOSE,
                              status};

    push(f, ws);
}

void fake_api_fail_next(struct fake_api *f, unsigned n, int status)
{
    pthread_mutex_lock(&f->mu);
    f->fail_n = n;
    f->fail_status = status;
    pthread_mutex_unlock(&f->mu);
}

void fake_api_fail_method(struct fake_api *f, const char *method, unsigned n, int status,
                          const char *fixture)
{
    pthread_mutex_lock(&f->mu);
    free(f->failm_method);
    free(f->failm_fixture);
    f->failm_method = xstrdup(method);
    f->failm_fixture = xstrdup(fixture);
    f->failm_n = n;
    f->failm_status = status;
    pthread_mutex_unlock(&f->mu);
}

void fake_api_delay_next(struct fake_api *f, unsigned n, unsigned delay_ms)
{
    pthread_mutex_lock(&f->mu);
    f->delay_n = n;
    f->delay_ms = delay_ms;
    pthread_mutex_unlock(&f->mu);
}

void fake_api_lose_answers(struct fake_api *f, unsigned n)
{
    pthread_mutex_lock(&f->mu);
    f->lose_n = n;
    pthread_mutex_unlock(&f->mu);
}

unsigned fake_api_events(struct fake_api *f, const char *ns)
{
    const char *key;
    json_t *v;
    unsigned n = 0;
    size_t len = strlen(ns);

    pthread_mutex_lock(&f->mu);
    json_object_foreach(f->events, key, v)
    {
        if (strncmp(key, ns, len) == 0 && key[len] == '/')
            n++;
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

char *fake_api_log(struct fake_api *f)
{
    size_t total = 1;
    char *out;
    size_t off = 0;

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nrecs; i++)
        total += strlen(f->recs[i].line) + 1;
    out = xmalloc(total);
    for (size_t i = 0; i < f->nrecs; i++) {
        size_t n = strlen(f->recs[i].line);

        memcpy(out + off, f->recs[i].line, n);
        off += n;
        out[off++] = '\n';
    }
    out[off] = '\0';
    pthread_mutex_unlock(&f->mu);
    return out;
}

static unsigned count_locked(struct fake_api *f, const char *method, const char *needle)
{
    unsigned n = 0;

    for (size_t i = 0; i < f->nrecs; i++) {
        const char *path = strchr(f->recs[i].line, ' ') + 1;

        if (strcmp(f->recs[i].method, method) == 0 && strstr(path, needle))
            n++;
    }
    return n;
}

unsigned fake_api_count(struct fake_api *f, const char *method, const char *needle)
{
    unsigned n;

    pthread_mutex_lock(&f->mu);
    n = count_locked(f, method, needle);
    pthread_mutex_unlock(&f->mu);
    return n;
}

char *fake_api_last(struct fake_api *f, const char *method, const char *needle, const char *what)
{
    char *out = NULL;

    pthread_mutex_lock(&f->mu);
    for (size_t i = f->nrecs; i-- > 0;) {
        struct record *r = &f->recs[i];
        const char *path = strchr(r->line, ' ') + 1;

        if (strcmp(r->method, method) != 0 || !strstr(path, needle))
            continue;
        if (strcmp(what, "body") == 0)
            out = xstrdup(r->body);
        else if (strcmp(what, "content-type") == 0)
            out = xstrdup(r->ctype);
        else if (strcmp(what, "auth") == 0)
            out = xstrdup(r->auth);
        break;
    }
    pthread_mutex_unlock(&f->mu);
    return out;
}

unsigned fake_api_wait_count(struct fake_api *f, const char *method, const char *needle, unsigned n,
                             long timeout_ms)
{
    struct timespec ts;
    unsigned got;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    while ((got = count_locked(f, method, needle)) < n) {
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) != 0) {
            got = count_locked(f, method, needle);
            break;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return got;
}
