// SPDX-License-Identifier: Apache-2.0

// Package scheduler runs upstream's scheduler benchmark (scheduler_perf from k8s.io/kubernetes,
// test/integration/scheduler_perf) with GPU gang workloads, with and without topox as the
// scheduler's extender. Nothing upstream is changed: this package calls
// RunBenchmarkPerfScheduling with its own workload file (performance-config.yaml), and a prepare
// hook starts `topox serve --bind-mode=api` against the benchmark's API server for the
// configurations whose name says Topox. The same hook measures placement when a workload ends:
// the share of gangs whole in one rack and in one NVLink domain, and the binds topox refused.
// README.md says how to run it; `make bench-scheduler` does.
package scheduler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// topoxListen is where configs/topox*.yaml point the scheduler's extender.
const topoxListen = "127.0.0.1:18888"

// httpc talks to topox without keep-alive: an idle connection's goroutines would outlive the
// test case, and scheduler_perf's goroutine leak check waits for them to end.
var httpc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	m.Run()
}

func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "topox", nil,
		perf.WithPrepareFn(prepare), perf.WithPodsSchedulingTimeout(20*time.Minute))
}

// caseOf splits "BenchmarkPerfScheduling/Topox/2000Nodes_Gang4" into its configuration and
// workload.
func caseOf(name string) (config, workload string) {
	parts := strings.Split(name, "/")
	if len(parts) >= 3 {
		return parts[1], parts[2]
	}
	return name, ""
}

// prepare runs after the scheduler has started and before the workload creates anything.
func prepare(tCtx ktesting.TContext) error {
	config, workload := caseOf(tCtx.Name())
	var tpx *topoxProcess
	if strings.Contains(config, "Topox") {
		var err error
		if tpx, err = startTopox(tCtx, config+"_"+workload); err != nil {
			return err
		}
	}
	// Cleanups run last-registered first: this one, while the API server still runs.
	tCtx.Cleanup(func() {
		res := measure(tCtx, config, workload, tpx)
		if tpx != nil {
			tpx.stop()
		}
		line, _ := json.Marshal(res)
		fmt.Printf("TOPOX-PLACEMENT %s\n", line)
		if out := os.Getenv("TOPOX_BENCH_OUT"); out != "" {
			if f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintf(f, "%s\n", line)
				f.Close()
			}
		}
	})
	return nil
}

type topoxProcess struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

// startTopox writes a kubeconfig for the benchmark's API server (its loopback token; TLS is not
// verified, as the loopback certificate names a server name topox's kubeconfig reader does not
// take) and starts the binary TOPOX_BIN names, waiting until /readyz says its watch is in sync.
func startTopox(tCtx ktesting.TContext, name string) (*topoxProcess, error) {
	bin := os.Getenv("TOPOX_BIN")
	if bin == "" {
		return nil, fmt.Errorf("TOPOX_BIN is not set: point it at a built topox (make bench-scheduler does)")
	}
	dir, err := os.MkdirTemp("", "topox-bench-")
	if err != nil {
		return nil, err
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kc, tCtx.RESTConfig()); err != nil {
		return nil, err
	}
	logDir := os.Getenv("TOPOX_BENCH_LOGS")
	if logDir == "" {
		logDir = dir
	}
	logPath := filepath.Join(logDir, strings.ReplaceAll(name, "/", "_")+".topox.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	level := os.Getenv("TOPOX_LOG_LEVEL") // info logs every decision: slower, for a look
	if level == "" {
		level = "warn"
	}
	args := []string{"--log-level=" + level, "serve", "--kubeconfig", kc, "--bind-mode=api",
		"--cluster-source=api", "--scheduler-name=default-scheduler", "--listen", topoxListen}
	if extra := os.Getenv("TOPOX_SERVE_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &topoxProcess{cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// Ready, or synced with a cluster that has no nodes yet (the workload makes them next).
		resp, err := httpc.Get("http://" + topoxListen + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "no cluster loaded") {
				return p, nil
			}
		}
		select {
		case err := <-p.done:
			return nil, fmt.Errorf("topox exited before it was ready (%v); its log: %s", err, logPath)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("topox not ready after 60 s; its log: %s", logPath)
		}
	}
}

func (p *topoxProcess) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	token := cfg.BearerToken
	if token == "" {
		return fmt.Errorf("the benchmark's API server config has no bearer token")
	}
	doc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: bench
  user: {token: %q}
contexts:
- name: bench
  context: {cluster: bench, user: bench}
