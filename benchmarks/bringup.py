"""Measure the local cluster: `lwsc up` (cached binaries) to ready, idle memory, `lwsc down`.

Run: .venv/bin/python benchmarks/bringup.py [--rounds N] [--settle SECONDS] [--kwokctl PATH]
Targets: up <= 20 s on 2 cores, down <= 5 s, idle RSS of all processes <= 2.5 GiB.
With --kwokctl (a kwokctl built from the kwok module in use, e.g. `go build -o /tmp/kwokctl
sigs.k8s.io/kwok/cmd/kwokctl`), the same rounds of `kwokctl create cluster --runtime binary` with
the same cached binaries (a bare control plane: no CRDs, nodes, webhooks or LWS/Kueue), for the
side-by-side figure in docs/performance.md.
The two alternate round by round (lwsc up/down, then kwokctl create/delete), so a neighbour's
load falls on both alike; the machine's load average is recorded at every round.
Results: benchmarks/results/bringup-<date>.json (date, commit, machine, load), rendered into
docs/performance.md by scripts/render-figures.
Uses a separate cluster name and port range so it never touches a cluster you are using.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from lws_conformance.profile import load_profile
from lws_conformance.providers.local import LocalCluster
from lws_conformance.toolchain import cache, ensure_binaries


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--settle", type=float, default=20.0, help="idle seconds before sampling memory")
    ap.add_argument("--kwokctl", default=None, help="also time kwokctl's binary runtime with the same binaries")
    ap.add_argument("--base-port", type=int, default=17000, help="ports of the measured cluster")
    ap.add_argument("--profile", default="default", help="the profile measured (default: default)")
    ap.add_argument("--beside", default="", help="what else ran on the machine (recorded with the load)")
    args = ap.parse_args()
    profile = load_profile(args.profile, [f"network.base_port={args.base_port}"])
    bins = ensure_binaries(profile, print)
    cluster = LocalCluster(profile, name="bench")
    ups, downs, mems, kwok_ups, loads = [], [], [], [], []
    per_component: dict[str, int] = {}
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        t0 = time.monotonic()
        cluster.up(lambda _m: None)
        ups.append(time.monotonic() - t0)
        time.sleep(args.settle)  # benchmark only: let the idle cluster settle before sampling
        per_component = {r.name: rss_bytes(r.pid) for r in cluster.records()}
        mems.append(sum(per_component.values()))
        t0 = time.monotonic()
        cluster.down()
        downs.append(time.monotonic() - t0)
        if args.kwokctl:
            kwok_ups += kwokctl_rounds(args.kwokctl, bins, 1)
    bin_dir = cache.cache_root() / "bin"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {
        "recorded": {
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "commit": commit,
            "machine": f"{platform.system()}, {os.cpu_count()} cores, "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM",
            "load": f"{min(loads):.0f}-{max(loads):.0f}" + (f" ({args.beside})" if args.beside else ""),
            "source": "written by benchmarks/bringup.py",
        },
        "rounds": args.rounds,
        "up_seconds": {"median": statistics.median(ups), "max": max(ups), "all": ups},
        "down_seconds": {"median": statistics.median(downs), "max": max(downs), "all": downs},
        "idle_rss_gib": {"median": statistics.median(mems) / 2**30, "max": max(mems) / 2**30},
        "idle_rss_mib_by_component": {k: round(v / 2**20) for k, v in sorted(per_component.items())},
        "binary_cache_mib": round(cache.size_bytes(bin_dir) / 2**20),
    }
    if kwok_ups:
        result["kwokctl_binary_up_seconds"] = {
            "median": statistics.median(kwok_ups),
            "max": max(kwok_ups),
            "all": kwok_ups,
        }
        result["up_over_kwokctl"] = round(statistics.median(ups) / statistics.median(kwok_ups), 2)
    out = Path(__file__).resolve().parent / "results" / f"bringup-{time.strftime('%Y-%m-%d-%H%M')}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=2))
    print(out)


def kwokctl_rounds(kwokctl: str, bins: dict[str, Path], rounds: int) -> list[float]:
    """`kwokctl create cluster --runtime binary --wait` with our cached binaries, then delete."""
    out = []
    with tempfile.TemporaryDirectory() as home:
        env = {"HOME": home, "PATH": "/usr/bin:/bin", "KWOK_WORKDIR": f"{home}/.kwok"}
        flags = [
            f"--etcd-binary={bins['etcd']}",
            f"--kube-apiserver-binary={bins['kube-apiserver']}",
            f"--kube-controller-manager-binary={bins['kube-controller-manager']}",
            f"--kube-scheduler-binary={bins['kube-scheduler']}",
            f"--kwok-controller-binary={bins['kwok']}",
            f"--kubeconfig={home}/kubeconfig",
        ]
        for _ in range(rounds):
            t0 = time.monotonic()
            subprocess.run(
                [kwokctl, "create", "cluster", "--name=lwsc-bench", "--runtime=binary", "--wait=60s", *flags],
                env=env,
                check=True,
                capture_output=True,
            )
            out.append(time.monotonic() - t0)
            subprocess.run(
                [kwokctl, "delete", "cluster", "--name=lwsc-bench", f"--kubeconfig={home}/kubeconfig"],
                env=env,
                check=True,
                capture_output=True,
            )
    return out


if __name__ == "__main__":
    main()
