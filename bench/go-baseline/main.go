// SPDX-License-Identifier: Apache-2.0
// bench/go-baseline/main.go - the peer of DESIGN.md's throughput target: a kube-scheduler extender
// written as real Go extenders are (net/http; encoding/json into kube-scheduler's own wire types,
// k8s.io/kube-scheduler/extender/v1 over k8s.io/api/core/v1, at the versions e2e/go.mod pins; one
// RWMutex over a map of nodes loaded at start). It gives the answer topox gives on bench_serve's
// body, which bench_serve checks: filter keeps the nodes with room for the pod, and for a group's
// first member only racks that hold the whole group (in the rack of the group once it is bound);
// prioritize scores a first member as topox's policy/score.c does (the rack left fullest after the
// whole group, 0..7, plus 0..3 for the fuller node), a later member 10 in its rack. With full Node
// objects it answers the surviving Nodes re-encoded (extender-protocol.md, trap 3). Not topox: a
// yardstick.
//
// usage: go-baseline -listen 127.0.0.1:0 -nodes nodes.json
//
//	nodes.json: [{"name":"r01-n01","rack":"r01","gpus":8,"used":0}, ...]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

type nodeInfo struct {
	Name string `json:"name"`
	Rack string `json:"rack"`
	GPUs int    `json:"gpus"`
	Used int    `json:"used"`
}

type extender struct {
	mu       sync.RWMutex
	nodes    map[string]*nodeInfo
	rackCap  map[string]int
	rackUsed map[string]int
	maxRack  int
	groups   map[string]string // group key -> rack, set by the first bind of a member
	asked    sync.Map          // pod uid -> podAsk, remembered at filter time for bind
}

type podAsk struct {
	group string
	gpus  int
}

const gpuResource = v1.ResourceName("nvidia.com/gpu")

// podGPUs: the sum over containers of each one's request (its limit when it has none).
func podGPUs(p *v1.Pod) int {
	n := 0
	for i := range p.Spec.Containers {
		r := &p.Spec.Containers[i].Resources
		q, ok := r.Requests[gpuResource]
		if !ok {
			q = r.Limits[gpuResource]
		}
		n += int(q.Value())
	}
	return n
}

// podGroup: the pod's group and its size in pods (1 when none is said).
func podGroup(p *v1.Pod) (string, int) {
	size := 1
	if s, err := strconv.Atoi(p.Annotations["leaderworkerset.sigs.k8s.io/size"]); err == nil && s > 0 {
		size = s
	}
	if s, err := strconv.Atoi(p.Annotations["topox.io/group-size"]); err == nil && s > 0 {
		size = s
	}
	if g := p.Annotations["topox.io/group"]; g != "" {
		return p.Namespace + "/" + g, size
	}
	if g := p.Labels["leaderworkerset.sigs.k8s.io/group-key"]; g != "" {
		return p.Namespace + "/lws:" + g, size
	}
	return "", 1
}

func names(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	if args.Nodes != nil {
		out := make([]string, 0, len(args.Nodes.Items))
		for i := range args.Nodes.Items {
			out = append(out, args.Nodes.Items[i].Name)
		}
		return out
	}
	return nil
}

// verdict: "" when the node takes the pod, else why not. Read lock held.
func (e *extender) verdict(n *nodeInfo, group string, size, need int) string {
	rack := ""
	if group != "" {
		rack = e.groups[group]
	}
	switch {
	case rack != "" && n.Rack != rack:
		return "group " + group + " is placed in rack " + rack
	case n.GPUs-n.Used < need:
		return fmt.Sprintf("node has %d free GPUs, pod needs %d", n.GPUs-n.Used, need)
	case rack == "" && size > 1 && e.rackCap[n.Rack]-e.rackUsed[n.Rack] < size*need:
		return fmt.Sprintf("rack %s: %d free GPUs, group needs %d", n.Rack,
			e.rackCap[n.Rack]-e.rackUsed[n.Rack], size*need)
	}
	return ""
}

// score: topox's best fit (policy/score.c, led_score_node) for nodes of one 8-GPU domain each.
func (e *extender) score(n *nodeInfo, group string, size, need int) int64 {
	if group != "" && e.groups[group] != "" {
		return 10
	}
	fr := e.rackCap[n.Rack] - e.rackUsed[n.Rack] - size*need
	if fr < 0 {
		fr = 0
	}
	maxcap := e.maxRack
	if maxcap == 0 {
		maxcap = 1
	}
	sc := 7 - (7*fr+maxcap/2)/maxcap
	if sc < 0 {
		sc = 0
	}
	if f := n.GPUs - n.Used; n.GPUs > 0 && f >= need {
		sc += (3*(n.GPUs-(f-need)) + n.GPUs/2) / n.GPUs
	}
	if sc > 10 {
		sc = 10
	}
	return int64(sc)
}

