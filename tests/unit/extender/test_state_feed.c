/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_state_feed.c - watch events into extender/state: lists as batches,
 * pods that arrive before their node, relists that drop what vanished, finished pods, readiness
 * only after both kinds synced; DRA slices, claims and classes on the real objects of
 * tests/fixtures/dra (capacity, held devices, claim demand); and the whole path from the fake API
 * server through kube_watch. */
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

/* ---- DRA ------------------------------------------------------------------------------------ */

/* One watch event as kube_watch delivers it: the event, then the end of its read (drained),
 * where the DRA view is built anew. */
static void event(struct fixture *x, bool up, enum kube_kind kind, json_t *obj)
{
    if (up)
        x->sink.upsert(x->sink.ctx, kind, obj);
    else
        x->sink.remove(x->sink.ctx, kind, obj);
    x->sink.drained(x->sink.ctx, kind);
}

#define DRAFIX TPX_FIXTURES "/dra"

/* The items of the two-node snapshot of one kind, as a watch would list them (a new array). */
static json_t *snap_items(const char *kind)
{
    json_error_t je;
    json_t *snap = json_load_file(DRAFIX "/snapshot-two-nodes.json", 0, &je);
    json_t *out = json_array();
    json_t *it;
    size_t i;

    cr_assert_not_null(snap, "%s", je.text);
    json_array_foreach(json_object_get(snap, "items"), i, it)
    {
        json_t *md = json_object_get(it, "metadata");
        char uid[300];

        if (strcmp(json_string_value(json_object_get(it, "kind")), kind) != 0)
            continue;
        /* as the API server gives every object */
        snprintf(uid, sizeof(uid), "uid-%s", json_string_value(json_object_get(md, "name")));
        if (!json_object_get(md, "uid"))
            json_object_set_new(md, "uid", json_string(uid));
        json_array_append(out, it);
    }
    json_decref(snap);
    return out;
}

static void list_kind(struct fixture *x, enum kube_kind kind, const char *k)
{
    json_t *items = snap_items(k);

    list(&x->sink, kind, items);
    json_decref(items);
}

struct node_free {
    const char *name;
    long free;
    long alloc;
};

static void read_free(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct node_free *nf = ctx;
    const struct topo_cluster *c = pol_ledger_cluster(l);
    size_t i = topo_cluster_find(c, nf->name);

    (void)pods_seen;
    if (i == TOPO_NONE)
        return;
    nf->free = pol_ledger_node_free(l, i);
    nf->alloc = topo_cluster_node(c, i)->accel_alloc;
}

/* Free accelerators on node (-1: unknown); *alloc (may be NULL) its capacity. */
static long free_on(struct fixture *x, const char *node, long *alloc)
{
    struct node_free nf = {node, -1, -1};

    ext_state_read(x->st, read_free, &nf);
    if (alloc)
        *alloc = nf.alloc;
    return nf.free;
}

static void dra_init(struct fixture *x)
{
    fixture_init(x);
    tpx_log_set_level(TPX_WARN);
    ext_state_feed_watch_dra(x->f, true);
}

static void list_empty(struct fixture *x, enum kube_kind kind)
{
    json_t *none = json_array();

    list(&x->sink, kind, none);
    json_decref(none);
}

Test(ext_state_feed, dra_capacity_is_the_slices_gpus_minus_what_claims_hold)
{
    struct fixture x;
    const char *why = NULL;
    long alloc;

    dra_init(&x);
    list_kind(&x, KUBE_KIND_NODE, "Node");
    list_kind(&x, KUBE_KIND_POD, "Pod");
    cr_expect_not(ext_state_ready(x.st, &why), "readiness waits for the DRA kinds");
    list_kind(&x, KUBE_KIND_CLASS, "DeviceClass");
    list_kind(&x, KUBE_KIND_SLICE, "ResourceSlice");
    list_kind(&x, KUBE_KIND_CLAIM, "ResourceClaim");
    list_empty(&x, KUBE_KIND_DOMAIN);
    cr_expect(ext_state_ready(x.st, &why), "%s", why ? why : "");
    /* node a: 4 GPUs in its slice, allocatable lists none; trainer-0 holds 3 through the claim
     * made from its template, notebook 1 through the claim behind nvidia.com/gpu (KEP-5004) */
    cr_expect_eq(free_on(&x, "gpu-node-a", &alloc), 0);
    cr_expect_eq(alloc, 4);
    cr_expect_eq(free_on(&x, "gpu-node-b", &alloc), 4);
    cr_expect_eq(alloc, 4);
    cr_expect_eq(stats(&x).dra_pods, 2);
    cr_expect_eq(stats(&x).dra_held, 0, "both claims are counted by their pods, not twice");
    cr_expect_eq(stats(&x).refused, 0);
    fixture_release(&x);
}

