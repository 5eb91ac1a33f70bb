/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_map.c - put/get/del/iterate, growth, tombstone reuse, zeroed maps, index
 * maps (tpx_map_index / tpx_map_put_index). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/map.h"

Test(tpx_map, table_of_operations)
{
    enum op { PUT, GET, DEL };
    static const struct {
        enum op op;
        const char *key;
        size_t val; /* PUT: stored; GET: wanted */
        bool found; /* GET, DEL: wanted */
        size_t len; /* after the step */
    } steps[] = {
        {GET, "a", 0, false, 0}, {DEL, "a", 0, false, 0}, {PUT, "a", 1, true, 1},
        {GET, "a", 1, true, 1},  {PUT, "b", 2, true, 2},  {PUT, "a", 3, true, 2},
        {GET, "a", 3, true, 2},  {DEL, "a", 0, true, 1},  {GET, "a", 0, false, 1},
        {GET, "b", 2, true, 1},  {PUT, "a", 4, true, 2},  {GET, "a", 4, true, 2},
        {PUT, "", 5, true, 3},   {GET, "", 5, true, 3},   {DEL, "", 0, true, 2},
        {GET, "", 0, false, 2},
    };
    struct tpx_map m;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_map_init(&m);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        size_t v = 0;

        switch (steps[i].op) {
        case PUT:
            cr_assert_eq(tpx_map_put_num(&m, steps[i].key, steps[i].val, &err), TPX_OK);
            break;
        case GET:
            cr_expect_eq(tpx_map_get_num(&m, steps[i].key, &v), steps[i].found, "step %zu", i);
            cr_expect_eq(v, steps[i].val, "step %zu", i);
            break;
        case DEL:
            cr_expect_eq(tpx_map_del(&m, steps[i].key, NULL), steps[i].found, "step %zu", i);
            break;
        }
        cr_expect_eq(tpx_map_len(&m), steps[i].len, "step %zu", i);
    }
    cr_expect_null(tpx_map_find(&m, NULL));
    tpx_map_release(&m);
    tpx_map_release(&m);
}

Test(tpx_map, zeroed_struct_is_an_empty_map_and_pointers_round_trip)
{
    struct tpx_map m;
    struct tpx_err err = TPX_ERR_INIT;
    int x = 7;
    union tpx_map_val old;

    memset(&m, 0, sizeof(m));
    cr_expect_null(tpx_map_get(&m, "x"));
    cr_assert_eq(tpx_map_put(&m, "x", &x, &err), TPX_OK);
    cr_expect_eq(tpx_map_get(&m, "x"), &x);
    cr_expect(tpx_map_del(&m, "x", &old));
    cr_expect_eq(old.ptr, &x);
    tpx_map_release(&m);
}

Test(tpx_map, grows_past_many_keys_and_iterates_each_once)
{
    enum { N = 5000 };
    static char keys[N][16];
    static bool seen[N];
    struct tpx_map m;
    struct tpx_err err = TPX_ERR_INIT;
    const char *k;
    union tpx_map_val v;
    size_t count = 0;

    tpx_map_init(&m);
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "node-%zu", i);
        cr_assert_eq(tpx_map_put_num(&m, keys[i], i, &err), TPX_OK);
    }
    cr_expect_eq(tpx_map_len(&m), N);
    cr_expect_leq(m.used * 2, m.cap, "at most half full");
    for (size_t i = 0; i < N; i++) {
        size_t got = 0;
        cr_assert(tpx_map_get_num(&m, keys[i], &got), "%s", keys[i]);
        cr_assert_eq(got, i);
    }
    for (size_t pos = 0; tpx_map_next(&m, &pos, &k, &v);) {
        cr_assert_lt(v.num, N);
        cr_expect_not(seen[v.num], "%s twice", k);
        cr_expect_str_eq(k, keys[v.num]);
        seen[v.num] = true;
        count++;
    }
    cr_expect_eq(count, N);
    tpx_map_release(&m);
}

