/* SPDX-License-Identifier: Apache-2.0 */
/* common/cgroup.h - how many CPUs this process may really use: the cgroup CPU quota (v2 cpu.max,
 * v1 cpu.cfs_quota_us / cpu.cfs_period_us), not the host's CPU count, which in a container with a
 * 2-CPU limit on a 128-core host would start 64 threads to share 2 CPUs. libc only.
 *
 * The parsers are pure: they take the files' text. tpx_cgroup_cpus() reads the files. */
#ifndef TPX_COMMON_CGROUP_H
#define TPX_COMMON_CGROUP_H

#include "common/err.h"

/* cgroup v2 "cpu.max": "QUOTA PERIOD" or "max PERIOD" (one line, a newline allowed). *milli is
 * the quota in thousandths of a CPU (1500 for "150000 100000"), 0 for "max" (no limit).
 * TPX_EINVAL for anything else (also a zero period); *milli is left alone on failure. */
enum tpx_code tpx_cgroup_parse_cpu_max(const char *text, unsigned long long *milli,
                                       struct tpx_err *err);

/* cgroup v1: the texts of cpu.cfs_quota_us ("-1": no limit) and cpu.cfs_period_us. Same result
 * and errors as tpx_cgroup_parse_cpu_max(). */
enum tpx_code tpx_cgroup_parse_cfs(const char *quota, const char *period, unsigned long long *milli,
                                   struct tpx_err *err);

/* The CPU quota of this process's cgroup, rounded up to whole CPUs (1.5 CPUs: 2), looked up under
 * root (NULL: "/sys/fs/cgroup"): the v2 file of the cgroup /proc/self/cgroup names, then the v2
 * file at root (a container's cgroup namespace), then v1's cpu/ and cpu,cpuacct/. 0 when no
 * quota is set or no file can be read. Cannot fail. */
unsigned tpx_cgroup_cpus(const char *root);

/* What a thread pool should use: the cgroup quota when one is set, else the online CPUs, and
 * never more than the online CPUs. At least 1. */
unsigned tpx_cpus_available(void);

#endif
