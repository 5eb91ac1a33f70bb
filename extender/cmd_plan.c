/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cmd_plan.c - `topox plan`: not built yet. */
#include "extender/cmd.h"

int cmd_plan(int argc, char **argv)
{
    return cmd_not_built(argc, argv, "usage: topox plan [FLAGS]\n\n(not built yet)\n");
}
