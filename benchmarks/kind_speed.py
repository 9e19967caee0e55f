"""Where a full `lwsc --profile kind run` spends its wall time, and an A/B of two harness trees.

Run one round (a tree is a checkout of the harness, e.g. `git worktree add /tmp/base main`):
    .venv/bin/python benchmarks/kind_speed.py run --tree DIR --label base [--name kspeed] [-n 3] [-- lwsc run args]
Render the rounds (alternate the trees' rounds in one sitting, same machine):
    .venv/bin/python benchmarks/kind_speed.py render OUT_STEM ROUND.json [ROUND.json ...]
Where the suites' time goes, run directories side by side (a kind run's and a local run's):
    .venv/bin/python benchmarks/kind_speed.py where reports/RUN [reports/RUN ...]

A round is `lwsc --profile kind --name NAME run -n N` started from the tree (its own
`lws_conformance` imported: cwd first on sys.path), under `nice -n 19`, its run directory and
lwsc's output kept in `reports/kind-speed/<label>-<stamp>/`. Wall time per phase from lwsc's own
time-stamped progress lines: bring-up (images on the engine, `kind create`, pod network and nodes
Ready, controllers installed and serving), the suites (pytest: the run's `started`..`finished`),
tear-down and reports. CPU: every node container's cgroup (cpuacct: all its processes, short-lived
ones included) and each program inside the nodes and of the run (`/proc`, sampled every 2 s, the
last sample of each process), so the machine's other work is not counted. Each round also records
the load average before and after, and every test's duration and requirement verdicts
(`scripts/compare-runs` compares two rounds' run directories).

`where` reads a run directory's own records: every test's allure steps (the test-seconds spent in
the wait primitive's waits for a condition, in its "must never happen" windows, and in the rest of
the test) and the per-test timelines (each recorded pod's latency from created to scheduled, from
scheduled to Running, from Running to Ready, and from its deletion to its removal).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENGINE = f"unix://{Path.home()}/.cache/lws-conformance/engine/docker.sock"
STAMP = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] (.*)$")
# lwsc's progress lines that end a bring-up phase: (phase, the line's start)
MARKS = (
    ("images", "creating kind cluster"),
    ("create", "kind cluster '{name}': pod network, nodes Ready"),
    ("network", "installing LWS"),
    ("controllers", "kind cluster '{name}' up in"),
)


class Sampler:
    """CPU-seconds of the kind cluster's node containers and of the processes in them or in the
    run's tree (cwd `tree`): the last value seen of each."""

    def __init__(self, cluster: str, tree: Path) -> None:
        self.cluster, self.tree = cluster, str(tree)
        self.nodes: dict[str, float] = {}
        self.procs: dict[tuple[int, int], tuple[str, float]] = {}
        self.ids: dict[str, str] = {}
        self.stop = threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def _containers(self) -> None:
        out = subprocess.run(
            ["docker", "ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"]
            + ["--filter", f"label=io.x-k8s.kind.cluster={self.cluster}"],
            capture_output=True,
            text=True,
            env={**os.environ, "DOCKER_HOST": ENGINE},
        )
        self.ids.update(dict(line.split() for line in out.stdout.splitlines() if line.strip()))

    def sample(self) -> None:
        for cid, name in self.ids.items():
            try:
                used = int(Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage").read_text()) / 1e9
            except (OSError, ValueError):
                continue
            self.nodes[name] = max(self.nodes.get(name, 0.0), used)
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text, cgroup = stat.read_text(), (stat.parent / "cgroup").read_text()
            except OSError:
                continue
            comm = text[text.index("(") + 1 : text.rindex(")")]
            rest = text[text.rindex(")") + 2 :].split()
            ours = any(cid in cgroup for cid in self.ids)
            if not ours and comm.startswith(("python", "kubectl", "kind")):
                with contextlib.suppress(OSError):
                    ours = os.readlink(stat.parent / "cwd") == self.tree
            if ours:
                key = (int(stat.parent.name), int(rest[19]))
                cpu = (int(rest[11]) + int(rest[12])) / self.tick
                self.procs[key] = (comm, max(cpu, self.procs.get(key, (comm, 0.0))[1]))

    def run(self) -> None:
        last = 0.0
        while not self.stop.is_set():
            if time.monotonic() - last > 15:
                self._containers()
                last = time.monotonic()
            self.sample()
            self.stop.wait(2)

    def by_program(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for comm, cpu in self.procs.values():
            out[comm] = out.get(comm, 0.0) + cpu
        return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 0.5}


def _seconds(h: str, m: str, s: str) -> int:
    return int(h) * 3600 + int(m) * 60 + int(s)


def phases(lines: list[str], name: str, start: float) -> dict[str, float]:
    """Bring-up phases from lwsc's progress lines ([HH:MM:SS] text), from the round's start."""
    day0 = time.localtime(start)
    t0 = day0.tm_hour * 3600 + day0.tm_min * 60 + day0.tm_sec + (start % 1)
    seen: list[tuple[str, float]] = []
    for line in lines:
        m = STAMP.match(line)
        if m:
            seen.append((m.group(4), (_seconds(*m.groups()[:3]) - t0) % 86400))
    out, prev = {}, 0.0
    for phase, mark in MARKS:
        at = next((t for text, t in seen if text.startswith(mark.format(name=name))), None)
        if at is not None:
            out[phase], prev = round(at - prev, 1), at
    return out


def step_seconds(steps: list[dict[str, Any]], out: dict[str, float]) -> None:
    """Add the seconds of the wait primitive's steps (`wait up to …`, `observe for …`) under
    `steps` to out["wait"] and out["window"]; a wait's nested steps are inside its time."""
    for step in steps or []:
        name, seconds = step.get("name", ""), (step.get("stop", 0) - step.get("start", 0)) / 1000
        if name.startswith("wait up to "):
            out["wait"] = out.get("wait", 0.0) + seconds
        elif name.startswith("observe for "):
            out["window"] = out.get("window", 0.0) + seconds
        else:
            step_seconds(step.get("steps") or [], out)


def pod_latencies(events: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each recorded pod's lifecycle gaps (seconds) from a timeline's events."""
    first: dict[str, dict[str, float]] = {}
    for event in events:
        if event.get("kind") != "Pod":
            continue
        obj, at = event["obj"], event["t"]
        seen = first.setdefault(obj["uid"], {})
        marks = {
            "created": event["type"] == "ADDED",
            "scheduled": bool(obj.get("node")),
            "running": obj.get("phase") == "Running",
            "ready": bool(obj.get("ready")),
            "deleting": bool(obj.get("deleting")),
            "gone": event["type"] == "DELETED",
        }
        for mark, hit in marks.items():
            if hit:
                seen.setdefault(mark, at)
    gaps: dict[str, list[float]] = {}
    for seen in first.values():
        for label, (a, b) in GAPS.items():
            if a in seen and b in seen:
                gaps.setdefault(label, []).append(seen[b] - seen[a])
    return gaps


GAPS = {
    "created → scheduled": ("created", "scheduled"),
    "scheduled → Running": ("scheduled", "running"),
    "Running → Ready": ("running", "ready"),
    "deleted → gone": ("deleting", "gone"),
}


def ran(run_dir: Path) -> set[str]:
    """The node ids of a run's tests that checked something (not every verdict not-run)."""
    result = json.loads((run_dir / "results.json").read_text())
    return {
        r["nodeid"]
        for r in result.get("results") or []
        if any(o["verdict"] != "not-run" for o in r["outcomes"].values())
    }


def _nodeid(test: dict[str, Any]) -> str:
    """An allure result's pytest node id (its fullName is `suites.lws.test_x#test_name`)."""
    module = test.get("fullName", "").partition("#")[0]
    return module.replace(".", "/") + ".py::" + test.get("name", "")


def where(run_dir: Path, only: set[str] | None = None) -> dict[str, Any]:
    """Where a run's test-seconds go (of the tests in `only`, if given), and its pods' lifecycle
    latencies, from its run directory."""
    result = json.loads((run_dir / "results.json").read_text())
    seconds = {"tests": 0.0, "wait": 0.0, "window": 0.0}
    counted = 0
    for path in (run_dir / "allure-results").glob("*-result.json"):
        test = json.loads(path.read_text())
        if only is not None and _nodeid(test) not in only:
            continue
        counted += 1
        seconds["tests"] += (test.get("stop", 0) - test.get("start", 0)) / 1000
        step_seconds(test.get("steps") or [], seconds)
    gaps: dict[str, list[float]] = {}
    for path in (run_dir / "artifacts").glob("*.timeline.json"):
        for label, values in pod_latencies(json.loads(path.read_text()).get("events") or []).items():
            gaps.setdefault(label, []).extend(values)
    return {
        "run": run_dir.name,
        "provider": result.get("provider", ""),
        "tests": counted,
        "test_seconds": {k: round(v, 1) for k, v in seconds.items()},
        "pods": {label: _spread(values) for label, values in gaps.items()},
    }


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 2),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 2),
    }


