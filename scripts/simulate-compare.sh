#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/simulate-compare.sh - issue 22's targets, measured side by side in one run (docs/simulate.md
# "Results"): `topox simulate --queue --backfill` on the generated `mix=mixed` traces (serving and
# training gangs) of SEEDS seeds x 3 cluster shapes (hgx, gb200, mixed) x 3 loads (0.8, 1.0, 1.3),
# every policy on the same trace: best-fit (the reference), topox, pack, pack-term, the anchors
# (kueue-best-fit, kueue-least-free, volcano-binpack, slurm-block), blind and fluid (no rules: not
# placements). Per cluster and load: GPU-hours delivered (and on how many seeds below best-fit), the
# mean p95 wait of the two largest shapes against best-fit's, the mean share of time the shape with
# the largest TP group was placeable, the groups that gave up or never found a place, the rules
# broken. Then the targets per policy, and the openb regression (no loss on any window).
#
#   scripts/simulate-compare.sh [TOPOX] [SEEDS] [GROUPS]
#     TOPOX    the binary (build/release/cli/topox, else build/dev/cli/topox)
#     SEEDS    seeds 1..SEEDS (20)
#     GROUPS   arrivals per trace (400)
# The md5 of every generated trace is checked against tests/fixtures/simulate/targets.md5 (when it
# lists that trace): the traces of the tables are the ones there, byte for byte. Needs jq.
# Exit 0 when a candidate met every target, 1 when none did, 2 when a run failed.
set -eu
topox=${1:-}
if [ -z "$topox" ]; then
    topox=build/release/cli/topox
    [ -x "$topox" ] || topox=build/dev/cli/topox