Test(ext_state_feed, dra_claims_before_their_pods_are_counted_once_whatever_the_order)
{
    struct fixture x;
    json_t *claims = snap_items("ResourceClaim");
    json_t *pods = snap_items("Pod");

    dra_init(&x);
    list_kind(&x, KUBE_KIND_NODE, "Node");
    list_kind(&x, KUBE_KIND_CLASS, "DeviceClass");
    list_kind(&x, KUBE_KIND_SLICE, "ResourceSlice");
    list(&x.sink, KUBE_KIND_CLAIM, claims);
    list_empty(&x, KUBE_KIND_POD);
    /* no pod counts them yet: the claims' devices are held on their node */
    cr_expect_eq(free_on(&x, "gpu-node-a", NULL), 0);
    cr_expect_eq(stats(&x).dra_held, 4);
    /* the pods come: they count the devices, the held ones are let go */
    event(&x, true, KUBE_KIND_POD, json_array_get(pods, 0));
    event(&x, true, KUBE_KIND_POD, json_array_get(pods, 1));
    cr_expect_eq(free_on(&x, "gpu-node-a", NULL), 0);
    cr_expect_eq(stats(&x).dra_held, 0);
    /* trainer-0 goes, its claim stays allocated a while: still held */
    event(&x, false, KUBE_KIND_POD, json_array_get(pods, 0));
    cr_expect_eq(free_on(&x, "gpu-node-a", NULL), 0);
    cr_expect_eq(stats(&x).dra_held, 3);
    /* then the claim is deleted: its 3 GPUs are free */
    event(&x, false, KUBE_KIND_CLAIM, json_array_get(claims, 0));
    cr_expect_eq(free_on(&x, "gpu-node-a", NULL), 3);
    cr_expect_eq(stats(&x).dra_held, 0);
    /* a pod relist keeps the held devices (they are no pod of the list) */
    event(&x, false, KUBE_KIND_POD, json_array_get(pods, 1));
    cr_expect_eq(stats(&x).dra_held, 1);
    list_empty(&x, KUBE_KIND_POD);
    cr_expect_eq(free_on(&x, "gpu-node-a", NULL), 3);
    cr_expect_eq(stats(&x).dra_held, 1);
    json_decref(claims);
    json_decref(pods);
    fixture_release(&x);
}

Test(ext_state_feed, dra_kinds_listed_before_the_nodes_count_once_the_nodes_come)
{
    struct fixture x;
    const char *why = NULL;
    long alloc;

    dra_init(&x);
    list_kind(&x, KUBE_KIND_CLASS, "DeviceClass");
    list_kind(&x, KUBE_KIND_SLICE, "ResourceSlice");
    list_kind(&x, KUBE_KIND_CLAIM, "ResourceClaim");
    list_empty(&x, KUBE_KIND_DOMAIN);
    list_empty(&x, KUBE_KIND_POD);
    list_kind(&x, KUBE_KIND_NODE, "Node");
    cr_expect(ext_state_ready(x.st, &why), "%s", why ? why : "");
    cr_expect_eq(free_on(&x, "gpu-node-a", &alloc), 0, "the claims' 4 GPUs are held");
    cr_expect_eq(alloc, 4);
    cr_expect_eq(stats(&x).dra_held, 4);
    fixture_release(&x);
}

Test(ext_state_feed, dra_a_slice_deleted_gives_the_node_back_its_allocatable)
{
    struct fixture x;
    json_t *slices = snap_items("ResourceSlice");
    long alloc;

    dra_init(&x);
    list_kind(&x, KUBE_KIND_NODE, "Node");
    list_kind(&x, KUBE_KIND_CLASS, "DeviceClass");
    list(&x.sink, KUBE_KIND_SLICE, slices);
    cr_expect_eq(free_on(&x, "gpu-node-b", &alloc), 4);
    event(&x, false, KUBE_KIND_SLICE, json_array_get(slices, 1));
    cr_expect_eq(free_on(&x, "gpu-node-b", &alloc), 0);
    cr_expect_eq(alloc, 0, "node b's allocatable lists no GPUs");
    /* a relist that has it again */
    list(&x.sink, KUBE_KIND_SLICE, slices);
    cr_expect_eq(free_on(&x, "gpu-node-b", &alloc), 4);
    json_decref(slices);
    fixture_release(&x);
}

