/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/kube/test_watch.c - list+watch against the in-process fake API server: events
 * split mid-line, bookmarks as resume points, 410 as an ERROR event and as a status, dropped
 * connections, oversized and broken events, the pod field selector, paging (each page delivered
 * before the next is fetched), and sync gating. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "kube/watch.h"
#include "fake_apiserver.h"

#define APIFIX TPX_FIXTURES "/apiserver"
#define WAIT_MS 30000L /* a bound against hangs, never a performance claim */

static struct fake_api *fake;

/* What the sink saw. Written under the watch's mutex; read after kube_watch_stop(). */
struct rec {
    char log[32768];
    char klog[KUBE_KIND_COUNT][8192]; /* the same, one kind only: lists of two kinds interleave */
    unsigned resets[KUBE_KIND_COUNT];
    unsigned synced[KUBE_KIND_COUNT];
};

static void rec_add(struct rec *r, const char *what, enum kube_kind kind, json_t *obj)
{
    size_t n = strlen(r->log);
    const char *name =
        obj ? json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")) : NULL;

    snprintf(r->log + n, sizeof(r->log) - n, "%s %s%s%s;", what, kube_kind_name(kind),
             name ? " " : "", name ? name : "");
    n = strlen(r->klog[kind]);
    snprintf(r->klog[kind] + n, sizeof(r->klog[kind]) - n, "%s %s%s%s;", what, kube_kind_name(kind),
             name ? " " : "", name ? name : "");
}

static void on_reset(void *ctx, enum kube_kind kind)
{
    struct rec *r = ctx;

    r->resets[kind]++;
    rec_add(r, "reset", kind, NULL);
}

static void on_upsert(void *ctx, enum kube_kind kind, json_t *obj)
{
    rec_add(ctx, "upsert", kind, obj);
}

static void on_remove(void *ctx, enum kube_kind kind, json_t *obj)
{
    rec_add(ctx, "remove", kind, obj);
}

static void on_synced(void *ctx, enum kube_kind kind)
{
    struct rec *r = ctx;

    r->synced[kind]++;
    rec_add(r, "synced", kind, NULL);
}

static void on_drained(void *ctx, enum kube_kind kind)
{
    rec_add(ctx, "drained", kind, NULL);
}

static bool with_drained; /* the next start() hands the sink a drained callback */

/* As start(), with the API client's body cap (0: the default). */
static struct kube_watch *start_capped(struct rec *r, bool nodes, bool pods, unsigned page_limit,
                                       size_t max_event, size_t max_body)
{
    struct kube_config kc;
    struct kube_watch_config wc;
    struct kube_watch_sink sink = {r,         on_reset,  on_upsert,
                                   on_remove, on_synced, with_drained ? on_drained : NULL};
    struct tpx_err err = TPX_ERR_INIT;
    struct kube_watch *w;

    memset(r, 0, sizeof(*r));
    memset(&kc, 0, sizeof(kc));
    memset(&wc, 0, sizeof(wc));
    kc.server = strdup(fake_api_url(fake));
    kc.backoff_ms = 1;
    kc.max_body = max_body;
    wc.no_nodes = !nodes;
    wc.no_pods = !pods;
    wc.page_limit = page_limit;
    wc.timeout_s = 30;
    wc.max_event = max_event;
    wc.backoff_min_ms = 5;
    wc.backoff_max_ms = 20;
    w = kube_watch_start(&kc, &wc, &sink, &err);
    kube_config_release(&kc);
    cr_assert_not_null(w, "%s", err.msg);
    return w;
}

static struct kube_watch *start(struct rec *r, bool nodes, bool pods, unsigned page_limit,
                                size_t max_event)
{
    return start_capped(r, nodes, pods, page_limit, max_event, 0);
}

static char *fixture(const char *name)
{
    char path[512];
    FILE *f;
    long n;
    char *p;

    snprintf(path, sizeof(path), "%s/%s", APIFIX, name);
    f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc((size_t)n + 1);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = '\0';
    fclose(f);
    return p;
}

/* Line `i` (0-based) of a text, with its '\n', malloc'd. */
static char *line_of(const char *text, int i)
{
    const char *p = text;
    const char *e;

    while (i-- > 0)
        p = strchr(p, '\n') + 1;
    e = strchr(p, '\n');
    return strndup(p, (size_t)(e - p + 1));
}

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    tpx_log_set_level(TPX_ERROR); /* the retries below warn on purpose */
    fake = fake_api_start(APIFIX);
    cr_assert_not_null(fake);
}

