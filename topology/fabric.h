/* SPDX-License-Identifier: Apache-2.0 */
/* topology/fabric.h - interconnect kinds and their label spellings. Pure; no I/O. */
#ifndef TPX_TOPOLOGY_FABRIC_H
#define TPX_TOPOLOGY_FABRIC_H

#include <stdbool.h>

/* Ordered slowest to fastest, so a comparison says which link is better. */
enum topo_fabric {
    TOPO_FABRIC_UNKNOWN = 0,
    TOPO_FABRIC_PCIE,
    TOPO_FABRIC_XGMI,
    TOPO_FABRIC_HCCS,
    TOPO_FABRIC_NVLINK,
    TOPO_FABRIC_NVSWITCH,
};

/* Label value ("nvswitch", "pcie", ...); "unknown" for TOPO_FABRIC_UNKNOWN. Never NULL. */
const char *topo_fabric_name(enum topo_fabric f);

/* Parse a label value, case-insensitively. false when unknown (*out untouched). */
bool topo_fabric_parse(const char *s, enum topo_fabric *out);

#endif
