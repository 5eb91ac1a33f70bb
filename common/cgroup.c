/* SPDX-License-Identifier: Apache-2.0 */
/* common/cgroup.c - the cgroup CPU quota: parsers of cpu.max and cpu.cfs_*_us, and the lookup. */
#include "common/cgroup.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A decimal number (digits only, at most 18 of them) at *p; moves *p past it. */
static int number(const char **p, unsigned long long *v)
{
    const char *s = *p;
    unsigned long long n = 0;
    size_t digits = 0;

    while (isdigit((unsigned char)*s) && digits < 19) {
        n = n * 10 + (unsigned long long)(*s - '0');
        s++;
        digits++;
    }
    if (digits == 0 || digits > 18)
        return -1;
    *v = n;
    *p = s;
    return 0;
}

/* Only a trailing newline (and nothing else) may follow. */
static int at_end(const char *p)
{
    if (*p == '\n')
        p++;
    return *p == '\0' ? 0 : -1;
}

static unsigned long long to_milli(unsigned long long quota, unsigned long long period)
{
    unsigned long long m = (quota * 1000 + period - 1) / period; /* both < 10^18 / 1000 below */

    return m ? m : 1;
}

enum tpx_code tpx_cgroup_parse_cpu_max(const char *text, unsigned long long *milli,
                                       struct tpx_err *err)
{
    const char *p = text;
    unsigned long long quota = 0, period = 0;
    int unlimited = 0;

    if (!p)
        return tpx_err_set(err, TPX_EINVAL, "cpu.max: no text");
    if (strncmp(p, "max", 3) == 0) {
        unlimited = 1;
        p += 3;
    } else if (number(&p, &quota) != 0) {
        return tpx_err_set(err, TPX_EINVAL, "cpu.max: bad quota in '%.40s'", text);
    }
    if (*p++ != ' ' || number(&p, &period) != 0 || at_end(p) != 0 || period == 0)
        return tpx_err_set(err, TPX_EINVAL, "cpu.max: bad period in '%.40s'", text);
    if (!unlimited && (quota > 1000000000000ULL || period > 1000000000000ULL))
        return tpx_err_set(err, TPX_EINVAL, "cpu.max: quota or period too large in '%.40s'", text);
    *milli = unlimited ? 0 : to_milli(quota, period);
    return TPX_OK;
}

enum tpx_code tpx_cgroup_parse_cfs(const char *quota, const char *period, unsigned long long *milli,
                                   struct tpx_err *err)
{
    const char *q = quota, *p = period;
    unsigned long long qv = 0, pv = 0;

    if (!q || !p)
        return tpx_err_set(err, TPX_EINVAL, "cpu.cfs_quota_us: no text");
    if (number(&p, &pv) != 0 || at_end(p) != 0 || pv == 0 || pv > 1000000000000ULL)
        return tpx_err_set(err, TPX_EINVAL, "cpu.cfs_period_us: bad period '%.40s'", period);
    if (strncmp(q, "-1", 2) == 0 && at_end(q + 2) == 0) {
        *milli = 0;
        return TPX_OK;
    }
    if (number(&q, &qv) != 0 || at_end(q) != 0 || qv > 1000000000000ULL)
        return tpx_err_set(err, TPX_EINVAL, "cpu.cfs_quota_us: bad quota '%.40s'", quota);
    *milli = to_milli(qv, pv);
    return TPX_OK;
}

/* The first line of a small file, or "" when it cannot be read. */
static void read_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");

    buf[0] = '\0';
    if (!f)
        return;
    if (!fgets(buf, (int)cap, f))
        buf[0] = '\0';
    fclose(f);
}

static unsigned whole_cpus(unsigned long long milli)
{
    unsigned long long n = (milli + 999) / 1000;

    return n > 65536 ? 65536 : (unsigned)n;
}

/* The v2 cgroup path of this process ("0::/kubepods/..."), or "" */
static void own_v2_path(char *buf, size_t cap)
{
    char line[512];
    FILE *f = fopen("/proc/self/cgroup", "re");

    buf[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);

        if (strncmp(line, "0::", 3) != 0)
            continue;
        while (n && line[n - 1] == '\n')
            line[--n] = '\0';
        if (n - 3 < cap) {
            memcpy(buf, line + 3, n - 2);
        }
        break;
    }
    fclose(f);
}

unsigned tpx_cgroup_cpus(const char *root)
{
    static const char *const v1_dirs[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
    char path[1024], text[128], period[128], own[512];
    unsigned long long milli = 0;
    struct tpx_err err = TPX_ERR_INIT;

    if (!root)
        root = "/sys/fs/cgroup";
    own_v2_path(own, sizeof(own));
    if (own[0] && strcmp(own, "/") != 0) {
        snprintf(path, sizeof(path), "%s%s/cpu.max", root, own);
        read_line(path, text, sizeof(text));
        if (text[0] && tpx_cgroup_parse_cpu_max(text, &milli, &err) == TPX_OK)
            return whole_cpus(milli);
    }
    snprintf(path, sizeof(path), "%s/cpu.max", root);
    read_line(path, text, sizeof(text));
    if (text[0] && tpx_cgroup_parse_cpu_max(text, &milli, &err) == TPX_OK)
        return whole_cpus(milli);
    for (size_t i = 0; i < sizeof(v1_dirs) / sizeof(v1_dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s/cpu.cfs_quota_us", root, v1_dirs[i]);
        read_line(path, text, sizeof(text));
        snprintf(path, sizeof(path), "%s/%s/cpu.cfs_period_us", root, v1_dirs[i]);
        read_line(path, period, sizeof(period));
        if (text[0] && period[0] && tpx_cgroup_parse_cfs(text, period, &milli, &err) == TPX_OK)
            return whole_cpus(milli);
    }
    return 0;
}

unsigned tpx_cpus_available(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = online < 1 ? 1 : online > 65536 ? 65536 : (unsigned)online;
    unsigned quota = tpx_cgroup_cpus(NULL);

    return quota && quota < n ? quota : n;
}
