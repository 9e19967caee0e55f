"""What the benchmarks that build a changed LWS or Kueue and run the suites against it share.

benchmarks/mutation/run (generated mutants) and benchmarks/history/run (upstream bugs put back)
both: load a runner script of benchmarks/ as a module (benchmarks/mutants/run's lwsc invocation,
child process handling and module copies; benchmarks/coverage/run's requirement families), find
the harness's cache, compile a changed package the way `lwsc build` does, read the catalogue's
levels, pick the baseline a run is compared with (the newest run of the pinned versions on record,
or the one named), and record which harness code a child `lwsc` ran.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
RED = frozenset({"failed", "warning", "error"})  # a promise did not hold (or the harness could not tell)


def load_script(path: Path, name: str) -> Any:
    """A runner script of benchmarks/ (no .py suffix) as a module: its machinery is shared."""
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def cache_root() -> Path:
    return Path(os.environ.get("LWSC_CACHE_DIR") or Path.home() / ".cache" / "lws-conformance")


def compiles(tree: Path, package: str) -> tuple[bool, str]:
    """`go build` of one package (`./pkg/...` patterns too) in a changed module tree: (ok, first error)."""
    env = {**os.environ, "GOFLAGS": "-buildvcs=false -mod=mod", "CGO_ENABLED": "0", "GOWORK": "off"}
    # -trimpath and CGO_ENABLED=0 as lwsc builds: the dependencies come from the same build cache.
    proc = subprocess.run(
        ["go", "build", "-trimpath", "-o", os.devnull, "./" + package.removeprefix("./")],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("#")]
    return proc.returncode == 0, (lines[0] if lines else "")[:240]


def levels() -> dict[str, str]:
    """Requirement id -> MUST / SHOULD, from the catalogue."""
    from lws_conformance import catalogue

    return {rid: req.level for rid, req in catalogue.default().items()}


def newest_coverage() -> Path:
    found = sorted((PROJECT / "benchmarks" / "results").glob("coverage-*.json"))
    if not found:
        raise SystemExit("no benchmarks/results/coverage-*.json: run benchmarks/coverage/run first (or --coverage)")
    return found[-1]


def coverage_verdicts(cov: dict[str, Any]) -> dict[str, str]:
    """Each requirement's verdict in the coverage runs (red in any family run: red)."""
    out: dict[str, str] = {}
    for run in (cov.get("families") or {}).values():
        for rid, verdict in (run.get("verdicts") or {}).items():
            if out.get(rid) not in RED:
                out[rid] = verdict
    return out


# -- the baseline -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Baseline:
    """The verdicts of a run of the unchanged pinned versions, which a changed controller's run is
    compared with: a requirement red there says nothing of the change."""

    source: str  # the file, and what in it
    started: str  # when that run started (ISO 8601)
    versions: dict[str, str]
    verdicts: dict[str, str]


def baseline_in(path: Path) -> Baseline | None:
    """The baseline a file holds, None when it holds none: a coverage results JSON (benchmarks/
    coverage/run: the family runs' verdicts), a run's summary.json, or a results file that keeps a
    full pinned run (benchmarks/history/results.json, `pinned_run`)."""
    try:
        doc = load_json(path)
    except (OSError, ValueError):
        return None
    if "families" in doc:
        return Baseline(str(path), str(doc.get("started", "")), dict(doc.get("versions") or {}), coverage_verdicts(doc))
    if isinstance(doc.get("pinned_run"), dict) and doc["pinned_run"].get("verdicts"):
        run = doc["pinned_run"]
        where = f"{path} (pinned run {run.get('run_id', '')})"
        return Baseline(where, str(run.get("started", "")), dict(run.get("versions") or {}), dict(run["verdicts"]))
    if isinstance(doc.get("requirements"), list) and "versions" in doc:
        verdicts = {str(r["id"]): str(r.get("verdict", "")) for r in doc["requirements"]}
        return Baseline(str(path), str(doc.get("started", "")), dict(doc.get("versions") or {}), verdicts)
    return None


def baseline_files(project: Path = PROJECT) -> list[Path]:
    """Where runs of the pinned versions are on record: the coverage runs, the full runs kept as
    benchmarks/results/<name>/summary.json, and the full pinned run of the history benchmark."""
    results = project / "benchmarks" / "results"
    return [
        *sorted(results.glob("coverage-*.json")),
        *sorted(results.glob("*/summary.json")),
        project / "benchmarks" / "history" / "results.json",
    ]


def _when(started: str) -> datetime:
    try:
        return datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return datetime.min.replace(tzinfo=datetime.now().astimezone().tzinfo)


def baseline_of(versions: dict[str, str], named: Path | None = None, project: Path = PROJECT) -> Baseline:
    """The baseline of a run on `versions` (component -> version): the one `named` (a file
    `baseline_in` reads), else the newest run on record (`baseline_files`, by when it started)
    whose versions are these. A named baseline of other versions, or none on record, is an error
    naming the fix."""
    if named is not None:
        found = baseline_in(named)
        if found is None:
            raise SystemExit(f"{named}: holds no baseline (a coverage results JSON, a summary.json or a pinned run)")
        other = {c: v for c, v in found.versions.items() if c in versions and v != versions[c]}
        if other:
            raise SystemExit(f"{named}: a run of {other}, not of {versions}: name a run of these versions")
        return found
    matching = [
        b
        for b in (baseline_in(p) for p in baseline_files(project) if p.is_file())
        if b is not None and all(b.versions.get(c) == v for c, v in versions.items())
    ]
    if not matching:
        raise SystemExit(
            f"no run of {versions} on record (benchmarks/results/coverage-*.json, benchmarks/history/results.json "
            "pinned_run): run benchmarks/coverage/run, or name a summary.json with --baseline"
        )
    return max(matching, key=lambda b: _when(b.started))


