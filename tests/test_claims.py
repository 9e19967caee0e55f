"""The requirement machinery run through pytest itself (pytester): claims, known deviations by
symptom, SHOULD warnings, not-applicable siblings, errors — down to summary.json and lwsc's exit
code. The cluster fixture is replaced by a handle with fixed versions; nothing else is faked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lws_conformance.cli import _exit_code

PAIRING = (
    "invariant 'condition-pairing' violated at event #3 (seq 3, t=1.000s, MODIFIED LeaderWorkerSet/x): "
    "UpdateInProgress=True without Progressing=True at the update's first status write: {'Progressing': 'False'}; "
    "lasted 1 status write(s), "
    "then paired at seq 9 [objects: LeaderWorkerSet/x]\ntimeline: /tmp/x.timeline.json\npicture: /tmp/x.svg"
)

TESTS = f"""
import pytest

@pytest.mark.requirement("ROLL-SURGE-001")
@pytest.mark.requirement("ROLL-COND-002")
@pytest.mark.requirement("ROLL-ATOM-001")
def test_should_and_deviation_only(claim):
    with claim("ROLL-SURGE-001"):
        assert True
    with claim("ROLL-COND-002"):
        assert False, {PAIRING!r}
    with claim("ROLL-ATOM-001"):
        assert False, "group 1 has Ready pods of revisions ['a', 'b']"

@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("LWS-VALID-003")
def test_sibling_not_applicable(claim):
    with claim("LWS-VALID-003"):
        assert False, "v0.9.0 does not validate this"
    with claim("ROLL-REV-001"):
        assert 1 == 1
"""

MUST_FAILS = """
import pytest

@pytest.mark.requirement("ROLL-AVAIL-001")
@pytest.mark.requirement("ROLL-COND-002")
def test_must_fails(claim):
    with claim("ROLL-AVAIL-001"):
        assert False, "3 groups unavailable, maxUnavailable 1"
    with claim("ROLL-COND-002"):
        assert False, "UpdateInProgress=True without Progressing=True: {}; lasted 7 status write(s), never paired"
"""

BROKEN_FIXTURE = """
import pytest

@pytest.fixture
def private_thing():
    raise RuntimeError("private cluster did not come up")

@pytest.mark.requirement("ROLL-FAULT-001")
def test_needs_fixture(private_thing):
    pass
"""


def _run(pytester: pytest.Pytester, *args: str, **files: str) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    pytester.makepyfile(**files)
    out = pytester.path / "report"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "0", "--lwsc-run-id=t1", f"--lwsc-report-dir={out}", *args
    )
    doc = json.loads((out / "summary.json").read_text())
    return result, {r["id"]: r for r in doc["requirements"]}


@pytest.mark.usefixtures("plugin_pytester")
def test_known_deviation_and_should_warning_make_an_xfail_and_exit_0(pytester: pytest.Pytester) -> None:
    result, rows = _run(pytester, test_a=TESTS)
    result.assert_outcomes(passed=1, xfailed=1)
    assert rows["ROLL-SURGE-001"]["verdict"] == "passed"
    assert rows["ROLL-COND-002"]["verdict"] == "known-deviation"
    assert rows["ROLL-COND-002"]["deviation"] == "lws-cond-pairing"
    atom = rows["ROLL-ATOM-001"]
    assert atom["verdict"] == "warning" and "Ready pods of revisions" in atom["detail"]
    assert rows["LWS-VALID-003"]["verdict"] == "not-applicable"
    assert rows["ROLL-REV-001"]["verdict"] == "passed"
    assert rows["LWS-NAME-001"]["verdict"] == "not-run"
    assert rows["ROLL-COND-002"]["level"] == "SHOULD" and rows["ROLL-SURGE-001"]["level"] == "MUST"
    assert any(s["url"].startswith("https://") for s in rows["ROLL-SURGE-001"]["sources"])
    assert _exit_code(0, pytester.path / "report") == 0


@pytest.mark.usefixtures("plugin_pytester")
def test_a_different_symptom_is_a_failure_and_exit_1(pytester: pytest.Pytester) -> None:
    result, rows = _run(pytester, test_b=MUST_FAILS)
    result.assert_outcomes(failed=1)
    assert rows["ROLL-AVAIL-001"]["verdict"] == "failed" and "maxUnavailable 1" in rows["ROLL-AVAIL-001"]["detail"]
    assert rows["ROLL-COND-002"]["verdict"] == "warning"  # not the one-write symptom: no known deviation
    assert _exit_code(1, pytester.path / "report") == 1


@pytest.mark.usefixtures("plugin_pytester")
def test_a_setup_error_is_error_never_not_run_and_exit_3(pytester: pytest.Pytester) -> None:
    result, rows = _run(pytester, test_c=BROKEN_FIXTURE)
    result.assert_outcomes(errors=1)
    assert rows["ROLL-FAULT-001"]["verdict"] == "error" and "did not come up" in rows["ROLL-FAULT-001"]["detail"]
    assert _exit_code(1, pytester.path / "report") == 3
    _run(pytester, "--lwsc-mode=certify", test_c=BROKEN_FIXTURE)
    assert _exit_code(1, pytester.path / "report") == 1  # certify: an errored MUST fails


RACE = (
    "kubernetes-sigs/lws#998 picture in 1 of 4 groups whose worker's Node was deleted: workers n-1-1 replaced "
    "alone (new UID) after pod GC removed them, leaders n-1 kept their UIDs for the whole rebuild deadline and "
    "30 s after it; the other groups were recreated whole"
)
NODE_LOSS = f"""
import pytest
from lws_conformance.errors import Failures

