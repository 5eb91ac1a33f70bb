// SPDX-License-Identifier: Apache-2.0
// kubectl (with `apply -k`, its built-in kustomize), built from k8s.io/kubectl at the version go.mod pins.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
