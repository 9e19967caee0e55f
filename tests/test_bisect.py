"""`lwsc bisect`: the step logic (pure) and git driving the bisection over a real repository
made here (the builds and runs of each step are replaced by a judge of the commit's content)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lws_conformance import bisect
from lws_conformance.bisect import Plan, Step, Try, judge
from lws_conformance.errors import UserError

R = ["ROLL-KEEP-001"]


def t(*verdicts: str) -> list[Try]:
    return [Try({"ROLL-KEEP-001": v} if v else {}, 0, 1.0) for v in verdicts]


def test_a_step_is_bad_when_the_promise_broke_and_good_when_it_held() -> None:
    assert judge(t("failed"), R, fixed=False)[0] == "bad"
    assert judge(t("known-deviation"), R, fixed=False)[0] == "bad"  # listed or not, the promise broke
    assert judge(t("warning"), R, fixed=False)[0] == "bad"
    assert judge(t("passed"), R, fixed=False) == ("good", "held in all 1 tries")


def test_what_concludes_nothing_is_skip_never_bad() -> None:
    for v in ("error", "not-run", "partial", "not-applicable", ""):
        answer, why = judge(t(v), R, fixed=False)
        assert answer == "skip" and "nothing to conclude" in why
    assert judge([], R, fixed=False)[0] == "skip"


def test_race_tries_one_failing_try_makes_the_step_bad_errors_are_ignored() -> None:
    answer, why = judge(t("passed", "known-deviation", "passed"), R, fixed=False)
    assert answer == "bad" and why.startswith("did not hold in 1 of 3 tries")
    assert judge(t("passed", "error", "passed"), R, fixed=False) == ("good", "held in all 2 tries")


def test_fixed_mode_uses_its_own_terms_and_a_stopped_deviation_counts_as_fixed() -> None:
    assert judge(t("known-deviation"), R, fixed=True)[0] == "broken"
    assert judge(t("deviation-fixed?"), R, fixed=True)[0] == "fixed"
    assert judge(t("passed", "passed"), R, fixed=True)[0] == "fixed"
    assert judge(t("passed", "failed"), R, fixed=True)[0] == "broken"


def test_every_named_requirement_must_conclude() -> None:
    tries = [Try({"A": "passed", "B": "not-run"}, 0, 1.0)]
    assert judge(tries, ["A", "B"], fixed=False)[0] == "skip"
    assert judge([Try({"A": "passed", "B": "failed"}, 0, 1.0)], ["A", "B"], fixed=False)[0] == "bad"


def test_the_pr_number_comes_from_the_subject() -> None:
    assert bisect.pr_number("Rebuild worker StatefulSet entirely from the leader's revision (#963)") == "963"
    assert bisect.pr_number("Merge pull request #12 from x/y") == "12"
    assert bisect.pr_number("fix a typo") is None


def _repo(tmp_path: Path, n: int) -> Path:
    repo = tmp_path / "up"
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for i in range(n):
        (repo / "state").write_text(f"{i}\n")
        subprocess.run(["git", "-C", str(repo), "add", "state"], check=True)
        subprocess.run(["git", "-C", str(repo), *env, "commit", "-q", "-m", f"change {i} (#{100 + i})"], check=True)
        if i == 0:
            subprocess.run(["git", "-C", str(repo), "tag", "v0.1.0"], check=True)
    return repo


def _plan(repo: Path, tmp_path: Path, **kw: object) -> Plan:
    args: dict[str, object] = {
        "component": "lws",
        "git": repo,
        "good": "v0.1.0",
        "bad": "main",
        "requirements": R,
        "focus": "",
        "tries": 1,
        "fixed": False,
        "reports": tmp_path / "reports",
        "base_port": 17500,
        "lwsc_args": [],
    }
    args.update(kw)
    return Plan(**args)  # type: ignore[arg-type]


def _judged_by_content(first_bad: int, skipped: frozenset[int] = frozenset()) -> bisect.StepFn:
    def step(plan: Plan, clone: Path, commit: str, out: Path, progress: bisect.Progress) -> Step:
        i = int(
            subprocess.run(
                ["git", "-C", str(clone), "show", f"{commit}:state"], capture_output=True, text=True, check=True
            ).stdout
        )
        s = Step(commit, f"change {i}", 0.0, t("error" if i in skipped else ("failed" if i >= first_bad else "passed")))
        s.answer, s.why = judge(s.tries, plan.requirements, plan.fixed)
        return s

    return step


def test_git_finds_the_first_bad_commit_and_writes_the_report(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 12)
    result = bisect.run(_plan(repo, tmp_path), lambda m: None, _judged_by_content(7))
    assert result.subject == "change 7 (#107)" and result.pr == "107"
    assert 3 <= len(result.steps) <= 4  # log2 of 11 candidates
    (report,) = (tmp_path / "reports").glob("bisect-*/report.md")
    text = report.read_text()
    assert "change 7 (#107)" in text and "https://github.com/kubernetes-sigs/lws/pull/107" in text
    assert "sources.lws=<lws git dir>@" in text and "--focus '(ROLL-KEEP-001)'" in text
    assert (repo / ".git" / "BISECT_LOG").exists() is False  # the user's repository is never written


def test_a_skipped_step_is_stepped_around(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 12)
    result = bisect.run(_plan(repo, tmp_path), lambda m: None, _judged_by_content(7, frozenset({8, 9})))
    assert result.subject == "change 7 (#107)"
    result = bisect.run(_plan(repo, tmp_path), lambda m: None, _judged_by_content(7, frozenset({6, 7, 8})))
    assert any(s.answer == "skip" for s in result.steps)
    # 6, 7 and 8 cannot be told apart: git names none of them as the first bad commit
    assert result.first is None and "skip" in result.git_log


def test_fixed_mode_finds_where_it_starts_to_hold(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 10)

    def fixed_at_4(plan: Plan, clone: Path, commit: str, out: Path, progress: bisect.Progress) -> Step:
        i = int(
            subprocess.run(
                ["git", "-C", str(clone), "show", f"{commit}:state"], capture_output=True, text=True, check=True
            ).stdout
        )
        s = Step(commit, "", 0.0, t("passed" if i >= 4 else "known-deviation"))
        s.answer, s.why = judge(s.tries, plan.requirements, plan.fixed)
        return s

    result = bisect.run(_plan(repo, tmp_path, fixed=True), lambda m: None, fixed_at_4)
    assert result.subject == "change 4 (#104)"


def test_bad_input_is_one_line_before_any_build(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 3)
    for kw, needle in (
        ({"good": "v9"}, "--good: 'v9' is not a tag, branch or commit"),
        ({"good": "main", "bad": "v0.1.0"}, "is not an ancestor"),
        ({"tries": 0}, "--tries must be at least 1"),
        ({"requirements": [], "focus": ""}, "name what to check"),
        ({"git": tmp_path}, "is not a git repository"),
    ):
        with pytest.raises(UserError, match=needle):
            _plan(repo, tmp_path, **kw).validate()
