"""The pure parts of benchmarks/coverage and benchmarks/mutation: reading coverage profiles,
the per-file and per-family report, mutant identity and application, the stratified sample,
the families a mutated line selects, the classification of a run, and the scores; and the
go/ast generator itself on a small file (when Go is on PATH)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parent.parent


covreport = benchmark_module("coverage/covreport.py")
mutlib = benchmark_module("mutation/mutlib.py")

PROFILE = """mode: atomic
sigs.k8s.io/lws/pkg/webhooks/pod_webhook.go:10.2,12.3 2 5
sigs.k8s.io/lws/pkg/webhooks/pod_webhook.go:14.2,16.3 3 0
sigs.k8s.io/lws/pkg/webhooks/pod_webhook.go:10.2,12.3 2 1
sigs.k8s.io/kueue/pkg/controller/jobs/pod/pod_webhook.go:1.1,2.2 1 0
k8s.io/other/x.go:1.1,2.2 1 7
"""


def test_textfmt_blocks_merge_and_other_modules_are_left_out() -> None:
    blocks = covreport.parse_textfmt(PROFILE)
    assert len(blocks) == 4
    files = covreport.by_file(blocks)
    lws = files[("lws", "pkg/webhooks/pod_webhook.go")]
    assert (lws.statements, lws.covered) == (5, 2)
    assert lws.covered_lines == {10, 11, 12} and lws.uncovered_lines == {14, 15, 16}
    assert ("kueue", "pkg/controller/jobs/pod/pod_webhook.go") in files and len(files) == 2


def test_ranges_round_trip() -> None:
    assert covreport.ranges([7, 1, 2, 3]) == [[1, 3], [7, 7]]
    assert covreport.expand([[1, 3], [7, 7]]) == {1, 2, 3, 7}


def test_report_per_package_family_and_uncovered_functions() -> None:
    total = covreport.parse_textfmt(PROFILE)
    fam = covreport.parse_textfmt("mode: atomic\nsigs.k8s.io/lws/pkg/webhooks/pod_webhook.go:10.2,12.3 2 1\n")
    funcs = {
        "lws": [
            {"file": "pkg/webhooks/pod_webhook.go", "func": "Default", "line": 9, "end_line": 13},
            {"file": "pkg/webhooks/pod_webhook.go", "func": "Validate", "line": 14, "end_line": 17},
        ]
    }
    doc = covreport.report(total, {"lws-identity": fam}, funcs, {"versions": {"lws": "v0.9.0", "kueue": "v0.17.0"}})
    row = next(r for r in doc["files"] if r["component"] == "lws")
    assert row["percent"] == 40.0 and row["by_family"] == {"lws-identity": 2}
    assert row["family_lines"] == {"lws-identity": [[10, 12]]}
    pkg = next(p for p in doc["packages"] if p["package"] == "pkg/webhooks")
    assert pkg["promise_bearing"] and pkg["covered"] == 2
    assert [(u["func"], u["state"]) for u in doc["uncovered_functions"]] == [("Validate", "not reached")]
    assert doc["components"]["lws"]["promise_percent"] == 40.0
    picture = covreport.svg(doc, {("lws", "pkg/webhooks/pod_webhook.go"): 20})
    assert picture.startswith("<svg") and "#3a3" in picture and "#d33" in picture
    assert "Validate" in covreport.markdown(doc) and "<table>" in covreport.html_page(doc, picture)


def _mutant(file: str = "pkg/a.go", line: int = 3, edits: tuple = ((5, 6, ">="),)) -> object:
    return mutlib.Mutant("lws", "v0.9.0", file, line, 1, line, "negate-cond", "a < b", "a >= b", "f", edits)


def test_mutant_identity_and_application() -> None:
    a, b = _mutant(), _mutant(edits=((5, 6, "<="),))
    assert a.id != b.id and a.id == _mutant().id and len(a.id) == 12
    assert mutlib.apply(b"if a < b {", ((5, 6, ">="),)) == b"if a >= b {"
    assert mutlib.apply(b"if ok {", ((3, 3, "!("), (5, 5, ")"))) == b"if !(ok) {"
    with pytest.raises(ValueError):
        mutlib.apply(b"abc", ((1, 2, "x"), (1, 3, "y")))


def test_reach_and_families_of_a_line() -> None:
    cov = {
        "files": [
            {
                "component": "lws",
                "file": "pkg/a.go",
                "covered_lines": [[1, 4]],
                "uncovered_lines": [[6, 8]],
                "family_lines": {"rollout": [[1, 4]], "lws-api": [[3, 3]], "chaos": [[1, 1]]},
            }
        ]
    }
    reach = mutlib.Reach.of(cov)
    assert reach.where(_mutant(line=3)) == "covered"
    assert reach.where(_mutant(line=7)) == "not-reached"
    assert reach.where(_mutant(line=20)) == "outside"
    assert reach.families_for(_mutant(line=3)) == ["lws-api", "rollout"]
    assert reach.families_for(_mutant(line=20)) == ["chaos", "lws-api", "rollout"]


def test_allocation_is_proportional_and_bounded() -> None:
    assert mutlib.allocate({"a": 10, "b": 30}, 4) == {"a": 1, "b": 3}
    assert mutlib.allocate({"a": 1, "b": 1}, 5) == {"a": 1, "b": 1}
    assert sum(mutlib.allocate({"a": 3, "b": 3, "c": 3}, 7).values()) == 7


def test_sample_is_stratified_and_reproducible() -> None:
    cov = {
        "files": [
            {
                "component": "lws",
                "file": f"pkg/f{i}.go",
                "covered_lines": [[1, 50]],
                "uncovered_lines": [[51, 100]],
                "family_lines": {"lws-api": [[1, 50]]},
            }
            for i in range(3)
        ]
    }
    reach = mutlib.Reach.of(cov)
    pool = [_mutant(file=f"pkg/f{i}.go", line=n, edits=((n, n + 1, "x"),)) for i in range(3) for n in range(1, 101)]
    one = mutlib.sample(pool, reach, 30, 7, 0.2)
    assert [m.id for m, _ in one] == [m.id for m, _ in mutlib.sample(pool, reach, 30, 7, 0.2)]
    assert len(one) == 30 and sum(w == "not-reached" for _, w in one) == 6
    per_file = {f"pkg/f{i}.go": sum(m.file == f"pkg/f{i}.go" for m, _ in one) for i in range(3)}
    assert set(per_file.values()) == {10}
    assert [m.id for m, _ in mutlib.sample(pool, reach, 30, 8, 0.2)] != [m.id for m, _ in one]
    ordered = mutlib.run_order(one, {"lws": ["pkg/f2.go"]})
    assert all(m.file == "pkg/f2.go" for m, _ in ordered[:10]) and len(ordered) == 30


def test_classification_against_the_baseline() -> None:
    levels = {"A": "MUST", "B": "SHOULD", "C": "MUST"}
    base = {"A": "passed", "B": "passed", "C": "failed"}
    assert mutlib.classify({"A": "failed", "B": "warning"}, base, levels) == (
        "killed-must",
        {"A": "failed", "B": "warning"},
    )
    assert mutlib.classify({"A": "passed", "B": "warning"}, base, levels)[0] == "killed-should"
    assert mutlib.classify({"A": "error"}, base, levels)[0] == "killed-error"
    assert mutlib.classify({"A": "passed", "C": "failed"}, base, levels) == ("survived", {})
    # a baseline error is inconclusive: it hides another error, not a failure
    errored = {**base, "A": "error"}
    assert mutlib.classify({"A": "failed"}, errored, levels) == ("killed-must", {"A": "failed"})
    assert mutlib.classify({"A": "error"}, errored, levels) == ("survived", {})


def test_a_rendered_result_follows_the_catalogues_levels_now() -> None:
    """A mutant run recorded when A was a MUST and B a SHOULD, rendered after A became a SHOULD and B
    a MUST: the same requirements are red, each with its level's verdict, and the status follows."""
    row = {"id": "m", "status": "killed-must", "red": {"A": "failed", "E": "error"}, "details": {"A": "x"}}
    should = mutlib.relevel(row, {"A": "SHOULD", "E": "MUST"})
    assert should == {**row, "status": "killed-should", "red": {"A": "warning", "E": "error"}}
    was_should = {"id": "n", "status": "killed-should", "red": {"B": "warning"}}
    assert mutlib.relevel(was_should, {"B": "MUST"})["status"] == "killed-must"
    assert mutlib.relevel(was_should, {"B": "MUST"})["red"] == {"B": "failed"}
    # a requirement no longer catalogued keeps what was recorded; rows without a run are left alone
    assert mutlib.relevel(was_should, {}) == was_should
    for status in ("survived-not-reached", "build-failed", "no-result", "pending"):
        assert mutlib.relevel({"status": status, "red": {"A": "failed"}}, {"A": "SHOULD"})["red"] == {"A": "failed"}
    bring_up = {"status": "killed-error", "red": {"bring-up": "error"}}
    assert mutlib.relevel(bring_up, {"A": "MUST"}) == bring_up


