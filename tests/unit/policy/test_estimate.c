/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_estimate.c - bubble and stage imbalance figures of DESIGN.md. */
#include "policy/estimate.h"

#include <criterion/criterion.h>
#include <math.h>

Test(pol_estimate, bubble_matches_design_examples)
{
    cr_expect(fabs(pol_bubble(4, 4) - 3.0 / 7.0) < 1e-9);
    cr_expect(fabs(pol_bubble(4, 32) - 3.0 / 35.0) < 1e-9);
    cr_expect(fabs(pol_bubble(8, 32) - 7.0 / 39.0) < 1e-9);
    cr_expect(pol_bubble(1, 8) == 0.0);
}

Test(pol_estimate, imbalance_zero_when_layers_divide)
{
    cr_expect(pol_stage_imbalance(126, 2) == 0.0);
    cr_expect(fabs(pol_stage_imbalance(10, 4) - (3.0 * 4.0 / 10.0 - 1.0)) < 1e-9);
    cr_expect(pol_stage_imbalance(0, 4) == 0.0);
}
