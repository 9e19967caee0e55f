"""Measure a full warm `lwsc run` at several `-n`: wall time, CPU-seconds, identical verdicts.

Run: .venv/bin/python benchmarks/run_cpu.py [--workers 2,3,4,6,3+hog] [--rounds 3] [--profile P]
Each round is `lwsc run -n N --name cpu-bench` (up from cached binaries and snapshots, the suites,
reports, down). `N+hog` runs it beside a CPU hog that keeps every core busy (one busy-looping
process per core at nice 0, as another build on a shared CI runner would): the verdicts must not
change with the load; the hog's own CPU is measured and left out of the run's. CPU-seconds are
the machine's: user + nice + system + irq + softirq from /proc/stat over the run, so every process
counts (control plane, controllers, kwok, pytest
workers, report rendering) — run it on an idle machine, and the idle load before the first round
is printed and recorded. Where they went: every process is sampled once a second from
/proc/<pid>/stat and its CPU time charged to its program (kube-apiserver, etcd, lws, kueue, kwok,
python = pytest and the harness, ...), a control-plane program with the cluster it serves (the
benchmark's own "main" one or a test's "private" one, from the state directory in its arguments);
what a process used after its last sample, and processes that lived under a second, stay
"unattributed". The sampler's own CPU is measured and subtracted.
Every round's requirement verdicts must equal the first round's; the differences are listed,
each named either "a listed race" (passed in one round, the known deviation of a race or
conditional kind in the other: an upstream bug that shows in some runs only) or "differs" (any
other difference: a flake of the harness or of the checks, to be analysed).
Results: benchmarks/results/run-cpu-<date>.json and .md; each round's run directory (timeline,
verdicts) is kept under reports/run-cpu-<date>/. `--render RESULTS.json` rewrites both files from
the JSON and the kept run directories (after a change of the rendering).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lws_conformance import deviations
from lws_conformance.providers.components import state_root

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_ab  # noqa: E402  (a sibling script: its by-program table is shared)

ROOT = Path(__file__).resolve().parent.parent
NAME = "cpu-bench"


def busy_seconds() -> float:
    """CPU time spent by the whole machine since boot (every CPU), in seconds."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


STATE = re.compile(re.escape(str(state_root())) + r"/([^/\x00]+)/")  # a cluster's state directory in the arguments
_WHERE: dict[tuple[int, int], str] = {}  # (pid, start time) -> " (main)", " (private)" or ""


