/* SPDX-License-Identifier: Apache-2.0 */
/* topology/discover_hwloc.c - the only file that includes <hwloc.h>. */
#include "topology/discover.h"

#include <hwloc.h>
#include <stdio.h>

const char *topo_hwloc_version(void)
{
    static char v[32];
    unsigned api = hwloc_get_api_version();

    /* HWLOC_VERSION is the release we built against; the API version is what the library that was
     * loaded at run time reports (hwloc bumps it only when the ABI changes). */
    snprintf(v, sizeof(v), "%s (API %u.%u)", HWLOC_VERSION, api >> 16, (api >> 8) & 0xff);
    return v;
}
