/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cmd_label.c - `topox label`: not built yet. */
#include "extender/cmd.h"

int cmd_label(int argc, char **argv)
{
    return cmd_not_built(argc, argv, "usage: topox label [FLAGS]\n\n(not built yet)\n");
}
