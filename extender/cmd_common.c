/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cmd_common.c - helpers shared by the cmd_* files. */
#include "extender/cmd.h"

#include <stdio.h>
#include <string.h>

int cmd_not_built(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return CMD_OK;
        }
    }
    fprintf(stderr, "topox %s: not built yet\n", argv[0]);
    return CMD_USAGE;
}
