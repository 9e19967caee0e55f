"""What the benchmarks that run a changed controller record of themselves (benchmarks/benchlib.py,
benchmarks/mutants/run): a child lwsc runs this checkout's harness, each run records the commit of
the code that ran and whether the code deciding verdicts was dirty, a run that reports another
checkout's commit gives no verdicts; and the baseline a run is compared with is the newest run of
the pinned versions on record, or the one named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parent.parent


benchlib = benchmark_module("benchlib.py")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _repo(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "repo"
    (repo / "suites").mkdir(parents=True)
    (repo / "benchmarks").mkdir()
    _git(tmp, "init", "-q", str(repo))
    (repo / "suites" / "code.py").write_text("x = 1\n")
    (repo / "benchmarks" / "benchlib.py").write_text("# runner\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    return repo, _git(repo, "rev-parse", "HEAD")


def _child(reports: Path, commit: str, seen: Path) -> list[str]:
    """A stand-in for `lwsc run`: notes which lws_conformance it imports and writes a summary.json
    reporting `commit` as its harness."""
    code = (
        "import json, pathlib, lws_conformance as m\n"
        f"pathlib.Path({str(seen)!r}).write_text(m.__file__)\n"
        f"d = pathlib.Path({str(reports)!r}) / 'run1'; d.mkdir(parents=True, exist_ok=True)\n"
        f"(d / 'summary.json').write_text(json.dumps({{'harness': {{'commit': {commit!r}}}}}))\n"
    )
    return [sys.executable, "-c", code]


def test_a_mutant_run_records_the_commit_that_ran_and_runs_this_checkouts_harness(tmp_path: Path) -> None:
    mutants_run = benchlib.load_script(ROOT / "benchmarks" / "mutants" / "run", "lwsc_mutants_run")
    repo, head = _repo(tmp_path)
    seen = tmp_path / "imported"
    prov = benchlib.Provenance(repo)
    summary, rc, note, stamp = mutants_run.run_recorded(
        prov, _child(tmp_path / "r1", head, seen), tmp_path / "r1.log", 60, tmp_path / "r1"
    )
    assert rc == 0 and summary == tmp_path / "r1" / "run1" / "summary.json" and note == ""
    assert stamp == {"commit": head, "dirty": False}
    # the child imports this checkout's lws_conformance, not the venv's editable install of another
    assert seen.read_text() == str(ROOT / "lws_conformance" / "__init__.py")

    # code deciding verdicts differs from HEAD while the run goes on: recorded dirty
    (repo / "suites" / "code.py").write_text("x = 2\n")
    _, _, _, stamp = mutants_run.run_recorded(
        prov, _child(tmp_path / "r2", head + "-dirty", seen), tmp_path / "r2.log", 60, tmp_path / "r2"
    )
    assert stamp == {"commit": head, "dirty": True}
    _git(repo, "checkout", "-q", "--", "suites")

    # the runner itself loaded code HEAD no longer has (a commit of runner code since it started)
    (repo / "benchmarks" / "benchlib.py").write_text("# runner, changed\n")
    _git(repo, "commit", "-qam", "runner")
    second = _git(repo, "rev-parse", "HEAD")
    _, _, _, stamp = mutants_run.run_recorded(
        prov, _child(tmp_path / "r3", second, seen), tmp_path / "r3.log", 60, tmp_path / "r3"
    )
    assert stamp == {"commit": second, "dirty": True}
    assert not benchlib.Provenance(repo).begin()[1]  # a runner started now loaded HEAD's code

    # the run reports another checkout's commit: its verdicts are not this harness's
    summary, _, note, _ = mutants_run.run_recorded(
        prov, _child(tmp_path / "r4", "f468e3f222", seen), tmp_path / "r4.log", 60, tmp_path / "r4"
    )
    assert summary is None and note == f"the run reports harness commit f468e3f222, not this checkout's {second[:12]}"


def test_harness_used_is_the_checkouts_head_and_dirty_when_it_differed_or_moved_code() -> None:
    a, b = "a" * 40, "b" * 40
    assert benchlib.harness_used((a, False), (a, False), False, a, True) == (a, False, "")
    assert benchlib.harness_used((a, False), (a, True), False, a + "-dirty", True) == (a, True, "")
    # HEAD moved during the run: by a commit of results only (clean), or of code the run may have read
    assert benchlib.harness_used((a, False), (b, False), False, b, True) == (a, False, "")
    assert benchlib.harness_used((a, False), (b, False), True, b, True)[1] is True
    # no summary.json: nothing to cross-check
    assert benchlib.harness_used((a, True), (a, False), False, None, False) == (a, True, "")
    commit, _, problem = benchlib.harness_used((a, False), (a, False), False, "f468e3f222", False)
    assert commit == a and problem == f"the run reports harness commit f468e3f222, not this checkout's {a[:12]}"
    assert benchlib.harness_summary([(a, False), (a, False), (b, True)]) == f"{a[:12]} (2 runs), {b[:12]} dirty (1 run)"


PINNED = {"lws": "v0.9.0", "kueue": "v0.17.0"}


def _records(project: Path) -> tuple[Path, Path]:
    results = project / "benchmarks" / "results"
    results.mkdir(parents=True)
    (project / "benchmarks" / "history").mkdir()
    coverage = results / "coverage-2026-12-02.json"
    coverage.write_text(
        json.dumps(
            {
                "started": "2026-12-02T01:40:42+0000",
                "versions": PINNED,
                "families": {
                    "a": {"verdicts": {"X-001": "passed", "ROLL-ATOM-001": "passed"}},
                    "b": {"verdicts": {"X-001": "failed"}},
                },
            }
        )
    )
    (results / "coverage-2026-11-30.json").write_text(
        json.dumps({"started": "2026-11-30T01:00:00+0000", "versions": {**PINNED, "lws": "v0.8.0"}, "families": {}})
    )
    history = project / "benchmarks" / "history" / "results.json"
    history.write_text(
        json.dumps(
            {
                "pinned_run": {
                    "run_id": "12060932108385",
                    "started": "2026-12-06T09:32:19+0000",
                    "versions": PINNED,
                    "verdicts": {"X-001": "passed", "ROLL-ATOM-001": "warning", "NEW-001": "passed"},
                }
            }
        )
    )
    return coverage, history


def test_the_baseline_is_the_newest_run_of_the_pinned_versions_or_the_one_named(tmp_path: Path) -> None:
    coverage, history = _records(tmp_path)
    newest = benchlib.baseline_of(PINNED, project=tmp_path)
    assert newest.source == f"{history} (pinned run 12060932108385)"
    assert newest.verdicts == {"X-001": "passed", "ROLL-ATOM-001": "warning", "NEW-001": "passed"}
    # a newer coverage run of the same versions wins; one of other versions never does
    (tmp_path / "benchmarks" / "results" / "coverage-2026-12-07.json").write_text(
        json.dumps({"started": "2026-12-07T00:00:00+0000", "versions": PINNED, "families": {}})
    )
    (tmp_path / "benchmarks" / "results" / "coverage-2026-12-08.json").write_text(
        json.dumps({"started": "2026-12-08T00:00:00+0000", "versions": {"lws": "v0.10.0"}, "families": {}})
    )
    assert benchlib.baseline_of(PINNED, project=tmp_path).source.endswith("coverage-2026-12-07.json")
    kept = tmp_path / "benchmarks" / "results" / "full-run" / "summary.json"  # a full run kept with its summary
    kept.parent.mkdir()
    kept.write_text(json.dumps({"started": "2026-12-07T09:00:00+0000", "versions": PINNED, "requirements": []}))
    assert benchlib.baseline_of(PINNED, project=tmp_path).source == str(kept)
    # the one named, read as a coverage run (red in any family: red) or a run's summary.json
    named = benchlib.baseline_of(PINNED, coverage, project=tmp_path)
    assert named.source == str(coverage) and named.verdicts == {"X-001": "failed", "ROLL-ATOM-001": "passed"}
    summary = tmp_path / "summary.json"
    summary.write_text(
        json.dumps({"started": "x", "versions": PINNED, "requirements": [{"id": "X-001", "verdict": "error"}]})
    )
    assert benchlib.baseline_of(PINNED, summary, project=tmp_path).verdicts == {"X-001": "error"}
    with pytest.raises(SystemExit, match="not of"):
        benchlib.baseline_of({"lws": "v0.10.0"}, coverage, project=tmp_path)
    with pytest.raises(SystemExit, match="no run of"):
        benchlib.baseline_of({"lws": "v0.7.0"}, project=tmp_path)
    with pytest.raises(SystemExit, match="holds no baseline"):
        benchlib.baseline_of(PINNED, tmp_path / "benchmarks" / "results" / "nothing.json", project=tmp_path)
