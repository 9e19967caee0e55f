"""Where a run's CPU goes: per program, per test, and the main API server's requests by verb and resource.

Run: .venv/bin/python benchmarks/cpu_by_test.py [--focus F] [--name perf-cost] [--out STEM]

One `lwsc --name NAME run -n 1 --keep [--focus F]` (one worker, so a test's CPU is what the
cluster and the harness spent while that test ran), under `nice -n 10`:
- the run's process tree is sampled twice a second (benchmarks/cpu_ab.py's TreeSampler: every
  process charged to its program, a control-plane program with the cluster it serves) into a
  time series of CPU seconds per program;
- the run's timeline (summary.json `run_timeline`: every test's setup, call and teardown, epoch
  seconds from `t0_epoch`) cuts that series into tests: a test's CPU is the increase of every
  program's CPU between its setup's start and its teardown's end; what falls between tests (bring-up,
  collection, reports) is "outside tests";
- after the tests, before `lwsc down`, the main API server's `/metrics` gives
  `apiserver_request_total` summed by verb and resource (every client: controllers, kwok, the harness).
Results: benchmarks/results/cpu-by-test-<date>.json and .md (date, commit, machine, load).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_ab  # noqa: E402  (a sibling script: its sampler is shared)

REQUEST = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<n>[0-9.e+]+)$")


class SeriesSampler(cpu_ab.TreeSampler):
    """The TreeSampler, keeping every sample: (time, {program: CPU seconds so far})."""

    def __init__(self, root: int, cluster: str) -> None:
        super().__init__(root, cluster)
        self.series: list[tuple[float, dict[str, float]]] = []

    def sample(self) -> None:
        super().sample()
        totals: dict[str, float] = {}
        for key, (prog, cpu) in self.mine.items():
            totals[prog] = totals.get(prog, 0.0) + cpu - self.first.get(key, 0.0)
        self.series.append((time.time(), totals))


def at(series: list[tuple[float, dict[str, float]]], t: float) -> dict[str, float]:
    """CPU seconds per program at time t: the last sample not after t (before the first: nothing)."""
    i = bisect.bisect_right([s[0] for s in series], t) - 1
    return series[i][1] if i >= 0 else {}


def per_test(series: list[tuple[float, dict[str, float]]], timeline: dict[str, Any]) -> list[dict[str, Any]]:
    """Every test of a one-worker run: its wall seconds and the CPU every program spent meanwhile."""
    t0 = float(timeline["t0_epoch"])
    rows = []
    for worker in timeline["workers"].values():
        for test in worker["tests"]:
            start = t0 + min(v[0] for k, v in test.items() if k in ("setup", "call", "teardown"))
            stop = t0 + max(v[1] for k, v in test.items() if k in ("setup", "call", "teardown"))
            a, b = at(series, start), at(series, stop)
            spent = {p: round(b.get(p, 0.0) - a.get(p, 0.0), 2) for p in b}
            spent = {p: v for p, v in sorted(spent.items(), key=lambda kv: -kv[1]) if v >= 0.05}
            rows.append({"nodeid": test["nodeid"], "wall_s": round(stop - start, 2),
                         "cpu_s": round(sum(spent.values()), 2), "by_program": spent})  # fmt: skip
    return sorted(rows, key=lambda r: -r["cpu_s"])


def requests_by(metrics: str) -> dict[str, int]:
    """apiserver_request_total summed by "VERB resource" (subresource appended), largest first."""
    out: dict[str, float] = {}
    for line in metrics.splitlines():
        m = REQUEST.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
        key = f"{labels.get('verb', '?')} {labels.get('resource', '?')}"
        if labels.get("subresource"):
            key += "/" + labels["subresource"]
        out[key] = out.get(key, 0.0) + float(m.group("n"))
    return {k: int(v) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def _metrics(kubeconfig: str) -> str:
    from kubernetes import config

    api = config.new_client_from_config(config_file=kubeconfig)
    method, url, headers, _body, _post = api.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers)
    resp.read()
    return bytes(resp.data or b"").decode(errors="replace")


def write(stem: Path, doc: dict[str, Any]) -> None:
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    tests, total = doc["tests"], doc["cpu_s"]
    in_tests = sum(t["cpu_s"] for t in tests)
    lines = [
        f"# CPU by test, {doc['date']}",
        "",
        f"Commit {doc['commit']}, {doc['machine']}, load {doc['load_before']}->{doc['load_after']}; "
        f"`lwsc run -n 1{cpu_ab._focus_arg(doc['focus'])}`: {doc['wall_s']} s wall, {total} CPU-s "
        f"({round(in_tests, 1)} in {len(tests)} tests, {round(total - in_tests, 1)} outside them: bring-up, "
        "collection, reports, down), exit " + str(doc["exit"]) + ".",
        "",
        "## By program",
        "",
        "| program | CPU-s |",
        "|---|---|",
        *(f"| {p} | {v} |" for p, v in doc["cpu_by_program_s"].items()),
        "",
        "## The 25 tests that cost the most CPU",
        "",
        "| test | wall s | CPU-s | largest programs |",
        "|---|---|---|---|",
        *(
            f"| `{t['nodeid'].split('::', 1)[-1]}` | {t['wall_s']} | {t['cpu_s']} | "
            + ", ".join(f"{p} {v}" for p, v in list(t["by_program"].items())[:3])
            + " |"
            for t in tests[:25]
        ),
        "",
        "## The main API server's requests, by verb and resource (the 25 most frequent)",
        "",
        "| request | count |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in list(doc["apiserver_requests"].items())[:25]),
    ]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--focus", help="the run's selection (default: the full run)")
    ap.add_argument("--name", default="perf-cost", help="the local cluster's name")
    ap.add_argument("--out", default=None, help="results stem (default benchmarks/results/cpu-by-test-<date>)")
    ap.add_argument("--render", metavar="RESULTS.json", type=Path, help="rewrite a results file's Markdown")
    args = ap.parse_args()
    if args.render:
        write(args.render.with_suffix(""), json.loads(args.render.read_text()))
        return
    stamp = time.strftime("%Y-%m-%d-%H%M")
    stem = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"cpu-by-test-{stamp}"
    reports = ROOT / "reports" / f"cpu-by-test-{stamp}"
    selection = ["--focus", args.focus] if args.focus else []
    lwsc = [sys.executable, "-c", cpu_ab.MAIN, "--name", args.name]
    cmd = ["nice", "-n", "10", *lwsc, "run", *selection, "-n", "1", "--keep", "--reports", str(reports)]
    load0, wall0 = os.getloadavg()[0], time.monotonic()
    reports.mkdir(parents=True, exist_ok=True)
    with open(reports.with_suffix(".log"), "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    sampler = SeriesSampler(proc.pid, args.name)
    sampler.start()
    _pid, status, _usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - wall0
    sampler.stop.set()
    sampler.join()
    try:
        kubeconfig = subprocess.run([*lwsc, "kubeconfig"], cwd=ROOT, capture_output=True, text=True, check=True)
        metrics = _metrics(kubeconfig.stdout.strip())
    finally:
        subprocess.run([*lwsc, "down"], cwd=ROOT, capture_output=True)
    run = (reports / "latest").resolve()
    summary = json.loads((run / "summary.json").read_text())
    doc = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "commit": cpu_ab.Variant("this", ROOT, {}).commit(),
        "machine": f"{platform.system()}, {os.cpu_count()} cores (shared)",
        "focus": args.focus,
        "wall_s": round(wall, 1),
        # the sampled programs: with --keep the control plane outlives lwsc, so wait4's rusage misses it
        "cpu_s": round(sum(sampler.by_program().values()), 1),
        "exit": os.waitstatus_to_exitcode(status),
        "load_before": round(load0, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else str(run),
        "cpu_by_program_s": sampler.by_program(),
        "tests": per_test(sampler.series, summary["run_timeline"]),
        "apiserver_requests": requests_by(metrics),
    }
    write(stem, doc)
    print(stem.with_suffix(".md"))


if __name__ == "__main__":
    main()