func (e *extender) filter(w http.ResponseWriter, r *http.Request) {
	var args extenderv1.ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil {
		writeJSON(w, extenderv1.ExtenderFilterResult{Error: fmt.Sprintf("bad request: %v", err)})
		return
	}
	need := podGPUs(args.Pod)
	group, size := podGroup(args.Pod)
	e.asked.Store(string(args.Pod.UID), podAsk{group: group, gpus: need})
	in := names(&args)
	fit := make([]string, 0, len(in))
	failed := extenderv1.FailedNodesMap{}
	e.mu.RLock()
	for _, name := range in {
		n, ok := e.nodes[name]
		if !ok {
			failed[name] = "unknown node"
		} else if why := e.verdict(n, group, size, need); why != "" {
			failed[name] = why
		} else {
			fit = append(fit, name)
		}
	}
	e.mu.RUnlock()
	if args.NodeNames == nil && args.Nodes != nil {
		// full Node objects in: the surviving Node objects out
		keep := make(map[string]bool, len(fit))
		for _, name := range fit {
			keep[name] = true
		}
		out := &v1.NodeList{Items: make([]v1.Node, 0, len(fit))}
		for i := range args.Nodes.Items {
			if keep[args.Nodes.Items[i].Name] {
				out.Items = append(out.Items, args.Nodes.Items[i])
			}
		}
		writeJSON(w, extenderv1.ExtenderFilterResult{Nodes: out, FailedNodes: failed})
		return
	}
	writeJSON(w, extenderv1.ExtenderFilterResult{NodeNames: &fit, FailedNodes: failed})
}

func (e *extender) prioritize(w http.ResponseWriter, r *http.Request) {
	var args extenderv1.ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	need := podGPUs(args.Pod)
	group, size := podGroup(args.Pod)
	in := names(&args)
	out := make(extenderv1.HostPriorityList, 0, len(in))
	e.mu.RLock()
	for _, name := range in {
		var s int64
		if n, ok := e.nodes[name]; ok && e.verdict(n, group, size, need) == "" {
			s = e.score(n, group, size, need)
		}
		out = append(out, extenderv1.HostPriority{Host: name, Score: s})
	}
	e.mu.RUnlock()
	writeJSON(w, out)
}

func (e *extender) bind(w http.ResponseWriter, r *http.Request) {
	var args extenderv1.ExtenderBindingArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		writeJSON(w, extenderv1.ExtenderBindingResult{Error: err.Error()})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[args.Node]
	if !ok {
		writeJSON(w, extenderv1.ExtenderBindingResult{Error: "unknown node " + args.Node})
		return
	}
	if a, ok := e.asked.Load(string(args.PodUID)); ok {
		ask := a.(podAsk)
		n.Used += ask.gpus
		e.rackUsed[n.Rack] += ask.gpus
		if ask.group != "" && e.groups[ask.group] == "" {
			e.groups[ask.group] = n.Rack
		}
	}
	writeJSON(w, extenderv1.ExtenderBindingResult{})
}

func writeJSON(w http.ResponseWriter, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("encode: %v", err)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8889", "address to listen on (port 0 picks one)")
	nodesFile := flag.String("nodes", "", "JSON array of {name, rack, gpus, used}")
	flag.Parse()
	if *nodesFile == "" {
		fmt.Fprintln(os.Stderr, "usage: go-baseline -listen ADDR -nodes FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(*nodesFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-baseline: %v\n", err)
		os.Exit(1)
	}
	var list []nodeInfo
	if err := json.Unmarshal(data, &list); err != nil {
		fmt.Fprintf(os.Stderr, "go-baseline: %s: %v\n", *nodesFile, err)
		os.Exit(1)
	}
	e := &extender{nodes: make(map[string]*nodeInfo, len(list)), rackCap: map[string]int{},
		rackUsed: map[string]int{}, groups: map[string]string{}}
	for i := range list {
		n := &list[i]
		e.nodes[n.Name] = n
		e.rackCap[n.Rack] += n.GPUs
		e.rackUsed[n.Rack] += n.Used
	}
	for _, c := range e.rackCap {
		if c > e.maxRack {
			e.maxRack = c
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", e.filter)
	mux.HandleFunc("/prioritize", e.prioritize)
	mux.HandleFunc("/bind", e.bind)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-baseline: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "{\"msg\":\"listening\",\"nodes\":%d,\"port\":%d}\n", len(e.nodes),
		ln.Addr().(*net.TCPAddr).Port)
	log.Fatal(http.Serve(ln, mux))
}
