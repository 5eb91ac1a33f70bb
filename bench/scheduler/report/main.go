// SPDX-License-Identifier: Apache-2.0

// report turns a bench/scheduler run into the tables of docs/bench.md: per workload, one row per
// scheduler configuration with its throughput (median of the runs, and their range), attempt
// latency, the ratios the issue sets targets for, and where the gangs landed.
//
//	go run ./report BENCH_LOG PLACEMENT_JSONL
//
// BENCH_LOG is the test binary's output (Benchmark lines with scheduler_perf's metrics);
// PLACEMENT_JSONL the lines scheduler_test.go's hook wrote (TOPOX_BENCH_OUT).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"topox/bench/scheduler"
)

type placement = scheduler.Result

// runs of one (workload, config): each run's metrics, and its placement.
type cell struct {
	metrics []map[string]float64
	places  []placement
}

var order = []string{"Default", "DefaultPct100", "Gang", "TAS", "Topox", "TopoxGang", "TASTopox", "TopoxAdaptive",
	"GB200DefaultPct100", "GB200TAS", "GB200Topox", "GB200TopoxGang"}

var benchLine = regexp.MustCompile(`^BenchmarkPerfScheduling/([^/\s]+)/([^\s]+?)(-\d+)?\s+\d+\s+(.*)$`)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: report BENCH_LOG PLACEMENT_JSONL")
		os.Exit(2)
	}
	cells := map[string]map[string]*cell{}
	get := func(w, c string) *cell {
		if cells[w] == nil {
			cells[w] = map[string]*cell{}
		}
		if cells[w][c] == nil {
			cells[w][c] = &cell{}
		}
		return cells[w][c]
	}
	if err := eachLine(os.Args[1], func(line string) {
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			return
		}
		f := strings.Fields(m[4])
		vals := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				vals[f[i+1]] = v
			}
		}
		c := get(m[2], m[1])
		c.metrics = append(c.metrics, vals)
	}); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	if err := eachLine(os.Args[2], func(line string) {
		var p placement
		if json.Unmarshal([]byte(line), &p) == nil && p.Config != "" {
			c := get(p.Workload, p.Config)
			c.places = append(c.places, p)
		}
	}); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	workloads := make([]string, 0, len(cells))
	for w := range cells {
		workloads = append(workloads, w)
	}
	sort.Slice(workloads, func(i, j int) bool { return workloadKey(workloads[i]) < workloadKey(workloads[j]) })
	for _, w := range workloads {
		printWorkload(w, cells[w])
	}
}

// workloadKey sorts 500Nodes before 2000Nodes before 5000Nodes.
func workloadKey(w string) string {
	n, rest, _ := strings.Cut(w, "Nodes")
	v, _ := strconv.Atoi(strings.TrimPrefix(n, "GB200_"))
	return fmt.Sprintf("%s%08d%s", strings.TrimSuffix(n, strconv.Itoa(v)), v, rest)
}

func eachLine(path string, fn func(string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	return sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func series(c *cell, metric string) []float64 {
	var xs []float64
	for _, m := range c.metrics {
		if v, ok := m[metric]; ok {
			xs = append(xs, v)
		}
	}
	return xs
}

func minMax(xs []float64) (float64, float64) { return slices.Min(xs), slices.Max(xs) }

// ratio of c's throughput to base's, taken within each round (run.sh runs every configuration
// once per round, so the i-th run of each is from the same round) and given as the median of the
// rounds' ratios, with their range when there are several.
func ratio(c, base *cell) string {
	if c == nil || base == nil {
		return "-"
	}
	a, b := series(c, "SchedulingThroughput/Average"), series(base, "SchedulingThroughput/Average")
	var rs []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] > 0 && b[i] > 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	if len(rs) == 0 {
		return "-"
	}
	if len(rs) == 1 {
		return fmt.Sprintf("%.2f×", rs[0])
	}
	lo, hi := minMax(rs)
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", median(rs), lo, hi)
}

func printWorkload(w string, cs map[string]*cell) {
	fmt.Printf("\n### %s\n\n", w)
	fmt.Println("| config | runs | pods/s (median, range) | attempt p50 / p99 ms | × DefaultPct100 (per round: median, range) | × Default | × TAS | × Gang | gangs whole in a rack | in one domain | bound | binds refused | topox filter p50 / p99 ms | topox CPU s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	configs := append([]string(nil), order...)
	for c := range cs {
		if !slices.Contains(configs, c) {
			configs = append(configs, c)
		}
	}
	for _, name := range configs {
		c := cs[name]
		if c == nil {
			continue
		}
		tp := series(c, "SchedulingThroughput/Average")
		tpCell := "-"
		if len(tp) > 0 {
			lo, hi := minMax(tp)
			tpCell = fmt.Sprintf("%.1f (%.1f–%.1f)", median(tp), lo, hi)
		}
		att := fmt.Sprintf("%.0f / %.0f", median(series(c, "scheduler_scheduling_attempt_duration_ms/Perc50")),
			median(series(c, "scheduler_scheduling_attempt_duration_ms/Perc99")))
		// the GB200 cases compare with their own baselines
		pre := ""
		if strings.HasPrefix(name, "GB200") {
			pre = "GB200"
		}
		var rack, dom, refused, fp50, fp99, cpu []float64
		bound, pods := 0, 0
		for _, p := range c.places {
			rack = append(rack, p.WholeRack)
			dom = append(dom, p.WholeDomain)
			refused = append(refused, p.BindsRefused)
			fp50 = append(fp50, p.FilterP50Ms)
			fp99 = append(fp99, p.FilterP99Ms)
			cpu = append(cpu, p.TopoxCPUSec)
			bound += p.Bound
			pods += p.Pods
		}
		topox := "-"
		if strings.Contains(name, "Topox") && len(fp50) > 0 {
			topox = fmt.Sprintf("%.2f / %.2f", median(fp50), median(fp99))
		}
		cpuCell, refusedCell := "-", "-"
		if strings.Contains(name, "Topox") && len(cpu) > 0 {
			cpuCell = fmt.Sprintf("%.1f", median(cpu))
			total := 0.0
			for _, r := range refused {
				total += r
			}
			refusedCell = fmt.Sprintf("%.0f", total)
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s | %.0f %% | %.0f %% | %d/%d | %s | %s | %s |\n",
			name, len(c.metrics), tpCell, att,
			ratio(c, cs[pre+"DefaultPct100"]), ratio(c, cs[pre+"Default"]),
			ratio(c, cs[pre+"TAS"]), ratio(c, cs[pre+"Gang"]),
			median(rack), median(dom), bound, pods, refusedCell, topox, cpuCell)
	}
}