static void teardown(void)
{
    fake_api_stop(fake);
    curl_global_cleanup();
}

TestSuite(kube_watch, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the line splitter ------------------------------------------------------------------- */

struct lines_out {
    char text[8192];
    unsigned n;
};

static bool collect_line(void *ctx, const char *line, size_t len)
{
    struct lines_out *o = ctx;
    size_t used = strlen(o->text);

    snprintf(o->text + used, sizeof(o->text) - used, "%.*s|", (int)len, line);
    o->n++;
    return true;
}

Test(kube_watch, lines_are_reassembled_whatever_the_chunk_boundaries)
{
    char *text = fixture("watch-nodes.jsonl");
    size_t len = strlen(text);
    struct lines_out whole = {{0}, 0};
    struct kube_watch_lines l;
    struct tpx_err err = TPX_ERR_INIT;

    kube_watch_lines_init(&l, 1 << 20);
    cr_assert_eq(kube_watch_lines_feed(&l, text, len, collect_line, &whole, &err), TPX_OK);
    cr_assert_eq(whole.n, 5);
    for (size_t cut = 0; cut <= len; cut++) {
        struct lines_out o = {{0}, 0};

        cr_assert_eq(kube_watch_lines_feed(&l, text, cut, collect_line, &o, &err), TPX_OK);
        cr_assert_eq(kube_watch_lines_feed(&l, text + cut, len - cut, collect_line, &o, &err),
                     TPX_OK);
        cr_assert_str_eq(o.text, whole.text, "split at %zu", cut);
    }
    {
        struct lines_out o = {{0}, 0};

        for (size_t i = 0; i < len; i++)
            cr_assert_eq(kube_watch_lines_feed(&l, text + i, 1, collect_line, &o, &err), TPX_OK);
        cr_expect_str_eq(o.text, whole.text);
    }
    kube_watch_lines_release(&l);
    free(text);
}

Test(kube_watch, a_line_over_the_cap_is_an_error_not_a_truncation)
{
    struct kube_watch_lines l;
    struct tpx_err err = TPX_ERR_INIT;
    struct lines_out o = {{0}, 0};

    kube_watch_lines_init(&l, 8);
    cr_expect_eq(kube_watch_lines_feed(&l, "12345678\n", 9, collect_line, &o, &err), TPX_OK);
    cr_expect_eq(kube_watch_lines_feed(&l, "1234", 4, collect_line, &o, &err), TPX_OK);
    cr_expect_eq(kube_watch_lines_feed(&l, "56789", 5, collect_line, &o, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "longer than 8 bytes") != NULL, "%s", err.msg);
    tpx_err_clear(&err);
    cr_expect_eq(kube_watch_lines_feed(&l, "123456789\n", 10, collect_line, &o, &err), TPX_ETOOBIG);
    cr_expect_str_eq(o.text, "12345678|");
    kube_watch_lines_release(&l);
}

/* ---- the loops --------------------------------------------------------------------------- */

struct want {
    enum kube_kind kind;
    unsigned long lists, watches, events, expired, failures;
};

static bool reached(void *ctx, struct kube_watch *w)
{
    struct want *want = ctx;
    struct kube_watch_stats st;

    kube_watch_get_stats(w, want->kind, &st);
    return st.lists >= want->lists && st.watches >= want->watches && st.events >= want->events &&
           st.expired >= want->expired && st.failures >= want->failures;
}

static void wait_for(struct kube_watch *w, struct want want)
{
    struct kube_watch_stats st;

    if (!kube_watch_wait(w, reached, &want, WAIT_MS)) {
        kube_watch_get_stats(w, want.kind, &st);
        cr_assert_fail("stuck: lists %lu watches %lu events %lu expired %lu failures %lu (%s)",
                       st.lists, st.watches, st.events, st.expired, st.failures, st.last_error);
    }
}

Test(kube_watch, list_then_watch_with_split_events_and_bookmarks)
{
    char *events = fixture("watch-nodes.jsonl");
    struct rec r;
    struct kube_watch *w;
    struct kube_watch_stats st;
    char *log;

    fake_api_push_watch(fake, "/api/v1/nodes", events, 7, FAKE_WATCH_CLOSE);
    w = start(&r, true, false, 0, 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 1, 2, 3, 0, 0});
    /* The counter moves before the request goes out: wait for the server to see it. */
    cr_expect_eq(fake_api_wait_count(fake, "GET", "resourceVersion=1250", 1, WAIT_MS), 1);
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    cr_expect(kube_watch_is_synced(w));
    kube_watch_stop(w);

    cr_expect_str_eq(r.log, "reset node;upsert node gpu-r1-n1;upsert node gpu-r1-n2;"
                            "upsert node gpu-r2-n1;synced node;upsert node gpu-r1-n2;"
                            "upsert node gpu-r3-n1;remove node gpu-r2-n1;");
    cr_expect_eq(st.lists, 1);
    cr_expect_eq(st.events, 3);
    cr_expect_eq(st.bookmarks, 2);
    cr_expect_eq(st.expired, 0);
    cr_expect_eq(st.failures, 0);
    cr_expect_str_eq(st.rv, "1250"); /* the last bookmark is the resume point */
    log = fake_api_log(fake);
    cr_expect(strstr(log, "GET /api/v1/nodes?limit=100\n") != NULL, "%s", log);
    cr_expect(strstr(log, "GET /api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=30&"
                          "resourceVersion=1000\n") != NULL,
              "%s", log);
    cr_expect(strstr(log, "GET /api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=30&"
                          "resourceVersion=1250\n") != NULL,
              "%s", log);
    free(log);
    free(events);
}

