/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_kubeconfig.c - libFuzzer target for the kubeconfig reader (kube/config.c): bytes ->
 * a kubeconfig file -> kube_config_kubeconfig() (YAML through yamljson, contexts, clusters,
 * users, base64 *-data fields, relative paths), then a deep copy and release of what it read.
 *   build/fuzz/fuzz/fuzz_kubeconfig -dict=fuzz/dict/yaml.dict fuzz/seeds/fuzz_kubeconfig */
#include <stddef.h>
#include <stdint.h>

#include "fuzz/fuzz_tmp.h"
#include "kube/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config cfg;
    struct kube_config copy;
    struct tpx_err err = TPX_ERR_INIT;
    const char *path = fuzz_tmp_write(data, size, "kubeconfig");

    if (!path)
        return 0;
    if (kube_config_kubeconfig(path, &cfg, &err) == TPX_OK) {
        if (kube_config_copy(&copy, &cfg, &err) == TPX_OK)
            kube_config_release(&copy);
    }
    kube_config_release(&cfg);
    return 0;
}
