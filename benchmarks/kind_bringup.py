"""Measure the kind provider: `lwsc --profile kind up` (warm images), memory, `lwsc down`.

Run: .venv/bin/python benchmarks/kind_bringup.py [--rounds N] [--cold]
--cold first removes the node image and its helper images from the engine (and the rootfs tar
from the cache), so the first round includes building them; the Go binaries stay cached (their
cold build is `benchmarks/cold_build.sh`). Memory: `docker stats` of every node container after
the cluster is up, summed. Uses its own cluster name, so it never touches a cluster you use.
Results: benchmarks/results/kind-bringup-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lws_conformance.toolchain import cache
from lws_conformance.toolchain import engine as engines

NAME = "lwsc-kind-bench"
ROOT = Path(__file__).resolve().parent.parent


def lwsc(*args: str) -> float:
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "--profile", "kind", "--name", NAME, *args],
        check=True,
        cwd=ROOT,
    )
    return time.monotonic() - started


def _bytes(text: str) -> float:
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1e3, "MB": 1e6, "GB": 1e9}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return float(text)


def node_memory(engine: engines.Engine) -> dict[str, float]:
    names = engine.run("ps", "--format", "{{.Names}}", "--filter", f"label=io.x-k8s.kind.cluster={NAME}").split()
    out = engine.run("stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}", *names)  # stats has no --filter
    mem = {}
    for line in out.splitlines():
        name, usage = line.split(" ", 1)
        mem[name] = _bytes(usage.split("/")[0].strip()) / (1 << 20)
    return mem


def remove_images(engine: engines.Engine) -> None:
    refs = engine.run("images", "--format", "{{.Repository}}:{{.Tag}}").split()
    ours = [r for r in refs if r.startswith(("lwsc.local/kind-", "lwsc.local/agnhost", "registry.k8s.io/"))]
    if ours:
        engine.run("rmi", "-f", *ours, check=False)
    for tar in (cache.cache_root() / "kind").glob("rootfs-*"):
        tar.unlink()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cold", action="store_true", help="rebuild the node image in the first round")
    args = ap.parse_args()
    engine = engines.start("docker", print)
    if args.cold:
        remove_images(engine)
    rounds = []
    for i in range(args.rounds):
        try:
            up = lwsc("up")
            engine = engines.Engine(engines.private_host(), True)
            mem = node_memory(engine) if engines.answers(engine) else {}
        finally:
            down = lwsc("down")
        rounds.append(
            {"up_s": round(up, 1), "down_s": round(down, 1), "node_memory_mib": mem, "cold": args.cold and i == 0}
        )
        print(json.dumps(rounds[-1]))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "commit": commit.strip(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "rounds": rounds,
        "warm_up_median_s": statistics.median([r["up_s"] for r in rounds if not r["cold"]] or [0]),
    }
    out = ROOT / "benchmarks" / "results" / f"kind-bringup-{time.strftime('%Y-%m-%d-%H%M')}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