def _where(pid: str) -> str:
    """Which of the harness's clusters a process belongs to, from the state directory its
    arguments name: the benchmark's own cluster, a private cluster of a test, or neither."""
    try:
        m = STATE.search(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
    except OSError:
        return ""
    return "" if not m else " (main)" if m.group(1) == NAME else " (private)"


def _processes() -> dict[tuple[int, int], tuple[str, float]]:
    """(pid, start time) -> (program, CPU seconds so far) of every process now running; a
    control-plane program is named with the cluster it serves, e.g. "kube-apiserver (private)"."""
    tick, seen = os.sysconf("SC_CLK_TCK"), {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # exited meanwhile
            continue
        comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        key = (int(stat.parent.name), int(rest[19]))
        if key not in _WHERE:  # pytest and the harness stay "python", whichever cluster they name
            _WHERE[key] = "" if comm.startswith("python") else _where(stat.parent.name)
        seen[key] = (comm + _WHERE[key], (int(rest[11]) + int(rest[12])) / tick)
    return seen


class Sampler(threading.Thread):
    """CPU seconds per program over the round: each process's CPU time at its last sample minus
    at its first (or 0 if it started during the round)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop, self.before, self.last = threading.Event(), _processes(), {}  # type: ignore[var-annotated]
        self.own = 0.0

    def run(self) -> None:
        while not self.stop.wait(1.0):
            t0 = time.thread_time()
            self.last.update(_processes())
            self.own += time.thread_time() - t0

    def by_program(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for key, (comm, cpu) in self.last.items():
            used = cpu - self.before.get(key, (comm, 0.0))[1]
            totals[comm] = totals.get(comm, 0.0) + used
        return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1]) if v >= 0.5}


HOG = "import os\nos.nice(0)\nwhile True: pass"


def _cpu_of(pid: int) -> float:
    """CPU-seconds (user + system) a process used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_round(config: str, profile: str | None, reports: Path) -> dict[str, Any]:
    workers, hogged = int(config.removesuffix("+hog")), config.endswith("+hog")
    cmd = [sys.executable, "-m", "lws_conformance.cli", *(["--profile", profile] if profile else [])]
    cmd += ["--name", NAME, "run", "-n", str(workers), "--reports", str(reports)]
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(os.cpu_count() or 1)] if hogged else []
    sampler = Sampler()
    sampler.start()
    cpu0, wall0 = busy_seconds(), time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall, cpu = time.monotonic() - wall0, busy_seconds() - cpu0
        hog_cpu = sum(_cpu_of(h.pid) for h in hogs)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    sampler.stop.set()
    sampler.join()
    cpu -= sampler.own + hog_cpu
    programs = sampler.by_program()
    programs["unattributed"] = round(cpu - sum(programs.values()), 1)
    run = (reports / "latest").resolve()
    summary = json.loads((run / "summary.json").read_text())
    if hogged:
        programs["python"] = round(programs.get("python", 0.0) - hog_cpu, 1)  # the hog is a python process too
    return {"workers": config, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "exit": proc.returncode,
            "hog_cpu_s": round(hog_cpu, 1), "sampler_cpu_s": round(sampler.own, 1),
            "cpu_by_program_s": programs, "run": run.name,
            "reports": str(reports.relative_to(ROOT)), "tests": summary.get("totals", {}),
            **outcomes(summary)}  # fmt: skip


def outcomes(summary: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A run's requirement verdicts, and the deviation each known deviation matched."""
    reqs = summary["requirements"]
    return {"verdicts": {r["id"]: r["verdict"] for r in reqs},
            "deviations": {r["id"]: r["deviation"] for r in reqs if r.get("deviation")}}  # fmt: skip


RACY = {d.id for d in deviations.load() if d.kind in ("race", "conditional")}


def difference(first: dict[str, Any], rnd: dict[str, Any], req: str) -> dict[str, Any]:
    """How a round's verdict of `req` differs from the first round's: "a listed race" when one is
    passed and the other the known deviation of a race or a conditional one, else "differs"."""
    pair = [first["verdicts"].get(req), rnd["verdicts"].get(req)]
    seen = {first.get("deviations", {}).get(req), rnd.get("deviations", {}).get(req)} - {None}
    racy = sorted(pair, key=str) == ["known-deviation", "passed"] and bool(seen) and seen <= RACY
    return {"verdicts": pair, "deviation": ", ".join(sorted(seen)), "kind": "a listed race" if racy else "differs"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="2,3,4,6", help="comma-separated -n values; N+hog: beside a CPU hog")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--render", metavar="RESULTS.json", type=Path, help="rewrite a results file's JSON and Markdown")
    args = ap.parse_args()
    if args.render:
        render(args.render)
        return
    counts = [w.strip() for w in args.workers.split(",")]
    bad = [w for w in counts if not w.removesuffix("+hog").isdigit()]
    if bad:
        raise SystemExit(f"run_cpu: --workers takes N or N+hog, comma-separated (e.g. 2,3,6,3+hog), not {bad[0]!r}")
    load = os.getloadavg()
    print(f"load before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    kept = ROOT / "reports" / f"run-cpu-{time.strftime('%Y%m%d-%H%M')}"  # every round's run directory
    stem = ROOT / "benchmarks" / "results" / f"run-cpu-{time.strftime('%Y-%m-%d-%H%M')}"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "commit": commit.stdout.strip(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "load_before": [round(x, 2) for x in load],
        "profile": args.profile or "default",
    }
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for n in counts:
            out = one_round(n, args.profile, kept / f"n{n}-{r + 1}")
            rounds.append(out)
            top = ", ".join(f"{k} {v:.0f}" for k, v in list(out["cpu_by_program_s"].items())[:5])
            print(f"-n {n} round {r + 1}: wall {out['wall_s']} s, cpu {out['cpu_s']} s ({top}), "
                  f"exit {out['exit']}", flush=True)  # fmt: skip
            write(stem, meta, rounds, kept)  # after every round: an interrupted benchmark keeps what it measured
    print(stem.with_suffix(".md"))


def render(path: Path) -> None:
    """Rewrite a results file from its JSON and its rounds' kept run directories."""
    result = json.loads(path.read_text())
    meta = {k: v for k, v in result.items() if k not in ("rounds", "by_workers")}
    rounds = [
        {k: v for k, v in rnd.items() if k != "verdict_differences"}
        | outcomes(json.loads((_run_dir(rnd) / "summary.json").read_text()))
        for rnd in result["rounds"]
    ]
    write(path.with_suffix(""), meta, rounds, _run_dir(rounds[0]).parent.parent)
    print(path.with_suffix(".md"))


def _run_dir(rnd: dict[str, Any]) -> Path:
    """A round's run directory: under its reports directory, or found by its run id (older results)."""
    if "reports" in rnd:
        return ROOT / rnd["reports"] / rnd["run"]
    found = next((ROOT / "reports").glob(f"run-cpu-*/n*/{rnd['run']}"), None)
    if found is None:
        raise SystemExit(f"run {rnd['run']}: its run directory is no longer under reports/run-cpu-*/")
    return found


def write(stem: Path, meta: dict[str, Any], rounds: list[dict[str, Any]], kept: Path) -> None:
    """results JSON and Markdown of the rounds so far; verdicts compared with the first round's."""
    first = rounds[0]
    done = [{k: v for k, v in rnd.items() if k not in ("verdicts", "deviations")} | {
        "verdict_differences": {k: difference(first, rnd, k)
                                for k in sorted(set(first["verdicts"]) | set(rnd["verdicts"]))
                                if first["verdicts"].get(k) != rnd["verdicts"].get(k)}} for rnd in rounds]  # fmt: skip
    counts = list(dict.fromkeys(r["workers"] for r in rounds))
    by_n = {
        n: {
            "wall_median_s": statistics.median(float(r["wall_s"]) for r in done if r["workers"] == n),
            "cpu_median_s": statistics.median(float(r["cpu_s"]) for r in done if r["workers"] == n),
        }
        for n in counts
    }
    result = {**meta, "rounds": done, "by_workers": by_n}
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        f"# Full warm `lwsc{' --profile ' + result['profile'] if result.get('profile') else ''} run` by -n "
        f"({result['date']}, commit {result['commit']}, {result['machine']}, "
        f"load before {result['load_before'][0]})",
        "",
        "| -n (+hog: beside a CPU hog) | wall (median, range) | CPU-seconds (median, range) | rounds | exits | "
        "verdicts differing from the first round: a listed race | other differences |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in counts:
        mine = [r for r in done if r["workers"] == n]
        walls, cpus = [float(r["wall_s"]) for r in mine], [float(r["cpu_s"]) for r in mine]
        diffs = Counter((k, d["kind"]) for r in mine for k, d in r["verdict_differences"].items())
        races = ", ".join(f"{k} ({c} of {len(mine)})" for (k, kind), c in sorted(diffs.items()) if kind != "differs")
        other = ", ".join(f"{k} ({c} of {len(mine)})" for (k, kind), c in sorted(diffs.items()) if kind == "differs")
        lines.append(
            f"| {n} | {by_n[n]['wall_median_s']:.0f} s ({min(walls):.0f}-{max(walls):.0f}) | "
            f"{by_n[n]['cpu_median_s']:.0f} s ({min(cpus):.0f}-{max(cpus):.0f}) | {len(mine)} | "
            f"{', '.join(str(r['exit']) for r in mine)} | {races or 'none'} | {other or 'none'} |"
        )
    lines += ["", "CPU-seconds by program (median over the rounds; sampled once a second from /proc):", ""]
    groups = [(str(n), [r for r in done if r["workers"] == n]) for n in counts]
    lines += cpu_ab.by_program_table("-n", groups, top=10, digits=0)
    lines += ["", f"Run directories: `{kept.relative_to(ROOT)}/`."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
