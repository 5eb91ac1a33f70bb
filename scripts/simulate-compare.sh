#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/simulate-compare.sh - the 20-seed comparison of docs/simulate.md: `topox simulate` with
# topox's score and the rack best-fit reference on generated traces, whole groups per seed, the
# sums, and whether topox reached best-fit + 5 % without falling below it on any seed; beside them
# blind first-fit, `pack` and `pack-term` (topox with the experimental rank and term of
# policy/pack.c, off in serve and plan), and the two references that ignore fragmentation:
# `fluid-rack` (a group is admitted whenever some rack has as many free GPUs) and `fluid` (whenever
# the cluster has). The references keep no rules: they are not placements.
#
#   scripts/simulate-compare.sh [TOPOX] [SEEDS] [CLUSTER] [GEN]
#     TOPOX    the binary (build/release/cli/topox, else build/dev/cli/topox)
#     SEEDS    how many seeds, 1..SEEDS (20)
#     CLUSTER  the synthetic cluster (racks=8,nodes-per-rack=8,gpus-per-node=8,domain-nodes=2)
#     GEN      generator keys after seed= (groups=400,gpus=512,load=1.0,life=6)
# Exit 0 when the target holds, 1 when it does not, 2 when a run failed.
set -eu
topox=${1:-}
if [ -z "$topox" ]; then
    topox=build/release/cli/topox
    [ -x "$topox" ] || topox=build/dev/cli/topox
fi
seeds=${2:-20}
cluster=${3:-racks=8,nodes-per-rack=8,gpus-per-node=8,domain-nodes=2}
gen=${4:-groups=400,gpus=512,load=1.0,life=6}

printf '| seed | topox whole | best-fit whole | topox - best-fit | pack whole | pack-term whole | blind whole | fluid-rack whole (reference, no rules) | fluid whole (reference, no rules) | topox rejected (with room) | best-fit rejected (with room) | topox GPU-h stranded | best-fit GPU-h stranded |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
s=1
tt=0
tb=0
tn=0
tp=0
tq=0
tr=0
tf=0
below=0
while [ "$s" -le "$seeds" ]; do
    out=$("$topox" simulate --cluster "$cluster" --generate "seed=$s,$gen" \
        --policy topox,best-fit,blind,pack,pack-term,fluid-rack,fluid) || exit 2
    # columns: POLICY GROUPS WHOLE CROSS-RACK TP-SPLIT HALF REJECTED WITH-ROOM WHOLE-GPUS
    # GPU-H-USED GPU-H-STRANDED MEAN-FRAG
    row() { printf '%s\n' "$out" | awk -v p="$1" -v c="$2" '$1 == p { print $c }'; }
    t=$(row topox 3)
    b=$(row best-fit 3)
    n=$(row blind 3)
    k=$(row pack 3)
    q=$(row pack-term 3)
    r=$(row fluid-rack 3)
    f=$(row fluid 3)
    printf '| %s | %s | %s | %+d | %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s | %s |\n' "$s" "$t" \
        "$b" $((t - b)) "$k" "$q" "$n" "$r" "$f" "$(row topox 7)" "$(row topox 8)" \
        "$(row best-fit 7)" "$(row best-fit 8)" "$(row topox 11)" "$(row best-fit 11)"
    [ "$t" -ge "$b" ] || below=$((below + 1))
    tt=$((tt + t))
    tb=$((tb + b))
    tn=$((tn + n))
    tp=$((tp + k))
    tq=$((tq + q))
    tr=$((tr + r))
    tf=$((tf + f))
    s=$((s + 1))
done
pct() { awk -v t="$1" -v b="$tb" 'BEGIN { printf "%+.1f", b ? 100 * (t - b) / b : 0 }'; }
printf '| **sum** | **%s** | **%s** | **%+d (%s %%)** | **%s** | **%s** | **%s** | **%s (%s %%)** | **%s (%s %%)** | | | | |\n' \
    "$tt" "$tb" $((tt - tb)) "$(pct "$tt")" "$tp" "$tq" "$tn" "$tr" "$(pct "$tr")" "$tf" "$(pct "$tf")"
ok=$(awk -v t="$tt" -v b="$tb" 'BEGIN { print (t >= 1.05 * b) ? 1 : 0 }')
if [ "$ok" = 1 ] && [ "$below" -eq 0 ]; then
    echo "target met: topox >= best-fit + 5 % summed over $seeds seeds, below it on no seed"
    exit 0
fi
echo "target missed: topox/best-fit = $tt/$tb, seeds below best-fit: $below"
exit 1