/* A pending pod in ml whose one claim is `claim` (a new object). */
static json_t *claim_pod(const char *name, const char *claim)
{
    char uid[64];

    snprintf(uid, sizeof(uid), "u-%s", name);
    return json_pack("{s:{s:s,s:s,s:s},s:{s:[{s:s,s:s}],s:[{s:s}]}}", "metadata", "name", name,
                     "namespace", "ml", "uid", uid, "spec", "resourceClaims", "name", "gpus",
                     "resourceClaimName", claim, "containers", "name", "main");
}

/* The pod's facts as the filter reads them, with what its claims ask for (res: its resource). */
static struct pol_pod_facts claim_facts(struct fixture *x, json_t *pod, char *res, size_t len)
{
    struct pol_pod_facts facts;

    memset(&facts, 0, sizeof(facts));
    facts.ns = "ml";
    ext_state_feed_pod_facts(x->f, pod, &facts, res, len);
    return facts;
}

Test(ext_state_feed, dra_a_pending_pods_demand_comes_from_its_claim)
{
    struct fixture x;
    json_t *claims = snap_items("ResourceClaim");
    json_t *want = json_deep_copy(json_array_get(claims, 0));
    json_t *pod = claim_pod("waiting", "want-5");
    struct pol_pod_facts facts;
    char res[64];

    dra_init(&x);
    list_kind(&x, KUBE_KIND_CLASS, "DeviceClass");
    /* not seen yet: nothing is counted (and the pod is not refused for it) */
    cr_expect_eq(claim_facts(&x, pod, res, sizeof(res)).accel, 0);
    /* a claim of 5 GPUs, not allocated */
    json_object_set_new(json_object_get(want, "metadata"), "name", json_string("want-5"));
    json_object_set_new(json_object_get(want, "metadata"), "uid", json_string("c-want"));
    json_object_del(want, "status");
    json_object_set_new(
        json_object_get(
            json_array_get(
                json_object_get(json_object_get(json_object_get(want, "spec"), "devices"),
                                "requests"),
                0),
            "exactly"),
        "count", json_integer(5));
    event(&x, true, KUBE_KIND_CLAIM, want);
    facts = claim_facts(&x, pod, res, sizeof(res));
    cr_expect_eq(facts.accel, 5);
    cr_expect_str_eq(facts.resource, "nvidia.com/gpu");
    cr_expect(facts.resource == res, "copied out of the feed's DRA view");
    json_decref(want);
    json_decref(pod);
    json_decref(claims);
    fixture_release(&x);
}

/* A burst of 1 000 claim events (one read of the watch) rebuilds the DRA view once, when the
 * read is drained, not once per event; the claims are kept as they come and counted from the
 * rebuild on. */
Test(ext_state_feed, dra_a_burst_of_claim_events_rebuilds_the_view_once)
{
    struct fixture x;
    json_t *claims = snap_items("ResourceClaim");
    json_t *base = json_deep_copy(json_array_get(claims, 0));
    json_t *pod = claim_pod("late", "burst-999");
    unsigned long r0;
    size_t objs;
    char res[64];

    dra_init(&x);
    list_kind(&x, KUBE_KIND_NODE, "Node");
    list_kind(&x, KUBE_KIND_CLASS, "DeviceClass");
    list_kind(&x, KUBE_KIND_SLICE, "ResourceSlice");
    list(&x.sink, KUBE_KIND_CLAIM, claims);
    list_empty(&x, KUBE_KIND_POD);
    list_empty(&x, KUBE_KIND_DOMAIN);
    r0 = stats(&x).dra_refreshes;
    objs = stats(&x).dra_objects;
    json_object_del(base, "status"); /* not allocated: asked for, held nowhere */
    for (int i = 0; i < 1000; i++) {
        json_t *c = json_deep_copy(base);
        char name[32];

        snprintf(name, sizeof(name), "burst-%d", i);
        json_object_set_new(json_object_get(c, "metadata"), "name", json_string(name));
        json_object_set_new(json_object_get(c, "metadata"), "uid", json_string(name));
        x.sink.upsert(x.sink.ctx, KUBE_KIND_CLAIM, c);
        json_decref(c);
    }
    cr_expect_eq(stats(&x).dra_refreshes, r0, "no rebuild per event");
    cr_expect_eq(stats(&x).dra_objects, objs + 1000, "every claim is kept as it comes");
    cr_expect_eq(claim_facts(&x, pod, res, sizeof(res)).accel, 0,
                 "the view is the one before the burst until it is drained");
    x.sink.drained(x.sink.ctx, KUBE_KIND_CLAIM);
    cr_expect_eq(stats(&x).dra_refreshes, r0 + 1, "one rebuild for the burst");
    cr_expect_gt(claim_facts(&x, pod, res, sizeof(res)).accel, 0,
                 "the last claim of the burst is in the view");
    /* a read with nothing new rebuilds nothing */
    x.sink.drained(x.sink.ctx, KUBE_KIND_CLAIM);
    cr_expect_eq(stats(&x).dra_refreshes, r0 + 1);
    json_decref(pod);
    json_decref(base);
    json_decref(claims);
    fixture_release(&x);
}

