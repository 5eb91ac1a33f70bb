#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/corpus/metamorphic.py TOPOX DRIVE DIR... - the metamorphic corpus test (docs/testing.md).

Every real manifest under DIR (tests/fixtures: manifests/, corpus/, plan/, dra/) that asks for an
accelerator is changed the way the world changes such manifests, and each variant is planned with
`topox plan -o json` (and the ones that matter most are driven through `topox serve` by
topox-drive, as kube-scheduler would). Each variant must keep an invariant; what it must keep is
what the certainty rule says (DESIGN.md), never a recorded answer:

  flags      the engines' parallelism flags and topox.io/*-parallel-size annotations removed:
             never a rejection for a layout reason (tensor parallelism, all-reduce, a domain),
             on nodes of one domain or of two; through serve, every pod bound
  serve      as written, on split nodes, through serve by topox-drive: what plan placed whole
             is bound whole
  leader     a LeaderWorkerSet given a CPU-only leader (size + 1): the same exit status, the same
             replicas placed and the same accelerator ranks placed
  vendor     every accelerator resource renamed to amd.com/gpu, on a cluster of NVIDIA and AMD
             nodes: no accelerator pod on an NVIDIA node; through serve on AMD nodes, every pod
             bound where plan placed them all
  split      every node's accelerators split into two domains: a replica refused there but not
             on whole nodes is refused for a tensor-parallel size that something wrote
  world      an engine pod template moved into a StatefulSet of 2 with --nnodes 2: one group
  names      in every plan: each pod once, its name unique in its job, each rank once per replica

