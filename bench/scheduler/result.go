// SPDX-License-Identifier: Apache-2.0

package scheduler

// Result is one workload's placement, written as one JSON line (TOPOX_BENCH_OUT) for report.go.
type Result struct {
	Config       string  `json:"config"`
	Workload     string  `json:"workload"`
	Pods         int     `json:"pods"`
	Bound        int     `json:"bound"`
	Gangs        int     `json:"gangs"`
	WholeRack    float64 `json:"whole_rack"`
	WholeDomain  float64 `json:"whole_domain"`
	BindsRefused float64 `json:"binds_refused"`
	BindsFailed  float64 `json:"binds_failed"`
	Nominations  float64 `json:"nominations"`
	FilterP50Ms  float64 `json:"filter_p50_ms"`
	FilterP99Ms  float64 `json:"filter_p99_ms"`
	PrioP50Ms    float64 `json:"prioritize_p50_ms"`
	BindP50Ms    float64 `json:"bind_p50_ms"`
	TopoxCPUSec  float64 `json:"topox_cpu_s"`
}
