/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_envexpand.c - the env resolver of common/envexpand.h: the kubelet's
 * $(VAR) and $$, the shell's $VAR, ${VAR:-d}, ${VAR-d}, $((expr)), and every way to be UNKNOWN
 * (unset, valueFrom, self-reference, division by zero, overflow, too long). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/envexpand.h"

static const struct tpx_env_var env[] = {
    {"TP_SIZE", "1"},        {"DP_SIZE_LOCAL", "8"},
    {"LWS_GROUP_SIZE", "2"}, {"EMPTY", ""},
    {"SECRET", NULL},        {"WORD", "eight"},
    {"NEG", "-3"},           {"BIG", "9223372036854775807"},
    {"TP_SIZE", "2"}, /* the last definition wins */
};
#define NENV (sizeof(env) / sizeof(env[0]))

struct sh_case {
    const char *in;
    enum tpx_env_rc rc;
    const char *out;
};

static void run_shell(const struct sh_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char out[256];
        enum tpx_env_rc rc = tpx_env_shell_expand(c[i].in, env, NENV, out, sizeof(out));
        cr_expect_eq(rc, c[i].rc, "'%s': rc %d, want %d (out '%s')", c[i].in, rc, c[i].rc, out);
        if (c[i].rc == TPX_ENV_OK)
            cr_expect_str_eq(out, c[i].out, "'%s'", c[i].in);
    }
}

Test(envexpand, shell_forms)
{
    static const struct sh_case c[] = {
        {"8", TPX_ENV_OK, "8"},
        {"$TP_SIZE", TPX_ENV_OK, "2"},
        {"${TP_SIZE}", TPX_ENV_OK, "2"},
        {"${DP_SIZE_LOCAL}x", TPX_ENV_OK, "8x"},
        {"${UNSET:-4}", TPX_ENV_OK, "4"},
        {"${UNSET-4}", TPX_ENV_OK, "4"},
        {"${EMPTY:-4}", TPX_ENV_OK, "4"},
        {"${EMPTY-4}", TPX_ENV_OK, ""},
        {"${TP_SIZE:-4}", TPX_ENV_OK, "2"},
        {"${UNSET:-${DP_SIZE_LOCAL}}", TPX_ENV_OK, "8"},
        {"${UNSET:=5}", TPX_ENV_OK, "5"},
        {"$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))", TPX_ENV_OK, "16"},
        {"$(($LWS_GROUP_SIZE*$DP_SIZE_LOCAL))", TPX_ENV_OK, "16"},
        {"$(( ${LWS_GROUP_SIZE} * (DP_SIZE_LOCAL + 2) - 4 / 2 % 3 ))", TPX_ENV_OK, "18"},
        {"$((-NEG))", TPX_ENV_OK, "3"},
        {"$((7 % 4))", TPX_ENV_OK, "3"},
        {"$((BIG))", TPX_ENV_OK, "9223372036854775807"},
        {"a$((1+1))b", TPX_ENV_OK, "a2b"},
        {"price$", TPX_ENV_OK, "price$"},
    };
    run_shell(c, sizeof(c) / sizeof(c[0]));
}

Test(envexpand, shell_unknown)
{
    static const struct sh_case c[] = {
        {"$UNSET", TPX_ENV_UNKNOWN, NULL},
        {"${UNSET}", TPX_ENV_UNKNOWN, NULL},
        {"$SECRET", TPX_ENV_UNKNOWN, NULL},
        {"${SECRET:-8}", TPX_ENV_UNKNOWN, NULL},
        {"$((UNSET + 1))", TPX_ENV_UNKNOWN, NULL}, /* the shell says 1: a guess */
        {"$((WORD))", TPX_ENV_UNKNOWN, NULL},
        {"$((8 / 0))", TPX_ENV_UNKNOWN, NULL},
        {"$((8 % (2 - 2)))", TPX_ENV_UNKNOWN, NULL},
        {"$((BIG + 1))", TPX_ENV_UNKNOWN, NULL},
        {"$((BIG * 2))", TPX_ENV_UNKNOWN, NULL},
        {"$((99999999999999999999))", TPX_ENV_UNKNOWN, NULL},
        {"$((2 ** 3))", TPX_ENV_UNKNOWN, NULL},
        {"$((1 << 3))", TPX_ENV_UNKNOWN, NULL},
        {"$((010))", TPX_ENV_UNKNOWN, NULL},
        {"$((1 +))", TPX_ENV_UNKNOWN, NULL},
        {"$(((1))", TPX_ENV_UNKNOWN, NULL},
        {"$((", TPX_ENV_UNKNOWN, NULL},
        {"$(nproc)", TPX_ENV_UNKNOWN, NULL},
        {"$(TP_SIZE)", TPX_ENV_UNKNOWN, NULL}, /* left by the kubelet: a command to the shell */
        {"`nproc`", TPX_ENV_UNKNOWN, NULL},
        {"$1", TPX_ENV_UNKNOWN, NULL},
        {"$#", TPX_ENV_UNKNOWN, NULL},
        {"${#TP_SIZE}", TPX_ENV_UNKNOWN, NULL},
        {"${TP_SIZE:+x}", TPX_ENV_UNKNOWN, NULL},
        {"${TP_SIZE%1}", TPX_ENV_UNKNOWN, NULL},
        {"${TP_SIZE", TPX_ENV_UNKNOWN, NULL},
        {"${}", TPX_ENV_UNKNOWN, NULL},
        {"${A:-${B:-${C:-${D:-${E:-${F:-${G:-${H:-${I:-1}}}}}}}}}", TPX_ENV_UNKNOWN, NULL},
    };
    run_shell(c, sizeof(c) / sizeof(c[0]));
}