def load_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# -- which harness a run used -------------------------------------------------------------------
def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def _pathspec(paths: Iterable[str]) -> list[str]:
    return ["--", *paths]


def checkout_state(root: Path, paths: Iterable[str] = (".",)) -> tuple[str, bool]:
    """(HEAD's full sha, whether the checkout differs from it under `paths`, relative to `root`):
    tracked changes and untracked files count. ("unknown", True) outside git: nothing says which
    code ran."""
    head = _git(root, "rev-parse", "HEAD")
    if head.returncode != 0:
        return "unknown", True
    status = _git(root, "status", "--porcelain", *_pathspec(paths))
    return head.stdout.strip(), bool(status.returncode or status.stdout.strip())


def code_between(root: Path, a: str, b: str, paths: Iterable[str] = (".",)) -> bool:
    """Whether commits a and b differ under `paths` (HEAD moved while a run went on: by a commit of
    results only, or of code the run reads)."""
    if a == b:
        return False
    return _git(root, "diff", "--quiet", a, b, *_pathspec(paths)).returncode != 0


def on_path(root: Path, first: str, commit: str, last: str) -> bool:
    """Whether `commit` is `first`, `last` or between them in this checkout's history (the commit
    a run reports having used, against the HEADs when it started and ended)."""
    return all(
        _git(root, "merge-base", "--is-ancestor", x, y).returncode == 0 for x, y in ((first, commit), (commit, last))
    )


def harness_env(root: Path) -> dict[str, str]:
    """The environment of a child `lwsc`: `root`'s lws_conformance comes first on its path (the
    project's .venv is an editable install of one checkout; from a git worktree, the worktree's
    code must run, not the checkout the venv was installed from)."""
    path = [str(root), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


# What decides a verdict: the code a child lwsc reads (the package, the suites and their data,
# pytest's settings), and the runners' own modules, read once when a runner starts. A change
# elsewhere (manifests, results, docs) does not make a run's checkout dirty.
CHILD_PATHS = ("lws_conformance", "suites", "fixtures", "chaos", "docs/upstream", "pyproject.toml")
RUNNER_PATHS = (
    "benchmarks/benchlib.py",
    "benchmarks/project_venv.py",
    "benchmarks/coverage/run",
    "benchmarks/mutants/run",
    "benchmarks/mutants/schemata",
    "benchmarks/mutation/mutlib.py",
    "benchmarks/mutation/run",
    "benchmarks/history/run",
    "benchmarks/history/histlib.py",
)


def reported_commit(summary: Path | None) -> str | None:
    """The harness commit a run's summary.json reports (lwsc's own provenance), None without one."""
    if summary is None:
        return None
    try:
        harness = json.loads(summary.read_text()).get("harness") or {}
    except (OSError, ValueError):
        return None
    c = str(harness.get("commit") or "")
    return c if c and c != "unknown" else None


def harness_used(
    start: tuple[str, bool],
    end: tuple[str, bool],
    code_moved: bool,
    reported: str | None,
    reported_on_path: bool,
) -> tuple[str, bool, str]:
    """(commit, dirty, problem) of the harness one run used, from the checkout's (HEAD, dirty) when
    it started and ended, whether HEAD moved to different code meanwhile (a commit of results only
    is no change), and the commit the run's summary.json reports (None without one) with whether
    that commit is the start's, the end's or one between. `problem` (else "") says the run used
    another checkout's code: its verdicts are not this harness's."""
    dirty = start[1] or end[1] or code_moved
    problem = ""
    if reported and not reported_on_path:
        problem = (
            f"the run reports harness commit {reported.removesuffix('-dirty')[:12]}, not this checkout's "
            f"{start[0][:12]}" + (f"..{end[0][:12]}" if end[0] != start[0] else "")
        )
    return start[0], dirty, problem


class Provenance:
    """Which harness code the child runs of one runner used. Made when the runner starts (what it
    loaded: HEAD and whether the code and the runners differed from it); `begin()` before each child
    run, `end()` after it, with its summary.json."""

    def __init__(self, root: Path = PROJECT) -> None:
        self.root = root
        self.invoked = checkout_state(root, (*CHILD_PATHS, *RUNNER_PATHS))

    def begin(self) -> tuple[str, bool]:
        """(HEAD, dirty) as a child run starts: dirty when the code differs from HEAD, or the runner
        loaded other code than HEAD's (changed files, or HEAD moved since to other runner code)."""
        start = checkout_state(self.root, CHILD_PATHS)
        moved = code_between(self.root, self.invoked[0], start[0], RUNNER_PATHS)
        return start[0], start[1] or self.invoked[1] or moved

    def end(self, start: tuple[str, bool], summary: Path | None) -> tuple[str, bool, str]:
        """(commit, dirty, problem) of the child run begun at `start` (`harness_used`)."""
        end = checkout_state(self.root, CHILD_PATHS)
        reported = reported_commit(summary)
        on = bool(reported) and on_path(self.root, start[0], str(reported).removesuffix("-dirty"), end[0])
        return harness_used(start, end, code_between(self.root, start[0], end[0], CHILD_PATHS), reported, on)


def harness_summary(stamps: Iterable[tuple[str, bool]]) -> str:
    """The harness commits recorded results used, e.g. `1a2b3c4d5e6f (12 runs), 7a8b9c0d1e2f dirty
    (1 run)`, most used first."""
    seen: dict[str, int] = {}
    for commit, dirty in stamps:
        key = (commit[:12] or "unknown") + (" dirty" if dirty else "")
        seen[key] = seen.get(key, 0) + 1
    ranked = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} ({n} run{'s' if n > 1 else ''})" for k, n in ranked) or "none"
