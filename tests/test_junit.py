"""junit_01.xml as CI systems show it: a suite per lwsc suite, requirement ids in the case names,
the requirement's own message and the test's line as a failure's body, warnings with their symptom."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lws_conformance.report import render

LWS = """
import pytest

@pytest.mark.requirement("LWS-NAME-001")
def test_names_hold():
    pass

@pytest.mark.requirement("ROLL-AVAIL-001")
@pytest.mark.requirement("ROLL-ATOM-001")
def test_rollout(claim):
    with claim("ROLL-ATOM-001"):
        assert False, "group 1 has Ready pods of revisions ['a', 'b']"
    with claim("ROLL-AVAIL-001"):
        assert False, "3 groups unavailable, maxUnavailable 1"

@pytest.mark.requirement("ROLL-ATOM-001")
def test_warning_only(claim):
    with claim("ROLL-ATOM-001"):
        assert False, "group 2 has Ready pods of revisions ['c', 'd']"
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_junit_names_suites_and_requirements_and_shows_the_verdicts(pytester: pytest.Pytester) -> None:
    suites = pytester.mkpydir("suites")
    (suites / "lws").mkdir()
    (suites / "lws" / "test_j.py").write_text(LWS)
    out = pytester.path / "report"
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        "--lwsc-run-id=t1",
        f"--lwsc-report-dir={out}",
        f"--junitxml={out / 'junit_01.xml'}",
        "suites",
    )
    render.render(out)
    render.render(out)  # a rewritten file stays as it is
    root = ET.parse(out / "junit_01.xml").getroot()
    assert root.get("name") == "lws-conformance" and [s.get("name") for s in root] == ["lwsc.lws"]
    suite = root[0]
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite}
    assert set(cases) == {
        "[LWS-NAME-001] test_names_hold",
        "[ROLL-ATOM-001 ROLL-AVAIL-001] test_rollout",
        "[ROLL-ATOM-001] test_warning_only",
    }
    failure = cases["[ROLL-ATOM-001 ROLL-AVAIL-001] test_rollout"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "ROLL-ATOM-001 warning (SHOULD): group 1 has Ready pods of revisions ['a', 'b']; "
        "ROLL-AVAIL-001 failed (MUST): 3 groups unavailable, maxUnavailable 1"
    )
    assert "Traceback" not in (failure.text or "") and "at suites/lws/test_j.py:8" in (failure.text or "")
    skipped = cases["[ROLL-ATOM-001] test_warning_only"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "ROLL-ATOM-001 warning (SHOULD): group 2 has Ready pods of revisions ['c', 'd']"
    assert isinstance(out, Path)