Test(envexpand, shell_deep_parentheses_and_long_input)
{
    char *deep = malloc(20000);
    char out[64];
    size_t k = 0;

    cr_assert(deep);
    memcpy(deep, "$((", 3);
    k = 3;
    for (int i = 0; i < 3000; i++)
        deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 3000; i++)
        deep[k++] = ')';
    deep[k++] = ')';
    deep[k++] = ')';
    deep[k] = '\0';
    cr_expect_neq(tpx_env_shell_expand(deep, env, NENV, out, sizeof(out)), TPX_ENV_OK);
    memset(deep, '7', 19999);
    deep[19999] = '\0';
    cr_expect_eq(tpx_env_shell_expand(deep, env, NENV, out, sizeof(out)), TPX_ENV_TOO_LONG);
    cr_expect_eq(strlen(out) < sizeof(out), true);
    free(deep);
}

Test(envexpand, kube_forms)
{
    char out[128];

    cr_expect_eq(tpx_env_kube_expand("--tp $(TP_SIZE)", env, NENV, out, sizeof(out)), TPX_ENV_OK);
    cr_expect_str_eq(out, "--tp 2");
    cr_expect_eq(tpx_env_kube_expand("$$(TP_SIZE) $$ $", env, NENV, out, sizeof(out)), TPX_ENV_OK);
    cr_expect_str_eq(out, "$(TP_SIZE) $ $");
    cr_expect_eq(tpx_env_kube_expand("$(UNSET) ${TP_SIZE} $(( 1 ))", env, NENV, out, sizeof(out)),
                 TPX_ENV_OK);
    cr_expect_str_eq(out, "$(UNSET) ${TP_SIZE} $(( 1 ))");
    cr_expect_eq(tpx_env_kube_expand("x$(SECRET)", env, NENV, out, sizeof(out)), TPX_ENV_UNKNOWN);
    cr_expect_eq(tpx_env_kube_expand("$(DP_SIZE_LOCAL)$(DP_SIZE_LOCAL)", env, NENV, out, 3),
                 TPX_ENV_OK);
    cr_expect_str_eq(out, "88");
    cr_expect_eq(tpx_env_kube_expand("$(DP_SIZE_LOCAL)$(DP_SIZE_LOCAL)", env, NENV, out, 2),
                 TPX_ENV_TOO_LONG);
    cr_expect_str_eq(out, "8");
}

Test(envexpand, list_in_order_and_self_reference)
{
    struct tpx_env_var v[] = {
        {"A", "$(A)"}, /* self-reference: stays as written, so never a number */
        {"B", "4"},    {"C", "$(B)$(B)"}, {"D", "$(E)"}, /* forward reference */
        {"E", "1"},    {"F", "$(S)"},     {"S", NULL},
    };
    char store[64];
    char out[32];

    tpx_env_resolve_list(v, sizeof(v) / sizeof(v[0]), store, sizeof(store));
    cr_expect_str_eq(v[0].value, "$(A)");
    cr_expect_str_eq(v[2].value, "44");
    cr_expect_str_eq(v[3].value, "$(E)");
    cr_expect_str_eq(v[5].value, "$(S)"); /* S is defined after F */
    cr_expect_eq(tpx_env_shell_expand("$((A))", v, 7, out, sizeof(out)), TPX_ENV_UNKNOWN);
    cr_expect_eq(tpx_env_shell_expand("$((C / B))", v, 7, out, sizeof(out)), TPX_ENV_OK);
    cr_expect_str_eq(out, "11");
}

Test(envexpand, list_store_runs_out)
{
    struct tpx_env_var v[] = {{"A", "12345678"}, {"B", "2"}};
    char store[6];

    tpx_env_resolve_list(v, 2, store, sizeof(store));
    cr_expect_null(v[0].value);
    cr_expect_str_eq(v[1].value, "2");
}

Test(envexpand, has_expansion)
{
    cr_expect(tpx_env_has_expansion("$TP"));
    cr_expect(tpx_env_has_expansion("${TP}"));
    cr_expect(tpx_env_has_expansion("$((1))"));
    cr_expect(tpx_env_has_expansion("`nproc`"));
    cr_expect_not(tpx_env_has_expansion("8"));
    cr_expect_not(tpx_env_has_expansion("price$"));
    cr_expect_not(tpx_env_has_expansion(NULL));
}