/* drained comes once after the events of each read of the stream, never after a list, a
 * bookmark-only read or another drained; and once after the last event. The events arrive in
 * pieces of 7 bytes, so how many reads there are is the network's business: between 1 and the
 * number of events. */
Test(kube_watch, drained_ends_each_read_that_delivered_events)
{
    char *events = fixture("watch-nodes.jsonl");
    struct rec r;
    struct kube_watch *w;
    char stripped[sizeof(r.log)] = "";
    unsigned drained = 0;
    const char *p;

    with_drained = true;
    fake_api_push_watch(fake, "/api/v1/nodes", events, 7, FAKE_WATCH_CLOSE);
    w = start(&r, true, false, 0, 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 1, 2, 3, 0, 0});
    cr_expect_eq(fake_api_wait_count(fake, "GET", "resourceVersion=1250", 1, WAIT_MS), 1);
    kube_watch_stop(w);
    for (p = r.log; (p = strstr(p, "drained node;")) != NULL; p++) {
        const char *prev = p == r.log ? NULL : p - 1;

        drained++;
        while (prev && prev > r.log && prev[-1] != ';')
            prev--;
        cr_expect(prev && (strncmp(prev, "upsert ", 7) == 0 || strncmp(prev, "remove ", 7) == 0),
                  "drained after an event only: %s", r.log);
    }
    cr_expect_geq(drained, 1, "%s", r.log);
    cr_expect_leq(drained, 3, "%s", r.log);
    cr_expect(strlen(r.log) > 13 && strcmp(r.log + strlen(r.log) - 13, "drained node;") == 0,
              "the last event's read is drained: %s", r.log);
    for (p = r.log; *p;) {
        const char *end = strchr(p, ';');
        size_t n = strlen(stripped);

        if (strncmp(p, "drained ", 8) != 0)
            snprintf(stripped + n, sizeof(stripped) - n, "%.*s", (int)(end - p + 1), p);
        p = end + 1;
    }
    cr_expect_str_eq(stripped, "reset node;upsert node gpu-r1-n1;upsert node gpu-r1-n2;"
                               "upsert node gpu-r2-n1;synced node;upsert node gpu-r1-n2;"
                               "upsert node gpu-r3-n1;remove node gpu-r2-n1;");
    free(events);
}

Test(kube_watch, an_error_event_410_drops_the_view_and_relists)
{
    char *events = fixture("watch-nodes.jsonl");
    char *e410 = fixture("watch-error-410.jsonl");
    char *first = line_of(events, 0);
    char body[4096];
    struct rec r;
    struct kube_watch *w;
    struct kube_watch_stats st;

    snprintf(body, sizeof(body), "%s%s", first, e410);
    fake_api_push_watch(fake, "/api/v1/nodes", body, 0, FAKE_WATCH_CLOSE);
    w = start(&r, true, false, 0, 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 2, 2, 1, 1, 0});
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    kube_watch_stop(w);
    cr_expect_eq(st.expired, 1);
    cr_expect_eq(st.events, 1);
    cr_expect_eq(r.resets[KUBE_KIND_NODE], 2);
    cr_expect_eq(r.synced[KUBE_KIND_NODE], 2);
    cr_expect(strstr(r.log, "synced node;upsert node gpu-r1-n2;reset node;") != NULL, "%s", r.log);
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes?limit=100"), 2);
    free(first);
    free(e410);
    free(events);
}

