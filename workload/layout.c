/* SPDX-License-Identifier: Apache-2.0 */
/* workload/layout.c - the names of a layout's sources and traffic classes (workload/workload.h). */
#include "workload/workload.h"

const char *wl_src_name(enum pol_src src)
{
    switch (src) {
    case POL_SRC_ANNOTATION:
        return "annotation";
    case POL_SRC_FLAG:
        return "flag";
    case POL_SRC_ENV:
        return "env";
    case POL_SRC_CONFIG:
        return "config";
    case POL_SRC_DERIVED:
        return "derived";
    case POL_SRC_OBJECT:
        return "object";
    default:
        return "default";
    }
}

const char *wl_traffic_kind_name(enum pol_traffic_kind k)
{
    return k == POL_TRAFFIC_EP   ? "EP all-to-all"
           : k == POL_TRAFFIC_PP ? "PP point-to-point"
                                 : "TP all-reduce";
}

bool wl_layout_dense(const struct pol_layout *l)
{
    return l->ep <= 1 && !l->dp_attention;
}
