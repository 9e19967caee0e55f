"""A/B the CPU cost of an `lwsc run` (focused, or the full run) between harness trees and settings, on a shared machine.

Run: .venv/bin/python benchmarks/cpu_ab.py --variant base=/path/to/old/tree --variant new=. \
         [--variant gc100=.:GOGC=100,GOMEMLIMIT=off] --focus "LWS-NAME or ROLL-SURGE" -n 2 --rounds 3
Each variant is a harness tree (its root: its `lws_conformance` package is imported from there)
and environment settings for `lwsc`. Every round runs every variant once, in an order rotated from
round to round (A B C, B C A, ...), each as one whole `lwsc --name NAME run [--focus F] -n N`
(bring-up from cached binaries and snapshots, the tests, reports, down) under `nice -n 10`. Before
the first round every variant brings the cluster up and down once, unmeasured (a new snapshot
key provisions then).

What is measured is the run's own CPU, not the machine's (other people's work runs beside it):
- in all: user + system seconds of the `lwsc` process and every descendant it reaped (wait4's
  rusage: the control plane, private clusters, pytest workers, kubectl);
- by program: every process of the run's process tree (found by parent pid, whatever its session)
  is sampled twice a second from /proc/<pid>/stat and its CPU charged to its program, a control-plane
  program with the cluster it serves ("main": the run's own, "private": a test's); what a process
  used after its last sample stays in the total only.
The machine's load average is recorded before and after each run: a noisy neighbour shows there.
Verdicts: every run's requirement verdicts are compared with the first variant's in the same round.
Results: benchmarks/results/cpu-ab-<date>.json and .md; run directories under reports/cpu-ab-<date>/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MAIN = "import sys; from lws_conformance.cli import main; sys.exit(main())"


@dataclass(frozen=True)
class Variant:
    label: str
    tree: Path
    env: dict[str, str]

    @classmethod
    def parse(cls, text: str) -> Variant:
        """LABEL=TREE[:KEY=VALUE,KEY=VALUE]"""
        label, _, rest = text.partition("=")
        tree, _, settings = rest.partition(":")
        env = dict(kv.split("=", 1) for kv in settings.split(",") if kv)
        return cls(label, Path(tree).resolve(), env)

    def commit(self) -> str:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=self.tree)
        stamp = self.tree / ".commit"  # a tree exported with `git archive` names its commit here
        return out.stdout.strip() or (stamp.read_text().strip() if stamp.is_file() else "unknown")


def _stat_all() -> dict[int, tuple[int, int, str, float]]:
    """pid -> (ppid, start time, comm, CPU seconds so far) of every process now running."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        out[int(stat.parent.name)] = (int(rest[1]), int(rest[19]), comm, (int(rest[11]) + int(rest[12])) / tick)
    return out


class TreeSampler(threading.Thread):
    """CPU seconds per program of one process tree (root `pid` and its descendants)."""

    def __init__(self, root: int, cluster: str) -> None:
        super().__init__(daemon=True)
        self.root, self.cluster, self.stop = root, cluster, threading.Event()
        self.mine: dict[tuple[int, int], tuple[str, float]] = {}  # (pid, start) -> (program, CPU at last sample)
        self.first: dict[tuple[int, int], float] = {}
        self.rss_peak: dict[str, float] = {}  # program -> its largest resident set seen (MiB, over its processes)
        self.rss_peak_main = 0.0  # the largest sum over the main cluster's processes seen at one sample

    def _program(self, pid: int, comm: str) -> str:
        if comm.startswith("python"):
            return "python"
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return comm
        if f"/{self.cluster}/" in cmd:
            return f"{comm} (main)"
        return f"{comm} (private)" if "/private-" in cmd else comm

    def sample(self) -> None:
        procs = _stat_all()
        ours = {self.root} | {pid for (pid, start) in self.mine if pid in procs and procs[pid][1] == start}
        grew = True
        while grew:
            new = {pid for pid, (ppid, *_rest) in procs.items() if ppid in ours and pid not in ours}
            ours |= new
            grew = bool(new)
        rss: dict[str, float] = {}
        for pid in ours:
            if pid not in procs:
                continue
            _ppid, start, comm, cpu = procs[pid]
            key = (pid, start)
            if key not in self.mine:
                self.first[key] = 0.0 if pid != self.root else cpu
                self.mine[key] = (self._program(pid, comm), cpu)
            else:
                self.mine[key] = (self.mine[key][0], cpu)
            try:
                pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
            prog = self.mine[key][0]
            rss[prog] = rss.get(prog, 0.0) + pages * os.sysconf("SC_PAGE_SIZE") / 2**20
        for prog, mib in rss.items():
            self.rss_peak[prog] = max(self.rss_peak.get(prog, 0.0), mib)
        self.rss_peak_main = max(self.rss_peak_main, sum(v for k, v in rss.items() if k.endswith("(main)")))

    def run(self) -> None:
        while not self.stop.wait(0.5):
            self.sample()

    def by_program(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for key, (prog, cpu) in self.mine.items():
            totals[prog] = totals.get(prog, 0.0) + cpu - self.first.get(key, 0.0)
        return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1]) if v >= 0.1}


