// SPDX-License-Identifier: Apache-2.0
// bench/go-baseline/main.go - the baseline of DESIGN.md's throughput target: a kube-scheduler
// extender written the way most are (net/http, encoding/json into hand-declared structs that
// mirror k8s.io/kube-scheduler/extender/v1 and the parts of v1.Pod such an extender reads, one
// RWMutex over a map of nodes loaded at start). Standard library only, so `go build` works
// offline. filter keeps the nodes with enough free GPUs (in the rack of the pod's group once the
// group is placed); prioritize scores by free capacity left. Not topox: a yardstick.
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
)

// ---- k8s.io/kube-scheduler/extender/v1 (no JSON tags upstream: Go field names on the wire) ----

type ExtenderArgs struct {
	Pod       *Pod
	Nodes     *NodeList
	NodeNames *[]string
}

type ExtenderFilterResult struct {
	Nodes                      *NodeList
	NodeNames                  *[]string
	FailedNodes                map[string]string
	FailedAndUnresolvableNodes map[string]string
	Error                      string
}

type HostPriority struct {
	Host  string
	Score int64
}

type HostPriorityList []HostPriority

type ExtenderBindingArgs struct {
	PodName      string
	PodNamespace string
	PodUID       string
	Node         string
}

type ExtenderBindingResult struct {
	Error string
}

// ---- the parts of k8s.io/api/core/v1 an extender like this reads ----

type ObjectMeta struct {
	Name            string            `json:"name,omitempty"`
	Namespace       string            `json:"namespace,omitempty"`
	UID             string            `json:"uid,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	OwnerReferences []OwnerReference  `json:"ownerReferences,omitempty"`
}

type OwnerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

type ResourceRequirements struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

type Container struct {
	Name      string               `json:"name"`
	Image     string               `json:"image,omitempty"`
	Command   []string             `json:"command,omitempty"`
	Args      []string             `json:"args,omitempty"`
	Resources ResourceRequirements `json:"resources,omitempty"`
}

type PodSpec struct {
	NodeName       string      `json:"nodeName,omitempty"`
	SchedulerName  string      `json:"schedulerName,omitempty"`
	Priority       *int32      `json:"priority,omitempty"`
	Containers     []Container `json:"containers"`
	InitContainers []Container `json:"initContainers,omitempty"`
}

type PodStatus struct {
	Phase string `json:"phase,omitempty"`
}

type Pod struct {
	Kind       string     `json:"kind,omitempty"`
	APIVersion string     `json:"apiVersion,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
	Status     PodStatus  `json:"status"`
}

// Node mirrors the parts of v1.Node that the bench's Node objects carry, so that a filter with full
// Node objects (nodeCacheCapable: false) answers with the surviving Nodes re-encoded, as an
// extender built on k8s.io/api does (extender-protocol.md section 7, trap 3: NodeNames alone
// would filter out every node).
type Node struct {
	Kind       string     `json:"kind,omitempty"`
	APIVersion string     `json:"apiVersion,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       NodeSpec   `json:"spec"`
	Status     NodeStatus `json:"status"`
}

type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type NodeSpec struct {
	PodCIDR       string   `json:"podCIDR,omitempty"`
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	ProviderID    string   `json:"providerID,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Taints        []Taint  `json:"taints,omitempty"`
}

type NodeCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastHeartbeatTime  string `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type ContainerImage struct {
	Names     []string `json:"names"`
	SizeBytes int64    `json:"sizeBytes,omitempty"`
}

type NodeSystemInfo struct {
	KernelVersion           string `json:"kernelVersion"`
	OSImage                 string `json:"osImage"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	KubeletVersion          string `json:"kubeletVersion"`
}

type NodeStatus struct {
	Capacity    map[string]string `json:"capacity,omitempty"`
	Allocatable map[string]string `json:"allocatable,omitempty"`
	Conditions  []NodeCondition   `json:"conditions,omitempty"`
	Addresses   []NodeAddress     `json:"addresses,omitempty"`
	Images      []ContainerImage  `json:"images,omitempty"`
	NodeInfo    NodeSystemInfo    `json:"nodeInfo"`
}

type NodeList struct {
	Metadata struct{} `json:"metadata"`
	Items    []Node   `json:"items"`
}

// ---- the extender ----