Test(kube_watch, a_410_status_relists_too)
{
    char *gone = fixture("status-410-expired.json");
    struct rec r;
    struct kube_watch *w;
    struct kube_watch_stats st;

    fake_api_push_watch_status(fake, "/api/v1/nodes", 410, gone);
    w = start(&r, true, false, 0, 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 2, 2, 0, 1, 0});
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    kube_watch_stop(w);
    cr_expect_eq(st.expired, 1);
    cr_expect_eq(st.failures, 0);
    cr_expect(strstr(st.last_error, "HTTP 410: too old resource version") != NULL, "%s",
              st.last_error);
    cr_expect_eq(r.resets[KUBE_KIND_NODE], 2);
    free(gone);
}

Test(kube_watch, a_dropped_stream_resumes_from_the_last_event_without_relisting)
{
    char *events = fixture("watch-nodes.jsonl");
    char *l0 = line_of(events, 0);
    char *l2 = line_of(events, 2);
    char *l4 = line_of(events, 4);
    char body[8192];
    struct rec r;
    struct kube_watch *w;
    struct kube_watch_stats st;
    char *log;

    /* The first stream dies 40 bytes into the ADDED event. */
    snprintf(body, sizeof(body), "%s%.40s", l0, l2);
    fake_api_push_watch(fake, "/api/v1/nodes", body, 16, FAKE_WATCH_DROP);
    snprintf(body, sizeof(body), "%s%s", l2, l4);
    fake_api_push_watch(fake, "/api/v1/nodes", body, 16, FAKE_WATCH_CLOSE);
    w = start(&r, true, false, 0, 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 1, 3, 2, 0, 1});
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    kube_watch_stop(w);
    cr_expect_eq(st.lists, 1);
    cr_expect_eq(st.failures, 1);
    cr_expect_str_eq(st.rv, "1250");
    /* The half-sent ADDED is applied once, from the second stream. */
    cr_expect_str_eq(r.log, "reset node;upsert node gpu-r1-n1;upsert node gpu-r1-n2;"
                            "upsert node gpu-r2-n1;synced node;upsert node gpu-r1-n2;"
                            "upsert node gpu-r3-n1;");
    log = fake_api_log(fake);
    cr_expect(strstr(log, "timeoutSeconds=30&resourceVersion=1101\n") != NULL, "%s", log);
    free(log);
    free(l0);
    free(l2);
    free(l4);
    free(events);
}

Test(kube_watch, broken_or_oversized_events_force_a_relist)
{
    struct rec r;
    struct kube_watch *w;
    struct kube_watch_stats st;
    char *events = fixture("watch-nodes.jsonl");

    fake_api_push_watch(fake, "/api/v1/nodes", "{\"type\":\"ADDED\",\"object\":{\"metadata\"\n", 0,
                        FAKE_WATCH_CLOSE);
    w = start(&r, true, false, 0, 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 2, 2, 0, 0, 1});
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    kube_watch_stop(w);
    cr_expect(strstr(st.last_error, "bad event") != NULL, "%s", st.last_error);
    cr_expect_eq(r.resets[KUBE_KIND_NODE], 2);

    fake_api_push_watch(fake, "/api/v1/nodes", events, 0, FAKE_WATCH_CLOSE);
    w = start(&r, true, false, 0, 256);
    wait_for(w, (struct want){KUBE_KIND_NODE, 2, 2, 0, 0, 1});
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    kube_watch_stop(w);
    cr_expect(strstr(st.last_error, "longer than 256 bytes") != NULL, "%s", st.last_error);
    cr_expect_eq(st.events, 0);
    free(events);
}