@pytest.mark.requirement("CHAOS-NODE-001")
@pytest.mark.parametrize("second", ["none", "race", "other", "several"])
def test_a_node_that_never_returns(claim, second):
    with claim("CHAOS-NODE-001"):
        assert False, {RACE!r}
    with claim("CHAOS-NODE-001"):
        assert True  # a later pass never hides the earlier failure
    with claim("CHAOS-NODE-001"):
        if second == "race":
            assert False, {RACE!r}
        if second == "other":
            assert False, "group 2 was not recreated within 10 s after its worker's Node was taken out of service"
        if second == "several":
            raise Failures([{RACE!r}, "leader n-3 is Running on the deleted Node"])
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_a_second_failure_after_a_matched_deviation_reads_failed(pytester: pytest.Pytester) -> None:
    """The node-loss test claims CHAOS-NODE-001 several times: every failure counts."""
    _result, rows = _run(pytester, test_n=NODE_LOSS)
    verdicts = {t["nodeid"].split("[")[1].rstrip("]"): t["verdict"] for t in rows["CHAOS-NODE-001"]["tests"]}
    assert verdicts == {"none": "known-deviation", "race": "known-deviation", "other": "failed", "several": "failed"}
    assert rows["CHAOS-NODE-001"]["verdict"] == "failed"
    assert _exit_code(1, pytester.path / "report") == 1


@pytest.mark.usefixtures("plugin_pytester")
def test_must_known_deviations_only_exit_4_unless_accepted(pytester: pytest.Pytester) -> None:
    only = NODE_LOSS.replace('["none", "race", "other", "several"]', '["none", "race"]')
    result, rows = _run(pytester, test_n=only)
    doc = json.loads((pytester.path / "report" / "summary.json").read_text())
    assert rows["CHAOS-NODE-001"]["verdict"] == "known-deviation"
    assert _exit_code(result.ret, pytester.path / "report") == 4 and doc["conclusion"]["code"] == 4
    assert (
        "CHAOS-NODE-001 (lws-998-node-loss: https://github.com/kubernetes-sigs/lws/issues/998"
        in (doc["conclusion"]["line"])
    )
    md = (pytester.path / "report" / "summary.md").read_text().splitlines()
    assert md[2].startswith("**not conformant: listed upstream bugs only: 1 MUST known deviation(s)")
    assert "## MUST promises broken by listed upstream bugs" in md
    result, _rows = _run(pytester, "--lwsc-accept-known-deviations", test_n=only)
    doc = json.loads((pytester.path / "report" / "summary.json").read_text())
    assert result.ret == 0 and _exit_code(result.ret, pytester.path / "report") == 0
    assert doc["conclusion"]["accepted"] and doc["gate"]["accept_known_deviations"]
    _run(pytester, "--lwsc-mode=certify", test_n=only)
    assert _exit_code(1, pytester.path / "report") == 1  # certify: a MUST known deviation fails unless accepted


