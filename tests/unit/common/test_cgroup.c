/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_cgroup.c - the cgroup CPU quota parsers (v2 cpu.max, v1 cfs files) and
 * the lookup under a fake cgroup root, never the host's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cgroup.h"

Test(cgroup, cpu_max_quota_unlimited_and_rounding)
{
    struct tpx_err err = TPX_ERR_INIT;
    unsigned long long m = 7;

    cr_assert_eq(tpx_cgroup_parse_cpu_max("150000 100000\n", &m, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m, 1500);
    cr_assert_eq(tpx_cgroup_parse_cpu_max("max 100000\n", &m, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m, 0, "max means no limit");
    cr_assert_eq(tpx_cgroup_parse_cpu_max("200000 100000", &m, &err), TPX_OK);
    cr_expect_eq(m, 2000);
    cr_assert_eq(tpx_cgroup_parse_cpu_max("1 100000", &m, &err), TPX_OK);
    cr_expect_eq(m, 1, "a tiny quota still rounds up to something");
}

Test(cgroup, cpu_max_refuses_junk_and_keeps_the_output)
{
    static const char *const bad[] = {"",
                                      "max",
                                      "100000",
                                      "-1 100000",
                                      "10 0",
                                      "10  100000",
                                      "10 100000 x",
                                      "x 100000",
                                      "10 100000\n\n",
                                      "1.5 100000",
                                      "99999999999999999999 1"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        unsigned long long m = 42;

        cr_expect_eq(tpx_cgroup_parse_cpu_max(bad[i], &m, &err), TPX_EINVAL, "'%s'", bad[i]);
        cr_expect_eq(m, 42, "'%s' changed the output", bad[i]);
        cr_expect_str_not_empty(err.msg);
    }
    {
        struct tpx_err err = TPX_ERR_INIT;
        unsigned long long m = 42;
        cr_expect_eq(tpx_cgroup_parse_cpu_max(NULL, &m, &err), TPX_EINVAL);
    }
}

Test(cgroup, cfs_v1_files)
{
    struct tpx_err err = TPX_ERR_INIT;
    unsigned long long m = 7;

    cr_assert_eq(tpx_cgroup_parse_cfs("250000\n", "100000\n", &m, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m, 2500);
    cr_assert_eq(tpx_cgroup_parse_cfs("-1\n", "100000\n", &m, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m, 0);
    m = 9;
    cr_expect_eq(tpx_cgroup_parse_cfs("-2\n", "100000\n", &m, &err), TPX_EINVAL);
    cr_expect_eq(tpx_cgroup_parse_cfs("100\n", "0\n", &m, &err), TPX_EINVAL);
    cr_expect_eq(tpx_cgroup_parse_cfs("100\n", "", &m, &err), TPX_EINVAL);
    cr_expect_eq(tpx_cgroup_parse_cfs("abc", "100000", &m, &err), TPX_EINVAL);
    cr_expect_eq(m, 9);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

Test(cgroup, lookup_reads_v2_then_v1_under_a_fake_root)
{
    char root[] = "/tmp/tpx-cgroup-XXXXXX";
    char path[256];

    cr_assert_not_null(mkdtemp(root));
    cr_expect_eq(tpx_cgroup_cpus(root), 0, "no files: no quota");
    snprintf(path, sizeof(path), "%s/cpu", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/cpu/cpu.cfs_quota_us", root);
    write_file(path, "350000\n");
    snprintf(path, sizeof(path), "%s/cpu/cpu.cfs_period_us", root);
    write_file(path, "100000\n");
    cr_expect_eq(tpx_cgroup_cpus(root), 4, "v1: 3.5 CPUs round up to 4");
    snprintf(path, sizeof(path), "%s/cpu.max", root);
    write_file(path, "max 100000\n");
    cr_expect_eq(tpx_cgroup_cpus(root), 0, "v2 wins, and max is no limit");
    write_file(path, "150000 100000\n");
    cr_expect_eq(tpx_cgroup_cpus(root), 2, "v2: 1.5 CPUs round up to 2");
    cr_expect_geq(tpx_cpus_available(), 1);
    unlink(path);
    snprintf(path, sizeof(path), "%s/cpu/cpu.cfs_quota_us", root);
    unlink(path);
    snprintf(path, sizeof(path), "%s/cpu/cpu.cfs_period_us", root);
    unlink(path);
    snprintf(path, sizeof(path), "%s/cpu", root);
    rmdir(path);
    rmdir(root);
}
