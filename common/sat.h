/* SPDX-License-Identifier: Apache-2.0 */
/* common/sat.h - saturating arithmetic on counts of accelerators, shared by the cluster model
 * (topology/model.c) and the ledger (policy/). Pure, header-only. */
#ifndef TPX_COMMON_SAT_H
#define TPX_COMMON_SAT_H

#include <limits.h>

/* a + b, or UINT_MAX when the sum would not fit. */
static inline unsigned tpx_sat_add(unsigned a, unsigned b)
{
    return a > UINT_MAX - b ? UINT_MAX : a + b;
}

#endif