def where_table(runs: list[dict[str, Any]]) -> list[str]:
    md = ["| | " + " | ".join(f"{r['run']} ({r['provider']}, {r['tests']} tests)" for r in runs) + " |"]
    md.append("|---|" + "---|" * len(runs))
    for key, label in (("tests", "test-seconds"), ("wait", "in waits for a condition"), ("window", "in windows")):
        md.append(f"| {label} | " + " | ".join(f"{r['test_seconds'][key]:,.0f}" for r in runs) + " |")
    for gap in GAPS:
        cells = []
        for r in runs:
            s = r["pods"].get(gap)
            cells.append(f"{s['median']:.2f} / {s['p90']:.2f} ({s['n']})" if s else "—")
        md.append(f"| pod {gap}, s: median / p90 (pods) | " + " | ".join(cells) + " |")
    return md


def run_round(args: argparse.Namespace) -> Path:
    tree = Path(args.tree).resolve()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = ROOT / "reports" / "kind-speed" / f"{args.label}-{stamp}"
    out.mkdir(parents=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=tree)
    load_before = os.getloadavg()
    sampler = Sampler(args.name, tree)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    started = time.time()
    cmd = ["nice", "-n", "19", sys.executable, "-u", "-c"]
    cmd += ["import sys; from lws_conformance.cli import main; sys.exit(main())"]
    cmd += ["--profile", "kind", "--name", args.name, "run", "-n", str(args.workers), "--reports", str(out)]
    cmd += args.lwsc
    with (out / "lwsc.log").open("w") as log:
        rc = subprocess.run(cmd, cwd=tree, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.time() - started
    sampler.stop.set()
    thread.join()
    runs = sorted(p for p in out.iterdir() if p.is_dir() and (p / "results.json").is_file())
    result: dict[str, Any] = json.loads((runs[-1] / "results.json").read_text()) if runs else {}
    lines = (out / "lwsc.log").read_text().splitlines()
    bringup = phases(lines, args.name, started)
    pytest_s = 0.0
    if result:
        fmt = "%Y-%m-%dT%H:%M:%S%z"
        t_start = time.mktime(time.strptime(result["started"], fmt))
        pytest_s = time.mktime(time.strptime(result["finished"], fmt)) - t_start
    tests = sorted(((r["nodeid"], round(r["duration"], 1)) for r in result.get("results", [])), key=lambda t: -t[1])
    rnd = {
        "label": args.label,
        "tree": str(tree),
        "commit": commit.stdout.strip(),
        "settings": args.lwsc,
        "date": time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(started)),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "workers": args.workers,
        "exit": rc,
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "wall_s": round(wall, 1),
        "bringup_s": round(sum(bringup.values()), 1),
        "bringup_phases_s": bringup,
        "pytest_s": round(pytest_s, 1),
        "tests": len(tests),
        "test_seconds_sum": round(sum(d for _, d in tests), 1),
        "longest_tests": tests[:15],
        "cpu_s_nodes": {k: round(v, 1) for k, v in sorted(sampler.nodes.items())},
        "cpu_s_nodes_total": round(sum(sampler.nodes.values()), 1),
        "cpu_s_programs": sampler.by_program(),
        "run_dir": str(runs[-1].relative_to(ROOT)) if runs else "",
    }
    (out / "round.json").write_text(json.dumps(rnd, indent=1) + "\n")
    print(out / "round.json")
    return out / "round.json"


