"""Measure the starvation signals per test window: a normal focused run against a starved one.

Run (from the project root, under nice): nice -n 19 .venv/bin/python benchmarks/starvation.py
    [--focus "LWS-NAME or ROLL-SINGLE"] [-n 2] [--name starve-bench] [--skip-starved]

It brings up the local cluster `--name` (its own, never another's), watches it with the harness's
own sampler (`lws_conformance.providers.sampler`, in this process: the component processes'
run-queue wait, CPU and state, an API canary, and this process's wake lag at the same nice as the
run's pytest workers), and runs `lwsc run --focus F -n N` twice:

- normal: as it is, on the machine as loaded as it is (its load average is recorded);
- starved: after `chrt -a -i -p 0 PID` on every component process of the cluster (SCHED_IDLE: they
  run only when nothing else on the machine wants a CPU). Nothing is added to the machine's load:
  the other work already running starves them.

For every test (its call phase, from results.json's timeline) it records the window's figures:
the component that waited longest for a CPU (run-queue wait plus frozen time), the slowest canary
GET, the latest wake, and the test's verdicts. Results: benchmarks/results/starvation-<date>.json
and .md; `--render RESULTS.json` rewrites the .md. The limits of `providers/starvation.py` must
sit above every window of a passing test of the normal run and below the starved run's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lws_conformance.profile import load_profile
from lws_conformance.providers import process, sampler, starvation
from lws_conformance.providers.local import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
UNSCALED = starvation.Limits(starvation.FROZEN, starvation.CANARY, starvation.HARNESS_LAG)
LWSC = [sys.executable, "-c", "import sys; from lws_conformance.cli import main; sys.exit(main())"]


def lwsc(name: str, *args: str, timeout: float = 7200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LWSC, "--name", name, *args], cwd=ROOT, text=True, capture_output=True, timeout=timeout)


def starve(cluster: LocalCluster) -> list[str]:
    """SCHED_IDLE for every thread of every component process; the names starved."""
    done = []
    for rec in cluster.records():
        if process.alive(rec):
            subprocess.run(["chrt", "-a", "-i", "-p", "0", str(rec.pid)], check=True, capture_output=True)
            done.append(rec.name)
    return done


class DutyCycle:
    """SIGSTOP every component process for `stop` s, SIGCONT for `run` s, until ended: a cluster
    that gets at most run/(stop+run) of the wall clock, without loading the machine."""

    def __init__(self, pids: list[int], stop: float = 4.0, run: float = 1.0) -> None:
        self.pids, self.stop, self.run = pids, stop, run
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _signal(self, sig: signal.Signals) -> None:
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def _loop(self) -> None:
        while not self.done.is_set():
            self._signal(signal.SIGSTOP)
            self.done.wait(self.stop)
            self._signal(signal.SIGCONT)
            self.done.wait(self.run)
        self._signal(signal.SIGCONT)

    def __enter__(self) -> DutyCycle:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.done.set()
        self.thread.join()


def one_run(
    name: str, watched: sampler.Sampler, handle: Any, focus: str, workers: int, reports: Path
) -> dict[str, Any]:
    """`lwsc run` of `focus`; every test's window and verdicts."""
    reports.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    started = time.time()
    proc = lwsc(name, "run", "--focus", focus, "-n", str(workers), "--reports", str(reports))
    wall = time.time() - started
    runs = sorted(p for p in reports.iterdir() if (p / "results.json").is_file())
    if not runs:
        raise SystemExit(f"no results.json under {reports}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    doc = json.loads((runs[-1] / "results.json").read_text())
    verdicts = {r["nodeid"]: {k: v["verdict"] for k, v in r["outcomes"].items()} for r in doc["results"]}
    details = {
        r["nodeid"]: next((v["detail"][:400] for v in r["outcomes"].values() if v["verdict"] == "error"), "")
        for r in doc["results"]
    }
    windows = []
    for entry in doc["timeline"]:
        call = entry["phases"].get("call")
        if not call:
            continue
        w = watched.window(handle, call[0], call[1])
        assert w is not None
        worst = max(w.wait.keys() | w.frozen.keys(), key=w.unavailable, default="")
        windows.append(
            {
                "test": entry["nodeid"],
                "length": round(w.length, 1),
                "component": worst,
                "component_wait": round(w.unavailable(worst), 2) if worst else 0.0,
                "waits": {k: round(v, 2) for k, v in sorted(w.wait.items())},
                "cpu": {k: round(v, 2) for k, v in sorted(w.cpu.items())},
                "canary": round(w.canary, 2) if w.canary is not None else None,
                "lag": round(w.lag, 2),
                "verdicts": verdicts.get(entry["nodeid"], {}),
                "error_detail": details.get(entry["nodeid"], ""),
                "frozen": {k: round(v, 2) for k, v in sorted(w.frozen.items())},
                "judged": starvation.judge(w, UNSCALED) is not None,
            }
        )
    return {
        "exit": proc.returncode,
        "wall": round(wall, 1),
        "load_before": [round(x, 1) for x in load],
        "windows": windows,
    }


ABOUT = {
    "normal": "the machine as loaded as it is; passing tests' windows bound the limits from below",
    "starved": "every component process at SCHED_IDLE (runs only when no other process wants a CPU)",
    "frozen": "every component process SIGSTOPped 4 s of every 5 (at most 20% of the wall clock)",
}


def starved_now(win: dict[str, Any]) -> bool:
    """The window judged with today's limits (timeouts.scale 1) from its recorded figures."""
    seen = starvation.Window(
        win["length"], win.get("waits", {}), win.get("cpu", {}), win.get("frozen", {}), win["canary"], win["lag"]
    )
    return starvation.judge(seen, UNSCALED) is not None


def passing(win: dict[str, Any]) -> bool:
    return bool(win["verdicts"]) and all(
        v in ("passed", "not-applicable", "known-deviation") for v in win["verdicts"].values()
    )


def render(result: dict[str, Any]) -> str:
    lines = [
        f"# Starvation signals per test window ({result['date']})",
        "",
        f"Commit {result['commit']}, machine: {result['machine']}. Commands: "
        + "; ".join(f"`{c}`" for c in result.get("commands") or [result["command"]])
        + ".",
        f"Limits at timeouts.scale 1: frozen {starvation.FROZEN} s, canary {starvation.CANARY} s, "
        f"harness lag {starvation.HARNESS_LAG} s (`lws_conformance/providers/starvation.py`).",
        "",
    ]
    for label, run in result["runs"].items():
        wins = run["windows"]
        ok = [w for w in wins if passing(w)] if label == "normal" else wins
        lines += [
            f"## {label}: exit {run['exit']}, {run['wall']} s, load average before {run['load_before']}",
            "",
            ABOUT.get(label, ""),
            "",
            "| test | window s | most deprived component | its run-queue wait s | frozen s | canary s | lag s "
            "| starved "
            "| verdicts |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for w in wins:
            counts: dict[str, int] = {}
            for v in w["verdicts"].values():
                counts[v] = counts.get(v, 0) + 1
            said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
            lines.append(
                f"| {w['test'].split('::')[-1]} | {w['length']} | {w['component']} | {w['component_wait']} | "
                f"{max((w.get('frozen') or {}).values(), default=0)} | {w['canary']} | {w['lag']} | "
                f"{'yes' if starved_now(w) else 'no'} | {said} |"
            )
        if ok:
            lines += [
                "",
                f"Maxima over {len(ok)} {'passing ' if label == 'normal' else ''}windows: component wait "
                f"{max(w['component_wait'] for w in ok)} s, canary {max((w['canary'] or 0) for w in ok)} s, "
                f"lag {max(w['lag'] for w in ok)} s; minima: component wait {min(w['component_wait'] for w in ok)} s.",
            ]
        lines.append("")
    lines += [f"- {note}" for note in result.get("notes", [])]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--focus", default="LWS-NAME or ROLL-SINGLE")
    ap.add_argument("-n", "--workers", type=int, default=2)
    ap.add_argument("--name", default="starve-bench")
    ap.add_argument("--skip-starved", action="store_true")
    ap.add_argument("--skip-normal", action="store_true", help="keep the normal run of today's results JSON")
    ap.add_argument(
        "--freeze",
        action="store_true",
        help="starve by a duty cycle instead (SIGSTOP 4 s, SIGCONT 1 s, every component): the run `frozen`",
    )
    ap.add_argument("--starved-focus", help="the starved run's focus (default --focus): a starved run is slow")
    ap.add_argument("--render", type=Path, help="rewrite the .md of this results JSON")
    args = ap.parse_args()
    if args.render:
        args.render.with_suffix(".md").write_text(render(json.loads(args.render.read_text())))
        return 0
    if args.name == "perf-ab":
        raise SystemExit("starvation.py never touches the cluster perf-ab; pass another --name")
    date = time.strftime("%Y-%m-%d")
    reports = ROOT / "reports" / f"starvation-{date}"
    up = lwsc(args.name, "up")
    if up.returncode != 0:
        raise SystemExit(f"lwsc up failed:\n{up.stderr[-3000:]}")
    cluster = LocalCluster(load_profile(), name=args.name)
    handle = cluster.handle()
    assert handle is not None
    watched = sampler.Sampler()
    watched.watch(handle)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True, capture_output=True).stdout
    result: dict[str, Any] = {
        "date": date,
        "commit": commit.strip(),
        "machine": f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "command": f"benchmarks/starvation.py --focus {args.focus!r} -n {args.workers} --name {args.name}",
        "runs": {},
    }
    out = ROOT / "benchmarks" / "results" / f"starvation-{date}.json"
    if args.skip_normal:
        result["runs"] = json.loads(out.read_text())["runs"]
        result["command"] += " --skip-normal"
    try:
        if not args.skip_normal:
            result["runs"]["normal"] = one_run(args.name, watched, handle, args.focus, args.workers, reports / "normal")
            out.write_text(json.dumps(result, indent=1))
        focus = args.starved_focus or args.focus
        result["starved_focus"] = focus
        if args.freeze:
            pids = [r.pid for r in cluster.records() if process.alive(r)]
            with DutyCycle(pids):
                result["runs"]["frozen"] = one_run(args.name, watched, handle, focus, args.workers, reports / "frozen")
            out.write_text(json.dumps(result, indent=1))
        elif not args.skip_starved:
            result["starved_components"] = starve(cluster)
            result["runs"]["starved"] = one_run(args.name, watched, handle, focus, args.workers, reports / "starved")
            out.write_text(json.dumps(result, indent=1))
    finally:
        lwsc(args.name, "down")
    out.with_suffix(".md").write_text(render(result))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