Test(kube_watch, pods_are_paged_with_the_phase_selector_and_sync_waits_for_both_kinds)
{
    char *pods = fixture("watch-pods.jsonl");
    struct rec r;
    struct kube_watch *w;
    struct kube_watch_stats st;
    char *log;

    /* A node list without a resourceVersion cannot be watched from: nodes never sync. */
    cr_assert_eq(fake_api_set_list(fake, "/api/v1/nodes",
                                   "{\"kind\":\"NodeList\",\"metadata\":{},\"items\":[]}"),
                 0);
    fake_api_push_watch(fake, "/api/v1/pods", pods, 5, FAKE_WATCH_CLOSE);
    w = start(&r, true, true, 2, 0);
    wait_for(w, (struct want){KUBE_KIND_POD, 1, 2, 2, 0, 0});
    wait_for(w, (struct want){KUBE_KIND_NODE, 0, 0, 0, 0, 2});
    cr_expect_not(kube_watch_is_synced(w));
    kube_watch_get_stats(w, KUBE_KIND_NODE, &st);
    cr_expect(strstr(st.last_error, "no metadata.resourceVersion") != NULL, "%s", st.last_error);
    cr_expect_not(st.synced);

    cr_assert_eq(fake_api_set_list(fake, "/api/v1/nodes",
                                   "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":"
                                   "\"7\"},\"items\":[]}"),
                 0);
    wait_for(w, (struct want){KUBE_KIND_NODE, 1, 0, 0, 0, 2});
    cr_expect(kube_watch_is_synced(w));
    kube_watch_get_stats(w, KUBE_KIND_POD, &st);
    kube_watch_stop(w);

    cr_expect_eq(st.events, 2);
    cr_expect_eq(st.bookmarks, 1);
    cr_expect_str_eq(st.rv, "1180");
    cr_expect(strstr(r.klog[KUBE_KIND_POD], "reset pod;upsert pod vllm-0;upsert pod vllm-0-1;"
                                            "upsert pod sglang-0;synced pod;") != NULL,
              "%s", r.klog[KUBE_KIND_POD]);
    cr_expect(strstr(r.log, "remove pod sglang-0;") != NULL, "%s", r.log);
    log = fake_api_log(fake);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=2&fieldSelector=status.phase!=Succeeded,"
                          "status.phase!=Failed\n") != NULL,
              "%s", log);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=2&continue=off-2&fieldSelector=status.phase!="
                          "Succeeded,status.phase!=Failed\n") != NULL,
              "%s", log);
    cr_expect(strstr(log, "GET /api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=30&"
                          "resourceVersion=1000&fieldSelector=status.phase!=Succeeded,"
                          "status.phase!=Failed\n") != NULL,
              "%s", log);
    free(log);
    free(pods);
}

Test(kube_watch, stop_ends_a_quiet_watch)
{
    struct rec r;
    struct kube_watch *w = start(&r, true, true, 0, 0);

    wait_for(w, (struct want){KUBE_KIND_POD, 1, 1, 0, 0, 0});
    wait_for(w, (struct want){KUBE_KIND_NODE, 1, 1, 0, 0, 0});
    kube_watch_stop(w); /* both held open by the fake: must return */
    cr_expect_eq(r.synced[KUBE_KIND_NODE], 1);
    cr_expect_eq(r.synced[KUBE_KIND_POD], 1);
    kube_watch_stop(NULL);
}

/* Records, for every listed node, how many list GETs the server had seen when it arrived. */
struct paged {
    unsigned gets_at[16];
    unsigned n;
    unsigned resets, synced;
    unsigned synced_at_n; /* items seen when synced came */
};

static void paged_reset(void *ctx, enum kube_kind kind)
{
    struct paged *p = ctx;

    (void)kind;
    p->resets++;
}

static void paged_upsert(void *ctx, enum kube_kind kind, json_t *obj)
{
    struct paged *p = ctx;

    (void)kind;
    (void)obj;
    if (p->n < 16)
        p->gets_at[p->n] = fake_api_count(fake, "GET", "/api/v1/nodes?limit=2");
    p->n++;
}

static void paged_synced(void *ctx, enum kube_kind kind)
{
    struct paged *p = ctx;

    (void)kind;
    p->synced++;
    p->synced_at_n = p->n;
}

