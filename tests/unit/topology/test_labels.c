/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/topology/test_labels.c - placeholder until the labels tests land. */
#include "topology/model.h"

#include <criterion/criterion.h>

Test(topo_labels, builds)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    cr_assert_not_null(c);
    topo_cluster_free(c);
}
