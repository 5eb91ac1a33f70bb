#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/check-hardening.sh - what checksec reports, with readelf only: does an ELF binary carry
# the hardening of a TPX_HARDEN build (cmake/TpxBuildFlags.cmake)?
#
#   PIE          ELF type DYN and DT_FLAGS_1 has PIE          (-fPIE -pie)
#   RELRO        a GNU_RELRO segment                           (-Wl,-z,relro)
#   BIND_NOW     DT_FLAGS has BIND_NOW or DT_FLAGS_1 has NOW   (-Wl,-z,now: full RELRO with RELRO)
#   canary       calls __stack_chk_fail                        (-fstack-protector-strong)
#   FORTIFY      calls at least one __*_chk function           (-D_FORTIFY_SOURCE=3 at -O1+)
#   NX           GNU_STACK is not executable
#   no TEXTREL   no relocations in read-only text
#
# The symbol checks read the dynamic symbol table, so they work on a stripped binary too.
# Usage: check-hardening.sh [--no-fortify] BINARY. Prints one line per property, then
# "hardening: ok" (exit 0) or "hardening: missing: NAME..." (exit 1); exit 2 on a usage error.
set -u
fortify=1
if [ "${1:-}" = "--no-fortify" ]; then
    fortify=0
    shift
fi
bin=${1:-}
if [ -z "$bin" ] || [ ! -f "$bin" ]; then
    echo "usage: check-hardening.sh [--no-fortify] BINARY" >&2
    exit 2
fi
command -v readelf >/dev/null 2>&1 || { echo "check-hardening: readelf not found (binutils)" >&2; exit 2; }

header=$(readelf -h "$bin" 2>/dev/null) || { echo "check-hardening: '$bin' is not an ELF file" >&2; exit 2; }
dynamic=$(readelf -d "$bin" 2>/dev/null)
segments=$(readelf -lW "$bin" 2>/dev/null)
dynsyms=$(readelf --dyn-syms -W "$bin" 2>/dev/null)
missing=""

check() { # NAME RESULT(0 = present) DETAIL
    if [ "$2" -eq 0 ]; then
        printf '  %-10s yes  %s\n' "$1" "$3"
    else
        printf '  %-10s NO   %s\n' "$1" "$3"
        missing="$missing $1"
    fi
}

echo "$bin:"
echo "$header" | grep -q 'Type:[[:space:]]*DYN' && echo "$dynamic" | grep -q 'FLAGS_1.*PIE'
check PIE $? "ELF type DYN, FLAGS_1 PIE"
echo "$segments" | grep -q 'GNU_RELRO'
check RELRO $? "GNU_RELRO segment"
echo "$dynamic" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW'
check BIND_NOW $? "DT_FLAGS BIND_NOW / DT_FLAGS_1 NOW"
echo "$dynsyms" | grep -q '__stack_chk_fail'
check canary $? "__stack_chk_fail"
if [ "$fortify" -eq 1 ]; then
    chk=$(echo "$dynsyms" | grep -Eo '__[a-z0-9_]+_chk([@ ]|$)' | tr -d '@ ' | sort -u | tr '\n' ' ')
    [ -n "$chk" ]
    check FORTIFY $? "${chk:-no __*_chk calls}"
fi
echo "$segments" | grep 'GNU_STACK' | grep -q 'RWE'
[ $? -ne 0 ]
check NX $? "GNU_STACK not executable"
echo "$dynamic" | grep -q 'TEXTREL'
[ $? -ne 0 ]
check no-TEXTREL $? "no DT_TEXTREL"

if [ -n "$missing" ]; then
    echo "hardening: missing:$missing"
    exit 1
fi
echo "hardening: ok"
