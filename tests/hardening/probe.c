/* SPDX-License-Identifier: Apache-2.0 */
/* tests/hardening/probe.c - a program built WITHOUT hardening (no PIE, no RELRO, lazy binding,
 * no stack protector, no _FORTIFY_SOURCE), so the hardening_checker test can show that
 * scripts/check-hardening.sh reports every one of them missing. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    char buf[64];

    snprintf(buf, sizeof(buf), "%s", argc > 1 ? argv[1] : "");
    return (int)strlen(buf);
}
