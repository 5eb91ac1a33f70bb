/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_log.c - one event is one line in one write, fields are JSON-escaped, and
 * the level is checked before arguments are evaluated. A SOCK_SEQPACKET socket pair keeps write
 * boundaries, so each recv() returns exactly what one write(2) sent. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"

static int fds[2];

static void setup(void)
{
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
    tpx_log_set_fd(fds[0]);
    tpx_log_set_level(TPX_INFO);
}

static void teardown(void)
{
    tpx_log_set_fd(2);
    close(fds[0]);
    close(fds[1]);
}

/* Read one datagram (= one write) without blocking forever. */
static ssize_t read_one(char *buf, size_t size)
{
    ssize_t n = recv(fds[1], buf, size - 1, MSG_DONTWAIT);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

TestSuite(tpx_log, .init = setup, .fini = teardown);

Test(tpx_log, one_event_is_one_write_of_one_line)
{
    char line[4096];
    ssize_t n;

    TPX_LOG(TPX_INFO, "http request", TPX_S("pod", "vllm-0"), TPX_I("status", 200),
            TPX_D("ratio", 0.5), TPX_B("ok", 1), TPX_RAW("reasons", "{\"rack\":2}"));
    n = read_one(line, sizeof(line));
    cr_assert_gt(n, 0);
    cr_expect_eq(line[n - 1], '\n');
    cr_expect_eq(strchr(line, '\n'), line + n - 1, "exactly one newline: %s", line);
    cr_expect(strncmp(line, "{\"ts\":\"", 7) == 0, "%s", line);
    cr_expect(strstr(line, "\"level\":\"info\",\"msg\":\"http request\"") != NULL, "%s", line);
    cr_expect(strstr(line, "\"pod\":\"vllm-0\",\"status\":200,\"ratio\":0.5,\"ok\":true,"
                           "\"reasons\":{\"rack\":2}}") != NULL,
              "%s", line);
    cr_expect_lt(read_one(line, sizeof(line)), 0, "no second write");
}

Test(tpx_log, strings_are_escaped)
{
    char line[4096];

    TPX_LOG(TPX_WARN, "quote \" and \\", TPX_S("err", "line1\nline2\t\x01"));
    cr_assert_gt(read_one(line, sizeof(line)), 0);
    cr_expect(strstr(line, "\"msg\":\"quote \\\" and \\\\\"") != NULL, "%s", line);
    cr_expect(strstr(line, "\"err\":\"line1\\nline2\\t\\u0001\"") != NULL, "%s", line);
}

static int evaluated;

static const char *side_effect(void)
{
    evaluated++;
    return "x";
}

Test(tpx_log, level_checked_before_arguments)
{
    char line[512];

    evaluated = 0;
    TPX_LOG(TPX_DEBUG, "hidden", TPX_S("v", side_effect()));
    cr_expect_eq(evaluated, 0, "arguments of a filtered event must not be evaluated");
    cr_expect_lt(read_one(line, sizeof(line)), 0, "nothing written below the level");
    TPX_LOG(TPX_ERROR, "shown", TPX_S("v", side_effect()));
    cr_expect_eq(evaluated, 1);
    cr_expect_gt(read_one(line, sizeof(line)), 0);
}

Test(tpx_log, oversized_line_is_replaced_not_split)
{
    static char huge[100 * 1024];
    static char line[128 * 1024];
    ssize_t n;

    memset(huge, 'z', sizeof(huge) - 1);
    TPX_LOG(TPX_INFO, "big", TPX_S("blob", huge));
    n = read_one(line, sizeof(line));
    cr_assert_gt(n, 0);
    cr_expect(strstr(line, "\"log_truncated\":true") != NULL, "%.200s", line);
    cr_expect_eq(line[n - 1], '\n');
    cr_expect_lt(read_one(line, sizeof(line)), 0, "one write only");
}

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++)
        TPX_LOG(TPX_INFO, "concurrent", TPX_I("i", i), TPX_S("pad", "0123456789abcdef"));
    return NULL;
}

Test(tpx_log, lines_from_threads_never_interleave)
{
    pthread_t t[4];
    char line[4096];
    int count = 0;
    ssize_t n;

    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, writer, NULL);
    /* Drain while writing so the socket buffer never blocks the writers. */
    for (;;) {
        n = recv(fds[1], line, sizeof(line) - 1, 0);
        cr_assert_gt(n, 0);
        line[n] = '\0';
        cr_expect_eq(strchr(line, '\n'), line + n - 1, "%s", line);
        cr_expect(strstr(line, "\"msg\":\"concurrent\"") != NULL);
        if (++count == 800)
            break;
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_expect_eq(count, 800);
}

Test(tpx_log, parse_level_names)
{
    enum tpx_log_level lv = TPX_INFO;

    cr_expect(tpx_log_parse_level("debug", &lv));
    cr_expect_eq(lv, TPX_DEBUG);
    cr_expect(tpx_log_parse_level("warning", &lv));
    cr_expect_eq(lv, TPX_WARN);
    cr_expect(!tpx_log_parse_level("loud", &lv));
}
