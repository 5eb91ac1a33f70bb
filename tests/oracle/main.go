// SPDX-License-Identifier: Apache-2.0
// tests/oracle/main.go - the Go oracle of the request decoders (issue 21, item 5): decodes one
// request body with encoding/json into kube-scheduler's own wire types
// (k8s.io/kube-scheduler/extender/v1 over k8s.io/api/core/v1, the versions bench/go-baseline and
// e2e pin) and prints the fields topox reads in the canonical text form tests/oracle/decode.c
// prints for topox's decoders; tests/oracle/run.sh compares the two. Not topox: a yardstick.
//
// usage: oracle filter|bind|preempt FILE
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// printPod: the pod's identity and the two sizes topox takes from its annotations.
func printPod(p *v1.Pod) {
	if p == nil {
		fmt.Println("pod null")
		return
	}
	ann := func(k string) string {
		if v, ok := p.Annotations["topox.io/"+k]; ok {
			return v
		}
		return "-"
	}
	fmt.Printf("pod uid=%s name=%s namespace=%s\n", p.UID, p.Name, p.Namespace)
	fmt.Printf("pod tp=%s pp=%s\n", ann("tensor-parallel-size"), ann("pipeline-parallel-size"))
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: oracle filter|bind|preempt FILE")
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "filter":
		var a extenderv1.ExtenderArgs
		if err := json.Unmarshal(body, &a); err != nil {
			fmt.Println("error")
			return
		}
		printPod(a.Pod)
		// topox answers in the mode the request came in: full Nodes when they are there
		if a.Nodes != nil {
			for i := range a.Nodes.Items {
				fmt.Printf("node %s\n", a.Nodes.Items[i].Name)
			}
		} else if a.NodeNames != nil {
			for _, n := range *a.NodeNames {
				fmt.Printf("node %s\n", n)
			}
		}
	case "bind":
		var b extenderv1.ExtenderBindingArgs
		if err := json.Unmarshal(body, &b); err != nil {
			fmt.Println("error")
			return
		}
		fmt.Printf("bind name=%s namespace=%s uid=%s node=%s\n", b.PodName, b.PodNamespace,
			b.PodUID, b.Node)
	case "preempt":
		var p extenderv1.ExtenderPreemptionArgs
		if err := json.Unmarshal(body, &p); err != nil {
			fmt.Println("error")
			return
		}
		printPod(p.Pod)
		lines := []string{}
		add := func(node string, uids []string, pdb int64) {
			if len(uids) > 0 {
				lines = append(lines, fmt.Sprintf("victims node=%s uids=%s pdb=%d", node,
					strings.Join(uids, ","), pdb))
			}
		}
		// kube-scheduler sends one of the two; topox reads MetaVictims when it is there
		if p.NodeNameToMetaVictims != nil {
			for n, v := range p.NodeNameToMetaVictims {
				if v != nil {
					uids := []string{}
					for _, m := range v.Pods {
						if m != nil {
							uids = append(uids, m.UID)
						}
					}
					add(n, uids, v.NumPDBViolations)
				}
			}
		} else {
			for n, v := range p.NodeNameToVictims {
				if v != nil {
					uids := []string{}
					for _, m := range v.Pods {
						if m != nil {
							uids = append(uids, string(m.UID))
						}
					}
					add(n, uids, v.NumPDBViolations)
				}
			}
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Println(l)
		}
	default:
		fmt.Fprintln(os.Stderr, "oracle: the verb is filter, bind or preempt")
		os.Exit(2)
	}
}
