/* SPDX-License-Identifier: Apache-2.0 */
/* extender/wlpack.c - a pol_workload as runs of literal bytes and runs of zero bytes, for the
 * pods the serve state remembers (extender/state.c). */
#include "extender/wlpack.h"

#include <stdlib.h>
#include <string.h>

unsigned char *ext_wlpack_pack(const struct pol_workload *wl)
{
    const unsigned char *b = (const unsigned char *)wl;
    unsigned char tmp[sizeof(*wl) + sizeof(*wl) / 128 + 2], *out;
    size_t i = 0, n = 0;

    while (i < sizeof(*wl)) {
        size_t run = 0;

        while (i + run < sizeof(*wl) && b[i + run] == 0 && run < 128)
            run++;
        if (run >= 2 || (run == 1 && i + 1 == sizeof(*wl))) {
            tmp[n++] = (unsigned char)(127 + run);
            i += run;
            continue;
        }
        /* literal: up to the next pair of zeros (or 128 bytes) */
        run = 0;
        while (i + run < sizeof(*wl) && run < 128 &&
               !(b[i + run] == 0 && (i + run + 1 == sizeof(*wl) || b[i + run + 1] == 0)))
            run++;
        tmp[n++] = (unsigned char)(run - 1);
        memcpy(tmp + n, b + i, run);
        n += run;
        i += run;
    }
    out = malloc(n);
    if (out)
        memcpy(out, tmp, n);
    return out;
}

void ext_wlpack_unpack(const unsigned char *p, struct pol_workload *wl)
{
    unsigned char *b = (unsigned char *)wl;
    size_t i = 0;

    while (i < sizeof(*wl)) {
        unsigned h = *p++;

        if (h < 128) {
            memcpy(b + i, p, h + 1);
            p += h + 1;
            i += h + 1;
        } else {
            memset(b + i, 0, h - 127);
            i += h - 127;
        }
    }
}
