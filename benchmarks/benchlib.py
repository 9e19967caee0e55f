"""What the benchmarks that build a changed LWS or Kueue and run the suites against it share.

benchmarks/mutation/run (generated mutants) and benchmarks/history/run (upstream bugs put back)
both: load a runner script of benchmarks/ as a module (benchmarks/mutants/run's lwsc invocation,
child process handling and module copies; benchmarks/coverage/run's requirement families), find
the harness's cache, compile a changed package the way `lwsc build` does, read the catalogue's
levels and take the verdicts of the coverage runs as the baseline a run is compared with.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterable
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


def baseline_of(cov: dict[str, Any]) -> dict[str, str]:
    """Each requirement's verdict in the coverage runs (red in any family run: red)."""
    out: dict[str, str] = {}
    for run in (cov.get("families") or {}).values():
        for rid, verdict in (run.get("verdicts") or {}).items():
            if out.get(rid) not in RED:
                out[rid] = verdict
    return out


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