def test_scores_leave_equivalent_survivors_and_build_failures_out() -> None:
    rows = [
        {"id": "1", "component": "lws", "file": "pkg/a.go", "where": "covered", "status": "killed-must"},
        {"id": "2", "component": "lws", "file": "pkg/a.go", "where": "covered", "status": "killed-should"},
        {"id": "3", "component": "lws", "file": "pkg/a.go", "where": "covered", "status": "survived"},
        {"id": "4", "component": "lws", "file": "pkg/b/b.go", "where": "covered", "status": "survived"},
        {"id": "5", "component": "lws", "file": "pkg/b/b.go", "where": "not-reached", "status": "survived-not-reached"},
        {"id": "6", "component": "lws", "file": "pkg/b/b.go", "where": "covered", "status": "build-failed"},
    ]
    s = mutlib.scores(rows, equivalent={"4"})
    assert s["all"]["judged"] == 5 and s["all"]["equivalent"] == 1 and s["all"]["build_failed"] == 1
    assert s["all"]["score"] == 50.0 and s["all"]["must_share"] == 25.0
    assert s["reached"]["score"] == pytest.approx(66.7)
    assert s["packages"]["lws pkg"]["score"] == pytest.approx(66.7)
    # a survivor only another integration shows leaves the LWS-path row; a kill never does
    path = mutlib.scores(rows, equivalent={"4"}, outside={"3", "1"})["lws_path"]
    assert (path["killed"], path["survived"], path["score"]) == (2, 0, 100.0)


