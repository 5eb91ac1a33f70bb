/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_http.c - the HTTP server on its own: port 0, complete bodies handed
 * to the handler, the body cap (413), keep-alive reuse, and a stop that lets a request in flight
 * finish. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender/http.h"

struct sink {
    char data[4096];
    size_t len;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct sink *s = ud;
    size_t k = sz * n;

    if (s->len + k >= sizeof(s->data))
        k = sizeof(s->data) - 1 - s->len;
    memcpy(s->data + s->len, p, k);
    s->len += k;
    s->data[s->len] = '\0';
    return sz * n;
}

static atomic_int slow_entered;

/* Echo "METHOD PATH LEN"; /slow says it started, then sleeps. */
static void echo(void *ctx, const struct ext_http_req *rq, struct ext_http_resp *rp)
{
    char buf[512];

    (void)ctx;
    if (strcmp(rq->path, "/slow") == 0) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        atomic_store(&slow_entered, 1);
        nanosleep(&ts, NULL);
    }
    snprintf(buf, sizeof(buf), "%s %s %zu", rq->method, rq->path, rq->body_len);
    rp->status = 200;
    rp->body = strdup(buf);
    rp->len = strlen(buf);
    rp->content_type = "text/plain";
}

static long call(CURL *h, unsigned port, const char *path, const char *body, size_t len,
                 struct sink *out)
{
    char url[256];
    long status = 0;

    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
    out->len = 0;
    out->data[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static struct ext_http *start(size_t max_body)
{
    struct ext_http_config cfg = {
        .listen = "127.0.0.1:0", .max_body = max_body, .threads = 2, .conn_timeout_s = 10};
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_http *h = ext_http_start(&cfg, echo, NULL, &err);

    cr_assert_not_null(h, "%s", err.msg);
    cr_assert_gt(ext_http_port(h), 0);
    return h;
}

Test(ext_http, bodies_reach_the_handler_whole_over_keep_alive)
{
    struct ext_http *h = start(1 << 20);
    CURL *c = curl_easy_init();
    struct sink out;
    char *big = malloc(300000);
    long connects = -1;

    memset(big, 'x', 300000);
    cr_expect_eq(call(c, ext_http_port(h), "/filter", big, 300000, &out), 200);
    cr_expect_str_eq(out.data, "POST /filter 300000");
    cr_expect_eq(call(c, ext_http_port(h), "/healthz", NULL, 0, &out), 200);
    cr_expect_str_eq(out.data, "GET /healthz 0");
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
    cr_expect_eq(connects, 0, "the second request must reuse the connection");
    curl_easy_cleanup(c);
    free(big);
    ext_http_stop(h, 1000);
}

Test(ext_http, body_over_the_cap_is_413)
{
    struct ext_http *h = start(1000);
    CURL *c = curl_easy_init();
    struct sink out;
    char body[2000];

    memset(body, 'y', sizeof(body));
    cr_expect_eq(call(c, ext_http_port(h), "/filter", body, sizeof(body), &out), 413);
    curl_easy_cleanup(c);
    c = curl_easy_init();
    cr_expect_eq(call(c, ext_http_port(h), "/filter", body, 999, &out), 200,
                 "the server keeps serving after a 413");
    curl_easy_cleanup(c);
    ext_http_stop(h, 1000);
}

Test(ext_http, bad_listen_addresses_are_errors)
{
    static const char *const bad[] = {"nohostport", "127.0.0.1:99999", "[::1", "1.2.3.4:x"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ext_http_config cfg = {
            .listen = bad[i], .max_body = 1000, .threads = 1, .conn_timeout_s = 10};
        struct tpx_err err = TPX_ERR_INIT;
        cr_expect_null(ext_http_start(&cfg, echo, NULL, &err), "accepted '%s'", bad[i]);
        cr_expect_str_not_empty(err.msg);
    }
}

struct slow_call {
    unsigned port;
    long status;
};

static void *slow_thread(void *arg)
{
    struct slow_call *s = arg;
    CURL *c = curl_easy_init();
    struct sink out;

    s->status = call(c, s->port, "/slow", "{}", 2, &out);
    curl_easy_cleanup(c);
    return NULL;
}

Test(ext_http, stop_drains_a_request_in_flight)
{
    struct ext_http *h = start(1 << 20);
    struct slow_call s = {ext_http_port(h), 0};
    pthread_t t;
    struct timespec ts = {0, 1000 * 1000};

    pthread_create(&t, NULL, slow_thread, &s);
    while (!atomic_load(&slow_entered)) /* wait until the handler runs (it then sleeps) */
        nanosleep(&ts, NULL);
    ext_http_stop(h, 5000);
    pthread_join(t, NULL);
    cr_expect_eq(s.status, 200, "the request in flight must be answered");
}

Test(ext_http, loopback_addresses)
{
    static const char *const yes[] = {"127.0.0.1:8888", "127.1.2.3:0", "[::1]:8888", "localhost:1"};
    static const char *const no[] = {"0.0.0.0:8888", ":8888", "[::]:8888",
                                     "10.0.0.1:80",  "",      "nonsense"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        cr_expect(ext_http_is_loopback(yes[i]), "'%s' is loopback", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        cr_expect(!ext_http_is_loopback(no[i]), "'%s' is not loopback", no[i]);
}
