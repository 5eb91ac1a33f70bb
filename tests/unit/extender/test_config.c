/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_config.c - serve configuration: defaults, YAML file, flag-style
 * overrides, strict keys, --print-config output that loads back to the same values, and every
 * entry of the settings table the same through its flag, the file and --print-config. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extender/config.h"

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/topox-config-XXXXXX");
    int fd = mkstemp(path);
    FILE *f;

    cr_assert(fd >= 0);
    f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* Durations and sizes go through common/parse.c; the ranges are the settings'. */
Test(ext_config, durations_and_sizes)
{
    static const struct {
        const char *key, *s;
        bool ok;
        unsigned long long v;
    } cases[] = {
        {"reservationTTL", "10m", true, 600},
        {"reservationTTL", "90s", true, 90},
        {"reservationTTL", "1h30m", true, 5400},
        {"reservationTTL", "600", true, 600},
        {"reservationTTL", "100000000", true, 100000000},
        {"reservationTTL", "100000001", false, 0},
        {"reservationTTL", "0", false, 0},
        {"reservationTTL", "", false, 0},
        {"reservationTTL", "10x", false, 0},
        {"reservationTTL", "m", false, 0},
        {"reservationTTL", "-5s", false, 0},
        {"drainTimeout", "0", true, 0},
        {"drainTimeout", "1h", true, 3600},
        {"drainTimeout", "1h1s", false, 0},
        {"maxBody", "256Mi", true, 268435456},
        {"maxBody", "1Gi", true, 1073741824},
        {"maxBody", "64M", true, 64000000},
        {"maxBody", "1000", true, 1000},
        {"maxBody", "1099511627776", true, 1099511627776ULL},
        {"maxBody", "1099511627777", false, 0},
        {"maxBody", "0", false, 0},
        {"maxBody", "12Q", false, 0},
        /* a number times its unit must not wrap around 64 bits into a small size: 17179869185Gi
         * is 2^64 + 1Gi, which once wrapped to 1Gi */
        {"maxBody", "17179869185Gi", false, 0},
        {"maxBody", "18446744074Gi", false, 0},
        {"maxBody", "1099511627776Ki", false, 0},
        {"maxBody", "1099511627776M", false, 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ext_config c;
        struct tpx_err err = TPX_ERR_INIT;
        enum tpx_code rc;
        unsigned long long got;

        ext_config_init(&c, &err);
        rc = ext_config_set(&c, cases[i].key, cases[i].s, &err);
        cr_expect_eq(rc == TPX_OK, cases[i].ok, "%s '%s': %s", cases[i].key, cases[i].s, err.msg);
        got = strcmp(cases[i].key, "maxBody") == 0        ? c.max_body
              : strcmp(cases[i].key, "drainTimeout") == 0 ? c.drain_s
                                                          : c.reservation_ttl_s;
        if (cases[i].ok)
            cr_expect_eq(got, cases[i].v, "%s '%s'", cases[i].key, cases[i].s);
        else
            cr_expect(strncmp(err.msg, cases[i].key, strlen(cases[i].key)) == 0,
                      "the message names the key: %s", err.msg);
        ext_config_release(&c);
    }
}

Test(ext_config, defaults)
{
    struct ext_config c;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_config_init(&c, &err), TPX_OK);
    cr_expect_str_eq(c.listen, "127.0.0.1:8888");
    cr_expect_eq(c.reservation_ttl_s, 600);
    cr_expect_eq(c.max_body, (size_t)64 << 20);
    cr_expect_eq(c.max_candidates, 100000);
    cr_expect_eq(c.bind_mode, EXT_BIND_RECORD);
    cr_expect_eq(c.pipeline_scope, POL_SCOPE_RACK);
    ext_config_release(&c);
}