def test_all_sampled_scores_count_unreached_survivors_unless_equivalent_or_off_the_lws_path() -> None:
    rows = [
        {"id": "1", "component": "kueue", "file": "pkg/a.go", "where": "covered", "status": "killed-must"},
        {"id": "2", "component": "kueue", "file": "pkg/a.go", "where": "reached-later", "status": "killed-should"},
        {"id": "3", "component": "kueue", "file": "pkg/a.go", "where": "not-reached", "status": "survived-not-reached"},
        {"id": "4", "component": "kueue", "file": "pkg/a.go", "where": "not-reached", "status": "survived-not-reached"},
        {"id": "5", "component": "kueue", "file": "pkg/a.go", "where": "not-reached", "status": "survived-not-reached"},
    ]
    s = mutlib.scores(rows, equivalent={"4"}, outside={"5"})
    assert (s["reached"]["killed"], s["reached"]["score"]) == (2, 100.0)  # a reached-later kill counts as reached
    assert (s["all"]["not_reached"], s["all"]["score"]) == (2, 50.0)
    assert (s["all_lws_path"]["not_reached"], s["all_lws_path"]["score"]) == (1, pytest.approx(66.7))
    table = mutlib.score_table(s, packages=False).splitlines()
    assert [line.split(" | ")[0] for line in table[2:]] == [
        "| **all sampled**",
        "| **reached lines only**",
        "| **all sampled, on the LWS path**",
        "| **reached, on the LWS path**",
    ]
    assert table[2].endswith("| 50.0% | 25.0% |")


