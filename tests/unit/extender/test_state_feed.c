/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_state_feed.c - watch events into extender/state: lists as batches,
 * pods that arrive before their node, relists that drop what vanished, finished pods, readiness
 * only after both kinds synced; and the whole path from the fake API server through kube_watch. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "extender/state_feed.h"
#include "fake_apiserver.h"

#define APIFIX TPX_FIXTURES "/apiserver"

static json_t *load(const char *name)
{
    char path[512];
    json_error_t je;
    json_t *j;

    snprintf(path, sizeof(path), "%s/%s", APIFIX, name);
    j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

static void list(struct kube_watch_sink *s, enum kube_kind kind, json_t *items)
{
    json_t *it;
    size_t i;

    s->reset(s->ctx, kind);
    json_array_foreach(items, i, it)
    {
        s->upsert(s->ctx, kind, it);
    }
    s->synced(s->ctx, kind);
}

struct fixture {
    struct ext_state *st;
    struct ext_state_feed *f;
    struct kube_watch_sink sink;
    json_t *nodes;
    json_t *pods;
};

static void fixture_init(struct fixture *x)
{
    struct tpx_err err = TPX_ERR_INIT;

    tpx_log_set_level(TPX_ERROR);
    x->st = ext_state_new(600, &err);
    cr_assert_not_null(x->st, "%s", err.msg);
    x->f = ext_state_feed_new(x->st, NULL, &err);
    cr_assert_not_null(x->f, "%s", err.msg);
    ext_state_feed_sink(x->f, &x->sink);
    x->nodes = load("nodes-list.json");
    x->pods = load("pods-list.json");
}

static void fixture_release(struct fixture *x)
{
    ext_state_feed_free(x->f);
    ext_state_free(x->st);
    json_decref(x->nodes);
    json_decref(x->pods);
}

static struct ext_state_feed_stats stats(struct fixture *x)
{
    struct ext_state_feed_stats s;

    ext_state_feed_stats(x->f, &s);
    return s;
}

Test(ext_state_feed, pods_before_nodes_wait_and_ready_needs_both_lists)
{
    struct fixture x;
    const char *why = NULL;

    fixture_init(&x);
    cr_expect_not(ext_state_ready(x.st, &why));
    list(&x.sink, KUBE_KIND_POD, json_object_get(x.pods, "items"));
    /* vllm-0 is bound to gpu-r1-n1, which the state does not know yet. */
    cr_expect_eq(stats(&x).pending, 1);
    cr_expect_eq(stats(&x).pods, 0);
    cr_expect_not(ext_state_ready(x.st, &why));
    list(&x.sink, KUBE_KIND_NODE, json_object_get(x.nodes, "items"));
    cr_expect_eq(stats(&x).nodes, 3);
    cr_expect_eq(stats(&x).pending, 0);
    cr_expect_eq(stats(&x).pods, 1);
    cr_expect_eq(stats(&x).refused, 0);
    cr_expect(ext_state_ready(x.st, &why), "%s", why ? why : "");
    fixture_release(&x);
}

Test(ext_state_feed, a_relist_drops_what_vanished_and_events_apply_one_by_one)
{
    struct fixture x;
    json_t *fewer;
    json_t *pod;
    json_t *node0;

    fixture_init(&x);
    list(&x.sink, KUBE_KIND_NODE, json_object_get(x.nodes, "items"));
    list(&x.sink, KUBE_KIND_POD, json_object_get(x.pods, "items"));
    cr_expect_eq(stats(&x).pods, 1);

    /* A relist without gpu-r2-n1 removes it. */
    fewer = json_deep_copy(json_object_get(x.nodes, "items"));
    json_array_remove(fewer, 2);
    list(&x.sink, KUBE_KIND_NODE, fewer);
    cr_expect_eq(stats(&x).nodes, 2);
    json_decref(fewer);

    /* The worker gets bound (MODIFIED with spec.nodeName): now two bound pods. */
    pod = json_deep_copy(json_array_get(json_object_get(x.pods, "items"), 1));
    json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string("gpu-r1-n2"));
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, pod);
    cr_expect_eq(stats(&x).pods, 2);
    /* It finishes: Succeeded pods hold nothing. */
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded"));
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, pod);
    cr_expect_eq(stats(&x).pods, 1);
    json_decref(pod);

    /* DELETED of the leader, then of a node. */
    x.sink.remove(x.sink.ctx, KUBE_KIND_POD, json_array_get(json_object_get(x.pods, "items"), 0));
    cr_expect_eq(stats(&x).pods, 0);
    node0 = json_array_get(json_object_get(x.nodes, "items"), 0);
    x.sink.remove(x.sink.ctx, KUBE_KIND_NODE, node0);
    cr_expect_eq(stats(&x).nodes, 1);
    fixture_release(&x);
}

