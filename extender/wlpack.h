/* SPDX-License-Identifier: Apache-2.0 */
/* extender/wlpack.h - a pol_workload packed for keeping: most of the struct is the unused tail of
 * fixed string arrays, so a remembered pod's workload keeps about a tenth of its bytes. */
#ifndef TPX_EXTENDER_WLPACK_H
#define TPX_EXTENDER_WLPACK_H

#include "policy/policy.h"

/* A pol_workload as runs of literal bytes and runs of zero bytes (most of the struct is the
 * unused tail of fixed string arrays): a header byte h < 128 is followed by h + 1 literal bytes;
 * h >= 128 stands for h - 127 zero bytes. Unpacking gives the very same bytes back, whatever
 * fields policy.h adds. malloc'd; NULL when out of memory. */
unsigned char *ext_wlpack_pack(const struct pol_workload *wl);

/* The bytes ext_wlpack_pack() packed, back into *wl, all of it. */
void ext_wlpack_unpack(const unsigned char *p, struct pol_workload *wl);

#endif