/* PodGroups from the watch give the pods naming one their gang's minCount and topology level
 * (through the pod_facts hook the codec calls); a relist that lacks one, or its DELETED event,
 * takes it away; readiness waits for the PodGroup list when PodGroups are watched. */
Test(ext_state_feed, podgroups_give_their_pods_the_gang)
{
    struct fixture x;
    const char *why = NULL;
    json_t *pg =
        json_pack("{s:{s:s,s:s},s:{s:{s:{s:i}},s:{s:[{s:s}]}}}", "metadata", "name", "gang-1",
                  "namespace", "llm", "spec", "schedulingPolicy", "gang", "minCount", 4,
                  "schedulingConstraints", "topology", "key", "topology.kubernetes.io/zone");
    json_t *pgs = json_pack("[O]", pg), *none = json_array();
    struct pol_pod_facts f = {.ns = "llm", .pod_group = "gang-1", .pod_group_level = -1};
    char res[64];

    fixture_init(&x);
    ext_state_feed_watch_podgroups(x.f, true);
    list(&x.sink, KUBE_KIND_NODE, json_object_get(x.nodes, "items"));
    list(&x.sink, KUBE_KIND_POD, json_object_get(x.pods, "items"));
    cr_expect_not(ext_state_ready(x.st, &why), "the PodGroups are not listed yet");
    list(&x.sink, KUBE_KIND_PODGROUP, pgs);
    cr_expect(ext_state_ready(x.st, &why), "%s", why ? why : "");
    ext_state_feed_pod_facts(x.f, NULL, &f, res, sizeof(res));
    cr_expect_eq(f.pod_group_min, 4);
    cr_expect_eq(f.pod_group_level, POL_SCOPE_ZONE);
    /* another namespace's pod naming the same name gets nothing */
    f = (struct pol_pod_facts){.ns = "other", .pod_group = "gang-1", .pod_group_level = -1};
    ext_state_feed_pod_facts(x.f, NULL, &f, res, sizeof(res));
    cr_expect_eq(f.pod_group_min, 0);
    /* DELETED */
    x.sink.remove(x.sink.ctx, KUBE_KIND_PODGROUP, pg);
    f = (struct pol_pod_facts){.ns = "llm", .pod_group = "gang-1", .pod_group_level = -1};
    ext_state_feed_pod_facts(x.f, NULL, &f, res, sizeof(res));
    cr_expect_eq(f.pod_group_min, 0);
    cr_expect_eq(f.pod_group_level, -1);
    /* back, then a relist without it */
    x.sink.upsert(x.sink.ctx, KUBE_KIND_PODGROUP, pg);
    ext_state_feed_pod_facts(x.f, NULL, &f, res, sizeof(res));
    cr_expect_eq(f.pod_group_min, 4);
    list(&x.sink, KUBE_KIND_PODGROUP, none);
    f = (struct pol_pod_facts){.ns = "llm", .pod_group = "gang-1", .pod_group_level = -1};
    ext_state_feed_pod_facts(x.f, NULL, &f, res, sizeof(res));
    cr_expect_eq(f.pod_group_min, 0);
    json_decref(pg);
    json_decref(pgs);
    json_decref(none);
    fixture_release(&x);
}