current-context: bench
`, cfg.Host, token)
	return os.WriteFile(path, []byte(doc), 0o600)
}

// measure reads every measured pod (label bench.topox.io/gang) and its node's rack and clique.
func measure(tCtx ktesting.TContext, config, workload string, tpx *topoxProcess) Result {
	res := Result{Config: config, Workload: workload}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := tCtx.Client()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: list nodes: %v\n", err)
		return res
	}
	rack := map[string]string{}
	domain := map[string]string{}
	for _, n := range nodes.Items {
		rack[n.Name] = n.Labels["topology.kubernetes.io/rack"]
		domain[n.Name] = n.Labels["nvidia.com/gpu.clique"]
		if domain[n.Name] == "" {
			domain[n.Name] = n.Name // an 8-GPU node is its own NVLink domain
		}
	}
	pods, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "bench.topox.io/gang"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: list pods: %v\n", err)
		return res
	}
	type gang struct {
		racks, domains map[string]bool
		pods, bound    int
	}
	gangs := map[string]*gang{}
	for i := range pods.Items {
		p := &pods.Items[i]
		key := p.Namespace + "/" + p.Labels["bench.topox.io/gang"]
		g := gangs[key]
		if g == nil {
			g = &gang{racks: map[string]bool{}, domains: map[string]bool{}}
			gangs[key] = g
		}
		g.pods++
		res.Pods++
		if bound(p) {
			g.bound++
			res.Bound++
			g.racks[rack[p.Spec.NodeName]] = true
			g.domains[domain[p.Spec.NodeName]] = true
		}
	}
	whole, wholeDom := 0, 0
	for _, g := range gangs {
		if g.bound == g.pods && len(g.racks) == 1 {
			whole++
		}
		if g.bound == g.pods && len(g.domains) == 1 {
			wholeDom++
		}
	}
	res.Gangs = len(gangs)
	if res.Gangs > 0 {
		res.WholeRack = 100 * float64(whole) / float64(res.Gangs)
		res.WholeDomain = 100 * float64(wholeDom) / float64(res.Gangs)
	}
	if tpx != nil {
		readTopoxMetrics(&res)
		if ps := tpx.cmd.ProcessState; ps == nil {
			res.TopoxCPUSec = procCPU(tpx.cmd.Process.Pid)
		}
	}
	return res
}

func bound(p *v1.Pod) bool { return p.Spec.NodeName != "" }

// readTopoxMetrics takes the call latencies and refused binds from topox's /metrics.
func readTopoxMetrics(res *Result) {
	resp, err := httpc.Get("http://" + topoxListen + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	buckets := map[string][][2]float64{} // verb -> (le, count)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value, ok := splitMetric(line)
		if !ok {
			continue
		}
		switch {
		case name == "topox_binds_total" && labels["result"] == "refused":
			res.BindsRefused += value
		case name == "topox_binds_total" && labels["result"] == "failed":
			res.BindsFailed += value
		case name == "topox_nominations_total" && labels["result"] == "set":
			res.Nominations += value
		case name == "topox_request_duration_seconds_bucket":
			le, err := strconv.ParseFloat(labels["le"], 64)
			if labels["le"] == "+Inf" {
				le, err = 1e9, nil
			}
			if err == nil {
				buckets[labels["verb"]] = append(buckets[labels["verb"]], [2]float64{le, value})
			}
		}
	}
	res.FilterP50Ms = quantile(buckets["filter"], 0.5) * 1000
	res.FilterP99Ms = quantile(buckets["filter"], 0.99) * 1000
	res.PrioP50Ms = quantile(buckets["prioritize"], 0.5) * 1000
	res.BindP50Ms = quantile(buckets["bind"], 0.5) * 1000
}

func splitMetric(line string) (string, map[string]string, float64, bool) {
	labels := map[string]string{}
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", nil, 0, false
	}
	value, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", nil, 0, false
	}
	head := line[:sp]
	name := head
	if i := strings.IndexByte(head, '{'); i >= 0 {
		name = head[:i]
		for _, kv := range strings.Split(strings.TrimSuffix(head[i+1:], "}"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
	}
	return name, labels, value, true
}

// quantile of a cumulative histogram, interpolated linearly inside the bucket, as Prometheus'
// histogram_quantile does.
func quantile(b [][2]float64, q float64) float64 {
	if len(b) == 0 {
		return 0
	}
	sort.Slice(b, func(i, j int) bool { return b[i][0] < b[j][0] })
	total := b[len(b)-1][1]
	if total == 0 {
		return 0
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, x := range b {
		if x[1] >= rank {
			if x[0] >= 1e9 {
				return prevLe
			}
			if x[1] == prevCount {
				return x[0]
			}
			return prevLe + (x[0]-prevLe)*(rank-prevCount)/(x[1]-prevCount)
		}
		prevLe, prevCount = x[0], x[1]
	}
	return prevLe
}

// procCPU is the user+system CPU seconds a process has used (Linux /proc/PID/stat).
func procCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			k, _ := strconv.ParseFloat(f[12], 64)
			return (u + k) / 100 // USER_HZ
		}
	}
	return 0
}
