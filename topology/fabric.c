/* SPDX-License-Identifier: Apache-2.0 */
/* topology/fabric.c - interconnect names. */
#include "topology/fabric.h"

#include <strings.h>

static const char *const names[] = {"unknown", "pcie", "xgmi", "hccs", "nvlink", "nvswitch"};

const char *topo_fabric_name(enum topo_fabric f)
{
    if ((unsigned)f >= sizeof(names) / sizeof(names[0]))
        return names[0];
    return names[f];
}

bool topo_fabric_parse(const char *s, enum topo_fabric *out)
{
    for (unsigned i = 1; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (enum topo_fabric)i;
            return true;
        }
    }
    return false;
}
