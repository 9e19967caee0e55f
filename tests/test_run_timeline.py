"""The run timeline: one row per xdist worker, each test's phases, the critical path."""

from __future__ import annotations

import json

import pytest

from lws_conformance.report.run_timeline import Entry, summarize, svg


def entry(nodeid: str, worker: str, start: float, call: float, end: float, bringup: bool = False) -> Entry:
    e = Entry(nodeid, worker, {"setup": [start, start + 1], "call": [start + 1, call], "teardown": [call, end]})
    if bringup:
        e.bringups.append([start, start + 1])
    return e


def test_the_worker_that_finished_last_is_the_critical_path() -> None:
    entries = [
        entry("a", "gw0", 100, 110, 111, bringup=True),
        entry("b", "gw0", 111, 130, 131),
        entry("c", "gw1", 100, 150, 152),
        entry("d", "gw1", 152, 160, 161),
    ]
    s = summarize(entries)
    assert s["span_s"] == 61 and s["critical_worker"] == "gw1" and s["t0_epoch"] == 100
    assert [t["nodeid"] for t in s["critical_path"]] == ["c", "d"]  # longest first
    assert s["workers"]["gw0"]["busy_s"] == 31 and s["workers"]["gw0"]["bringup_s"] == 1
    assert s["workers"]["gw1"]["tests"][0] == {
        "nodeid": "c",
        "setup": [0, 1],
        "call": [1, 50],
        "teardown": [50, 52],
        "bringups": [],
    }
    picture = svg(s)
    assert picture.startswith("<svg") and picture.count("<rect") == 4 * 3 + 1 + 1  # phases, bring-up, outline
    assert "critical path: worker gw1" in picture and "private cluster bring-up 1.0 s (a)" in picture


def test_nothing_recorded_is_an_empty_timeline() -> None:
    assert summarize([]) == {"workers": {}, "critical_path": [], "span_s": 0.0}
    assert "<svg" in svg(summarize([]))


TESTS = """
import pytest

@pytest.mark.requirement("LWS-NAME-001")
def test_one():
    pass

def test_two_without_requirements():
    pass
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_a_run_under_xdist_records_every_test_on_its_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_t=TESTS)
    out = pytester.path / "report"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--lwsc-run-id=t1", f"--lwsc-report-dir={out}"
    )
    result.assert_outcomes(passed=2)
    doc = json.loads((out / "summary.json").read_text())
    tl = doc["run_timeline"]
    tests = {t["nodeid"]: w for w, info in tl["workers"].items() for t in info["tests"]}
    assert set(tests) == {"test_t.py::test_one", "test_t.py::test_two_without_requirements"}
    assert set(tests.values()) <= {"gw0", "gw1"} and tl["critical_worker"] in tests.values()
    assert (out / "run-timeline.svg").read_text().startswith("<svg")
