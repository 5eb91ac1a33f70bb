/* SPDX-License-Identifier: Apache-2.0 */
/* topology/discover.h - hwloc discovery of one node. The only module that knows hwloc; callers see
 * plain C values. */
#ifndef TPX_TOPOLOGY_DISCOVER_H
#define TPX_TOPOLOGY_DISCOVER_H

/* hwloc's runtime version as "2.9.0 (API 2.8)": the release built against, the run-time API; static buffer. Cannot fail; thread-safe. */
const char *topo_hwloc_version(void);

#endif
