/* SPDX-License-Identifier: Apache-2.0 */
/* policy/estimate.h - pipeline estimates printed by `topox plan`: bubble and stage imbalance.
 * Pure arithmetic; cannot fail. */
#ifndef TPX_POLICY_ESTIMATE_H
#define TPX_POLICY_ESTIMATE_H

/* Pipeline bubble (pp-1)/(num_ubatches+pp-1), in 0..1. 0 when pp <= 1; pp-1/pp when ubatches is 0.
 */
double pol_bubble(unsigned pp, unsigned num_ubatches);

/* Stage imbalance for `layers` split over `pp` stages: (largest stage / mean stage) - 1, so 0 when
 * layers divide evenly. 0 when pp or layers is 0. */
double pol_stage_imbalance(unsigned layers, unsigned pp);

#endif
