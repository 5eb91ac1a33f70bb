/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_cmdline.c - libFuzzer target for the engine command lines of a pod: the public entry
 * that reads a pod's parallelism, pol_workload_infer() from pod facts (vLLM/SGLang flags in argv
 * and inside `sh -c` scripts, topox.io annotations, LWS labels), then pol_workload_validate()
 * on a small synthetic cluster. It reaches the tokenizer through the policy API only, so it
 * survives the tokenizer moving to common/.
 * Layout: byte 0 is the accelerators requested (low 5 bits) and the resource (top bits); the rest
 * is lines: "@key=value" an annotation, "#key=value" a label, anything else one argv entry (a
 * NUL ends the input).
 *   build/fuzz/fuzz/fuzz_cmdline -dict=fuzz/dict/cmdline.dict fuzz/seeds/fuzz_cmdline */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "topology/synthetic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ITEMS = 64 };

static struct topo_cluster *cluster;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const resources[] = {"nvidia.com/gpu", "amd.com/gpu", "huawei.com/Ascend910",
                                            NULL};
    struct topo_kv ann[MAX_ITEMS];
    struct topo_kv lab[MAX_ITEMS];
    const char *argv[MAX_ITEMS];
    struct pol_pod_facts f;
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;
    size_t na = 0;
    size_t nl = 0;
    size_t nv = 0;
    char *text;

    if (size < 1)
        return 0;
    if (!cluster) {
        cluster = topo_cluster_synthetic("racks=2,nodes-per-rack=2,gpus-per-node=8", &err);
        if (!cluster)
            return 0;
        tpx_err_clear(&err);
    }
    text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    for (char *p = text; p;) {
        char *end = strchr(p, '\n');
        char *eq;

        if (end)
            *end = '\0';
        if ((p[0] == '@' || p[0] == '#') && (eq = strchr(p, '=')) != NULL) {
            struct topo_kv *kv = p[0] == '@' ? ann : lab;
            size_t *n = p[0] == '@' ? &na : &nl;

            *eq = '\0';
            if (*n < MAX_ITEMS)
                kv[(*n)++] = (struct topo_kv){p + 1, eq + 1};
        } else if (nv < MAX_ITEMS) {
            argv[nv++] = p;
        }
        p = end ? end + 1 : NULL;
    }
    memset(&f, 0, sizeof(f));
    f.name = "fuzz-0";
    f.ns = "default";
    f.uid = "uid-0";
    f.labels = lab;
    f.nlabels = nl;
    f.annotations = ann;
    f.nannotations = na;
    f.argv = argv;
    f.nargv = nv;
    f.accel = data[0] & 31u;
    f.resource = resources[(data[0] >> 5) % 4];
    if (pol_workload_infer(&f, &wl, &err) == TPX_OK) {
        tpx_err_clear(&err);
        (void)pol_workload_validate(&wl, cluster, &err);
    }
    free(text);
    return 0;
}
