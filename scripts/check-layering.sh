#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/check-layering.sh - the layer rules of docs/ARCHITECTURE.md, checked on the sources:
#
#   cli/ -> extender/ -> kube/ -> objects/ -> policy/ -> topology/ -> common/
#   cli/ -> diagnose/ -> objects/, policy/ (topox diagnose; its rule.[ch] pure: no jansson)
#   cli/ -> simulate/ -> policy/ (`topox simulate`: a consumer of the core, used by cli/ only)
#                                               policy/ -> workload/ -> common/
#
# 1. includes: each folder includes only project headers of its own layer or the layers below it
#    (extender/ also reads objects/ and policy/ directly), and only the third-party headers its
#    layer owns: microhttpd.h and gnutls only in extender/http.c, curl only in kube/, libyaml only in
#    objects/yamljson.c, hwloc only in topology/discover_hwloc.c, jansson nowhere below objects/.
#    policy/ and workload/ never include common/log.h (they return reasons instead of logging).
#    Nothing outside policy/ includes policy/ledger_int.h, the ledger's private header.
# 2. links: each folder's CMakeLists.txt links only the libraries of the layers it may use.
# 3. shape: no file in policy/ over 900 lines, no source file over 1,400.
# 4. one hash: no FNV/djb2 constant outside common/hash.c.
# Usage: check-layering.sh [SOURCE_DIR]; exit 1 with every violation listed, 0 when clean.
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
fail=0

# The project folders each folder may include ("own" first), and the third-party headers it may.
allowed_dirs() {
    case $1 in
    common) echo "common" ;;
    topology) echo "topology common" ;;
    workload) echo "workload common" ;;
    policy) echo "policy workload topology common" ;;
    objects) echo "objects policy workload topology common" ;;
    simulate) echo "simulate policy workload topology common" ;;
    kube) echo "kube objects common" ;;
    extender) echo "extender kube objects policy workload topology common" ;;
    diagnose) echo "diagnose objects policy workload topology common" ;;
    cli) echo "cli diagnose extender kube objects simulate policy workload topology common" ;;
    esac
}
layers="common topology workload policy objects simulate diagnose kube extender cli"

# The third-party headers and the files that alone may include them.
#   PATTERN|FILES-OR-FOLDERS (space separated; a folder ends in /)
owners='microhttpd\.h|extender/http.c
gnutls/|extender/http.c
curl/|kube/
yaml\.h|objects/yamljson.c
hwloc|topology/discover_hwloc.c
jansson|objects/ simulate/trace.c kube/ extender/ cli/ diagnose/input.h diagnose/diagnose.h diagnose/jsonseq.h
libxml|'

report() {
    echo "layering: $1"
    fail=1
}

# 1a. project includes: "folder/x.h" must name an allowed folder
for layer in $layers; do
    [ -d "$layer" ] || continue
    ok=$(allowed_dirs "$layer")
    find "$layer" -name '*.[ch]' | sort | while read -r f; do
        grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$f" |
            sed -E 's/^([0-9]+):.*"([a-z_]+)\/.*/\1 \2/' | while read -r line dir; do
            case " $ok " in
            *" $dir "*) ;;
            *) echo "$f:$line includes $dir/ (files in $layer/ may include: $ok)" ;;
            esac
        done
    done
done >/tmp/layering.$$ 2>&1
if [ -s /tmp/layering.$$ ]; then
    report "includes that point up or sideways:"
    sed 's/^/  /' /tmp/layering.$$
fi
rm -f /tmp/layering.$$

# 1b. policy/ and workload/ never log
hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"common/log\.h"' policy workload 2>/dev/null)
[ -z "$hits" ] || { report "policy/ and workload/ must not include common/log.h:"; echo "$hits" | sed 's/^/  /'; }

# 1b'. policy/ledger_int.h is the ledger's private header (git's refs-internal.h): policy/ only
hits=$(grep -rnE --include='*.[ch]' --exclude-dir=build --exclude-dir=.git \
    '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(policy/)?ledger_int\.h"' . 2>/dev/null |
    sed 's|^\./||' | grep -v '^policy/')
[ -z "$hits" ] || { report "only policy/ may include policy/ledger_int.h:"; echo "$hits" | sed 's/^/  /'; }

# 1b''. diagnose/rule.[ch] is the pure decision rule: plain structs, libc and common/ only
hits=$(grep -nE '^[[:space:]]*#[[:space:]]*include' diagnose/rule.c diagnose/rule.h 2>/dev/null |
    grep -vE '"(diagnose/rule\.h|common/[a-z_]+\.h)"|<(math|stdbool|stddef|stdio|string)\.h>')
