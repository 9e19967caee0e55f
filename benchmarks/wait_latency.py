"""Measure the suites' wait primitive (`lws_conformance.k8s.wait.wait_for`: list, watch from the
resourceVersion, deadline): from an object write acknowledged by the API server to the predicate
returning true inside the wait, on a local cluster of its own.

Run: .venv/bin/python benchmarks/wait_latency.py [--events 200] [--out FILE.md]

Each round starts a wait (in a thread) for "ConfigMap lat has data.n == i", lets its watch open,
patches the ConfigMap to n = i and records (a) the time the patch call returned and (b) the time
the wait's predicate first saw n == i. Latency = (b) - (a): the notice delay a suite adds on top
of the controller. Negative values (the watch event arrived before the PATCH response) count as 0.
Uses its own cluster name and port range (never a cluster you are using).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client

from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.wait import wait_for
from lws_conformance.profile import load_profile
from lws_conformance.providers.local import LocalCluster
from lws_conformance.toolchain import ensure_binaries

NS = "default"
NAME = "lat"
WATCH_OPEN_SECONDS = 0.3  # time given to each wait to list and open its watch before the write


def one_round(api: client.ApiClient, core: client.CoreV1Api, i: int) -> tuple[float, float]:
    seen: dict[str, float] = {}

    def predicate(items: list[dict[str, Any]]) -> bool | None:
        for cm in items:
            if cm["metadata"]["name"] == NAME and (cm.get("data") or {}).get("n") == str(i):
                seen.setdefault("at", time.monotonic())
                return True
        return None

    waiter = threading.Thread(
        target=wait_for,
        args=(api, core.list_namespaced_config_map, predicate),
        kwargs={"what": f"ConfigMap {NAME}", "condition": f"n == {i}", "timeout": 30, "namespace": NS},
    )
    waiter.start()
    time.sleep(WATCH_OPEN_SECONDS)  # benchmark pacing, not a wait: the write must come after the watch opened
    sent = time.monotonic()
    core.patch_namespaced_config_map(NAME, NS, {"data": {"n": str(i)}})
    written = time.monotonic()
    waiter.join()
    return max(0.0, seen["at"] - written), seen["at"] - sent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--profile", default="default", help="the profile measured (default: default)")
    ap.add_argument("--out", type=Path, default=None, help="also write the result table here (markdown)")
    args = ap.parse_args()
    profile = load_profile(args.profile, ["network.base_port=17300"])
    ensure_binaries(profile, print)
    cluster = LocalCluster(profile, name="bench-wait")
    cluster.up(lambda m: print(m, flush=True))
    try:
        api = api_client(cluster.kubeconfig)
        core = client.CoreV1Api(api)
        core.create_namespaced_config_map(NS, {"metadata": {"name": NAME}, "data": {"n": "-1"}})
        lat, rtt = [], []
        for i in range(args.events):
            after_ack, after_send = one_round(api, core, i)
            lat.append(after_ack * 1000)
            rtt.append(after_send * 1000)
            if (i + 1) % 50 == 0:
                print(f"{i + 1}/{args.events} events", flush=True)
        q, r = statistics.quantiles(lat, n=100), statistics.quantiles(rtt, n=100)
        table = (
            "| measured from | events | p50 (ms) | p95 (ms) | max (ms) |\n|---|---|---|---|---|\n"
            f"| write acknowledged | {len(lat)} | {q[49]:.1f} | {q[94]:.1f} | {max(lat):.1f} |\n"
            f"| write sent (incl. the PATCH round trip) | {len(rtt)} | {r[49]:.1f} | {r[94]:.1f} | {max(rtt):.1f} |\n"
        )
        print(table)
        if args.out:
            args.out.write_text(f"# Wait primitive: write acknowledged -> predicate true\n\n{table}")
        api.close()
    finally:
        cluster.down()


if __name__ == "__main__":
    main()