@pytest.mark.skipif(not shutil.which("go"), reason="no Go toolchain")
def test_generator_lists_mutants_that_apply(tmp_path: Path) -> None:
    src = tmp_path / "mod" / "pkg" / "x"
    src.mkdir(parents=True)
    code = (
        'package x\n\nimport "fmt"\n\nconst limit = 2\n\n'
        "func F(a, b int, ok bool) int {\n\tn := 0\n\tif a < b && ok {\n\t\tn += a * b\n\t}\n"
        '\tfor i := 0; i < a; i++ {\n\t\tn++\n\t}\n\tfmt.Println(n)\n\tlog.Info("x", a == b)\n\treturn n + limit\n}\n'
    )
    (src / "x.go").write_text(code)
    (src / "x_test.go").write_text("package x\n")
    gen = mutlib.gen_binary(ROOT / "benchmarks" / "mutation" / "gen", tmp_path / "cache")
    out = subprocess.run([str(gen), "-root", str(tmp_path / "mod"), "pkg/..."], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    muts = mutlib.parse(out.stdout.splitlines(), "lws", "v0")
    ops = {(m.operator, m.original, m.mutated) for m in muts}
    assert ("boundary", "a < b", "a <= b") in ops and ("logical", "a < b && ok", "a < b || ok") in ops
    assert ("negate-cond", "i < a", "i >= a") in ops and ("arithmetic", "a * b", "a / b") in ops
    assert ("remove-call", "fmt.Println(n)", "_ = 0") in ops and ("remove-assign", "n += a * b", "_ = 0") in ops
    assert ("constant", "2", "3") in ops and ("constant", "1", "0") not in ops
    assert not any(m.original == "a == b" for m in muts), "nothing inside a log call"
    assert not any(m.original == "i++" for m in muts), "a loop's post statement stays"
    assert ("negate-if", "a < b && ok", "!(a < b && ok)") in ops
    assert all(m.file == "pkg/x/x.go" for m in muts)
    original = (src / "x.go").read_bytes()
    for m in muts:
        mutated = mutlib.apply(original, m.edits).decode()
        assert mutated != code and m.mutated in " ".join(mutated.split())
    funcs = subprocess.run(
        [str(gen), "-funcs", "-root", str(tmp_path / "mod"), "pkg/x"], capture_output=True, text=True, check=True
    )
    assert json.loads(funcs.stdout) == {"file": "pkg/x/x.go", "func": "F", "line": 7, "end_line": 18}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--families", "kueue"], "--families needs --only"),
        (["--only", "abc", "--families", "no-such-family"], "are neither families"),
    ],
)
def test_families_usage_errors_exit_2_before_any_work(argv: list[str], message: str) -> None:
    """--families (run a mutant against families a newer test adds) is refused in one line, exit 2."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "mutation" / "run"), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr.splitlines()[-1]


def test_a_triage_file_that_does_not_parse_is_refused_in_one_line(tmp_path: Path) -> None:
    """A survivor's triage written with a stray `: ` is refused before any mutant is built, with
    the line to fix (a run would otherwise lose its results at the first save)."""
    triage = tmp_path / "triage.yaml"
    good = (ROOT / "benchmarks" / "mutation" / "triage.yaml").read_text()
    triage.write_text(good + "- id: x\n  requirement: KUEUE-X (with a gate on: a case)\n")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "mutation" / "run"), "--triage", str(triage), "--list"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert "does not parse" in last and f"at line {len(good.splitlines()) + 2}" in last, last


def test_a_mutated_controller_that_dies_at_bring_up_is_killed_but_a_machine_cause_is_not() -> None:
    line = "lwsc: error: kueue exited during start-up (log: /x/kueue.log: boom)"
    died = f"[03:42:52] starting LWS and Kueue controllers\n{line}\n"
    assert mutlib.startup_failure(died, "kueue") == line
    assert mutlib.startup_failure(died, "lws") is None  # another component died: not this mutant's doing
    full = "lwsc: error: kueue exited during start-up: too many open files (log: /x/kueue.log) — most likely\n"
    assert mutlib.startup_failure(full, "kueue") is None
    assert mutlib.startup_failure("no error at all\n", "kueue") is None
