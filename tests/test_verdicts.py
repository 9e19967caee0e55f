"""Verdict classification: known deviations only by symptom, SHOULD as warning, gating rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lws_conformance import catalogue, deviations
from lws_conformance.deviations import Deviation
from lws_conformance.observe import Timeline, check_all, describe
from lws_conformance.observe.replay import replay
from lws_conformance.verdicts import Outcome, classify, combine

DATA = Path(__file__).resolve().parent / "data"
V09 = {"lws": "v0.9.0"}


def dev(kind: str = "deterministic", symptom: str = r"^boom \d+$", fixed: str | None = "v0.10.0") -> Deviation:
    return Deviation(
        "up-1",
        "LWS-X-001",
        "lws",
        "v0.5.0",
        (fixed,) if fixed else (),
        kind,
        re.compile(symptom),
        "AssertionError",
        "t",
        ("https://github.com/kubernetes-sigs/lws/issues/1",),
    )


def test_a_failure_with_the_symptom_is_a_known_deviation() -> None:
    o = classify("LWS-X-001", "MUST", "failed", "boom 3", "AssertionError", V09, [dev()])
    assert o.verdict == "known-deviation" and o.deviation == "up-1" and "issues/1" in o.detail


def test_any_other_failure_of_the_same_requirement_stays_failed() -> None:
    """A test double that fails differently: other message, other exception, other version."""
    assert classify("LWS-X-001", "MUST", "failed", "boom x", "AssertionError", V09, [dev()]).verdict == "failed"
    assert classify("LWS-X-001", "MUST", "failed", "boom 3", "WaitTimeout", V09, [dev()]).verdict == "failed"
    assert (
        classify("LWS-X-001", "MUST", "failed", "boom 3", "AssertionError", {"lws": "v0.10.0"}, [dev()]).verdict
        == "failed"
    )
    assert (
        classify("LWS-X-001", "MUST", "failed", "boom 3", "AssertionError", {"lws": "v0.4.0"}, [dev()]).verdict
        == "failed"
    )
    assert classify("LWS-Y-001", "MUST", "failed", "boom 3", "AssertionError", V09, [dev()]).verdict == "failed"


def test_every_failure_is_judged_on_its_own() -> None:
    """Known deviation only when every failure shows a listed symptom; one other failure reds it."""
    both = [("AssertionError", "boom 3"), ("AssertionError", "boom 4")]
    o = classify("LWS-X-001", "MUST", "failed", "", "", V09, [dev()], failures=both)
    assert o.verdict == "known-deviation" and o.detail.count("up-1: t") == 2
    second = [("AssertionError", "boom 3"), ("AssertionError", "the group was never rebuilt")]
    o = classify("LWS-X-001", "MUST", "failed", "", "", V09, [dev()], failures=second)
    assert o.verdict == "failed" and o.detail.startswith("1 of 2 failures match no listed deviation")
    assert "the group was never rebuilt" in o.detail and "also failed, as listed deviation up-1" in o.detail
    assert classify("LWS-X-001", "SHOULD", "failed", "", "", V09, [dev()], failures=second).verdict == "warning"
    first = list(reversed(second))  # the order does not matter
    assert classify("LWS-X-001", "MUST", "failed", "", "", V09, [dev()], failures=first).verdict == "failed"


def test_two_deviations_of_one_requirement_are_both_named() -> None:
    other = Deviation(
        "up-2",
        "LWS-X-001",
        "lws",
        None,
        (),
        "race",
        re.compile(r"^bang$"),
        None,
        "t2",
        ("https://github.com/kubernetes-sigs/lws/issues/2",),
    )
    o = classify(
        "LWS-X-001",
        "MUST",
        "failed",
        "",
        "",
        V09,
        [dev(), other],
        failures=[("AssertionError", "boom 1"), ("AssertionError", "bang")],
    )
    assert o.verdict == "known-deviation" and o.deviation == "up-1, up-2"
    combined = combine([Outcome("known-deviation", "a", "up-1"), Outcome("known-deviation", "b", "up-2")])
    assert combined.deviation == "up-1, up-2" and combined.detail == "a\n\nb"
    # a deterministic deviation seen among several in another test is not "fixed"
    assert combine([Outcome("deviation-fixed?", "", "up-2"), o]).verdict == "known-deviation"


def test_a_deterministic_deviation_that_stops_reproducing_is_flagged() -> None:
    o = classify("LWS-X-001", "MUST", "passed", "", "", V09, [dev()])
    assert o.verdict == "deviation-fixed?" and "narrow its `affected` range" in o.detail


def test_a_race_that_did_not_reproduce_passes_with_a_note() -> None:
    o = classify("LWS-X-001", "MUST", "passed", "", "", V09, [dev(kind="race", fixed=None)])
    assert o.verdict == "passed" and "did not reproduce" in o.detail


def test_should_failures_are_warnings_and_never_gate() -> None:
    assert classify("R-A-001", "SHOULD", "failed", "x", "AssertionError", V09, []).verdict == "warning"


def test_errors_are_never_relabelled() -> None:
    assert classify("R-A-001", "MUST", "error", "fixture broke", "InfraError", V09, [dev()]).verdict == "error"
    assert classify("R-A-001", "MUST", "skipped", "no capability", "", V09, []).verdict == "not-run"
    assert classify("R-A-001", "MUST", "not-applicable", "too old", "", V09, []).verdict == "not-applicable"
    with pytest.raises(ValueError):
        classify("R-A-001", "MUST", "xpass", "", "", V09, [])


def test_combining_tests_worst_first_and_skips_visible() -> None:
    p, f, s, e = Outcome("passed"), Outcome("failed", "f"), Outcome("not-run", "skip: no node faults"), Outcome("error")
    assert combine([p, f, e]).verdict == "failed"
    assert combine([p, e]).verdict == "error"
    partial = combine([p, s])
    assert partial.verdict == "partial" and partial.detail == "1 of 2 tests skipped: skip: no node faults"
    assert combine([s, s]).verdict == "not-run"
    assert combine([Outcome("not-applicable", "old")]).verdict == "not-applicable"
    assert combine([Outcome("not-applicable"), p]).verdict == "passed"  # a sibling's n/a hides nothing
    assert combine([]).verdict == "not-run"
    assert combine([p, Outcome("known-deviation", "d", "x")]).verdict == "known-deviation"
    # a deviation reproduced in one test is not "fixed" because another test did not show it
    assert combine([Outcome("deviation-fixed?", "", "x"), Outcome("known-deviation", "d", "x")]).verdict == (
        "known-deviation"
    )
    assert combine([Outcome("deviation-fixed?", "", "x"), Outcome("known-deviation", "d", "y")]).verdict == (
        "deviation-fixed?"
    )


# -- the listed deviations, against real and altered evidence ------------------------------


def test_every_listed_deviation_is_well_formed_and_names_a_catalogued_requirement() -> None:
    reqs = catalogue.default()
    for d in deviations.load():
        assert d.requirement in reqs, f"{d.id} names unknown requirement {d.requirement}"
        assert d.upstream or d.report, d.id


def _pairing_message(events: list) -> str:  # type: ignore[type-arg]
    found = check_all(events, only=["condition-pairing"])
    assert found, "no condition-pairing violation in the stream"
    return describe(found, "timeline: t.json\npicture: t.svg")


def _cond_pairing() -> Deviation:
    return next(d for d in deviations.load() if d.requirement == "ROLL-COND-002")


def test_cond_pairing_symptom_matches_the_real_v090_recording() -> None:
    events = Timeline.load(DATA / "rollout-v0.9.0-r2-ms4.timeline.json").ordered()
    msg = _pairing_message(events)
    o = classify("ROLL-COND-002", "SHOULD", "failed", msg, "AssertionError", V09, deviations.load())
    assert o.verdict == "known-deviation", msg


def test_cond_pairing_that_never_recovers_is_not_the_known_deviation() -> None:
    """The same violation lasting the whole update (a different bug) is a plain warning."""
    events = Timeline.load(DATA / "rollout-v0.9.0-r2-ms4.timeline.json").ordered()
    for ev in events:  # drop Progressing from every status: the pairing is never restored
        conds = (ev.obj.get("status") or {}).get("conditions") if ev.kind == "LeaderWorkerSet" else None
        if conds and "Progressing" in conds:  # the recorder keeps conditions as {type: status}
            conds["Progressing"] = "False"
    assert list(replay(events))  # still a valid stream
    msg = _pairing_message(events)
    assert "never paired" in msg or "lasted 1 " not in msg, msg
    assert not _cond_pairing().matches("AssertionError", msg)
    o = classify("ROLL-COND-002", "SHOULD", "failed", msg, "AssertionError", V09, deviations.load())
    assert o.verdict == "warning"


def _subgroup_message(wrong: dict[str, tuple[tuple[str, str], tuple[str, str]]]) -> str:
    return f"(subgroup-index, subgroup-key) per pod, (got, want): {wrong}"


def test_lws917_symptom_is_exactly_worker_j_in_subgroup_j_minus_1() -> None:
    k = "0" * 40
    shifted = {
        "sg31-0-1": (("0", k), ("1", k)),
        "sg31-0-2": (("1", k), ("2", k)),
        "sg31-1-1": (("0", k), ("1", k)),
        "sg31-1-2": (("1", k), ("2", k)),
    }
    d = next(d for d in deviations.load() if d.id == "lws-917")
    assert d.matches("AssertionError", _subgroup_message(shifted))
    other = dict(shifted, **{"sg31-1-2": (("0", k), ("2", k))})  # a different wrong index
    assert not d.matches("AssertionError", _subgroup_message(other))
    missing = {"sg31-0-1": ((None, None), ("1", k))}  # labels missing altogether
    assert not d.matches("AssertionError", _subgroup_message(missing))  # type: ignore[arg-type]


def test_lws998_symptom_needs_some_but_not_all_tries() -> None:
    d = next(d for d in deviations.load() if d.id == "lws-998")
    race = (
        "kubernetes-sigs/lws#998 picture in 1 of 4 tries: worker rg-1-1 replaced alone (new UID), leader rg-1 "
        "kept its UID for the whole recovery deadline and 40 s after it; the other tries recreated the whole group"
    )
    assert d.matches("AssertionError", race)
    unwatched = race.replace(" and 40 s after it", "")  # a slow controller, not yet told from the race
    assert not d.matches("AssertionError", unwatched)
    always = (
        "a deleted worker never made LWS recreate its group: in 4 of 4 tries worker rg-1-1 was replaced "
        "alone and leader rg-1 kept its UID for 45 s"
    )
    assert not d.matches("AssertionError", always)
    assert not d.matches("WaitTimeout", "timed out waiting for every pod of group 1 recreated")


def test_bad_deviation_entries_are_rejected(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        "deviations:\n- {id: a, requirement: R, component: lws, kind: sometimes, symptom: x, title: t,"
        " upstream: [https://x]}\n"
    )
    with pytest.raises(ValueError, match="kind"):
        deviations.load(f)
    f.write_text("deviations:\n- {id: a, requirement: R, component: lws, kind: race, symptom: x, title: t}\n")
    with pytest.raises(ValueError, match="upstream issue/PR"):
        deviations.load(f)


def test_a_fix_backported_to_release_lines_is_judged_per_line() -> None:
    from lws_conformance.deviations import fixed_in

    lines = ("v0.16.7", "v0.17.2", "v0.18.0")
    assert [fixed_in(v, lines) for v in ("v0.16.6", "v0.16.7", "v0.17.0", "v0.17.2", "v0.17.8")] == [
        False, True, False, True, True,
    ]  # fmt: skip
    assert [fixed_in(v, lines) for v in ("v0.15.9", "v0.18.0", "v0.19.2", "v0.20.0-devel+main.5@abc")] == [
        False, True, True, True,
    ]  # fmt: skip
    assert fixed_in("v0.19.0", ("v0.18.5", "v0.19.1")) is False  # a line named by its own later patch
    assert fixed_in("v0.10.0", ("v0.10.0",)) and not fixed_in("v0.9.0", ("v0.10.0",)) and not fixed_in("v1.0.0", ())