PROFILE_SKIP = """
import pytest

@pytest.mark.requirement("KUEUE-MK-001")
def test_needs_multikueue():
    pytest.skip("not-applicable: the cluster under test is no MultiKueue set")
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_a_skip_is_not_run_whatever_its_text_says_and_fails_certify(pytester: pytest.Pytester) -> None:
    """not-applicable comes from the catalogue's version rule only, never from a skip reason."""
    _result, rows = _run(pytester, test_s=PROFILE_SKIP)
    assert rows["KUEUE-MK-001"]["verdict"] == "not-run"
    assert _exit_code(0, pytester.path / "report") == 0
    _run(pytester, "--lwsc-mode=certify", test_s=PROFILE_SKIP)
    assert _exit_code(0, pytester.path / "report") == 1


FORBIDDEN = """
import pytest
from kubernetes.client.exceptions import ApiException

def _forbidden(body):
    exc = ApiException(status=403, reason="Forbidden")
    exc.body = body
    return exc

@pytest.mark.requirement("LWS-NAME-001")
def test_the_harness_lacks_a_permission():
    raise _forbidden('pods is forbidden: User "system:serviceaccount:lwsc-system:lwsc-conformance" '
                     'cannot list resource "pods" in API group "" in the namespace "x"')

@pytest.mark.requirement("LWS-ENV-001")
def test_a_webhook_refuses():
    raise _forbidden('admission webhook "vleaderworkerset.kb.io" denied the request: '
                     'pods "x" is forbidden: User "admin" may not do this')

@pytest.mark.requirement("ROLL-SURGE-001")
def test_a_webhook_not_listening(claim):
    exc = ApiException(status=500, reason="Internal Server Error")
    exc.body = ('{"kind":"Status","message":"Internal error occurred: failed calling webhook '
                '\\"mleaderworkerset.kb.io\\": failed to call webhook: Post \\"https://127.0.0.1:19320/mutate\\": '
                'dial tcp 127.0.0.1:19320: connect: connection refused","reason":"InternalError","code":500}')
    with claim("ROLL-SURGE-001"):
        raise exc
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_an_rbac_403_is_error_and_a_webhook_403_a_verdict(pytester: pytest.Pytester) -> None:
    """The harness's credentials lacking a permission (a vendor's least-privilege ServiceAccount)
    is infrastructure; a webhook refusing an object is LWS or Kueue answering."""
    _result, rows = _run(pytester, test_f=FORBIDDEN)
    assert rows["LWS-NAME-001"]["verdict"] == "error" and "cannot list" in rows["LWS-NAME-001"]["detail"]
    assert rows["LWS-ENV-001"]["verdict"] == "failed"
    # the API server could not reach the webhook (its controller restarting): the rule was never
    # evaluated, so no verdict (seen under load on a private cluster, read as a MUST failure before)
    surge = rows["ROLL-SURGE-001"]
    assert surge["verdict"] == "error" and "failed calling webhook" in surge["detail"]


OUTSIDE = """
import pytest

@pytest.mark.requirement("ROLL-SURGE-001")
def test_fails_after_its_claim(claim):
    with claim("ROLL-SURGE-001"):
        assert True
    assert False, "a check no claim covers"

@pytest.mark.requirement("ROLL-AVAIL-001")
def test_crashes_after_its_claim(claim):
    with claim("ROLL-AVAIL-001"):
        assert True
    raise RuntimeError("the harness broke")
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_a_failure_outside_every_claim_never_leaves_a_claimed_requirement_passed(pytester: pytest.Pytester) -> None:
    """An assertion in the shared steps is a failure of every requirement of the test (MUST:
    failed), whatever its claims recorded; an unexpected exception there is error."""
    result, rows = _run(pytester, test_o=OUTSIDE)
    result.assert_outcomes(failed=2)
    row = rows["ROLL-SURGE-001"]
    assert row["verdict"] == "failed" and "no claim covers" in row["detail"]
    crash = rows["ROLL-AVAIL-001"]
    assert crash["verdict"] == "error" and "outside its claims" in crash["detail"]
    assert "harness broke" in crash["detail"]