Test(ext_config, file_then_flags)
{
    char *path = write_tmp("listen: 0.0.0.0:9000\n"
                           "tls: {cert: /c.pem, key: /k.pem, clientCA: /ca.pem}\n"
                           "resources: [huawei.com/Ascend910, nvidia.com/gpu]\n"
                           "labels:\n  rack: [my.org/rack, topox.io/rack]\n"
                           "pipelineScope: block\nreservationTTL: 5m\nmaxBody: 64Mi\n"
                           "bindMode: record\nthreads: 4\n");
    struct ext_config c;
    struct tpx_err err = TPX_ERR_INIT;
    const struct topo_label_config *lc;

    ext_config_init(&c, &err);
    cr_assert_eq(ext_config_load(&c, path, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(c.listen, "0.0.0.0:9000");
    cr_expect_str_eq(c.tls_cert, "/c.pem");
    cr_expect_str_eq(c.client_ca, "/ca.pem");
    cr_expect_eq(c.nresources, 2);
    cr_expect_eq(c.pipeline_scope, POL_SCOPE_BLOCK);
    cr_expect_eq(c.reservation_ttl_s, 300);
    cr_expect_eq(c.max_body, (size_t)64 << 20);
    cr_expect_eq(c.threads, 4);
    lc = ext_config_labels(&c);
    cr_assert_eq(lc->nkeys[TOPO_LEVEL_RACK], 2);
    cr_expect_str_eq(lc->keys[TOPO_LEVEL_RACK][0], "my.org/rack");
    cr_expect_str_eq(lc->resources[0], "huawei.com/Ascend910");
    cr_expect_gt(lc->nkeys[TOPO_LEVEL_DOMAIN], 0, "levels not configured keep the defaults");
    /* a flag overrides the file */
    cr_assert_eq(ext_config_set(&c, "reservationTTL", "30s", &err), TPX_OK);
    cr_expect_eq(c.reservation_ttl_s, 30);
    ext_config_release(&c);
    unlink(path);
    free(path);
}

Test(ext_config, strict_keys_and_bad_values_name_the_file)
{
    static const char *const bad[] = {
        "listn: x\n",      "bindMode: maybe\n",       "reservationTTL: soon\n",
        "tls: {pem: x}\n", "pipelineScope: galaxy\n", "drainTimeout: 50d\n"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *path = write_tmp(bad[i]);
        struct ext_config c;
        struct tpx_err err = TPX_ERR_INIT;

        ext_config_init(&c, &err);
        cr_expect_neq(ext_config_load(&c, path, &err), TPX_OK, "accepted: %s", bad[i]);
        cr_expect(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
        ext_config_release(&c);
        unlink(path);
        free(path);
    }
}

Test(ext_config, printed_config_loads_back)
{
    struct ext_config a, b;
    struct tpx_err err = TPX_ERR_INIT;
    char *path = strdup("/tmp/topox-print-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    ext_config_init(&a, &err);
    ext_config_set(&a, "reservationTTL", "7m", &err);
    ext_config_set(&a, "maxBody", "1Mi", &err);
    ext_config_set(&a, "cluster", "racks=2", &err);
    ext_config_set(&a, "pipelineScope", "zone", &err);
    ext_config_print(&a, f);
    fclose(f);
    ext_config_init(&b, &err);
    cr_assert_eq(ext_config_load(&b, path, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(b.reservation_ttl_s, 420);
    cr_expect_eq(b.max_body, (size_t)1 << 20);
    cr_expect_str_eq(b.cluster_spec, "racks=2");
    cr_expect_eq(b.pipeline_scope, POL_SCOPE_ZONE);
    cr_expect_str_eq(b.listen, a.listen);
    ext_config_release(&a);
    ext_config_release(&b);
    unlink(path);
    free(path);
}

/* ---- the settings table ---------------------------------------------------------------------- */

/* The printed configuration. Free with free(). */
static char *printed(const struct ext_config *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    cr_assert(f != NULL);
    ext_config_print(c, f);
    fclose(f);
    return text;
}

/* A value of s that differs from its default, as its flag takes it, and as YAML. */
static void sample(const struct ext_config_setting *s, char *flag, char *yaml, size_t cap)
{
    switch (s->type) {
    case EXT_CONFIG_SETTING_STRING:
        snprintf(flag, cap, "/etc/topox/%s", s->key);
        snprintf(yaml, cap, "\"%.*s\"", (int)(cap > 3 ? cap - 3 : 0), flag);
        return;
    case EXT_CONFIG_SETTING_LIST:
        snprintf(flag, cap, "%sa.example/one,b.example/two", s->names ? "block=" : "");
        snprintf(yaml, cap, "[a.example/one, b.example/two]");
        return;
    case EXT_CONFIG_SETTING_UINT:
    case EXT_CONFIG_SETTING_DURATION:
    case EXT_CONFIG_SETTING_SIZE:
        snprintf(flag, cap, "%llu", s->max);
        break;
    case EXT_CONFIG_SETTING_BOOL:
        snprintf(flag, cap, "%s", s->def && strcmp(s->def, "true") == 0 ? "false" : "true");
        break;
    case EXT_CONFIG_SETTING_ENUM: {
        const char *last = s->names[s->nnames - 1].name;
        snprintf(flag, cap, "%s", s->def && strcmp(s->def, last) == 0 ? s->names[0].name : last);
        break;
    }
    }
    snprintf(yaml, cap, "%s", flag);
}

/* The YAML that sets s to value where the file nests it. */
static void yaml_for(const struct ext_config_setting *s, const char *value, char *out, size_t cap)
{
    const char *name = s->path ? s->path : s->key;
    const char *dot = strchr(name, '.');

    if (s->type == EXT_CONFIG_SETTING_LIST && s->names)
        snprintf(out, cap, "%s:\n  block: %s\n", name, value);
    else if (dot)
        snprintf(out, cap, "%.*s:\n  %s: %s\n", (int)(dot - name), name, dot + 1, value);
    else
        snprintf(out, cap, "%s: %s\n", name, value);
}

static void load_text(struct ext_config *c, const char *text, const char *what)
{
    char *path = write_tmp(text);
    struct tpx_err err = TPX_ERR_INIT;

    ext_config_init(c, &err);
    cr_expect_eq(ext_config_load(c, path, &err), TPX_OK, "%s: %s\n%s", what, err.msg, text);
    unlink(path);
    free(path);
}

Test(ext_config, every_setting_round_trips_through_flag_file_and_print)
{
    struct ext_config def;
    struct tpx_err err = TPX_ERR_INIT;
    char *def_text;

    cr_assert_eq(ext_config_init(&def, &err), TPX_OK, "%s", err.msg);
    def_text = printed(&def);
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];
        struct ext_config by_flag, by_file, reloaded;
        char flag[256], value[256], yaml[512];
        char *flag_text, *file_text, *reloaded_text;

        sample(s, flag, value, sizeof(flag));
        yaml_for(s, value, yaml, sizeof(yaml));
        ext_config_init(&by_flag, &err);
        cr_expect_eq(ext_config_set_flag(&by_flag, s, flag, &err), TPX_OK, "--%s %s: %s", s->flag,
                     flag, err.msg);
        flag_text = printed(&by_flag);
        cr_expect_str_neq(flag_text, def_text, "--%s %s changes nothing printed", s->flag, flag);
        load_text(&by_file, yaml, s->key);
        file_text = printed(&by_file);
        cr_expect_str_eq(file_text, flag_text, "the file and the flag differ for %s", s->key);
        load_text(&reloaded, flag_text, s->key);
        reloaded_text = printed(&reloaded);
        cr_expect_str_eq(reloaded_text, flag_text, "--print-config does not load back for %s",
                         s->key);
        free(flag_text);
        free(file_text);
        free(reloaded_text);
        ext_config_release(&by_flag);
        ext_config_release(&by_file);
        ext_config_release(&reloaded);
    }
    free(def_text);
    ext_config_release(&def);
}

Test(ext_config, numbers_out_of_range_are_refused_naming_the_key)
{
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];
        struct ext_config c;
        struct tpx_err err = TPX_ERR_INIT;
        char v[32];

        if (s->type != EXT_CONFIG_SETTING_UINT && s->type != EXT_CONFIG_SETTING_DURATION &&
            s->type != EXT_CONFIG_SETTING_SIZE)
            continue;
        ext_config_init(&c, &err);
        snprintf(v, sizeof(v), "%llu", s->max + 1);
        cr_expect_neq(ext_config_set(&c, s->key, v, &err), TPX_OK, "%s %s", s->key, v);
        cr_expect(strncmp(err.msg, s->key, strlen(s->key)) == 0, "%s", err.msg);
        tpx_err_clear(&err);
        if (s->min > 0) {
            snprintf(v, sizeof(v), "%llu", s->min - 1);
            cr_expect_neq(ext_config_set(&c, s->key, v, &err), TPX_OK, "%s %s", s->key, v);
        }
        ext_config_release(&c);
    }
}

Test(ext_config, table_names_each_setting_once_with_help_that_says_its_default)
{
    for (size_t i = 0; i < ext_config_nsettings; i++) {
        const struct ext_config_setting *s = &ext_config_settings[i];

        cr_expect(s->key && s->flag && s->metavar && s->help && *s->help, "entry %zu", i);
        if (s->def)
            cr_expect(strstr(s->help, s->def) != NULL, "--%s: the help does not say '%s'", s->flag,
                      s->def);
        for (size_t j = 0; j < i; j++) {
            cr_expect_str_neq(s->key, ext_config_settings[j].key);
            cr_expect_str_neq(s->flag, ext_config_settings[j].flag);
        }
    }
}

Test(ext_config, flat_keys_and_label_levels_are_keys_too)
{
    char *path = write_tmp("tlsCert: /flat.pem\nlabels.zone: my.org/zone\n"
                           "tls: {key: null}\nlabels: {rack: null}\n");
    struct ext_config c;
    struct tpx_err err = TPX_ERR_INIT;

    ext_config_init(&c, &err);
    cr_assert_eq(ext_config_load(&c, path, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(c.tls_cert, "/flat.pem");
    cr_assert_eq(c.nlabel_keys[TOPO_LEVEL_ZONE], 1);
    cr_expect_str_eq(c.label_keys[TOPO_LEVEL_ZONE][0], "my.org/zone");
    cr_expect_eq(c.nlabel_keys[TOPO_LEVEL_RACK], 0, "null keeps the default");
    cr_expect_eq(ext_config_set(&c, "labels.galaxy", "x", &err), TPX_EINVAL);
    cr_expect_str_eq(err.msg, "unknown key 'labels.galaxy'");
    ext_config_release(&c);
    unlink(path);
    free(path);
}

/* issue 21, item 9: booleans take the words kubectl's YAML reader takes, in the file and as
 * flags alike; the two timeouts both refuse 0; the new answer limits parse. */
Test(ext_config, booleans_and_timeouts_are_one_rule)
{
    static const struct {
        const char *word;
        bool want;
    } words[] = {{"yes", true}, {"Yes", true}, {"y", true},    {"on", true},    {"TRUE", true},
                 {"no", false}, {"N", false},  {"off", false}, {"False", false}};
    struct ext_config c;
    struct tpx_err err = TPX_ERR_INIT;

    ext_config_init(&c, &err);
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        char text[64];
        char *path;

        c.events = !words[i].want;
        cr_expect_eq(ext_config_set(&c, "events", words[i].word, &err), TPX_OK, "--events %s: %s",
                     words[i].word, err.msg);
        cr_expect_eq(c.events, words[i].want, "--events %s", words[i].word);
        snprintf(text, sizeof(text), "events: %s\n", words[i].word);
        path = write_tmp(text);
        c.events = !words[i].want;
        cr_expect_eq(ext_config_load(&c, path, &err), TPX_OK, "events: %s: %s", words[i].word,
                     err.msg);
        cr_expect_eq(c.events, words[i].want, "events: %s", words[i].word);
        unlink(path);
        free(path);
    }
    tpx_err_clear(&err);
    cr_expect_neq(ext_config_set(&c, "events", "yES", &err), TPX_OK);
    tpx_err_clear(&err);
    cr_expect_neq(ext_config_set(&c, "connectionTimeout", "0", &err), TPX_OK);
    tpx_err_clear(&err);
    cr_expect_neq(ext_config_set(&c, "requestTimeout", "0", &err), TPX_OK);
    tpx_err_clear(&err);
    cr_expect_neq(ext_config_set(&c, "sendTimeout", "0", &err), TPX_OK);
    tpx_err_clear(&err);
    cr_expect_eq(ext_config_set(&c, "sendTimeout", "5s", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(c.send_timeout_s, 5);
    cr_expect_eq(ext_config_set(&c, "answerBudget", "32Mi", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(c.answer_budget, (size_t)32 << 20);
    ext_config_release(&c);
}
