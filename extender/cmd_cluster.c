/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cmd_cluster.c - `topox cluster`: not built yet. */
#include "extender/cmd.h"

int cmd_cluster(int argc, char **argv)
{
    return cmd_not_built(argc, argv, "usage: topox cluster [FLAGS]\n\n(not built yet)\n");
}