Test(ext_state_feed, objects_that_cannot_be_read_are_counted_not_fatal)
{
    struct fixture x;
    json_t *bad = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "uid", "u-bad", "spec", "nodeName",
                            "gpu-r1-n1");
    json_t *c;

    fixture_init(&x);
    list(&x.sink, KUBE_KIND_NODE, json_object_get(x.nodes, "items"));
    json_object_set_new(bad, "spec",
                        json_pack("{s:s, s:[{s:s, s:{s:{s:s}}}]}", "nodeName", "gpu-r1-n1",
                                  "containers", "name", "c", "resources", "requests",
                                  "nvidia.com/gpu", "half"));
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, bad);
    c = json_pack("{s:{}}", "metadata");
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, c);
    cr_expect_eq(stats(&x).refused, 2);
    cr_expect_eq(stats(&x).pods, 0);
    json_decref(bad);
    json_decref(c);
    fixture_release(&x);
}

static bool ready(void *ctx, struct kube_watch *w)
{
    const char *why;

    (void)w;
    return ext_state_ready(ctx, &why);
}

Test(ext_state_feed, the_watch_feeds_the_state_from_the_api_server, .timeout = 60)
{
    struct fake_api *fake;
    struct fixture x;
    struct kube_config kc;
    struct kube_watch_config wc;
    struct kube_watch *w;
    struct tpx_err err = TPX_ERR_INIT;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    fake = fake_api_start(APIFIX);
    cr_assert_not_null(fake);
    fixture_init(&x);
    memset(&kc, 0, sizeof(kc));
    memset(&wc, 0, sizeof(wc));
    kc.server = strdup(fake_api_url(fake));
    wc.page_limit = 2;
    wc.backoff_min_ms = 5;
    w = kube_watch_start(&kc, &wc, &x.sink, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_expect(kube_watch_wait(w, ready, x.st, 30000), "the state never became ready");
    kube_watch_stop(w);
    cr_expect_eq(stats(&x).nodes, 3);
    cr_expect_eq(stats(&x).pods, 1);
    cr_expect_eq(stats(&x).pending, 0);
    kube_config_release(&kc);
    fixture_release(&x);
    fake_api_stop(fake);
    curl_global_cleanup();
}

static json_t *pod_on(json_t *pods, const char *uid, const char *node)
{
    json_t *pod = json_deep_copy(json_array_get(json_object_get(pods, "items"), 0));

    /* Its own pod, not a second leader of vllm-0's group: no group annotations. */
    json_object_set_new(json_object_get(pod, "metadata"), "uid", json_string(uid));
    json_object_set_new(json_object_get(pod, "metadata"), "name", json_string(uid));
    json_object_del(json_object_get(pod, "metadata"), "annotations");
    json_object_del(json_object_get(pod, "metadata"), "labels");
    json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(node));
    return pod;
}

