/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_binder.c - extender/binder against the in-process fake API server:
 * the Binding body (uid, target, the three topox.io annotations), the clear texts of 409/404/403,
 * Events sent off the caller's thread and kept while the API server fails, Warning
 * deduplication per group and reason, and the replica names in event messages. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "extender/binder.h"
#include "fake_apiserver.h"

static struct fake_api *fake;
static struct kube_config kcfg;

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fake = fake_api_start(TPX_FIXTURES "/apiserver");
    cr_assert_not_null(fake);
    memset(&kcfg, 0, sizeof(kcfg));
    kcfg.server = strdup(fake_api_url(fake));
    kcfg.token = strdup("t");
    kcfg.backoff_ms = 10;
}

static void teardown(void)
{
    kube_config_release(&kcfg);
    fake_api_stop(fake);
    curl_global_cleanup();
}

TestSuite(ext_binder, .init = setup, .fini = teardown, .timeout = 60);

static struct ext_binder *binder(const struct ext_binder_config *cfg)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_binder *b = ext_binder_new(&kcfg, cfg, &err);

    cr_assert_not_null(b, "%s", err.msg);
    return b;
}

static struct ext_state_bind_out placed(const char *rack, const char *domain, unsigned stage)
{
    struct ext_state_bind_out w;

    memset(&w, 0, sizeof(w));
    w.known = w.intent = true;
    snprintf(w.rack, sizeof(w.rack), "%s", rack);
    snprintf(w.domain, sizeof(w.domain), "%s", domain);
    snprintf(w.display, sizeof(w.display), "llm/vllm group 0");
    w.stage = stage;
    return w;
}

Test(ext_binder, binding_carries_uid_target_and_annotations)
{
    struct ext_binder *b = binder(NULL);
    struct ext_state_bind_out w = placed("r1", "gpu-r1-n2", 1);
    struct tpx_err err = TPX_ERR_INIT;
    char *body;
    json_t *j, *ann;

    /* vllm-0-1 is in pods-list.json and not bound yet */
    cr_assert_eq(ext_binder_bind(b, "llm", "vllm-0-1", "uid-1", "gpu-r1-n2", &w, &err), TPX_OK,
                 "%s", err.msg);
    body = fake_api_last(fake, "POST", "/namespaces/llm/pods/vllm-0-1/binding", "body");
    cr_assert_not_null(body);
    j = json_loads(body, 0, NULL);
    cr_assert_not_null(j, "%s", body);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "metadata"), "uid")),
                     "uid-1");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "target"), "name")),
                     "gpu-r1-n2");
    ann = json_object_get(json_object_get(j, "metadata"), "annotations");
    cr_expect_str_eq(json_string_value(json_object_get(ann, "topox.io/rack")), "r1");
    cr_expect_str_eq(json_string_value(json_object_get(ann, "topox.io/domain")), "gpu-r1-n2");
    cr_expect_str_eq(json_string_value(json_object_get(ann, "topox.io/stage")), "1");
    json_decref(j);
    free(body);

    /* the second bind of the same pod: 409, said clearly */
    cr_expect_eq(ext_binder_bind(b, "llm", "vllm-0-1", "uid-1", "gpu-r1-n2", &w, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 409);
    cr_expect(strstr(err.msg, "already bound") != NULL, "%s", err.msg);
    tpx_err_clear(&err);
    cr_expect_eq(ext_binder_bind(b, "llm", "nobody", "u", "gpu-r1-n2", NULL, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 404);
    cr_expect(strstr(err.msg, "no longer exists") != NULL, "%s", err.msg);
    tpx_err_clear(&err);
    cr_expect_eq(ext_binder_bind(b, "locked", "p", "u", "gpu-r1-n2", NULL, &err), TPX_EAPI);
    cr_expect(strstr(err.msg, "403") != NULL, "%s", err.msg);
    ext_binder_free(b);
}

Test(ext_binder, a_pod_without_intent_gets_no_annotations)
{
    struct ext_binder *b = binder(NULL);
    struct tpx_err err = TPX_ERR_INIT;
    char *body;

    cr_assert_eq(ext_binder_bind(b, "llm", "vllm-0-1", "u", "gpu-r1-n1", NULL, &err), TPX_OK, "%s",
                 err.msg);
    body = fake_api_last(fake, "POST", "/binding", "body");
    cr_assert_not_null(body);
    cr_expect_null(strstr(body, "topox.io/"), "%s", body);
    free(body);
    ext_binder_free(b);
}

Test(ext_binder, placed_event_is_sent_off_the_callers_thread)
{
    struct ext_binder *b = binder(NULL);
    struct ext_state_bind_out w = placed("r3", "n12", 1);
    char *body;

    ext_binder_placed(b, "llm", "vllm-0-1", "uid-1", &w);
    cr_assert_eq(fake_api_wait_count(fake, "POST", "/namespaces/llm/events", 1, 10000), 1);
    body = fake_api_last(fake, "POST", "/events", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "placed replica vllm/0 stage 1 in rack r3, domain n12") != NULL, "%s",
              body);
    cr_expect(strstr(body, "\"Normal\"") != NULL, "%s", body);
    free(body);
    ext_binder_free(b);
}

