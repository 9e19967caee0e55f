"""The pure parts of benchmarks/history: loading the manifest of upstream fixes (and refusing a
wrong one), `run --list` with recorded and missing results, recording a run's result from the
verdicts against the pinned baseline, the results file and the docs table, and the checked-in
manifest itself (every patch present, every expected requirement in the catalogue)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "benchmarks" / "history"


histlib = benchmark_module("history/histlib.py")
mutlib = benchmark_module("mutation/mutlib.py")

SHA_LWS = "7a4e3c1638d75c235aa1d79dce1dc4fe16b09269"
SHA_KUEUE = "bb8fd115d9e4d9aafe854d2c1105f838c267cf2b"
PATCH = """diff -ruN a/pkg/utils/statefulset/statefulset_utils.go b/pkg/utils/statefulset/statefulset_utils.go
--- a/pkg/utils/statefulset/statefulset_utils.go
+++ b/pkg/utils/statefulset/statefulset_utils.go
@@ -1,1 +1,1 @@
-x
+y
"""


def _manifest(tmp: Path, fixes: str) -> Path:
    (tmp / "patches").mkdir(exist_ok=True)
    (tmp / "patches" / "lws-7a4e3c1.patch").write_text(PATCH)
    (tmp / "patches" / "kueue-bb8fd115d9.patch").write_text(PATCH.replace("statefulset", "wl"))
    path = tmp / "manifest.yaml"
    path.write_text(
        "modules:\n"
        "  lws: {module: sigs.k8s.io/lws, version: v0.9.0}\n"
        "  kueue: {module: sigs.k8s.io/kueue, version: v0.17.0}\n"
        "fixes:\n" + fixes
    )
    return path


LWS_FIX = f"""- id: lws-7a4e3c1
  component: lws
  commit: {SHA_LWS}
  date: 2026-03-25
  title: "[bugfix] fix StatefulsetReady check (#705)"
  upstream: [https://github.com/kubernetes-sigs/lws/pull/705]
  patch: patches/lws-7a4e3c1.patch
  how: reverse
  bug: A worker StatefulSet counts as ready once its pods exist.
  expect: [LWS-STATUS-004, ROLL-FAULT-003]
"""
KUEUE_FIX = f"""- id: kueue-bb8fd115d9
  component: kueue
  commit: {SHA_KUEUE}
  date: 2026-03-16
  title: Add JobUID label
  upstream: https://github.com/kubernetes-sigs/kueue/pull/9898
  patch: patches/kueue-bb8fd115d9.patch
  how: adapted
  adapted: the label moved
  bug: No job-uid label.
  not_observable: nothing reads it
"""


def test_manifest_loads_fixes_with_their_fields(tmp_path: Path) -> None:
    modules, fixes = histlib.load_manifest(
        _manifest(tmp_path, LWS_FIX + KUEUE_FIX), {"LWS-STATUS-004", "ROLL-FAULT-003"}
    )
    assert modules["lws"]["version"] == "v0.9.0"
    lws, kueue = fixes
    assert (lws.id, lws.component, lws.short, lws.how) == ("lws-7a4e3c1", "lws", "7a4e3c1", "reverse")
    assert lws.expect == ("LWS-STATUS-004", "ROLL-FAULT-003")
    assert lws.focus_expr() == "LWS-STATUS-004 or ROLL-FAULT-003"
    assert lws.packages() == ["pkg/utils/statefulset"]
    assert lws.patch == (tmp_path / "patches" / "lws-7a4e3c1.patch").resolve()
    assert kueue.upstream == ("https://github.com/kubernetes-sigs/kueue/pull/9898",)  # a single URL is a list of one
    assert (kueue.short, kueue.adapted, kueue.not_observable) == ("bb8fd115d9", "the label moved", "nothing reads it")
    assert kueue.focus_expr() is None


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (("component: lws", "component: jobset"), "component must be one of"),
        ((SHA_LWS, "7a4e3c1"), "full 40-hex-digit sha"),
        (("id: lws-7a4e3c1", "id: lws-0000000"), "id must be lws-7a4e3c1"),
        (("how: reverse", "how: forward"), "how must be one of"),
        (("pull/705", "pull/abc"), "is no kubernetes-sigs lws/kueue PR or issue URL"),
        (("patches/lws-7a4e3c1.patch", "patches/none.patch"), "no patch file patches/none.patch"),
        (("date: 2026-03-25", "date: March"), "date must be YYYY-MM-DD"),
        (("ROLL-FAULT-003", "ROLL-NOPE-999"), "expect names unknown requirements ['ROLL-NOPE-999']"),
        (("  expect: [LWS-STATUS-004, ROLL-FAULT-003]\n", ""), "give `expect:`"),
        (("  bug: A worker StatefulSet counts as ready once its pods exist.\n", ""), "missing bug"),
    ],
)
def test_manifest_refuses_a_wrong_entry_naming_it(tmp_path: Path, edit: tuple[str, str], says: str) -> None:
    path = _manifest(tmp_path, LWS_FIX.replace(*edit))
    with pytest.raises(histlib.ManifestError, match="entry 1 .*" + re.escape(says)):
        histlib.load_manifest(path, {"LWS-STATUS-004", "ROLL-FAULT-003"})


def test_manifest_refuses_adapted_without_saying_how_and_duplicates(tmp_path: Path) -> None:
    with pytest.raises(histlib.ManifestError, match="needs `adapted:`"):
        histlib.load_manifest(_manifest(tmp_path, KUEUE_FIX.replace("  adapted: the label moved\n", "")))
    with pytest.raises(histlib.ManifestError, match="duplicate fix ids"):
        histlib.load_manifest(_manifest(tmp_path, LWS_FIX + LWS_FIX))


def test_record_detected_by_a_must_against_the_pinned_baseline(tmp_path: Path) -> None:
    _, (fix, _) = histlib.load_manifest(_manifest(tmp_path, LWS_FIX + KUEUE_FIX))
    levels = {"LWS-STATUS-004": "MUST", "LWS-PROBE-001": "MUST", "ROLL-COND-003": "SHOULD"}
    verdicts = {"LWS-STATUS-004": "failed", "ROLL-COND-003": "warning", "LWS-PROBE-001": "failed"}
    baseline = {"LWS-STATUS-004": "passed", "ROLL-COND-003": "passed", "LWS-PROBE-001": "failed"}  # red pinned
    classified, red = mutlib.classify(verdicts, baseline, levels)
    r = histlib.record(fix, classified, red, levels, {"LWS-STATUS-004": "readyReplicas 2, want 1"}, mode="focused")
    assert r.status == "detected-must"
    assert r.red == {"LWS-STATUS-004": "failed", "ROLL-COND-003": "warning"}  # LWS-PROBE-001 was red pinned
    assert r.levels == {"LWS-STATUS-004": "MUST", "ROLL-COND-003": "SHOULD"}
    assert r.expected_hit == ["LWS-STATUS-004"]
    assert histlib.result_text(r) == "detected-must by LWS-STATUS-004 failed (MUST), ROLL-COND-003 warning (SHOULD)"


def test_record_should_only_and_missed() -> None:
    fix = histlib.Fix(
        "lws-7a4e3c1", "lws", SHA_LWS, "2026-03-25", "t", (), Path("p.patch"), "b", "reverse", expect=("X",)
    )
    levels = {"A": "SHOULD", "B": "MUST"}
    should = histlib.record(fix, *mutlib.classify({"A": "warning"}, {}, levels), levels, {})
    assert should.status == "detected-should"
    missed = histlib.record(fix, *mutlib.classify({"A": "passed", "B": "passed"}, {}, levels), levels, {}, mode="full")
    assert (missed.status, missed.red) == ("missed", {})
    assert histlib.result_text(missed) == "missed (full run)"
    assert histlib.status_of("killed-error") == "inconclusive"
    errors = histlib.record(
        fix, *mutlib.classify({"B": "error"}, {}, levels), levels, {"B": "not built"}, mode="focused"
    )
    assert (errors.status, errors.red) == ("inconclusive", {"B": "error"})  # the harness could not tell: no detection
    assert errors.note == "only error verdicts (1): not built"
    assert histlib.counts([fix], {fix.id: errors})["detected"] == 0
    died = histlib.Result(id=fix.id, status="detected-error", red={"bring-up": "error"}, levels={"bring-up": "—"})
    assert histlib.reclassify(died).status == "detected-error"  # the patched controller died at bring-up
    stale = histlib.Result(id=fix.id, status="detected-error", red={"B": "error"}, levels={"B": "MUST"})
    assert histlib.reclassify(stale).status == "inconclusive"  # a record of the older rule, read again


# The harness's detail when Kueue died mid-run (kueue-5173fb4e8d's patch, run 20261206-165250): the
# last lines of its log are the scheduler goroutine's crash traceback.
DEAD = (
    "InfraError: the cluster under test broke (not an LWS/Kueue verdict): kueue (pid 4408) is not running, its log "
    "ends: {tail}\n\ntimed out after 60s waiting for pods"
)
TRACEBACK = (
    "sigs.k8s.io/kueue@v0.0.0/pkg/util/wait/backoff.go:75 +0xd6 | sigs.k8s.io/kueue/pkg/util/wait.UntilWithBackoff("
    "{0x3515758, 0x3878a5df2510}, 0x3878a53d7b30) | sigs.k8s.io/kueue@v0.0.0/pkg/util/wait/backoff.go:67 +0x8c | "
    "created by sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).Start in goroutine 755 | "
    "sigs.k8s.io/kueue@v0.0.0/pkg/scheduler/scheduler.go:188 +0x131"
)
KILLED_LOG = '{"level":"info","msg":"Starting workers","controller":"workload"} | {"level":"info","msg":"Reconciling"}'


def test_a_patched_controller_that_crashes_mid_run_is_detected_by_its_errors() -> None:
    fix = histlib.Fix(
        "kueue-5173fb4e8d", "kueue", "5173fb4e8d04385d735a16c201e8a852c7f8607a", "2025-08-11", "t", (),
        Path("p.patch"), "b", "adapted", adapted="a", expect=("KUEUE-SINGLE-001",),
    )  # fmt: skip
    levels = {"KUEUE-SINGLE-001": "SHOULD", "KUEUE-GANG-001": "MUST"}
    verdicts = {"KUEUE-SINGLE-001": "error", "KUEUE-GANG-001": "error"}
    crashed = {"KUEUE-SINGLE-001": DEAD.format(tail=TRACEBACK), "KUEUE-GANG-001": DEAD.format(tail=TRACEBACK)}
    crash = histlib.crash_of(crashed, "kueue")
    assert crash.startswith("KUEUE-SINGLE-001: the cluster under test broke (not an LWS/Kueue verdict): kueue (pid ")
    r = histlib.record(fix, *mutlib.classify(verdicts, {}, levels), levels, crashed, crash=crash, mode="focused")
    assert r.status == "detected-error" and r.red == verdicts
    assert histlib.result_text(r).endswith("(the patched controller crashed mid-run)")
    assert histlib.counts([fix], {fix.id: r})["detected_error"] == 1
    again = histlib.reclassify(histlib.result_from(json.loads(json.dumps(asdict(r)))))
    assert again.status == "detected-error"  # a recorded crash stays detected when read again
    # not the patched controller's crash: another process dead, a log without a traceback (a kill
    # from outside), a traceback of another component, or no dead process at all
    for details, component in (
        ({"A": DEAD.format(tail=TRACEBACK).replace("kueue (pid", "kube-scheduler (pid")}, "kueue"),
        ({"A": DEAD.format(tail=KILLED_LOG)}, "kueue"),
        ({"A": DEAD.format(tail=TRACEBACK)}, "lws"),
        ({"A": "timed out after 60s waiting for pods"}, "kueue"),
    ):
        assert histlib.crash_of(details, component) == "", details
    two_dead = DEAD.format(tail=TRACEBACK).replace(
        "kueue (pid 4408)", f"lws (pid 1) is not running, its log ends: {KILLED_LOG}; kueue (pid 4408)"
    )
    assert histlib.crash_of({"A": two_dead}, "kueue").startswith("A: the cluster under test broke")
    assert histlib.crash_of({"A": two_dead}, "lws") == ""
    errors = histlib.record(fix, *mutlib.classify(verdicts, {}, levels), levels, {}, crash="", mode="focused")
    assert errors.status == "inconclusive"  # errors without the crash say nothing


def test_list_shows_each_fix_its_patch_and_result_or_not_run(tmp_path: Path) -> None:
    _, fixes = histlib.load_manifest(_manifest(tmp_path, LWS_FIX + KUEUE_FIX))
    results = {
        "kueue-bb8fd115d9": histlib.Result(id="kueue-bb8fd115d9", status="not-observable", note="nothing reads it")
    }
    lines = histlib.list_lines(fixes, results, tmp_path)
    text = "\n".join(lines)
    assert "lws-7a4e3c1       2026-03-25 reverse [bugfix] fix StatefulsetReady check (#705)" in lines[0]
    assert "patch patches/lws-7a4e3c1.patch; https://github.com/kubernetes-sigs/lws/pull/705" in lines[1]
    assert lines[2].endswith("expect LWS-STATUS-004, ROLL-FAULT-003; result: not run")
    assert lines[5].endswith("expect —; result: not-observable: nothing reads it")
    assert text.count("result:") == 2
    c = histlib.counts(fixes, results)
    assert (c["fixes"], c["not_run"], c["not_observable"], c["detected"]) == (2, 1, 1, 0)
    assert histlib.headline(c).startswith("0 of 0 real upstream regressions detected")


def test_results_round_trip_and_render_docs_table(tmp_path: Path) -> None:
    _, fixes = histlib.load_manifest(_manifest(tmp_path, LWS_FIX + KUEUE_FIX))
    r = histlib.Result(
        id="lws-7a4e3c1", status="detected-must", red={"LWS-STATUS-004": "failed"}, levels={"LWS-STATUS-004": "MUST"}
    )
    back = histlib.result_from(json.loads(json.dumps({**asdict(r), "unknown_key": 1})))
    assert back == r
    rows = histlib.fix_rows(fixes, {r.id: r})
    assert rows[0]["status"] == "detected-must" and rows[1]["status"] == histlib.NOT_RUN
    doc = {"headline": histlib.headline(histlib.counts(fixes, {r.id: r})), "fixes": rows, "post_pin": []}
    block = histlib.docs_block(doc, "../benchmarks/history/patches/")
    assert block.startswith("**1 of 1 real upstream regressions detected (1 by a MUST")
    assert "([reverse diff](../benchmarks/history/patches/lws-7a4e3c1.patch))" in block
    assert "| detected-must by LWS-STATUS-004 failed (MUST) |" in block
    assert "| not run |" in block and "None listed." in block
    md = histlib.markdown({"ranges": {}, "pinned": "lws v0.9.0"}, fixes, {r.id: r}, [])
    assert "## What went red" in md and "- lws-7a4e3c1 LWS-STATUS-004 failed (MUST)" in md


def test_post_pin_lists_deviations_the_pinned_versions_show_and_a_fix_removes() -> None:
    class Dev:
        def __init__(self, id: str, component: str, fixed: tuple[str, ...], main: str, affects: bool) -> None:
            self.id, self.component, self.fixed, self.fixed_on_main = id, component, fixed, main
            self.requirement, self.upstream, self.report, self._affects = "R-1", ("https://x/1",), "", affects
            self.kind = "deterministic"

        def affects(self, versions: dict[str, str]) -> bool:
            return self._affects

    rows = histlib.post_pin_fixed(
        [
            Dev("a", "lws", ("v0.10.0",), "", True),
            Dev("b", "lws", (), "https://github.com/kubernetes-sigs/lws/pull/999 (no release)", True),
            Dev("c", "lws", (), "not fixed (issue open)", True),
            Dev("d", "lws", ("v0.9.0",), "", False),
        ],
        {"lws": "v0.9.0"},
    )
    assert [(r["id"], r["fixed"]) for r in rows] == [
        ("a", "v0.10.0"),
        ("b", "main: https://github.com/kubernetes-sigs/lws/pull/999 (no release)"),
    ]


def test_checked_in_manifest_loads_with_the_catalogue() -> None:
    from lws_conformance import catalogue

    modules, fixes = histlib.load_manifest(HISTORY / "manifest.yaml", catalogue.default())
    assert len(fixes) >= 25 and {f.component for f in fixes} == {"lws", "kueue"}
    assert all(f.packages() or f.patch.read_text().startswith("diff") for f in fixes)
    assert modules["lws"]["version"] == "v0.9.0" and modules["kueue"]["version"] == "v0.17.0"


def test_run_list_prints_every_fix_with_a_result_or_not_run(tmp_path: Path) -> None:
    path = _manifest(tmp_path, LWS_FIX + KUEUE_FIX)
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps({"results": [{"id": "lws-7a4e3c1", "status": "missed", "mode": "focused", "note": ""}]})
    )
    proc = subprocess.run(
        [sys.executable, str(HISTORY / "run"), "--manifest", str(path), "--results", str(results), "--list"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "expect LWS-STATUS-004, ROLL-FAULT-003; result: missed (focused run)" in proc.stdout
    assert "expect —; result: not run" in proc.stdout  # the Kueue fix has no record yet
    assert proc.stdout.rstrip().endswith("1 of 2 not run yet")


def test_harness_summary_counts_results_by_commit_and_dirty() -> None:
    a, b = "a" * 40, "b" * 40
    rs = [
        histlib.Result(id="x", status="missed", commit=a),
        histlib.Result(id="y", status="missed", commit=a),
        histlib.Result(id="z", status="missed", commit=b, dirty=True),
    ]
    assert histlib.harness_summary(rs) == f"{a[:12]} (2 fixes), {b[:12]} dirty (1 fix)"
    assert histlib.harness_summary([]) == "none"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_checkout_state_and_what_a_child_lwsc_imports(tmp_path: Path) -> None:
    benchlib = benchmark_module("benchlib.py")
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(repo))
    (repo / "suites" / "code.py").write_text("x = 1\n")
    (repo / "results.json").write_text("{}\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    code = ["suites"]
    assert benchlib.checkout_state(repo, code) == (first, False)
    (repo / "results.json").write_text('{"results": []}\n')  # outside the code a run reads
    assert benchlib.checkout_state(repo, code) == (first, False)
    assert benchlib.checkout_state(repo) == (first, True)
    (repo / "suites" / "new_suite.py").write_text("")  # an untracked file the run may import
    assert benchlib.checkout_state(repo, code) == (first, True)
    (repo / "suites" / "new_suite.py").unlink()
    _git(repo, "commit", "-qam", "results")
    second = _git(repo, "rev-parse", "HEAD")
    assert not benchlib.code_between(repo, first, second, code) and benchlib.code_between(repo, first, second)
    (repo / "suites" / "code.py").write_text("x = 2\n")
    assert benchlib.checkout_state(repo, code) == (second, True)
    _git(repo, "commit", "-qam", "code")
    third = _git(repo, "rev-parse", "HEAD")
    assert benchlib.code_between(repo, second, third, code)
    assert benchlib.on_path(repo, first, second, third) and not benchlib.on_path(repo, second, first, third)
    assert benchlib.checkout_state(tmp_path / "nogit") == ("unknown", True)
    # a child lwsc imports this checkout's lws_conformance, not the venv's editable install
    env = benchlib.harness_env(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", "import lws_conformance as m; print(m.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.strip() == str(ROOT / "lws_conformance" / "__init__.py"), proc.stderr


def test_post_pin_table_shows_each_bugs_verdict_in_the_pinned_run_and_other_red() -> None:
    summary = {
        "run_id": "20261206-093210",
        "started": "2026-12-06T09:32:10+0000",
        "harness": {"commit": "81ce6536b8509d7cf702aa84760dc66dddec409b"},
        "versions": {"lws": "v0.9.0", "kueue": "v0.17.0", "kubernetes": "v1.36.3"},
        "conclusion": {"line": "not conformant: listed upstream bugs only: 2 MUST known deviation(s): ..."},
        "requirements": [
            {"id": "ROLL-KEEP-001", "level": "MUST", "verdict": "known-deviation"},
            {"id": "CHAOS-RESTART-001", "level": "MUST", "verdict": "passed"},
            {"id": "ROLL-ATOM-001", "level": "SHOULD", "verdict": "warning"},
            {"id": "LWS-STATUS-001", "level": "MUST", "verdict": "passed"},
        ],
    }
    pinned = histlib.pinned_run_of(summary)
    assert pinned["versions"] == {"lws": "v0.9.0", "kueue": "v0.17.0"} and pinned["commit"].startswith("81ce653")
    rows = [
        {"id": "lws-963-keep", "requirement": "ROLL-KEEP-001", "component": "lws", "kind": "deterministic",
         "fixed": "v0.10.0+main.8", "upstream": "https://github.com/kubernetes-sigs/lws/pull/963"},
        {"id": "lws-998", "requirement": "CHAOS-RESTART-001", "component": "lws", "kind": "race",
         "fixed": "main", "upstream": "https://github.com/kubernetes-sigs/lws/pull/999"},
        {"id": "kueue-1", "requirement": "KUEUE-X-001", "component": "kueue", "kind": "deterministic",
         "fixed": "v0.18.0", "upstream": "https://github.com/kubernetes-sigs/kueue/pull/1"},
    ]  # fmt: skip
    lines = histlib.post_pin_lines(rows, pinned)
    assert lines[-5].endswith("| known-deviation |") and "| lws-963-keep |" in lines[-5]
    assert lines[-4].endswith("| passed |")  # a race the pinned run did not hit
    assert lines[-3].endswith("| not in the run |")
    assert lines[-1].endswith(": ROLL-ATOM-001 warning (SHOULD).")
    assert any(
        line.startswith("Pinned run: `lwsc run` 20261206-093210 (2026-12-06, harness commit 81ce6536b850")
        for line in lines
    )
    assert histlib.post_pin_lines(rows)[-1].endswith(
        "| https://github.com/kubernetes-sigs/kueue/pull/1 |"
    )  # none recorded
