/* SPDX-License-Identifier: Apache-2.0 */
/* policy/estimate.c - bubble and imbalance estimates (DESIGN.md, "Why"). */
#include "policy/estimate.h"

double pol_bubble(unsigned pp, unsigned num_ubatches)
{
    if (pp <= 1)
        return 0.0;
    return (double)(pp - 1) / (double)(num_ubatches + pp - 1);
}

double pol_stage_imbalance(unsigned layers, unsigned pp)
{
    unsigned largest;

    if (pp == 0 || layers == 0)
        return 0.0;
    largest = (layers + pp - 1) / pp;
    return (double)largest * (double)pp / (double)layers - 1.0;
}