[ -z "$hits" ] || { report "diagnose/rule.[ch] must stay pure (libc, common/):"; echo "$hits" | sed 's/^/  /'; }

# 1c. third-party headers only where their owner is
echo "$owners" | while IFS='|' read -r pat where; do
    for layer in $layers; do
        [ -d "$layer" ] || continue
        find "$layer" -name '*.[ch]' | sort | while read -r f; do
            grep -qE "^[[:space:]]*#[[:space:]]*include[[:space:]]*<($pat)" "$f" || continue
            allowed=0
            for w in $where; do
                case $w in
                */) case $f in "$w"*) allowed=1 ;; esac ;;
                *) [ "$f" = "$w" ] && allowed=1 ;;
                esac
            done
            [ $allowed -eq 1 ] || echo "$f includes <$pat...> (allowed only in: ${where:-nowhere})"
        done
    done
done >/tmp/layering.$$ 2>&1
if [ -s /tmp/layering.$$ ]; then
    report "third-party headers outside the file that owns them:"
    sed 's/^/  /' /tmp/layering.$$
fi
rm -f /tmp/layering.$$

# 2. link dependencies named in each folder's CMakeLists.txt
allowed_links() {
    case $1 in
    common) echo "Threads::Threads" ;;
    topology) echo "topox_common topox_topology PkgConfig::HWLOC" ;;
    workload) echo "topox_common" ;;
    policy) echo "topox_topology topox_workload" ;;
    objects) echo "topox_policy PkgConfig::JANSSON PkgConfig::YAML" ;;
    simulate) echo "topox_policy PkgConfig::JANSSON" ;;
    kube) echo "topox_objects CURL::libcurl Threads::Threads" ;;
    extender) echo "topox_kube topox_objects topox_policy PkgConfig::MHD PkgConfig::GNUTLS Threads::Threads tpx_version" ;;
    diagnose) echo "topox_objects topox_policy PkgConfig::JANSSON m" ;;
    cli) echo "topox_diagnose topox_extender topox_kube topox_objects topox_simulate topox_policy topox_workload topox_topology_hwloc topox_topology topox_common tpx_version" ;;
    esac
}
for layer in $layers; do
    cm=$layer/CMakeLists.txt
    [ -f "$cm" ] || continue
    ok=$(allowed_links "$layer")
    # every word of the target_link_libraries(...) calls, comments dropped
    words=$(sed 's/#.*//' "$cm" | tr '\n' ' ' | grep -oE 'target_link_libraries\([^)]*\)' |
        sed -E 's/target_link_libraries\(//; s/\)//' | tr ' ' '\n' | grep -vE '^$')
    first=1
    for w in $words; do
        case $w in
        PUBLIC | PRIVATE | INTERFACE | tpx_build_flags | tpx_sanitize) continue ;;
        esac
        # the first word of each call is the target itself
        case $w in topox_* | topox) if sed 's/#.*//' "$cm" | grep -qE "add_(library|executable)\($w[ )]"; then continue; fi ;; esac
        case " $ok " in
        *" $w "*) ;;
        *) report "$cm links $w (libraries in $layer/ may link: $ok)" ;;
        esac
        first=0
    done
    : "$first"
done

# 3. shape: no file in policy/ over 900 lines, no source file over 1,400 (issue 9), so a module
#    that grows past its job is split before it becomes the next grab-bag.
for f in $(find $layers tools bench fuzz -name '*.[ch]' 2>/dev/null | sort); do
    n=$(wc -l <"$f")
    limit=1400
    case $f in policy/*) limit=900 ;; esac
    [ "$n" -le "$limit" ] || report "$f has $n lines (at most $limit here): split it by responsibility"
done

# 4. one hash function: common/hash.c (keyed SipHash). An FNV or djb2 constant anywhere else in the
#    product, its tools or benches is a second, unseeded hash.
hits=$(grep -rnE '1099511628211|14695981039346656037|1469598103934665603|2166136261|16777619|5381[^0-9]' \
    --include='*.c' --include='*.h' $layers tools bench fuzz 2>/dev/null | grep -v '^common/hash\.c:')
[ -z "$hits" ] || { report "a hash function outside common/hash.c:"; echo "$hits" | sed 's/^/  /'; }

if [ "$fail" -eq 0 ]; then
    echo "layering: ok (cli -> extender -> kube -> objects -> policy -> topology|workload -> common; cli -> simulate|diagnose -> policy; third-party headers only where they belong; links follow the layers)"
fi
exit $fail
