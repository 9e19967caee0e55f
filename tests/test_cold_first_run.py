"""benchmarks/cold_first_run reads the verdict of the run it measured from the run's summary.json,
and the figures name what went wrong: a run with `error` requirements is never shown as clean."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _script(path: Path, name: str) -> ModuleType:
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _clone_with_summary(tmp_path: Path, verdicts: dict[str, str], code: int) -> Path:
    run = tmp_path / "clone" / "reports" / "20261206-120000"
    run.mkdir(parents=True)
    (run.parent / "latest").symlink_to(run.name)
    summary = {
        "conclusion": {"code": code, "line": "inconclusive" if code == 3 else "listed upstream bugs only"},
        "totals": {v: list(verdicts.values()).count(v) for v in set(verdicts.values())},
        "requirements": [{"id": rid, "verdict": v} for rid, v in verdicts.items()],
        "collected": 3,
    }
    (run / "summary.json").write_text(json.dumps(summary))
    return tmp_path / "clone"


def test_the_measured_runs_errors_and_exit_code_are_recorded_and_shown(tmp_path: Path) -> None:
    bench = _script(ROOT / "benchmarks" / "cold_first_run", "cold_first_run")
    figures = _script(ROOT / "scripts" / "render-figures", "render_figures")
    clone = _clone_with_summary(tmp_path, {"A-1": "passed", "B-2": "error", "C-3": "known-deviation"}, 3)
    v = bench.verdicts(clone)
    assert v["exit"] == 3 and v["errors"] == ["B-2"] and v["run_dir"] == "20261206-120000"
    record = {
        "bootstrap": {"exit": 0, "wall_s": 60.0},
        "run": {"exit": 3, "wall_s": 2000.0},
        "total_wall_s": 2060.0,
        "verdicts": v,
    }
    assert figures.first_run_figure(record) == "34m20s, exit 3, 1 error (B-2)"
    clean = bench.verdicts(_clone_with_summary(tmp_path / "ok", {"A-1": "passed"}, 4))
    assert figures.first_run_figure({**record, "run": {"exit": 4}, "verdicts": clean}) == "34m20s, exit 4, no error"


def test_no_run_directory_is_no_verdict(tmp_path: Path) -> None:
    bench = _script(ROOT / "benchmarks" / "cold_first_run", "cold_first_run")
    assert bench.verdicts(tmp_path) == {"run_dir": None}