Test(ext_binder, events_wait_out_a_failing_api_server_in_order)
{
    struct ext_binder *b = binder(NULL);
    struct ext_state_bind_out w = placed("r1", "n1", 0);
    struct ext_binder_stats st;

    fake_api_fail_next(fake, 3, 503);
    ext_binder_placed(b, "a", "p1", NULL, &w);
    ext_binder_placed(b, "b", "p2", NULL, &w);
    cr_assert_eq(fake_api_wait_count(fake, "POST", "/namespaces/b/events", 1, 20000), 1);
    /* 3 refused tries of the first, then both delivered, the first one first */
    cr_expect_eq(fake_api_count(fake, "POST", "/namespaces/a/events"), 4);
    /* the counters move once the answer is back: wait for the queue to empty */
    for (int i = 0; i < 1000; i++) {
        struct timespec ts = {0, 10000000L};

        ext_binder_get_stats(b, &st);
        if (st.events_queued == 0)
            break;
        nanosleep(&ts, NULL);
    }
    cr_expect_eq(st.events_sent, 2);
    cr_expect_eq(st.events_retried, 3);
    cr_expect_eq(st.events_dropped, 0);
    ext_binder_free(b);
}

Test(ext_binder, an_event_whose_answer_was_lost_is_created_once)
{
    struct ext_binder *b = binder(NULL);
    struct ext_state_bind_out w = placed("r1", "n1", 0);
    struct ext_binder_stats st;

    /* the API server creates the Event, and its answer never arrives: the retry (same name) gets
     * 409 AlreadyExists, which means done */
    fake_api_lose_answers(fake, 1);
    ext_binder_placed(b, "llm", "p1", "uid-1", &w);
    for (int i = 0; i < 2000; i++) {
        struct timespec ts = {0, 10000000L};

        ext_binder_get_stats(b, &st);
        if (st.events_sent + st.events_dropped > 0)
            break;
        nanosleep(&ts, NULL);
    }
    cr_expect_eq(st.events_sent, 1);
    cr_expect_eq(st.events_dropped, 0);
    cr_expect_geq(fake_api_count(fake, "POST", "/namespaces/llm/events"), 2, "it was retried");
    cr_expect_eq(fake_api_events(fake, "llm"), 1, "one Event, not two");
    ext_binder_free(b);
}

Test(ext_binder, warnings_are_deduplicated_per_group_and_reason)
{
    struct ext_binder *b = binder(NULL);
    struct ext_binder_stats st;

    cr_expect(ext_binder_rejected(b, "ns", "p-0", "u0", "ns/g1", "no rack fits 4 nodes"));
    cr_expect_not(ext_binder_rejected(b, "ns", "p-0", "u0", "ns/g1", "no rack fits 4 nodes"));
    cr_expect_not(ext_binder_rejected(b, "ns", "p-1", "u1", "ns/g1", "no rack fits 4 nodes"));
    cr_expect(ext_binder_rejected(b, "ns", "p-0", "u0", "ns/g1", "tp 16 is too large"));
    cr_expect(ext_binder_rejected(b, "ns", "p-0", "u0", "ns/g2", "no rack fits 4 nodes"));
    /* pods without a group: keyed by namespace and name */
    cr_expect(ext_binder_rejected(b, "ns", "solo", "u", "", "no node fits"));
    cr_expect_not(ext_binder_rejected(b, "ns", "solo", "u", "", "no node fits"));
    cr_expect(ext_binder_rejected(b, "ns", "solo2", "u", "", "no node fits"));
    cr_assert_eq(fake_api_wait_count(fake, "POST", "/events", 5, 10000), 5);
    ext_binder_get_stats(b, &st);
    cr_expect_eq(st.warnings_deduped, 3);
    ext_binder_free(b);
}

Test(ext_binder, a_reason_that_is_not_utf8_is_sent_cleaned)
{
    struct ext_binder *b = binder(NULL);
    char *body;

    /* a byte that is no UTF-8 and a euro sign cut after two of its three bytes */
    cr_expect(ext_binder_rejected(b, "ns", "p-0", "u0", "", "bad \xff cut \xe2\x82"));
    cr_assert_eq(fake_api_wait_count(fake, "POST", "/events", 1, 10000), 1);
    body = fake_api_last(fake, "POST", "/events", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "bad \xef\xbf\xbd cut \xef\xbf\xbd\xef\xbf\xbd") != NULL, "%s", body);
    free(body);
    ext_binder_free(b);
}

Test(ext_binder, no_events_when_switched_off)
{
    struct ext_binder_config cfg = {.no_events = true};
    struct ext_binder *b = binder(&cfg);
    struct ext_state_bind_out w = placed("r1", "n1", 0);

    ext_binder_placed(b, "llm", "p", "u", &w);
    cr_expect_not(ext_binder_rejected(b, "llm", "p", "u", "g", "why"));
    ext_binder_free(b);
    cr_expect_eq(fake_api_count(fake, "POST", "/events"), 0);
}

Test(ext_binder, replica_names_for_event_messages)
{
    static const struct {
        const char *display;
        const char *want;
    } cases[] = {
        {"llm/vllm group 0", "vllm/0"},
        {"default/sglang group 12", "sglang/12"},
        {"llm/my-job", "llm/my-job"},
        {"llm/train job 3", "llm/train job 3"},
        {"", ""},
    };
    char out[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ext_binder_replica_name(cases[i].display, out, sizeof(out));
        cr_expect_str_eq(out, cases[i].want, "case %zu", i);
    }
    ext_binder_replica_name("llm/vllm group 0", out, 4);
    cr_expect_str_eq(out, "vll");
}

Test(ext_binder, a_bad_configuration_fails_at_creation)
{
    struct kube_config bad;
    struct tpx_err err = TPX_ERR_INIT;

    memset(&bad, 0, sizeof(bad));
    bad.server = strdup(fake_api_url(fake));
    bad.token_file = strdup("/nonexistent/token");
    cr_expect_null(ext_binder_new(&bad, NULL, &err));
    cr_expect(strstr(err.msg, "/nonexistent/token") != NULL, "%s", err.msg);
    kube_config_release(&bad);
}
