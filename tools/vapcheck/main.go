// SPDX-License-Identifier: Apache-2.0
// tools/vapcheck - evaluates manifests/labeler-policy.yaml with the API server's own
// ValidatingAdmissionPolicy compiler (k8s.io/apiserver v0.31.4, CEL environment of the 1.30
// compatibility version, strict cost) against the requests the labeler makes and the ones it
// must not. Not part of the CMake build: it needs Go and the k8s.io modules (docs/security.md).
//
//	cd tools/vapcheck && go run . ../../manifests/labeler-policy.yaml
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// compile does what validating.compilePolicy (unexported) does for a policy without params.
func compile(p *v1.ValidatingAdmissionPolicy) validating.Validator {
	env, err := cel.NewCompositionEnv(cel.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true))
	if err != nil {
		panic(err)
	}
	opt := cel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true, StrictCost: true}
	mopt := cel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: false, StrictCost: true}
	c := cel.NewCompositedCompilerFromTemplate(env)
	var vars []cel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	c.CompileAndStoreVariables(vars, opt, environment.StoredExpressions)
	var mcs []cel.ExpressionAccessor
	for i := range p.Spec.MatchConditions {
		mcs = append(mcs, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
	}
	m := matchconditions.NewMatcher(c.Compile(mcs, opt, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	var vals, msgs []cel.ExpressionAccessor
	for _, v := range p.Spec.Validations {
		vals = append(vals, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		if v.MessageExpression != "" {
			msgs = append(msgs, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
		} else {
			msgs = append(msgs, nil)
		}
	}
	return validating.NewValidator(c.Compile(vals, opt, environment.StoredExpressions), m, c.Compile(nil, opt, environment.StoredExpressions), c.Compile(msgs, mopt, environment.StoredExpressions), p.Spec.FailurePolicy)
}

func node(name string, labels, ann map[string]interface{}, spec map[string]interface{}) *unstructured.Unstructured {
	md := map[string]interface{}{"name": name, "resourceVersion": "7"}
	if labels != nil {
		md["labels"] = labels
	}
	if ann != nil {
		md["annotations"] = ann
	}
	o := map[string]interface{}{"apiVersion": "v1", "kind": "Node", "metadata": md,
		"status": map[string]interface{}{"capacity": map[string]interface{}{"nvidia.com/gpu": "8"}}}
	if spec != nil {
		o["spec"] = spec
	} else {
		o["spec"] = map[string]interface{}{"podCIDR": "10.0.0.0/24"}
	}
	return &unstructured.Unstructured{Object: o}
}

// One request: who, what, on which node, and whether the policy must let it through.
type tc struct {
	name     string
	user     string
	extra    map[string][]string
	op       admission.Operation
	sub      string
	target   string
	old, obj *unstructured.Unstructured
	allow    bool
	want     string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: vapcheck POLICY.yaml")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	doc := strings.Split(string(data), "\n---\n")[0]
	var p v1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
		panic(err)
	}
	v := compile(&p)
	labeler := "system:serviceaccount:topox-system:topox-labeler"
	onA := map[string][]string{"authentication.kubernetes.io/node-name": {"gpu-a"}, "authentication.kubernetes.io/pod-name": {"topox-labeler-x"}}
	base := map[string]interface{}{"kubernetes.io/hostname": "gpu-a", "topox.io/accelerator": "nvidia", "topox.io/rack": "r1", "topox.io/stale": "x"}
	ann := map[string]interface{}{"node.alpha.kubernetes.io/ttl": "0", "topox.io/topology": "{}"}
	cp := func(m map[string]interface{}, set map[string]interface{}, del ...string) map[string]interface{} {
		out := map[string]interface{}{}
		for k, x := range m {
			out[k] = x
		}
		for k, x := range set {
			out[k] = x
		}
		for _, k := range del {
			delete(out, k)
		}
		return out
	}
	old := node("gpu-a", base, ann, nil)
	good := node("gpu-a", cp(base, map[string]interface{}{"topox.io/accelerator-count": "8"}, "topox.io/stale"), cp(ann, map[string]interface{}{"topox.io/topology": `{"v":1}`}), nil)
	cases := []tc{
		{"own node, topox.io labels + topology annotation", labeler, onA, admission.Update, "", "gpu-a", old, good, true, ""},
		{"own node, no labels at all before", labeler, onA, admission.Update, "", "gpu-a", node("gpu-a", nil, nil, nil), node("gpu-a", map[string]interface{}{"topox.io/numa-nodes": "2"}, map[string]interface{}{"topox.io/topology": "{}"}, nil), true, ""},
		{"no-op update", labeler, onA, admission.Update, "", "gpu-a", old, old, true, ""},
		// The annotation may grow to the API server's 256 KiB limit; the cost budget must hold.
		{"256 KiB topology annotation replaced", labeler, onA, admission.Update, "", "gpu-a",
			node("gpu-a", base, cp(ann, map[string]interface{}{"topox.io/topology": strings.Repeat("a", 250000)}), nil),
			node("gpu-a", base, cp(ann, map[string]interface{}{"topox.io/topology": strings.Repeat("b", 250000)}), nil), true, ""},
		{"another node", labeler, onA, admission.Update, "", "gpu-b", node("gpu-b", base, ann, nil), node("gpu-b", cp(base, map[string]interface{}{"topox.io/x": "1"}), ann, nil), false, "may not change node 'gpu-b'"},
		{"token without node-name", labeler, map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=1"}}, admission.Update, "", "gpu-a", old, good, false, "names no node"},
		{"token without any extra", labeler, nil, admission.Update, "", "gpu-a", old, good, false, "names no node"},
		{"foreign label added", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", cp(base, map[string]interface{}{"node-role.kubernetes.io/control-plane": ""}), ann, nil), false, "not: node-role.kubernetes.io/control-plane"},
		{"foreign label removed", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", cp(base, nil, "kubernetes.io/hostname"), ann, nil), false, "not: kubernetes.io/hostname"},
		{"inventory label changed", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", cp(base, map[string]interface{}{"topox.io/rack": "r9"}), ann, nil), false, "topox.io/rack"},
		{"inventory label removed", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", cp(base, nil, "topox.io/rack"), ann, nil), false, "topox.io/rack"},
		{"lookalike prefix", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", cp(base, map[string]interface{}{"topox.io.evil/x": "1"}), ann, nil), false, "topox.io.evil/x"},
		{"foreign annotation", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", base, cp(ann, map[string]interface{}{"topox.io/other": "1"}), nil), false, "not: topox.io/other"},
		{"spec change (taint)", labeler, onA, admission.Update, "", "gpu-a", old, node("gpu-a", base, ann, map[string]interface{}{"podCIDR": "10.0.0.0/24", "unschedulable": true}), false, "spec, status"},
		{"spec removed", labeler, onA, admission.Update, "", "gpu-a", old, func() *unstructured.Unstructured {
			n := node("gpu-a", base, ann, nil)
			delete(n.Object, "spec")
			return n
		}(), false, "spec, status"},
		{"ownerReferences added", labeler, onA, admission.Update, "", "gpu-a", old, func() *unstructured.Unstructured {
			n := node("gpu-a", base, ann, nil)
			n.Object["metadata"].(map[string]interface{})["ownerReferences"] = []interface{}{map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"}}
			return n
		}(), false, "ownerReferences"},
		{"finalizer added", labeler, onA, admission.Update, "", "gpu-a", old, func() *unstructured.Unstructured {
			n := node("gpu-a", base, ann, nil)
			n.Object["metadata"].(map[string]interface{})["finalizers"] = []interface{}{"x/y"}
			return n
		}(), false, "finalizers"},
		{"status subresource", labeler, onA, admission.Update, "status", "gpu-a", old, good, false, "only update Node metadata"},
		{"delete own node", labeler, onA, admission.Delete, "", "gpu-a", old, nil, false, "only update Node metadata"},
		{"create a node", labeler, onA, admission.Create, "", "gpu-a", nil, good, false, "only update Node metadata"},
		{"someone else is not matched", "system:serviceaccount:kube-system:node-controller", nil, admission.Update, "", "gpu-b", node("gpu-b", base, ann, nil), node("gpu-b", nil, nil, map[string]interface{}{"unschedulable": true}), true, ""},
		{"labeler SA of another namespace is not matched", "system:serviceaccount:other:topox-labeler", nil, admission.Update, "", "gpu-b", node("gpu-b", base, ann, nil), node("gpu-b", nil, nil, nil), true, ""},
	}
	fails := 0
	for _, c := range cases {
		u := &user.DefaultInfo{Name: c.user, Extra: c.extra}
		gvk := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
		// A nil *Unstructured must reach the record as a nil interface.
		var obj, old runtime.Object
		if c.obj != nil {
			obj = c.obj
		}
		if c.old != nil {
			old = c.old
		}
		attr := admission.NewAttributesRecord(obj, old, gvk, "", c.target, gvr, c.sub, c.op, nil, false, u)
		va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk, VersionedObject: obj, VersionedOldObject: old}
		res := v.Validate(context.Background(), gvr, va, nil, nil, 10000000, nil)
		allowed := true
		var msgs []string
		for _, d := range res.Decisions {
			if d.Action == validating.ActionDeny {
				allowed = false
				msgs = append(msgs, fmt.Sprintf("[%s] %s", d.Evaluation, d.Message))
			}
		}
		all := strings.Join(msgs, " | ")
		ok := allowed == c.allow && (c.want == "" || strings.Contains(all, c.want))
		if !ok {
			fails++
		}
		fmt.Printf("%-4s %-48s allowed=%v %s\n", map[bool]string{true: "ok", false: "FAIL"}[ok], c.name, allowed, all)
	}
	fmt.Printf("%d cases, %d failed\n", len(cases), fails)
	if fails > 0 {
		os.Exit(1)
	}
}
