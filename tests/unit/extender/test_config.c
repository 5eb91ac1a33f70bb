/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_config.c - serve configuration: defaults, YAML file, flag-style
 * overrides, strict keys, and --print-config output that loads back to the same values. */
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

Test(ext_config, durations_and_sizes)
{
    static const struct {
        const char *s;
        bool ok;
        unsigned v;
    } d[] = {{"10m", true, 600}, {"90s", true, 90}, {"1h30m", true, 5400}, {"600", true, 600},
             {"", false, 0},     {"10x", false, 0}, {"m", false, 0},       {"-5s", false, 0}};
    static const struct {
        const char *s;
        bool ok;
        size_t v;
    } z[] = {{"256Mi", true, 268435456}, {"1Gi", true, 1073741824}, {"64M", true, 64000000},
             {"1000", true, 1000},       {"0", false, 0},           {"12Q", false, 0}};

    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
        unsigned v = 0;
        cr_expect_eq(ext_parse_duration(d[i].s, &v), d[i].ok, "duration '%s'", d[i].s);
        if (d[i].ok)
            cr_expect_eq(v, d[i].v, "duration '%s'", d[i].s);
    }
    for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
        size_t v = 0;
        cr_expect_eq(ext_parse_size(z[i].s, &v), z[i].ok, "size '%s'", z[i].s);
        if (z[i].ok)
            cr_expect_eq(v, z[i].v, "size '%s'", z[i].s);
    }
}

/* A number times its unit must not wrap around 64 bits into a small size: 17179869185Gi is
 * 2^64 + 1Gi, which wrapped to 1Gi. */
Test(ext_config, sizes_too_large_for_their_unit_are_refused)
{
    static const char *const big[] = {"17179869185Gi", "18446744074Gi", "1099511627776Ki",
                                      "1099511627776M"};
    size_t v = 0;

    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
        cr_expect(!ext_parse_size(big[i], &v), "size '%s' is refused", big[i]);
}

Test(ext_config, defaults)
{
    struct ext_serve_config c;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_serve_config_init(&c, &err), TPX_OK);
    cr_expect_str_eq(c.listen, "127.0.0.1:8888");
    cr_expect_eq(c.reservation_ttl_s, 600);
    cr_expect_eq(c.max_body, (size_t)256 << 20);
    cr_expect_eq(c.bind_mode, EXT_BIND_RECORD);
    cr_expect_eq(c.pipeline_scope, POL_SCOPE_RACK);
    ext_serve_config_release(&c);
}

Test(ext_config, file_then_flags)
{
    char *path = write_tmp("listen: 0.0.0.0:9000\n"
                           "tls: {cert: /c.pem, key: /k.pem, clientCA: /ca.pem}\n"
                           "resources: [huawei.com/Ascend910, nvidia.com/gpu]\n"
                           "labels:\n  rack: [my.org/rack, topox.io/rack]\n"
                           "pipelineScope: block\nreservationTTL: 5m\nmaxBody: 64Mi\n"
                           "bindMode: record\nthreads: 4\n");
    struct ext_serve_config c;
    struct tpx_err err = TPX_ERR_INIT;
    const struct topo_label_config *lc;

    ext_serve_config_init(&c, &err);
    cr_assert_eq(ext_serve_config_load(&c, path, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(c.listen, "0.0.0.0:9000");
    cr_expect_str_eq(c.tls_cert, "/c.pem");
    cr_expect_str_eq(c.client_ca, "/ca.pem");
    cr_expect_eq(c.nresources, 2);
    cr_expect_eq(c.pipeline_scope, POL_SCOPE_BLOCK);
    cr_expect_eq(c.reservation_ttl_s, 300);
    cr_expect_eq(c.max_body, (size_t)64 << 20);
    cr_expect_eq(c.threads, 4);
    lc = ext_serve_config_labels(&c);
    cr_assert_eq(lc->nkeys[TOPO_LEVEL_RACK], 2);
    cr_expect_str_eq(lc->keys[TOPO_LEVEL_RACK][0], "my.org/rack");
    cr_expect_str_eq(lc->resources[0], "huawei.com/Ascend910");
    cr_expect_gt(lc->nkeys[TOPO_LEVEL_DOMAIN], 0, "levels not configured keep the defaults");
    /* a flag overrides the file */
    cr_assert_eq(ext_serve_config_set(&c, "reservationTTL", "30s", &err), TPX_OK);
    cr_expect_eq(c.reservation_ttl_s, 30);
    ext_serve_config_release(&c);
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
        struct ext_serve_config c;
        struct tpx_err err = TPX_ERR_INIT;

        ext_serve_config_init(&c, &err);
        cr_expect_neq(ext_serve_config_load(&c, path, &err), TPX_OK, "accepted: %s", bad[i]);
        cr_expect(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
        ext_serve_config_release(&c);
        unlink(path);
        free(path);
    }
}

Test(ext_config, printed_config_loads_back)
{
    struct ext_serve_config a, b;
    struct tpx_err err = TPX_ERR_INIT;
    char *path = strdup("/tmp/topox-print-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    ext_serve_config_init(&a, &err);
    ext_serve_config_set(&a, "reservationTTL", "7m", &err);
    ext_serve_config_set(&a, "maxBody", "1Mi", &err);
    ext_serve_config_set(&a, "cluster", "racks=2", &err);
    ext_serve_config_set(&a, "pipelineScope", "zone", &err);
    ext_serve_config_print(&a, f);
    fclose(f);
    ext_serve_config_init(&b, &err);
    cr_assert_eq(ext_serve_config_load(&b, path, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(b.reservation_ttl_s, 420);
    cr_expect_eq(b.max_body, (size_t)1 << 20);
    cr_expect_str_eq(b.cluster_spec, "racks=2");
    cr_expect_eq(b.pipeline_scope, POL_SCOPE_ZONE);
    cr_expect_str_eq(b.listen, a.listen);
    ext_serve_config_release(&a);
    ext_serve_config_release(&b);
    unlink(path);
    free(path);
}