fi
seeds=${2:-20}
groups=${3:-400}
here=$(cd "$(dirname "$0")/.." && pwd)
sums=$here/tests/fixtures/simulate/targets.md5
policies=best-fit,topox,pack,pack-term,kueue-best-fit,kueue-least-free,volcano-binpack,slurm-block,blind,fluid
command -v jq >/dev/null || { echo "simulate-compare: needs jq" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One trace: each policy's delivered GPU-hours, rule breaks, waits of the two largest shapes and the
# placeable share of the largest-TP shape (the shapes chosen on best-fit's list, the same for all).
extract='
  (.policies[] | select(.policy == "best-fit") | .shapes | map(select(.groups > 0))) as $bs
  | ($bs | sort_by(-.gpus, .shape) | .[0:2] | map(.shape)) as $big
  | ($bs | sort_by(-.tp, -.gpus, .shape) | .[0].shape) as $tpbig
  | .policies[]
  | (.shapes | map({key: .shape, value: .}) | from_entries) as $sh
  | {c: $c, l: $l, s: ($s | tonumber), p: .policy, d: .gpu_hours_delivered,
     st: .gpu_hours_stranded, al: .allocation_at_saturation,
     gu: .gave_up, np: .never_placed,
     rb: (.rule_breaks.tp_split + .rule_breaks.cross_rack + .rule_breaks.half_placed),
     n1: $big[0], n2: $big[1], nt: $tpbig,
     w1: ($sh[$big[0]].wait_p95_s // 0), w2: ($sh[$big[1]].wait_p95_s // 0),
     ps: ($sh[$tpbig].placeable_share // 0)}'

for cluster in hgx gb200 mixed; do
    for load in 0.8 1.0 1.3; do
        s=1
        while [ "$s" -le "$seeds" ]; do
            gen="seed=$s,mix=mixed,fleet=$cluster,load=$load,groups=$groups"
            "$topox" simulate --generate "$gen" >"$tmp/trace.jsonl" || exit 2
            sum=$(md5sum <"$tmp/trace.jsonl" | cut -d' ' -f1)
            want=$(awk -v g="$gen" '$2 == g { print $1 }' "$sums" 2>/dev/null || true)
            if [ -n "$want" ] && [ "$want" != "$sum" ]; then
                echo "simulate-compare: $gen: md5 $sum, $sums says $want" >&2
                exit 2
            fi
            echo "$sum $gen" >>"$tmp/md5"
            "$topox" simulate --cluster "$cluster" --trace "$tmp/trace.jsonl" --queue --backfill \
                --policy "$policies" -o json >"$tmp/out.json" || exit 2
            jq -c --arg c "$cluster" --arg l "$load" --arg s "$s" "$extract" "$tmp/out.json" \
                >>"$tmp/rows.jsonl"
            s=$((s + 1))
        done
    done
done

# Per cluster, load and policy, against best-fit on the same seeds.
jq -s '
  (map(select(.p == "best-fit")) | map({key: "\(.c)/\(.l)/\(.s)", value: .}) | from_entries) as $bf
  | group_by([.c, .l, .p]) | map(
      (length) as $n
      | {c: .[0].c, l: .[0].l, p: .[0].p, n: $n, n1: .[0].n1, n2: .[0].n2, nt: .[0].nt,
         d: (map(.d) | add), bd: (map($bf["\(.c)/\(.l)/\(.s)"].d) | add),
         st: (map(.st) | add), al: (map(.al) | add / $n),
         below: (map(select(.d < $bf["\(.c)/\(.l)/\(.s)"].d - 0.001)) | length),
         w1: (map(.w1) | add / $n), bw1: (map($bf["\(.c)/\(.l)/\(.s)"].w1) | add / $n),
         w2: (map(.w2) | add / $n), bw2: (map($bf["\(.c)/\(.l)/\(.s)"].w2) | add / $n),
         ps: (map(.ps) | add / $n), bps: (map($bf["\(.c)/\(.l)/\(.s)"].ps) | add / $n),
         gu: (map(.gu + .np) | add), rb: (map(.rb) | add)})' "$tmp/rows.jsonl" >"$tmp/cells.json"

echo "| cluster | load | policy | GPU-h delivered (vs best-fit) | seeds below best-fit | GPU-h stranded | allocation at saturation | p95 wait, largest shape (h; / best-fit) | p95 wait, 2nd largest (h; / best-fit) | largest-TP shape placeable | gave up or never placed | rules broken |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
jq -r '.[] | "| \(.c) | \(.l) | \(.p) | \(.d | floor) (\(if .bd > 0 then (1000 * (.d - .bd) / .bd | round / 10) else 0 end) %) | \(.below) of \(.n) | \(.st | floor) | \(1000 * .al | round / 1000) | \(.w1 / 36 | round / 100) (\(if .bw1 > 0 then (100 * .w1 / .bw1 | round / 100) else "-" end)) | \(.w2 / 36 | round / 100) (\(if .bw2 > 0 then (100 * .w2 / .bw2 | round / 100) else "-" end)) | \(1000 * .ps | round / 1000) (best-fit \(1000 * .bps | round / 1000)) | \(.gu) | \(.rb) |"' "$tmp/cells.json"
echo
jq -r '.[] | select(.p == "best-fit") | "shapes of \(.c) at \(.l): largest \(.n1), 2nd \(.n2), largest TP \(.nt)"' "$tmp/cells.json" | sort -u
echo

# The targets per candidate (blind and fluid keep no rules: not candidates).
echo "| policy | delivered >= best-fit on every seed | p95 of the two largest <= 0.8 x best-fit (loads 1.0, 1.3) | largest-TP placeable >= best-fit | rules broken | all |"
echo "|---|---|---|---|---|---|"
met=$(jq -r '
  map(select(.p != "best-fit" and .p != "blind" and .p != "fluid")) | group_by(.p) | map(
    (map(.below) | add) as $below
    | (map(select(.l != "0.8")) | map(select(.w1 <= 0.8 * .bw1 and .w2 <= 0.8 * .bw2)) | length) as $w
    | (map(select(.l != "0.8")) | length) as $wn
    | (map(select(.ps >= .bps - 1e-9)) | length) as $ps
    | (map(.rb) | add) as $rb
    | {p: .[0].p, ok: ($below == 0 and $w == $wn and $ps == length and $rb == 0),
       row: "| \(.[0].p) | below on \($below) of \(map(.n) | add) | \($w) of \($wn) cells | \($ps) of \(length) cells | \($rb) | \(if ($below == 0 and $w == $wn and $ps == length and $rb == 0) then "**met**" else "missed" end) |"})
  | (.[] | .row), "MET \(map(select(.ok)) | map(.p) | join(","))"' "$tmp/cells.json")
printf '%s\n' "$met" | grep -v '^MET '
echo

# openb: the real trace in 4 windows of its pods, arrivals 4 x compressed (scripts/openb-to-trace.sh),
# on its own nodes: no policy may deliver less than best-fit on any window.
openb=$here/tests/fixtures/simulate/openb_gpu_pods.csv
if [ -f "$openb" ]; then
    echo "| openb window | $(echo "$policies" | sed 's/,blind,fluid$//; s/,/ | /g') |"
    echo "|---|$(echo "$policies" | sed 's/,blind,fluid$//; s/[^,]*/---/g; s/,/|/g')|"
    lossy=0
    for w in 1 2 3 4; do
        "$here/scripts/openb-to-trace.sh" "$openb" "$w/4" 4 >"$tmp/openb.jsonl" || exit 2
        "$topox" simulate --cluster openb --trace "$tmp/openb.jsonl" --queue --backfill \
            --policy "${policies%,blind,fluid}" -o json >"$tmp/openb.json" || exit 2
        row=$(jq -r '(.policies[] | select(.policy == "best-fit") | .gpu_hours_delivered) as $b
            | [.policies[] | "\(.gpu_hours_delivered | floor)\(if .gpu_hours_delivered < $b - 0.001 then " (loss)" else "" end)"] | join(" | ")' "$tmp/openb.json")
        echo "| $w of 4 | $row |"
        case $row in *loss*) lossy=1 ;; esac
    done
    echo
    [ "$lossy" -eq 0 ] && echo "openb: no policy below best-fit on any window" ||
        echo "openb: a policy delivered less than best-fit on some window"
fi
cp "$tmp/md5" "${SIMULATE_COMPARE_MD5:-/dev/null}" 2>/dev/null || true

winners=$(printf '%s\n' "$met" | sed -n 's/^MET //p')
if [ -n "$winners" ]; then
    echo "targets met by: $winners"
    exit 0
fi
echo "targets: no candidate met every target"
exit 1
