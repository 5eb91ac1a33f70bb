/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cmd_serve.c - `topox serve`: not built yet. */
#include "extender/cmd.h"

int cmd_serve(int argc, char **argv)
{
    return cmd_not_built(argc, argv, "usage: topox serve [FLAGS]\n\n(not built yet)\n");
}
