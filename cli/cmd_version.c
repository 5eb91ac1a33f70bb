/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_version.c - `topox version`: our version and commit, and the versions of the five
 * libraries we link, as each reports itself at run time where it can. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmd.h"
#include "extender/http.h"
#include "kube/client.h"
#include "objects/yamljson.h"
#include "topology/discover.h"
#include "tpx_version.h"

static const char usage[] = "usage: topox version [--short]\n\n"
                            "Print topox's version, the git commit it was built from and the\n"
                            "versions of libmicrohttpd, jansson, libcurl, hwloc and libyaml.\n\n"
                            "  --short     print only the version number\n"
                            "  -h, --help  this text\n";

int cmd_version(int argc, char **argv)
{
    static const struct option opts[] = {
        {"short", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char curl_version[128];
    struct cmd_args a = {"topox version", usage, ":h", opts, argc, argv, NULL, 0, 0};
    int short_only = 0;
    int c;

    while ((c = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (c) {
        case CMD_ARGS_EXIT:
            return a.status;
        case 's':
            short_only = 1;
            break;
        }
    }
    if (short_only) {
        printf("%s\n", TPX_VERSION);
        return CMD_OK;
    }
    printf("topox %s (commit %s)\n", TPX_VERSION, TPX_GIT_COMMIT);
    printf("  libmicrohttpd %s\n", ext_http_library_version());
    printf("  jansson       %s\n", obj_json_library_version());
    printf("  libcurl       %s\n", kube_library_version(curl_version, sizeof(curl_version)));
    printf("  hwloc         %s\n", topo_hwloc_version());
    printf("  libyaml       %s\n", obj_yaml_library_version());
    return CMD_OK;
}