Test(ext_state_feed, a_streamed_list_applies_pods_as_they_come_and_removes_the_rest_at_synced)
{
    struct fixture x;
    json_t *items;
    json_t *moved;
    json_t *late;
    const char *why = NULL;

    fixture_init(&x);
    items = json_object_get(x.nodes, "items");
    list(&x.sink, KUBE_KIND_NODE, items);
    list(&x.sink, KUBE_KIND_POD, json_object_get(x.pods, "items"));
    cr_expect_eq(stats(&x).nodes, 3);
    cr_expect_eq(stats(&x).pods, 1);
    cr_expect(ext_state_ready(x.st, &why), "%s", why ? why : "");

    /* A node relist that fails half way (reset, two nodes, no synced) removes nothing... */
    x.sink.reset(x.sink.ctx, KUBE_KIND_NODE);
    x.sink.upsert(x.sink.ctx, KUBE_KIND_NODE, json_array_get(items, 0));
    x.sink.upsert(x.sink.ctx, KUBE_KIND_NODE, json_array_get(items, 1));
    cr_expect_eq(stats(&x).nodes, 3);
    /* ...and the retry, which lacks gpu-r2-n1, removes it once complete. */
    x.sink.reset(x.sink.ctx, KUBE_KIND_NODE);
    x.sink.upsert(x.sink.ctx, KUBE_KIND_NODE, json_array_get(items, 0));
    x.sink.upsert(x.sink.ctx, KUBE_KIND_NODE, json_array_get(items, 1));
    cr_expect_eq(stats(&x).nodes, 3);
    x.sink.synced(x.sink.ctx, KUBE_KIND_NODE);
    cr_expect_eq(stats(&x).nodes, 2);

    /* A pod relist: each pod reaches the state as it is listed, before the list ends; a pod bound
     * to a node not known yet waits; the old pod, missing from the list, goes at synced. */
    moved = pod_on(x.pods, "u-moved", "gpu-r1-n2");
    late = pod_on(x.pods, "u-late", "gpu-late");
    x.sink.reset(x.sink.ctx, KUBE_KIND_POD);
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, moved);
    cr_expect_eq(stats(&x).pods, 2);
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, late);
    cr_expect_eq(stats(&x).pending, 1);
    x.sink.synced(x.sink.ctx, KUBE_KIND_POD);
    cr_expect_eq(stats(&x).pods, 1);
    cr_expect_eq(stats(&x).pending, 1);

    /* The late pod's node arrives as a watch event: the pending pod is applied from its compact
     * facts. */
    {
        json_t *node = json_deep_copy(json_array_get(items, 0));

        json_object_set_new(json_object_get(node, "metadata"), "name", json_string("gpu-late"));
        x.sink.upsert(x.sink.ctx, KUBE_KIND_NODE, node);
        json_decref(node);
    }
    cr_expect_eq(stats(&x).nodes, 3);
    cr_expect_eq(stats(&x).pending, 0);
    cr_expect_eq(stats(&x).pods, 2);

    /* A pod relist without the late pod drops it again. */
    x.sink.reset(x.sink.ctx, KUBE_KIND_POD);
    x.sink.upsert(x.sink.ctx, KUBE_KIND_POD, moved);
    x.sink.synced(x.sink.ctx, KUBE_KIND_POD);
    cr_expect_eq(stats(&x).pods, 1);
    cr_expect_eq(stats(&x).refused, 0);
    json_decref(moved);
    json_decref(late);
    fixture_release(&x);
}

Test(ext_state_feed, a_relist_releases_a_pod_only_our_bind_booked)
{
    struct fixture x;
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    fixture_init(&x);
    list(&x.sink, KUBE_KIND_NODE, json_object_get(x.nodes, "items"));
    list(&x.sink, KUBE_KIND_POD, json_object_get(x.pods, "items"));
    /* topox bound it a while ago; its ADDED/MODIFIED/DELETED events fell into a watch gap */
    cr_assert_eq(ext_state_bind(x.st, "u-lost", "lost", "gpu-r1-n2", time(NULL) - 60, &out, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect(!ext_state_unbind(x.st, "u-other"));
    list(&x.sink, KUBE_KIND_POD, json_object_get(x.pods, "items"));
    cr_expect_eq(stats(&x).pruned, 1, "the relist lacks it: released");
    cr_expect(!ext_state_remove_pod(x.st, "u-lost"), "already forgotten");
    cr_expect_eq(stats(&x).pods, 1, "the listed pod stays");

    /* one bound during the list (after its start) stays until its event comes */
    x.sink.reset(x.sink.ctx, KUBE_KIND_POD);
    cr_assert_eq(ext_state_bind(x.st, "u-new", "new", "gpu-r1-n2", time(NULL) + 1, &out, &err),
                 TPX_OK, "%s", err.msg);
    x.sink.synced(x.sink.ctx, KUBE_KIND_POD);
    cr_expect_eq(stats(&x).pruned, 1);
    cr_expect(ext_state_remove_pod(x.st, "u-new"));
    fixture_release(&x);
}