Test(kube_watch, a_list_of_many_pages_reaches_the_sink_page_by_page)
{
    struct paged p;
    struct kube_config kc;
    struct kube_watch_config wc;
    struct kube_watch_sink sink = {&p, paged_reset, paged_upsert, NULL, paged_synced, NULL};
    struct tpx_err err = TPX_ERR_INIT;
    struct kube_watch *w;

    memset(&p, 0, sizeof(p));
    cr_assert_eq(
        fake_api_set_list(fake, "/api/v1/nodes",
                          "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"9\"},"
                          "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":"
                          "{\"name\":\"b\"}},{\"metadata\":{\"name\":\"c\"}},{\"metadata\":"
                          "{\"name\":\"d\"}},{\"metadata\":{\"name\":\"e\"}}]}"),
        0);
    memset(&kc, 0, sizeof(kc));
    memset(&wc, 0, sizeof(wc));
    kc.server = strdup(fake_api_url(fake));
    wc.no_pods = true;
    wc.page_limit = 2;
    wc.timeout_s = 30;
    w = kube_watch_start(&kc, &wc, &sink, &err);
    kube_config_release(&kc);
    cr_assert_not_null(w, "%s", err.msg);
    wait_for(w, (struct want){KUBE_KIND_NODE, 1, 0, 0, 0, 0});
    kube_watch_stop(w);
    /* Three pages of 2, 2 and 1: each page's items arrive before the next page is even asked
     * for, so the list is never held whole. */
    cr_assert_eq(p.n, 5);
    cr_expect_eq(p.resets, 1);
    cr_expect_eq(p.synced, 1);
    cr_expect_eq(p.synced_at_n, 5);
    cr_expect_eq(p.gets_at[0], 1);
    cr_expect_eq(p.gets_at[1], 1);
    cr_expect_eq(p.gets_at[2], 2);
    cr_expect_eq(p.gets_at[3], 2);
    cr_expect_eq(p.gets_at[4], 3);
}

/* Issue 12 item 10: 150 pods of about 2 KiB each against a 64 KiB body cap. The default page of
 * 100 (about 200 KiB) and then 50 are too big; the list asks for the same page with 25 and the
 * watch becomes synced, with every pod delivered once. */
Test(kube_watch, a_page_over_the_body_cap_is_asked_for_again_with_half_the_limit)
{
    enum { NPODS = 150 };
    struct tpx_buf list;
    struct tpx_err err = TPX_ERR_INIT;
    char pad[2049];
    struct rec r;
    struct kube_watch *w;
    unsigned upserts = 0;
    char *log;

    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    tpx_buf_init(&list, (size_t)1 << 20);
    tpx_buf_addf(&list, &err,
                 "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},"
                 "\"items\":[");
    for (int i = 0; i < NPODS; i++)
        tpx_buf_addf(&list, &err,
                     "%s{\"metadata\":{\"name\":\"big-%03d\",\"namespace\":\"ml\",\"uid\":"
                     "\"u-%03d\",\"annotations\":{\"pad\":\"%s\"}},\"spec\":{\"nodeName\":"
                     "\"gpu-r1-n1\"},\"status\":{\"phase\":\"Running\"}}",
                     i ? "," : "", i, i, pad);
    tpx_buf_addf(&list, &err, "]}");
    cr_assert_eq(err.code, TPX_OK, "%s", err.msg);
    cr_assert_eq(fake_api_set_list(fake, "/api/v1/pods", list.data), 0);
    tpx_buf_release(&list);

    w = start_capped(&r, true, true, 0, 0, (size_t)64 << 10);
    for (int i = 0; i < 200 && !kube_watch_is_synced(w); i++)
        usleep(50 * 1000);
    cr_expect(kube_watch_is_synced(w), "never synced: %s", r.log);
    kube_watch_stop(w);
    for (const char *p = r.klog[KUBE_KIND_POD]; (p = strstr(p, "upsert pod big-")); p++)
        upserts++;
    cr_expect_eq(upserts, NPODS);
    cr_expect_eq(r.resets[KUBE_KIND_POD], 1);
    log = fake_api_log(fake);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=100&") != NULL, "%s", log);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=50&") != NULL, "%s", log);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=25&") != NULL, "%s", log);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=25&continue=off-25&") != NULL, "%s", log);
    cr_expect_null(strstr(log, "limit=12"), "%s", log);
    cr_expect_null(strstr(log, "limit=500"), "%s", log);
    free(log);
}

/* The DRA kinds go the same way as nodes: LIST, WATCH from its resourceVersion with bookmarks,
 * a 410 relists; the ComputeDomain CRD that the server lacks (404) is an empty list that counts as
 * synced, so readiness does not wait for it, and it is asked for again later. */