type nodeInfo struct {
	Name string `json:"name"`
	Rack string `json:"rack"`
	GPUs int    `json:"gpus"`
	Used int    `json:"used"`
}

type extender struct {
	mu     sync.RWMutex
	nodes  map[string]*nodeInfo
	groups map[string]string // group key -> rack, set by the first bind of a member
	asked  sync.Map          // pod uid -> podAsk, remembered at filter time for bind
}

type podAsk struct {
	group string
	gpus  int
}

const gpuResource = "nvidia.com/gpu"

func podGPUs(p *Pod) int {
	n := 0
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Requests[gpuResource]
		if !ok {
			q = c.Resources.Limits[gpuResource]
		}
		v, _ := strconv.Atoi(q)
		n += v
	}
	return n
}

func podGroup(p *Pod) string {
	if g := p.Metadata.Annotations["topox.io/group"]; g != "" {
		return p.Metadata.Namespace + "/" + g
	}
	if g := p.Metadata.Labels["leaderworkerset.sigs.k8s.io/group-key"]; g != "" {
		return p.Metadata.Namespace + "/" + g
	}
	return ""
}

func names(args *ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	if args.Nodes != nil {
		out := make([]string, 0, len(args.Nodes.Items))
		for _, n := range args.Nodes.Items {
			out = append(out, n.Metadata.Name)
		}
		return out
	}
	return nil
}

func (e *extender) filter(w http.ResponseWriter, r *http.Request) {
	var args ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil {
		writeJSON(w, ExtenderFilterResult{Error: fmt.Sprintf("bad request: %v", err)})
		return
	}
	need := podGPUs(args.Pod)
	group := podGroup(args.Pod)
	e.asked.Store(args.Pod.Metadata.UID, podAsk{group: group, gpus: need})
	in := names(&args)
	fit := make([]string, 0, len(in))
	failed := map[string]string{}
	e.mu.RLock()
	rack := ""
	if group != "" {
		rack = e.groups[group]
	}
	for _, name := range in {
		n, ok := e.nodes[name]
		switch {
		case !ok:
			failed[name] = "unknown node"
		case rack != "" && n.Rack != rack:
			failed[name] = "group " + group + " is placed in rack " + rack
		case n.GPUs-n.Used < need:
			failed[name] = fmt.Sprintf("%d free GPUs, pod needs %d", n.GPUs-n.Used, need)
		default:
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
		out := &NodeList{Items: make([]Node, 0, len(fit))}
		for _, n := range args.Nodes.Items {
			if keep[n.Metadata.Name] {
				out.Items = append(out.Items, n)
			}
		}
		writeJSON(w, ExtenderFilterResult{Nodes: out, FailedNodes: failed})
		return
	}
	writeJSON(w, ExtenderFilterResult{NodeNames: &fit, FailedNodes: failed})
}

func (e *extender) prioritize(w http.ResponseWriter, r *http.Request) {
	var args ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	need := podGPUs(args.Pod)
	in := names(&args)
	out := make(HostPriorityList, 0, len(in))
	e.mu.RLock()
	for _, name := range in {
		var score int64
		if n, ok := e.nodes[name]; ok && n.GPUs > 0 && n.GPUs-n.Used >= need {
			// best fit: the less capacity left after placing the pod, the higher the score
			left := n.GPUs - n.Used - need
			score = int64(10 - 10*left/n.GPUs)
		}
		out = append(out, HostPriority{Host: name, Score: score})
	}
	e.mu.RUnlock()
	writeJSON(w, out)
}

func (e *extender) bind(w http.ResponseWriter, r *http.Request) {
	var args ExtenderBindingArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		writeJSON(w, ExtenderBindingResult{Error: err.Error()})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[args.Node]
	if !ok {
		writeJSON(w, ExtenderBindingResult{Error: "unknown node " + args.Node})
		return
	}
	if a, ok := e.asked.Load(args.PodUID); ok {
		ask := a.(podAsk)
		n.Used += ask.gpus
		if ask.group != "" && e.groups[ask.group] == "" {
			e.groups[ask.group] = n.Rack
		}
	}
	writeJSON(w, ExtenderBindingResult{})
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
	e := &extender{nodes: make(map[string]*nodeInfo, len(list)), groups: map[string]string{}}
	for i := range list {
		e.nodes[list[i].Name] = &list[i]
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
