/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_trace.c - `topox simulate` traces: every kind of bad line named with
 * its line number, comments and blank lines, and the write -> parse round trip. */
#include "simulate/trace.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define A0                                                                                         \
    "{\"time\":0,\"event\":\"arrive\",\"group\":\"a\",\"pods\":2,\"gpus\":8,\"tp\":8,\"pp\":2}\n"

Test(sim_trace, bad_lines_are_named_with_their_line)
{
    static const struct {
        const char *text;
        enum tpx_code code;
        const char *msg;
    } cases[] = {
        {"{\"time\":0,", TPX_EPARSE, "t:1:"},
        {"\n\n[1, 2]\n", TPX_EPARSE, "t:3: not a JSON object"},
        {"{\"event\":\"arrive\",\"group\":\"a\"}", TPX_EINVAL, "t:1: \"time\" must be a number"},
        {"{\"time\":-1,\"event\":\"leave\",\"group\":\"a\"}", TPX_EINVAL, "t:1: \"time\" must"},
        {"{\"time\":\"x\",\"event\":\"leave\",\"group\":\"a\"}", TPX_EINVAL, "t:1: \"time\""},
        {"{\"time\":1,\"event\":\"go\",\"group\":\"a\"}", TPX_EINVAL,
         "t:1: \"event\" must be \"arrive\" or \"leave\""},
        {"{\"time\":1,\"event\":\"leave\"}", TPX_EINVAL, "t:1: \"group\" must be a name"},
        {"{\"time\":1,\"event\":\"leave\",\"group\":\"\"}", TPX_EINVAL, "t:1: \"group\" must"},
        {"{\"time\":1,\"event\":\"arrive\",\"group\":\"a\",\"gpus\":8,\"tp\":8,\"pp\":1}",
         TPX_EINVAL, "t:1: arrival without \"pods\""},
        {"{\"time\":1,\"event\":\"arrive\",\"group\":\"a\",\"pods\":0,\"gpus\":8,\"tp\":8,"
         "\"pp\":1}",
         TPX_EINVAL, "t:1: \"pods\" must be a whole number in [1, 64]"},
        {"{\"time\":1,\"event\":\"arrive\",\"group\":\"a\",\"pods\":1,\"gpus\":8.5,\"tp\":8,"
         "\"pp\":1}",
         TPX_EINVAL, "t:1: \"gpus\" must be a whole number"},
        {"{\"time\":1,\"event\":\"arrive\",\"group\":\"a\",\"pods\":1,\"gpus\":4,\"tp\":8,"
         "\"pp\":1}",
         TPX_EINVAL, "t:1: tp 8 x pp 1 does not divide 1 pods x 4 gpus"},
        {"{\"time\":1,\"event\":\"arrive\",\"group\":\"a\",\"pods\":1,\"gpus\":8,\"tp\":65536,"
         "\"pp\":65536}",
         TPX_EINVAL, "t:1: tp 65536 x pp 65536 does not divide 1 pods x 8 gpus"},
        {A0 "{\"time\":0,\"event\":\"arrive\",\"group\":\"a\",\"pods\":1,\"gpus\":8,\"tp\":8,"
            "\"pp\":1}",
         TPX_EINVAL, "t:2: group 'a' arrives again before it leaves"},
        {A0 "{\"time\":5,\"event\":\"leave\",\"group\":\"b\"}", TPX_EINVAL,
         "t:2: group 'b' leaves but has not arrived"},
        {"{\"time\":9,\"event\":\"leave\",\"group\":\"a\"}", TPX_EINVAL,
         "t:1: group 'a' leaves but has not arrived"},
        {"{\"time\":9" A0, TPX_EPARSE, "t:1:"},
        {"{\"time\":9,\"event\":\"arrive\",\"group\":\"x\",\"pods\":1,\"gpus\":8,\"tp\":8,"
         "\"pp\":1}\n" A0,
         TPX_EINVAL, "t:2: time 0 is before the line above (9)"},
        {"{\"time\":1,\"time\":2,\"event\":\"leave\",\"group\":\"a\"}", TPX_EPARSE, "t:1:"},
    };

    for (size_t i = 0; i < NELEM(cases); i++) {
        struct sim_event *ev = (struct sim_event *)1;
        size_t n = 99;
        struct tpx_err err = TPX_ERR_INIT;
        enum tpx_code rc =
            sim_trace_parse(cases[i].text, strlen(cases[i].text), "t", &ev, &n, &err);
        cr_expect_eq(rc, cases[i].code, "case %zu: %d (%s)", i, rc, err.msg);
        cr_expect(strstr(err.msg, cases[i].msg) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i].msg);
        cr_expect_null(ev, "case %zu", i);
        cr_expect_eq(n, 0, "case %zu", i);
    }
}

Test(sim_trace, comments_blank_lines_and_line_numbers)
{
    const char *text = "# a trace\n\n" A0 "   \n"
                       "{\"time\":3600.5,\"event\":\"leave\",\"group\":\"a\",\"note\":1}";
    struct sim_event *ev;
    size_t n;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(sim_trace_parse(text, strlen(text), "t", &ev, &n, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_expect(ev[0].arrive);
    cr_expect_str_eq(ev[0].group, "a");
    cr_expect_eq(ev[0].pods, 2);
    cr_expect_eq(ev[0].gpus, 8);
    cr_expect_eq(ev[0].tp, 8);
    cr_expect_eq(ev[0].pp, 2);
    cr_expect_eq(ev[0].line, 3);
    cr_expect(!ev[1].arrive);
    cr_expect(ev[1].t == 3600.5);
    cr_expect_eq(ev[1].line, 5);
    free(ev);
}

Test(sim_trace, write_then_parse_gives_the_same_events)
{
    struct sim_gen g;
    struct sim_event *ev, *back;
    size_t n, nback;
    struct tpx_buf out;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(sim_gen_parse("seed=7,groups=50,mix=mixed,fleet=mixed", &g, &err), TPX_OK);
    cr_assert_eq(sim_gen_run(&g, &ev, &n, &err), TPX_OK);
    tpx_buf_init(&out, (size_t)1 << 24);
    cr_assert_eq(sim_trace_write(&out, ev, n, &err), TPX_OK);
    cr_assert_eq(sim_trace_parse(out.data, out.len, "t", &back, &nback, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(nback, n);
    for (size_t i = 0; i < n; i++) {
        cr_expect(back[i].t == ev[i].t, "event %zu: %f != %f", i, back[i].t, ev[i].t);
        cr_expect_eq(back[i].arrive, ev[i].arrive);
        cr_expect_str_eq(back[i].group, ev[i].group);
        if (ev[i].arrive) {
            cr_expect_eq(back[i].pods, ev[i].pods);
            cr_expect_eq(back[i].gpus, ev[i].gpus);
            cr_expect_eq(back[i].tp, ev[i].tp);
            cr_expect_eq(back[i].pp, ev[i].pp);
            cr_expect_eq(back[i].block, ev[i].block, "event %zu: the scope", i);
        }
        cr_expect_eq(back[i].line, i + 1);
    }
    free(back);
    free(ev);
    tpx_buf_release(&out);
}