def one_run(v: Variant, name: str, focus: str | None, workers: int, reports: Path, extra: list[str]) -> dict[str, Any]:
    selection = ["--focus", focus] if focus else []  # no focus: the full run
    cmd = ["nice", "-n", "10", sys.executable, "-c", MAIN, "--name", name, "run", *selection,
           "-n", str(workers), "--reports", str(reports), *extra]  # fmt: skip
    load0 = os.getloadavg()
    wall0 = time.monotonic()
    reports.parent.mkdir(parents=True, exist_ok=True)
    with open(reports.with_suffix(".log"), "w") as log:
        proc = subprocess.Popen(cmd, cwd=v.tree, env={**os.environ, **v.env}, stdout=log, stderr=subprocess.STDOUT)
    sampler = TreeSampler(proc.pid, name)
    sampler.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - wall0
    sampler.stop.set()
    sampler.join()
    run = (reports / "latest").resolve()
    summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").is_file() else {}
    return {
        "variant": v.label,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "exit": os.waitstatus_to_exitcode(status),
        "load_before": round(load0[0], 2),
        "load_after": round(os.getloadavg()[0], 2),
        "cpu_by_program_s": sampler.by_program(),
        "rss_peak_main_mib": round(sampler.rss_peak_main),
        "rss_peak_by_program_mib": {k: round(v) for k, v in sorted(sampler.rss_peak.items()) if v >= 1},
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else str(run),
        "tests": summary.get("totals", {}),
        "verdicts": {r["id"]: r["verdict"] for r in summary.get("requirements", [])},
    }


def _focus_arg(focus: str | None) -> str:
    return f' --focus "{focus}"' if focus else ""  # none: the full run


def by_program_table(first: str, groups: list[tuple[str, list[dict[str, Any]]]], top: int, digits: int) -> list[str]:
    """A Markdown table of CPU-seconds by program: a row per group of runs (`first` heads its
    column), the median of each program over the group's runs; the `top` programs of all runs
    together, largest first (also benchmarks/run_cpu.py)."""
    runs = [r for _, rs in groups for r in rs]
    programs = sorted({k for r in runs for k in r["cpu_by_program_s"]},
                      key=lambda k: -sum(r["cpu_by_program_s"].get(k, 0.0) for r in runs))[:top]  # fmt: skip
    lines = [f"| {first} | " + " | ".join(programs) + " |", "|---|" + "---|" * len(programs)]
    for label, mine in groups:
        cells = [statistics.median(r["cpu_by_program_s"].get(k, 0.0) for r in mine) for k in programs]
        lines.append(f"| {label} | " + " | ".join(f"{c:.{digits}f}" for c in cells) + " |")
    return lines


