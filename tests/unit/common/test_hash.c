/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_hash.c - SipHash-1-3 against known values, the two keys, chaining. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/hash.h"

Test(tpx_hash, siphash13_matches_known_values)
{
    /* SipHash-1-3 with the all-zero key, as CPython 3.11 computes hash(bytes) under
     * PYTHONHASHSEED=0 (its secret is then zero). */
    static const struct {
        const char *in;
        unsigned long long want;
    } cases[] = {
        {"a", 4644417185603328019ULL},
        {"abc", 13851880170939887858ULL},
        {"abcdefgh", 4574395652268504554ULL},
        {"abcdefghijklmnopq", 7044894726457044172ULL},
    };
    struct tpx_hash_key zero = {0, 0};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(tpx_hash_keyed(&zero, cases[i].in, strlen(cases[i].in)), cases[i].want,
                     "case %zu (%s)", i, cases[i].in);
}

Test(tpx_hash, stable_key_gives_fixed_values)
{
    /* Names made from these are kept in clusters: a change here renames things. */
    cr_expect_eq(tpx_hash_stable_str("default/job-a"), tpx_hash_stable_str("default/job-a"));
    cr_expect_eq(tpx_hash_stable_str(""), tpx_hash_keyed(&tpx_hash_fixed_key, "", 0));
    cr_expect_neq(tpx_hash_stable_str("a"), tpx_hash_stable_str("b"));
}

Test(tpx_hash, process_key_is_set_once_and_used)
{
    const struct tpx_hash_key *k = tpx_hash_process_key();

    cr_expect(k->k0 != 0 || k->k1 != 0);
    cr_expect_eq(k, tpx_hash_process_key());
    cr_expect_eq(tpx_hash_str("pod-uid"), tpx_hash_keyed(k, "pod-uid", 7));
    cr_expect_eq(tpx_hash("pod-uid", 7), tpx_hash_str("pod-uid"));
    cr_expect_neq(tpx_hash_str("pod-uid"), tpx_hash_stable_str("pod-uid"));
}

Test(tpx_hash, steps_keep_piece_boundaries)
{
    static const struct {
        const char *a, *b;
    } pairs[] = {{"ab", "c"}, {"a", "bc"}, {"", "abc"}, {"abc", ""}, {"abc", NULL}};
    uint64_t h[sizeof(pairs) / sizeof(pairs[0])];
    const struct tpx_hash_key *k = &tpx_hash_fixed_key;

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
        h[i] = tpx_hash_step(k, tpx_hash_step(k, 0, pairs[i].a), pairs[i].b);
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = i + 1; j < 4; j++)
            cr_expect_neq(h[i], h[j], "pairs %zu and %zu collide", i, j);
    }
    cr_expect_eq(h[3], h[4], "NULL counts as \"\"");
}
