"""The pure part of benchmarks/run_cpu.py: how a round's verdict differs from the first round's."""

from __future__ import annotations

from tests.conftest import benchmark_module

run_cpu = benchmark_module("run_cpu.py")


def _round(verdict: str, deviation: str | None = None) -> dict[str, dict[str, str]]:
    return {"verdicts": {"R": verdict}, "deviations": {"R": deviation} if deviation else {}}


def test_a_race_deviation_against_passed_is_a_listed_race_either_way() -> None:
    assert "lws-998-node-loss" in run_cpu.RACY
    for first, later in ((_round("passed"), _round("known-deviation", "lws-998-node-loss")),
                         (_round("known-deviation", "lws-998-node-loss"), _round("passed"))):  # fmt: skip
        assert run_cpu.difference(first, later, "R")["kind"] == "a listed race"


def test_a_deterministic_deviation_that_stops_showing_differs() -> None:
    assert "lws-963-keep" not in run_cpu.RACY  # deterministic
    first = _round("known-deviation", "lws-963-keep")
    for later in (_round("passed"), _round("deviation-fixed?"), _round("warning")):
        assert run_cpu.difference(first, later, "R")["kind"] == "differs"


def test_any_other_change_of_a_race_requirement_differs() -> None:
    first = _round("known-deviation", "lws-998-node-loss")
    for later in (_round("failed"), _round("partial"), _round("not-run")):
        assert run_cpu.difference(first, later, "R")["kind"] == "differs"