Test(kube_watch, dra_kinds_list_watch_and_relist_and_a_missing_crd_is_an_empty_list)
{
    const char *slices = "{\"kind\":\"ResourceSliceList\",\"apiVersion\":\"resource.k8s.io/v1\","
                         "\"metadata\":{\"resourceVersion\":\"50\"},\"items\":[{\"metadata\":{"
                         "\"name\":\"s1\",\"uid\":\"u1\",\"resourceVersion\":\"40\"},\"spec\":{"
                         "\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":"
                         "\"n1\"},\"devices\":[{\"name\":\"gpu-0\"}]}}]}";
    const char *claim_events =
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"55\"}}}\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c1\",\"namespace\":\"ml\","
        "\"uid\":\"c1\",\"resourceVersion\":\"56\"}}}\n"
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
        "\"message\":\"too old resource version: 56 (60)\"}}\n";
    struct kube_config kc;
    struct kube_watch_config wc;
    struct rec r;
    struct kube_watch_sink sink = {&r, on_reset, on_upsert, on_remove, on_synced, NULL};
    struct tpx_err err = TPX_ERR_INIT;
    struct kube_watch *w;
    struct kube_watch_stats st;
    char *log;

    cr_assert_eq(fake_api_set_list(fake, "/apis/resource.k8s.io/v1/resourceslices", slices), 0);
    fake_api_push_watch(fake, "/apis/resource.k8s.io/v1/resourceclaims", claim_events, 5,
                        FAKE_WATCH_CLOSE);
    memset(&r, 0, sizeof(r));
    memset(&kc, 0, sizeof(kc));
    memset(&wc, 0, sizeof(wc));
    kc.server = strdup(fake_api_url(fake));
    kc.backoff_ms = 1;
    wc.no_nodes = true;
    wc.no_pods = true;
    wc.dra = true;
    wc.timeout_s = 30;
    wc.backoff_min_ms = 5;
    wc.backoff_max_ms = 20;
    w = kube_watch_start(&kc, &wc, &sink, &err);
    kube_config_release(&kc);
    cr_assert_not_null(w, "%s", err.msg);
    wait_for(w, (struct want){KUBE_KIND_CLAIM, 2, 2, 1, 1, 0});
    wait_for(w, (struct want){KUBE_KIND_DOMAIN, 2, 0, 0, 0, 0});
    cr_expect(kube_watch_is_synced(w));
    kube_watch_get_stats(w, KUBE_KIND_DOMAIN, &st);
    cr_expect(st.absent, "computedomains are not served here");
    cr_expect(st.synced);
    cr_expect_eq(st.failures, 0, "a kind that is not served is no failure");
    kube_watch_get_stats(w, KUBE_KIND_CLAIM, &st);
    cr_expect_eq(st.bookmarks, 1);
    kube_watch_stop(w);
    cr_expect(strstr(r.klog[KUBE_KIND_SLICE],
                     "reset resourceslice;upsert resourceslice s1;synced resourceslice;") ==
                  r.klog[KUBE_KIND_SLICE],
              "%s", r.klog[KUBE_KIND_SLICE]);
    cr_expect(strstr(r.klog[KUBE_KIND_CLAIM],
                     "reset resourceclaim;synced resourceclaim;upsert resourceclaim c1;reset "
                     "resourceclaim;synced resourceclaim;") == r.klog[KUBE_KIND_CLAIM],
              "%s", r.klog[KUBE_KIND_CLAIM]);
    cr_expect(strstr(r.klog[KUBE_KIND_DOMAIN], "reset computedomain;synced computedomain;") ==
                  r.klog[KUBE_KIND_DOMAIN],
              "%s", r.klog[KUBE_KIND_DOMAIN]);
    cr_expect_eq(r.resets[KUBE_KIND_NODE], 0, "nodes were not asked for");
    log = fake_api_log(fake);
    cr_expect(strstr(log, "GET /apis/resource.k8s.io/v1/resourceslices?watch=1&allowWatchBookmarks="
                          "true&timeoutSeconds=30&resourceVersion=50\n") != NULL,
              "%s", log);
    cr_expect(strstr(log, "GET /apis/resource.k8s.io/v1/deviceclasses?limit=100\n") != NULL, "%s",
              log);
    cr_expect(strstr(log, "GET /apis/resource.nvidia.com/v1beta1/computedomains?limit=100\n") !=
                  NULL,
              "%s", log);
    free(log);
}
