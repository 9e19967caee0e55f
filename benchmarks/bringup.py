"""Measure the local cluster: `lwsc up` (cached binaries) to ready, idle memory, `lwsc down`.

Run: .venv/bin/python benchmarks/bringup.py [--rounds N] [--settle SECONDS]
Targets (issue #2): up <= 20 s on 2 cores, down <= 5 s, idle RSS of all processes <= 2.5 GiB.
Uses a separate cluster name and port range so it never touches a cluster you are using.
"""

from __future__ import annotations

import argparse
import json
import statistics
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
    args = ap.parse_args()
    profile = load_profile("default", ["network.base_port=17000"])
    ensure_binaries(profile, print)
    cluster = LocalCluster(profile, name="bench")
    ups, downs, mems = [], [], []
    per_component: dict[str, int] = {}
    for _ in range(args.rounds):
        t0 = time.monotonic()
        cluster.up(lambda _m: None)
        ups.append(time.monotonic() - t0)
        time.sleep(args.settle)  # benchmark only: let the idle cluster settle before sampling
        per_component = {r.name: rss_bytes(r.pid) for r in cluster.records()}
        mems.append(sum(per_component.values()))
        t0 = time.monotonic()
        cluster.down()
        downs.append(time.monotonic() - t0)
    bins = cache.cache_root() / "bin"
    result = {
        "rounds": args.rounds,
        "up_seconds": {"median": statistics.median(ups), "max": max(ups), "all": ups},
        "down_seconds": {"median": statistics.median(downs), "max": max(downs), "all": downs},
        "idle_rss_gib": {"median": statistics.median(mems) / 2**30, "max": max(mems) / 2**30},
        "idle_rss_mib_by_component": {k: round(v / 2**20) for k, v in sorted(per_component.items())},
        "binary_cache_mib": round(cache.size_bytes(bins) / 2**20),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