def write(stem: Path, meta: dict[str, Any], runs: list[dict[str, Any]], labels: list[str]) -> None:
    stem.with_suffix(".json").write_text(json.dumps({**meta, "runs": runs}, indent=1) + "\n")
    lines = [
        f"# CPU A/B of `lwsc run{_focus_arg(meta['focus'])} -n {meta['workers']}` ({meta['date']}, {meta['machine']})",
        "",
        "Variants: " + "; ".join(f"**{k}** = {d}" for k, d in meta["variants"].items()),
        "",
        *([f"Both variants' runs with `{' '.join(meta['extra'])}`.", ""] if meta.get("extra") else []),
        "| variant | runs | CPU-seconds, median (range) | vs first variant (median ratio of the rounds) "
        "| wall, median | main cluster's peak RSS, median "
        "| load average during (range) | exits | verdicts differing from the first variant's in the round |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rounds: dict[int, dict[str, dict[str, Any]]] = {}
    for r in runs:
        rounds.setdefault(r["round"], {})[r["variant"]] = r
    for label in labels:
        mine = [r for r in runs if r["variant"] == label]
        if not mine:
            continue
        cpus = [r["cpu_s"] for r in mine]
        ratios = [
            rd[label]["cpu_s"] / rd[labels[0]]["cpu_s"] for rd in rounds.values() if label in rd and labels[0] in rd
        ]
        diffs = sorted({k for r in mine for k in r.get("verdict_differences", {})})
        loads = [x for r in mine for x in (r["load_before"], r["load_after"])]
        lines.append(
            f"| {label} | {len(mine)} | {statistics.median(cpus):.0f} s ({min(cpus):.0f}-{max(cpus):.0f}) | "
            f"{statistics.median(ratios):.2f} | {statistics.median(r['wall_s'] for r in mine):.0f} s | "
            f"{statistics.median(r.get('rss_peak_main_mib', 0) for r in mine):.0f} MiB | "
            f"{min(loads):.1f}-{max(loads):.1f} | {', '.join(str(r['exit']) for r in mine)} | "
            f"{', '.join(diffs) or 'none'} |"
        )
    lines += ["", "CPU-seconds by program (median over the runs; sampled twice a second from /proc):", ""]
    groups = [(label, [r for r in runs if r["variant"] == label]) for label in labels]
    lines += by_program_table("variant", [(label, mine) for label, mine in groups if mine], top=9, digits=1)
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--variant", action="append", default=[], help="LABEL=TREE[:KEY=VALUE,...]; the first is the baseline"
    )
    ap.add_argument("--render", metavar="RESULTS.json", type=Path, help="rewrite a results file's Markdown")
    ap.add_argument("--focus", help="the run's selection (default: the full run)")
    ap.add_argument("-n", "--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--name", default="perf-ab", help="the local cluster's name")
    ap.add_argument("--out", default=None, help="results stem (default benchmarks/results/cpu-ab-<date>)")
    ap.add_argument("extra", nargs="*", help="more `lwsc run` arguments (after --)")
    args = ap.parse_args()
    if args.render:
        doc = json.loads(args.render.read_text())
        write(args.render.with_suffix(""), doc, doc.pop("runs"), list(doc["variants"]))
        return
    if not args.variant:
        ap.error("--variant (at least one) is required")
    variants = [Variant.parse(t) for t in args.variant]
    stamp = time.strftime("%Y-%m-%d-%H%M")
    stem = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"cpu-ab-{stamp}"
    kept = ROOT / "reports" / f"cpu-ab-{stamp}"
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.system()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB (shared)",
        "focus": args.focus,
        "extra": args.extra,
        "workers": args.workers,
        "variants": {v.label: f"{v.commit()}" + (f" with {v.env}" if v.env else "") for v in variants},
    }
    for v in variants:  # not measured: the first bring-up of a snapshot key provisions it
        for sub in ("up", "down"):
            subprocess.run([sys.executable, "-c", MAIN, "--name", args.name, sub], cwd=v.tree,
                           env={**os.environ, **v.env}, capture_output=True, check=True)  # fmt: skip
    runs: list[dict[str, Any]] = []
    for rnd in range(args.rounds):
        order = variants[rnd % len(variants) :] + variants[: rnd % len(variants)]
        got: dict[str, dict[str, Any]] = {}
        for v in order:
            out = one_run(v, args.name, args.focus, args.workers, kept / f"{v.label}-{rnd + 1}", args.extra)
            got[v.label] = out
            runs.append({"round": rnd + 1, **out})
            print(f"round {rnd + 1} {v.label}: cpu {out['cpu_s']} s, wall {out['wall_s']} s, exit {out['exit']}, "
                  f"load {out['load_before']}->{out['load_after']}", flush=True)  # fmt: skip
            write(stem, meta, runs, [v.label for v in variants])  # a stopped benchmark keeps its finished runs
        base = got[variants[0].label]["verdicts"]
        for r in runs[-len(order) :]:
            r["verdict_differences"] = {k: [base.get(k), r["verdicts"].get(k)]
                                        for k in sorted(set(base) | set(r["verdicts"]))
                                        if base.get(k) != r["verdicts"].get(k)}  # fmt: skip
        write(stem, meta, runs, [v.label for v in variants])
    print(stem.with_suffix(".md"))


if __name__ == "__main__":
    main()
