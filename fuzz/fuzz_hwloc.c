/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_hwloc.c - libFuzzer target for hwloc XML through discovery
 * (topology/discover_hwloc.c): bytes -> an XML file -> topo_discover(TOPO_SOURCE_XML) (hwloc's
 * XML reader, then the PCI, OS-device, link-matrix and NIC-affinity scans), then the labels, the
 * topox.io/topology annotation and an override, as `topox label` does with them.
 *   build/fuzz/fuzz/fuzz_hwloc -max_len=1048576 -dict=fuzz/dict/hwloc.dict \
 *     fuzz/seeds/fuzz_hwloc tests/fixtures/hwloc */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <hwloc.h>

#include "fuzz/fuzz_tmp.h"
#include "topology/discover.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One topology held for the whole run keeps hwloc's components loaded: libhwloc unloads its
 * plugins (hwloc_xml_libxml.so, and libxml2 with it) when the last topology is destroyed, and then
 * LeakSanitizer cannot name the frames of libxml2's own leak, nor lsan.supp suppress it. */
static hwloc_topology_t keep_components;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (hwloc_topology_init(&keep_components) != 0)
        keep_components = NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct topo_discovery d;
    struct tpx_err err = TPX_ERR_INIT;
    const char *path;

    if (!getenv("HWLOC_HIDE_ERRORS"))
        setenv("HWLOC_HIDE_ERRORS", "2", 1); /* hwloc's own complaints about bad XML */
    path = fuzz_tmp_write(data, size, "topo.xml");
    if (!path)
        return 0;
    if (topo_discover(TOPO_SOURCE_XML, path, &d, &err) == TPX_OK) {
        struct topo_label_set labels;
        struct tpx_buf ann;

        topo_discovery_labels(&d, &labels);
        for (size_t i = 0; i < labels.n; i++) {
            if (!topo_label_value_valid(labels.v[i].value))
                abort(); /* discovery must never write a label Kubernetes refuses */
        }
        tpx_buf_init(&ann, 1 << 20);
        (void)topo_discovery_annotation(&d, topo_hwloc_version(), &ann, &err);
        tpx_buf_release(&ann);
        tpx_err_clear(&err);
        if (d.count > 0)
            (void)topo_discovery_override(&d, TOPO_FABRIC_UNKNOWN, (unsigned)d.count, &err);
    }
    topo_discovery_release(&d);
    return 0;
}
