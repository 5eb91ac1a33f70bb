#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# e2e/down.sh - stop every component that up.sh started, newest first, and drop etcd's data.
source "$(dirname "$0")/lib.sh"
for c in kube-scheduler topox lws-controller kube-controller-manager kube-apiserver etcd; do
    alive "$c" && say "stopping $c"
    stop "$c"
done
rm -rf "$E/etcd"