def render(stem: Path, rounds: list[dict[str, Any]]) -> None:
    labels = list(dict.fromkeys(r["label"] for r in rounds))
    med = {
        lab: {
            k: statistics.median(r[k] for r in rounds if r["label"] == lab)
            for k in ("wall_s", "bringup_s", "pytest_s", "cpu_s_nodes_total")
        }
        for lab in labels
    }
    doc = {"rounds": rounds, "median_by_label": med}
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    md = [f"# `lwsc --profile kind run -n {rounds[0]['workers']}`: where the wall time goes, A/B", ""]
    md += ["| round | commit | started | load before → after | exit | wall | bring-up (phases) | pytest | node CPU-s |"]
    md += ["|---|---|---|---|---|---|---|---|---|"]
    for r in rounds:
        ph = ", ".join(f"{k} {v:.0f}" for k, v in r["bringup_phases_s"].items())
        load = f"{r['load_before'][0]} → {r['load_after'][0]}"
        md.append(
            f"| {r['label']} | {r['commit']} | {r['date']} | {load} | {r['exit']} | {r['wall_s']:.0f} s "
            f"| {r['bringup_s']:.0f} s ({ph}) | {r['pytest_s']:.0f} s | {r['cpu_s_nodes_total']:.0f} |"
        )
    md += ["", "CPU-seconds by program (inside the nodes, and the run's own python/kubectl/kind):", ""]
    progs = list(dict.fromkeys(p for r in rounds for p in list(r["cpu_s_programs"])[:10]))
    md += ["| round | " + " | ".join(progs) + " |", "|---|" + "---|" * len(progs)]
    for r in rounds:
        md.append(f"| {r['label']} | " + " | ".join(f"{r['cpu_s_programs'].get(p, 0):.0f}" for p in progs) + " |")
    md += ["", "Longest tests per round (s):", ""]
    for r in rounds:
        md.append(f"- {r['label']}: " + "; ".join(f"{n.split('::')[-1]} {d:.0f}" for n, d in r["longest_tests"][:8]))
    stem.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(stem.with_suffix(".md"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--tree", required=True)
    run.add_argument("--label", required=True)
    run.add_argument("--name", default="kspeed")
    run.add_argument("-n", "--workers", type=int, default=3)
    run.add_argument("lwsc", nargs="*", help="more `lwsc run` arguments (after --)")
    ren = sub.add_parser("render")
    ren.add_argument("stem", type=Path)
    ren.add_argument("rounds", nargs="+", type=Path)
    whr = sub.add_parser("where")
    whr.add_argument("runs", nargs="+", type=Path, help="run directories (reports/<run>)")
    whr.add_argument("--all-tests", action="store_true", help="not only the tests that ran in every run")
    args = ap.parse_args()
    if args.cmd == "run":
        run_round(args)
    elif args.cmd == "where":
        only = None if args.all_tests else set.intersection(*(ran(p) for p in args.runs))
        print("\n".join(where_table([where(p, only) for p in args.runs])))
    else:
        render(args.stem, [json.loads(p.read_text()) for p in args.rounds])


if __name__ == "__main__":
    main()