AFTER_DEVIATION = f"""
import pytest

@pytest.mark.requirement("CHAOS-NODE-001")
@pytest.mark.parametrize("outside", ["unrelated", "same"])
def test_a_node_that_never_returns(claim, outside):
    with claim("CHAOS-NODE-001"):
        assert False, {RACE!r}
    assert False, "leader n-3 is Running on the deleted Node" if outside == "unrelated" else {RACE!r}

@pytest.mark.requirement("ROLL-COND-002")
def test_a_should_deviation_then_an_unrelated_failure(claim):
    with claim("ROLL-COND-002"):
        assert False, {PAIRING!r}
    assert False, "the LWS lost its UpdateInProgress condition"
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_a_failure_outside_claims_is_never_swallowed_by_a_matched_deviation(pytester: pytest.Pytester) -> None:
    """A claim that failed as a listed deviation, then an unrelated assertion outside every claim:
    the later failure counts (MUST failed, SHOULD warning, with its own message), and the test is
    no xfail; an outside failure that itself shows the listed symptom stays the deviation."""
    result, rows = _run(pytester, test_d=AFTER_DEVIATION)
    tests = {t["nodeid"].split("[")[1].rstrip("]"): t["verdict"] for t in rows["CHAOS-NODE-001"]["tests"]}
    assert tests == {"unrelated": "failed", "same": "known-deviation"}
    must = rows["CHAOS-NODE-001"]["detail"]
    assert "leader n-3 is Running on the deleted Node" in must and "also failed, as listed deviation lws-998" in must
    should = rows["ROLL-COND-002"]
    assert should["verdict"] == "warning" and "lost its UpdateInProgress" in should["detail"]
    assert rows["CHAOS-NODE-001"]["verdict"] == "failed"
    result.assert_outcomes(failed=1, xfailed=2)  # the deviation alone, and the SHOULD's warning
    assert _exit_code(1, pytester.path / "report") == 1


INCOMPLETE = """
import pytest
from lws_conformance.observe import Timeline, verify

@pytest.mark.requirement("ROLL-SURGE-001")
@pytest.mark.requirement("ROLL-AVAIL-001")
def test_a_watch_gap(claim, tmp_path):
    tl = Timeline("ns", events=[], complete=True, gaps=[{"kind": "Pod", "t": 3.2}])
    with claim("ROLL-SURGE-001"):
        verify(tl, tmp_path, "gap")
    with claim("ROLL-AVAIL-001"):
        assert True
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_an_incomplete_recording_is_error_never_a_must_failure(pytester: pytest.Pytester) -> None:
    """The harness's own watch missed events: the requirements the recording would have proven
    read error ("recording incomplete: …"), exit 3, not failed (exit 1) blaming LWS."""
    result, rows = _run(pytester, test_g=INCOMPLETE)
    result.assert_outcomes(failed=1)
    surge = rows["ROLL-SURGE-001"]
    assert surge["verdict"] == "error" and "recording incomplete" in surge["detail"] and "re-listed" in surge["detail"]
    assert rows["ROLL-AVAIL-001"]["verdict"] == "error"  # the test stopped there: its later checks never ran
    assert _exit_code(1, pytester.path / "report") == 3


UNCLAIMED = """
import pytest

@pytest.mark.requirement("ROLL-SURGE-001")
@pytest.mark.requirement("ROLL-AVAIL-001")
def test_claims_one_of_two(claim):
    assert True  # ROLL-AVAIL-001's checks, outside every claim
    with claim("ROLL-SURGE-001"):
        assert True

@pytest.mark.requirement("ROLL-SURGE-001")
@pytest.mark.requirement("ROLL-AVAIL-001")
@pytest.mark.parametrize("rid", ["ROLL-SURGE-001", "ROLL-AVAIL-001"])
def test_one_requirement_per_case(claim, rid):
    with claim(rid):
        assert True
"""


@pytest.mark.usefixtures("plugin_pytester")
def test_a_requirement_a_test_never_claims_is_an_error_not_a_silent_not_run(pytester: pytest.Pytester) -> None:
    """A test that claims some of its requirements and never claims another checked nothing under
    that one's name: the requirement reads error (exit 3), the test fails naming it; the cases of a
    parametrized test may each claim their own."""
    result, rows = _run(pytester, test_u=UNCLAIMED)
    unclaimed = rows["ROLL-AVAIL-001"]
    tests = {t["nodeid"].split("::")[-1]: t["verdict"] for t in unclaimed["tests"]}
    assert tests == {
        "test_claims_one_of_two": "error",
        "test_one_requirement_per_case[ROLL-AVAIL-001]": "passed",
    }, unclaimed["tests"]
    assert unclaimed["verdict"] == "error" and "never entered claim('ROLL-AVAIL-001')" in unclaimed["detail"]
    assert rows["ROLL-SURGE-001"]["verdict"] == "passed"
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret != 0