Exit 1 on any broken invariant, listing each; the last line is "N passed, N failed".
"""
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # the Makefile installs python3-yaml with the other build dependencies
    print("metamorphic: PyYAML is missing (apt-get install python3-yaml)")
    print("0 passed, 1 failed")
    sys.exit(1)

# a resource name, not a label key that starts with one (nvidia.com/gpu.product)
RES = re.compile(r"\b(nvidia\.com/gpu|amd\.com/gpu|habana\.ai/gaudi|huawei\.com/Ascend910[A-Za-z0-9-]*"
                 r"|intel\.com/gpu|gpu\.intel\.com/i915)(?![\w.-])")
# value-taking parallelism flags of vLLM, SGLang, TensorRT-LLM, LMDeploy, TGI, Megatron/torchrun
VALUE_FLAGS = ["--tensor-parallel-size", "--tensor_parallel_size", "-tp", "--tp", "--tp-size",
               "--tp_size", "--pipeline-parallel-size", "--pipeline_parallel_size", "-pp", "--pp",
               "--pp-size", "--pp_size", "--data-parallel-size", "--data_parallel_size", "-dp",
               "--dp", "--dp-size", "--dp_size", "--data-parallel-size-local", "-dpl",
               "--expert-parallel-size", "--ep-size", "--ep_size", "--ep", "-ep",
               "--moe-dense-tp-size", "--num-shard", "--tensor-model-parallel-size",
               "--pipeline-model-parallel-size", "--expert-model-parallel-size"]
BOOL_FLAGS = ["--enable-expert-parallel", "--enable-dp-attention", "--enable_expert_parallel"]
LAYOUT_WORDS = ("tensor-parallel", "All-reduce", "all-reduce", "interconnect domain")
BIG = "racks=8,nodes-per-rack=8,gpus-per-node=8"


def load_docs(path):
    with open(path, errors="replace") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def walk(v, fn):
    """Call fn on every dict of v (depth first)."""
    if isinstance(v, dict):
        fn(v)
        for c in list(v.values()):
            walk(c, fn)
    elif isinstance(v, list):
        for c in v:
            walk(c, fn)


def containers(docs):
    out = []

    def take(d):
        for key in ("containers", "initContainers"):
            cs = d.get(key)
            if isinstance(cs, list):
                out.extend(c for c in cs if isinstance(c, dict))
    walk(docs, take)
    return out


def strip_script(s):
    for f in sorted(VALUE_FLAGS, key=len, reverse=True):
        s = re.sub(r"(?<![\w-])%s(=|[ \t]+)(\"[^\"]*\"|'[^']*'|\S+)" % re.escape(f), " ", s)
    for f in BOOL_FLAGS:
        s = re.sub(r"(?<![\w-])%s(?![\w-])" % re.escape(f), " ", s)
    return s


def strip_argv(argv):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if not isinstance(a, str):
            out.append(a)
            continue
        head = a.split("=", 1)[0]
        if head in VALUE_FLAGS:
            skip = "=" not in a
            continue
        if a in BOOL_FLAGS:
            continue
        out.append(strip_script(a) if (" " in a or "\n" in a) else a)
    return out


def strip_flags(docs):
    docs = copy.deepcopy(docs)
    for c in containers(docs):
        for part in ("command", "args"):
            if isinstance(c.get(part), list):
                c[part] = strip_argv(c[part])

    def ann(d):
        a = d.get("annotations")
        if isinstance(a, dict):
            for k in list(a):
                if k.startswith("topox.io/") and k.endswith("-parallel-size"):
                    del a[k]
    walk(docs, ann)
    return docs


def rename_resources(docs, to):
    text = json.dumps(docs)
    return json.loads(RES.sub(to, text))


def cpu_leader(docs):
    """LeaderWorkerSets without a leader template get a CPU-only leader: size + 1."""
    docs, changed = copy.deepcopy(docs), False
    for d in docs:
        if not isinstance(d, dict) or d.get("kind") != "LeaderWorkerSet":
            continue
        lwt = (d.get("spec") or {}).get("leaderWorkerTemplate") or {}
        if "leaderTemplate" in lwt or "workerTemplate" not in lwt:
            continue
        leader = {"metadata": {"labels": {"role": "leader"}}, "spec": {"containers": [
            {"name": "router", "image": "busybox", "command": ["sleep", "infinity"],
             "resources": {"requests": {"cpu": "100m"}}}]}}
        lwt["leaderTemplate"] = leader
        lwt["size"] = int(lwt.get("size", 1)) + 1
        changed = True
    return docs if changed else None


def engine_templates(docs):
    """Pod templates whose first container runs vLLM or SGLang with list-form arguments."""
    out = []

    def take(d):
        spec = d.get("spec")
        if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
            return
        c = spec["containers"][0] if spec["containers"] else None
        if not isinstance(c, dict) or not RES.search(json.dumps(c.get("resources", {}))):
            return
        argv = [a for a in (c.get("command") or []) + (c.get("args") or []) if isinstance(a, str)]
        text = " ".join(argv)
        if ("sglang.launch_server" in text or "vllm serve" in text or
                "vllm.entrypoints" in text) and all(" " not in a for a in argv):
            out.append(d)
    walk(docs, take)
    return out


def sts_world(tmpl):
    t = copy.deepcopy({"metadata": tmpl.get("metadata") or {}, "spec": tmpl["spec"]})
    c = t["spec"]["containers"][0]
    args = [a for a in strip_argv(c.get("args") or []) if a not in ("--nnodes", "--node-rank")]
    c["args"] = args + ["--nnodes", "2", "--node-rank", "$(POD_INDEX)"]
    env = [e for e in (c.get("env") or []) if e.get("name") != "POD_INDEX"]
    env.append({"name": "POD_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}})
    c["env"] = env
    t["metadata"] = {"labels": {"app": "world"}}
    return [{"apiVersion": "apps/v1", "kind": "StatefulSet",
             "metadata": {"name": "world", "namespace": "corpus"},
             "spec": {"replicas": 2, "serviceName": "world",
                      "selector": {"matchLabels": {"app": "world"}}, "template": t}}]


class Run:
    def __init__(self, topox, drive, tmp):
        self.topox, self.drive, self.tmp, self.n = topox, drive, tmp, 0

    def write(self, docs):
        self.n += 1
        path = os.path.join(self.tmp, "v%04d.json" % self.n)
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": docs}, f)
        return path

    def plan(self, path, cluster=None, nodes=None):
        args = [self.topox, "plan", "-f", path, "-o", "json"]
        args += ["--nodes", nodes] if nodes else ["--cluster", cluster]
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        try:
            out = json.loads(r.stdout) if r.stdout.strip() else None
        except ValueError:
            out = None
        return r.returncode, out, r.stderr

    def drive_ok(self, path, cluster):
        r = subprocess.run([self.drive, "--topox", self.topox, "-f", path, "--cluster", cluster],
                           capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr


def layout_rejections(out):
    return [x for x in (out or {}).get("rejected", [])
            if any(w in x.get("reason", "") for w in LAYOUT_WORDS)]


def names_and_ranks(out):
    bad, seen = [], set()
    ranks = {}
    # ranks are a group's: checked where the replica is one group whose layout is known
    certain = {(e["job"], e["replica"]) for e in (out or {}).get("estimates", [])
               if e.get("certain")}
    for p in (out or {}).get("placements", []):
        key = (p["job"], p["pod"])
        if key in seen:
            bad.append("pod %s/%s placed twice" % key)
        seen.add(key)
        rk = p.get("ranks")
        if rk and (p["job"], p["replica"]) in certain:
            for r in range(rk[0], rk[1] + 1):
                k = (p["job"], p["replica"], r)
                if k in ranks:
                    bad.append("%s #%s rank %d held by %s and %s" % (p["job"], p["replica"], r,
                                                                     ranks[k], p["pod"]))
                ranks[k] = p["pod"]
    return bad


def gpu_ranks(out):
    return sum(p["ranks"][1] - p["ranks"][0] + 1
               for p in (out or {}).get("placements", []) if p.get("ranks"))


def mixed_nodes(topox, tmp, resources):
    items = []
    for i, res in enumerate(resources):
        spec = "%s,resource=%s" % (BIG, res)  # each vendor as big as the base cluster
        d = json.loads(subprocess.check_output([topox, "cluster", "--spec", spec]))
        prefix = res.split(".")[0] + "-"
        for n in d["items"]:
            n["metadata"]["name"] = prefix + n["metadata"]["name"]
            lab = n["metadata"].setdefault("labels", {})
            lab["kubernetes.io/hostname"] = n["metadata"]["name"]
            for k in list(lab):
                if k == "topox.io/rack":
                    lab[k] = prefix + lab[k]
            items.append(n)
    path = os.path.join(tmp, "mixed-nodes.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    return path


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    topox, drive, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    files = sorted({f for d in dirs for f in glob.glob(os.path.join(d, "**", "*.y*ml"),
                                                        recursive=True)})
    passed, failed = 0, []
    tmp = tempfile.mkdtemp(prefix="topox-corpus-")
    run = Run(topox, drive, tmp)
    mixed = mixed_nodes(topox, tmp, ["nvidia.com/gpu", "amd.com/gpu"])
    kinds, vendors, nmanifests = set(), set(), 0

    def check(ok, what):
        nonlocal passed
        if ok:
            passed += 1
        else:
            failed.append(what)

    for f in files:
        text = open(f, errors="replace").read()
        found = RES.findall(text)
        if not found:
            continue
        try:
            docs = load_docs(f)
        except yaml.YAMLError:
            continue
        docs = [d for d in docs if isinstance(d, dict)]
        if not docs:
            continue
        nmanifests += 1
        res = found[0] if found[0] in ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi") or \
            found[0].startswith("huawei.com/") else "nvidia.com/gpu"
        vendors.update(found)
        kinds.update(d.get("kind") for d in docs if d.get("kind"))
        name = os.path.relpath(f)
        one = "%s,resource=%s" % (BIG, res)
        two = one + ",domains-per-node=2"

        base = run.write(docs)
        rc1, out1, err1 = run.plan(base, one)
        rc2, out2, err2 = run.plan(base, two)
        if out1 is None or out2 is None:
            # input topox refuses as a whole (exit 2) must say why; it must never crash
            check(rc1 == 2 and rc2 == 2 and err1.strip(), "%s: plan exit %d/%d: %s" %
                  (name, rc1, rc2, (err1 or err2).strip()[-200:]))
            continue
        check(rc1 in (0, 3) and rc2 in (0, 3), "%s: exit %d, %d" % (name, rc1, rc2))
        for label, out in (("whole nodes", out1), ("split nodes", out2)):
            bad = names_and_ranks(out)
            check(not bad, "%s (%s): %s" % (name, label, "; ".join(bad[:3])))

        # split: refused only for a written dense TP larger than a domain
        est = {(e["job"], e["replica"]): e for e in out2.get("estimates", [])}
        whole = {(x["job"], x["replica"]) for x in out1.get("rejected", [])}
        for x in out2.get("rejected", []):
            k = (x["job"], x["replica"])
            if k in whole:
                continue
            src = ((est.get(k) or {}).get("sources") or {}).get("tp", {}).get("source")
            check(src not in (None, "default") and ("tensor-parallel-size" in x.get("reason", "")
                                                     or src == "object"),
                  "%s (split): %s #%s refused on a size nobody wrote (tp %s): %s" %
                  (name, k[0], k[1], src, x.get("reason", "")[:160]))

        # through serve on split nodes, as kube-scheduler drives it: what plan placed whole is
        # bound whole (a refusal there would be serve's alone)
        small = out2.get("summary", {}).get("pods", 0) <= 64
        if small and out2.get("summary", {}).get("rejected", 0) == 0:
            rc, text_out = run.drive_ok(base, two)
            check(rc == 0, "%s (through serve on split nodes): drive exit %d: %s"
                  % (name, rc, text_out.strip()[-300:]))

        # flags removed: no rejection for a layout reason, here or through serve
        stripped = strip_flags(docs)
        if stripped != docs:
            path = run.write(stripped)
            for label, cl in (("whole nodes", one), ("split nodes", two)):
                rc, out, err = run.plan(path, cl)
                check(rc in (0, 3) and not layout_rejections(out),
                      "%s (flags removed, %s): exit %d %s" % (
                          name, label, rc, [x["reason"][:120] for x in layout_rejections(out)]
                          or err.strip()[-160:]))
            if out1.get("summary", {}).get("rejected", 0) == 0 and \
                    out1.get("summary", {}).get("pods", 0) <= 64:
                rc, text_out = run.drive_ok(path, two)
                check(rc == 0, "%s (flags removed, through serve on split nodes): drive exit %d: %s"
                      % (name, rc, text_out.strip()[-300:]))

        # a CPU-only leader: the same verdict, the same accelerator ranks, the same certainty
        led = cpu_leader(docs)
        if led is not None:
            rc, out, err = run.plan(run.write(led), one)
            # (sizes an engine computes from the group's size, $LWS_GROUP_SIZE, count the leader
            # as the real engine would: those may turn uncertain, never refused)
            sure = lambda o: sorted(e.get("certain") for e in (o or {}).get("estimates", []))
            check(out is not None and rc == rc1 and
                  out["summary"]["placed"] == out1["summary"]["placed"] and
                  gpu_ranks(out) == gpu_ranks(out1) and
                  (sure(out) == sure(out1) or "LWS_GROUP_SIZE" in text),
                  "%s (CPU-only leader): exit %d vs %d, placed %s vs %s, ranks %d vs %d: %s" % (
                      name, rc, rc1, (out or {}).get("summary", {}).get("placed"),
                      out1["summary"]["placed"], gpu_ranks(out), gpu_ranks(out1),
                      [x["reason"][:120] for x in (out or {}).get("rejected", [])][:2]))

        # another vendor's resource: only on that vendor's nodes
        amd = rename_resources(docs, "amd.com/gpu") if "resourceClaim" not in text else None
        rc, out, err = run.plan(run.write(amd), None, mixed) if amd else (0, None, "")
        if amd and rc == 0 and (out or {}).get("summary", {}).get("pods", 0) <= 64:
            # and through serve, on AMD nodes
            drc, text_out = run.drive_ok(run.write(amd), "%s,resource=amd.com/gpu" % BIG)
            check(drc == 0, "%s (amd.com/gpu through serve): drive exit %d: %s"
                  % (name, drc, text_out.strip()[-300:]))
        placed = [p for p in (out or {}).get("placements", []) if p.get("ranks")]
        wrong = [p["pod"] + "@" + p["node"] for p in placed if not p["node"].startswith("amd-")]
        # and not vacuously: what placed on whole NVIDIA nodes places on the AMD ones
        refused = (out or {}).get("rejected", [])
        check(not amd or (rc in (0, 3) and not wrong and
                          (placed or gpu_ranks(out1) == 0 or
                           all("admit it" in x.get("reason", "") for x in refused))),
              "%s (amd.com/gpu on a mixed fleet): exit %d, %d placed, on NVIDIA nodes: %s %s" % (
                  name, rc, len(placed), wrong[:4],
                  err.strip()[-160:] if rc not in (0, 3) or not placed else ""))

        # the world moved into a StatefulSet with --nnodes: one group
        for t in engine_templates(docs)[:1]:
            rc, out, err = run.plan(run.write(sts_world(t)), one)
            n_est = len((out or {}).get("estimates", []))
            check(out is not None and n_est == 1,
                  "%s (StatefulSet of 2 with --nnodes 2): %d groups: %s" % (
                      name, n_est, err.strip()[-200:]))

    shutil.rmtree(tmp, ignore_errors=True)
    print("metamorphic: %d manifests, %d kinds, vendors %s" % (
        nmanifests, len(kinds), ", ".join(sorted(vendors))))
    for line in failed:
        print("FAIL " + line)
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
