/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_version.c - `topox version`: our version and commit, and the versions of the five
 * libraries we link, as each reports itself at run time where it can. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

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
    int short_only = 0;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            short_only = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return CMD_OK;
        default:
            fputs(usage, stderr);
            return CMD_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "topox version: unexpected argument '%s'\n", argv[optind]);
        fputs(usage, stderr);
        return CMD_USAGE;
    }
    if (short_only) {
        printf("%s\n", TPX_VERSION);
        return CMD_OK;
    }
    printf("topox %s (commit %s)\n", TPX_VERSION, TPX_GIT_COMMIT);
    printf("  libmicrohttpd %s\n", ext_http_library_version());
    printf("  jansson       %s\n", ext_json_library_version());
    printf("  libcurl       %s\n", ext_kube_library_version(curl_version, sizeof(curl_version)));
    printf("  hwloc         %s\n", topo_hwloc_version());
    printf("  libyaml       %s\n", ext_yaml_library_version());
    return CMD_OK;
}
