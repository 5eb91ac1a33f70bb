// SPDX-License-Identifier: Apache-2.0
// kube-scheduler, built from k8s.io/kubernetes at the version go.mod pins.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() { os.Exit(cli.Run(app.NewSchedulerCommand())) }
