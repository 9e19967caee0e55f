"""A run's conclusion from its requirement verdicts: the exit code and the line saying why."""

from __future__ import annotations

import re
from typing import Any

from lws_conformance.deviations import Deviation
from lws_conformance.report import completeness, summary
from lws_conformance.report.conclusion import Policy, conclude
from lws_conformance.verdicts import PRIVATE


def dev(did: str, upstream: tuple[str, ...] = (), report: str = "") -> Deviation:
    return Deviation(did, "R", "lws", None, (), "deterministic", re.compile("x"), None, "t", upstream, report=report)


DEVS = [dev("up-1", ("https://github.com/kubernetes-sigs/lws/issues/1",)), dev("rep-2", report="docs/upstream/R.md")]


def row(rid: str, verdict: str, level: str = "MUST", deviation: str = "") -> dict[str, Any]:
    return {"id": rid, "level": level, "verdict": verdict, "deviation": deviation}


PASS = [row("A", "passed"), row("B", "not-applicable"), row("S", "warning", "SHOULD")]
KNOWN = [*PASS, row("K", "known-deviation", deviation="up-1"), row("L", "known-deviation", deviation="rep-2")]


def test_every_applicable_must_passed_is_0_and_should_never_gates() -> None:
    end = conclude([*PASS, row("T", "known-deviation", "SHOULD", "up-1")], Policy(), DEVS)
    assert end.code == 0
    assert end.line == "conformant: every applicable MUST that ran passed (1 passed, 1 not-applicable)"


def test_must_known_deviations_only_is_4_naming_each_and_saying_which_were_not_filed() -> None:
    end = conclude(KNOWN, Policy(), DEVS)
    assert end.code == 4 and end.line.startswith("not conformant: listed upstream bugs only: 2 MUST known deviation(s)")
    assert "K (up-1: https://github.com/kubernetes-sigs/lws/issues/1)" in end.line
    assert "L (rep-2: not reported upstream yet: ready-to-file report docs/upstream/R.md)" in end.line
    assert end.known == [
        "K (up-1: https://github.com/kubernetes-sigs/lws/issues/1)",
        "L (rep-2: not reported upstream yet: ready-to-file report docs/upstream/R.md)",
    ]


def test_accepting_known_deviations_gives_0_and_records_it() -> None:
    end = conclude(KNOWN, Policy(accept_known_deviations=True), DEVS)
    assert end.code == 0 and end.accepted and "2 accepted MUST known deviation(s)" in end.line
    assert end.to_dict()["accepted"] is True and len(end.to_dict()["must_known_deviations"]) == 2


def test_a_failed_must_is_1_whatever_else_and_names_it() -> None:
    end = conclude([*KNOWN, row("E", "error"), row("F", "failed")], Policy(accept_known_deviations=True), DEVS)
    assert end.code == 1 and end.line == "not conformant: 1 MUST requirement(s) did not pass: F failed"


def test_an_error_is_3_before_known_deviations() -> None:
    assert conclude([*KNOWN, row("E", "error", "SHOULD")], Policy(), DEVS).code == 3


def test_a_run_that_did_not_judge_every_collected_test_is_3_never_green_nor_known_only() -> None:
    """An interrupted pytest or a collected test with no verdict (a lost worker's) leaves no
    green and no "listed upstream bugs only", also with the deviations accepted; a MUST that
    failed still says so."""
    lost = {"pytest_exit": 1, "collected": ["t::a", "t::b"], "unjudged": {"t::b": "never reported"}}
    for rows, policy in ((PASS, Policy()), (KNOWN, Policy()), (KNOWN, Policy(accept_known_deviations=True))):
        end = conclude(rows, policy, DEVS, gaps=completeness.gaps(lost))
        assert end.code == 3 and "1 collected test(s) ended without a verdict, first t::b" in end.line, end.line
    interrupted = completeness.gaps({"pytest_exit": 2, "collected": ["t::a"], "unjudged": {}})
    assert interrupted == ["pytest exited 2 (interrupted)"]
    assert conclude(PASS, Policy(), DEVS, gaps=interrupted).code == 3
    assert conclude([*PASS, row("F", "failed")], Policy(), DEVS, gaps=interrupted).code == 1
    assert completeness.gaps({"pytest_exit": 5, "shard": "3/3", "collected": [], "unjudged": {}}) == []  # empty shard
    empty = completeness.gaps({"pytest_exit": 5, "collected": [], "unjudged": {}})
    assert empty == ["pytest exited 5 (no tests collected)"]
    assert completeness.gaps({"pytest_exit": 1, "collected": ["t::a"], "unjudged": {}}) == []


def test_certify_fails_on_unaccepted_known_deviations_and_on_musts_not_run() -> None:
    assert conclude(KNOWN, Policy(certify=True), DEVS).code == 1
    assert conclude(KNOWN, Policy(certify=True, accept_known_deviations=True), DEVS).code == 0
    for v in ("error", "not-run", "partial"):
        assert conclude([*PASS, row("X", v)], Policy(certify=True), DEVS).code == 1
        assert conclude([*PASS, row("X", v, "SHOULD")], Policy(certify=True), DEVS).code in (0, 3)
    assert conclude([*PASS, row("X", "not-run")], Policy(), DEVS).code == 0  # a focused run


def test_strict_fails_a_deviation_that_no_longer_reproduces() -> None:
    rows = [*PASS, row("D", "deviation-fixed?", deviation="up-1")]
    assert conclude(rows, Policy(), DEVS).code == 0 and conclude(rows, Policy(strict=True), DEVS).code == 1


def test_the_policy_is_read_back_from_the_summary_meta() -> None:
    meta = {"mode": "certify", "gate": {"strict": True, "accept_known_deviations": True}}
    assert Policy.from_meta(meta) == Policy(certify=True, strict=True, accept_known_deviations=True)
    assert Policy.from_meta({}) == Policy()


def _result(nodeid: str, verdict: str, ran_on: str) -> summary.TestResult:
    outcome = {"verdict": verdict, "detail": "", "deviation": ""}
    return summary.TestResult(nodeid, 1.0, {"LWS-NAME-001": outcome}, ran_on)


def test_certify_on_a_foreign_cluster_makes_a_must_proven_only_privately_not_run() -> None:
    from lws_conformance import catalogue

    reqs = {"LWS-NAME-001": catalogue.default()["LWS-NAME-001"]}
    private = [_result("t1", "passed", PRIVATE)]
    [r] = summary.build(reqs, private, "existing", certify=True)
    assert r.verdict == "not-run" and "proven only on a private local cluster" in r.detail
    assert summary.build(reqs, private, "existing")[0].verdict == "passed"  # evidence, but not certification
    assert summary.build(reqs, private, "local", certify=True)[0].verdict == "passed"
    both = [*private, _result("t2", "passed", "")]
    assert summary.build(reqs, both, "existing", certify=True)[0].verdict == "passed"