Test(tpx_map, delete_while_iterating_and_churn_do_not_grow_the_table)
{
    enum { N = 64 };
    static char keys[N][16];
    struct tpx_map m;
    struct tpx_err err = TPX_ERR_INIT;
    union tpx_map_val v;
    size_t cap;

    tpx_map_init(&m);
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "uid-%zu", i);
        cr_assert_eq(tpx_map_put_num(&m, keys[i], i, &err), TPX_OK);
    }
    for (size_t pos = 0; tpx_map_next(&m, &pos, NULL, &v);) {
        if (v.num % 2)
            cr_expect(tpx_map_del(&m, keys[v.num], NULL));
    }
    cr_expect_eq(tpx_map_len(&m), N / 2);
    /* put and delete many short-lived keys: tombstones are swept, the table keeps its size */
    cap = 0;
    for (size_t round = 0; round < 1000; round++) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "temp-%zu", round);
        cr_assert_eq(tpx_map_put_num(&m, tmp, round, &err), TPX_OK);
        cr_assert(tpx_map_del(&m, tmp, NULL));
        if (round == 0)
            cap = m.cap;
    }
    cr_expect_eq(m.cap, cap);
    for (size_t i = 0; i < N; i += 2) {
        size_t got = 0;
        cr_expect(tpx_map_get_num(&m, keys[i], &got));
        cr_expect_eq(got, i);
    }
    tpx_map_release(&m);
}

Test(tpx_map, put_replaces_the_borrowed_key)
{
    struct tpx_map m;
    struct tpx_err err = TPX_ERR_INIT;
    char *first = strdup("same");
    char second[] = "same";
    const char *k = NULL;
    size_t pos = 0;

    tpx_map_init(&m);
    cr_assert_eq(tpx_map_put_num(&m, first, 1, &err), TPX_OK);
    cr_assert_eq(tpx_map_put_num(&m, second, 2, &err), TPX_OK);
    free(first); /* the map must now point at second */
    cr_assert(tpx_map_next(&m, &pos, &k, NULL));
    cr_expect_eq(k, second);
    tpx_map_release(&m);
}

Test(tpx_map, clear_keeps_the_table_and_forgets_the_entries)
{
    struct tpx_map m;
    struct tpx_err err = TPX_ERR_INIT;
    size_t cap;
    size_t v;

    tpx_map_init(&m);
    tpx_map_clear(&m);
    cr_assert_eq(tpx_map_put_num(&m, "a", 1, &err), TPX_OK);
    cap = m.cap;
    tpx_map_clear(&m);
    cr_expect_eq(tpx_map_len(&m), 0);
    cr_expect_eq(m.cap, cap);
    cr_expect_not(tpx_map_get_num(&m, "a", &v));
    cr_assert_eq(tpx_map_put_num(&m, "a", 2, &err), TPX_OK);
    cr_expect(tpx_map_get_num(&m, "a", &v));
    cr_expect_eq(v, 2);
    tpx_map_release(&m);
}

Test(tpx_map, index_maps_say_none_for_absent_and_null_keys)
{
    struct tpx_map m;

    tpx_map_init(&m);
    cr_expect_eq(tpx_map_index(&m, "a", (size_t)-1), (size_t)-1, "empty map");
    cr_assert(tpx_map_put_index(&m, "a", 0));
    cr_assert(tpx_map_put_index(&m, "b", 7));
    cr_expect_eq(tpx_map_index(&m, "a", (size_t)-1), 0, "index 0 is an index");
    cr_expect_eq(tpx_map_index(&m, "b", 99), 7);
    cr_expect_eq(tpx_map_index(&m, "c", 99), 99, "absent");
    cr_expect_eq(tpx_map_index(&m, NULL, 99), 99, "NULL key");
    cr_assert(tpx_map_put_index(&m, "b", 3));
    cr_expect_eq(tpx_map_index(&m, "b", 99), 3, "replaced");
    tpx_map_release(&m);
}
