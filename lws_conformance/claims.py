"""Requirements in pytest: gating, per-requirement claims, and each requirement's outcome per test.

A test names the requirements it proves with `@pytest.mark.requirement(ID)`. A test that proves
several of them attributes each check to its requirement with the `claim` fixture, so that every
requirement is reported on its own (a failed check of one never reds another, a requirement the
installed version predates is not-applicable while its siblings still run):

    def test_rollout(scenario, claim):
        ...                                     # shared steps: a failure here fails them all
        with claim("ROLL-SURGE-001"):
            assert peak <= replicas + max_surge, ...
        with claim("ROLL-AVAIL-001"):
            ...

A claim's failed assertion is recorded and the test goes on; at the end the test fails naming
every failed claim. A failure outside every claim (the shared steps) belongs to every requirement
of the test: it joins each claim's own failures, matched against the known deviations on its own.
A claim entered several times keeps every failure, and an `errors.Failures` raised in it counts as
one failure per message: each is matched against the known deviations on its own, so one matched
deviation never hides another failure of the same requirement.

In the worker, each phase's report gets a `lwsc-verdicts` user property: for every requirement
of the test, its verdict (`lws_conformance.verdicts`), known deviations matched by symptom
(`lws_conformance.deviations`). A test whose only failures are known deviations or SHOULD-level
warnings is reported to pytest as xfail, with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import allure
import pytest
from kubernetes.client.exceptions import ApiException

from . import catalogue, deviations, verdicts
from .errors import Failures
from .k8s import admission

VERDICTS_PROPERTY = "lwsc-verdicts"
PRIVATE = verdicts.PRIVATE
SIMULATED = verdicts.SIMULATED
_VERSIONS = pytest.StashKey[dict[str, str]]()
_NOT_APPLICABLE = pytest.StashKey[dict[str, str]]()
_CLAIMS = pytest.StashKey[dict[str, "_Claimed"]]()
RAN_ON = pytest.StashKey[str]()  # set by fixtures that run the test elsewhere (private clusters), and
# qualified by a test that simulates the kubelet (`mark_simulated`)


class ClaimsFailed(AssertionError):
    """Raised after the test body when one or more claims failed (each was recorded)."""


@dataclass
class _Claimed:
    raw: str  # passed | failed | not-applicable
    failures: list[verdicts.Failure] = field(default_factory=list)  # (exception, message), every one
    message: str = ""  # why not-applicable

    def all_messages(self) -> str:
        return "\n\n".join(m for _e, m in self.failures)


def failures_of(exc: BaseException) -> list[verdicts.Failure]:
    """One (exception, message) per distinct failure an exception carries."""
    if isinstance(exc, Failures):
        return [("AssertionError", m) for m in exc.messages]
    return [(type(exc).__name__, str(exc))]


def mark_simulated(item: pytest.Item) -> None:
    """Record that `item` simulates the kubelet: its where-it-ran reads "..., simulated kubelet"."""
    here = item.stash.get(RAN_ON, "")
    if SIMULATED not in here:
        item.stash[RAN_ON] = verdicts.simulated(here)


def requirement_ids(item: pytest.Item) -> list[str]:
    return [str(m.args[0]) for m in item.iter_markers("requirement")]


def gate(item: pytest.Item, versions: dict[str, str]) -> None:
    """Record the installed versions and which requirements they predate; skip the test only
    when every requirement it proves is not applicable."""
    reqs = catalogue.default()
    ids = requirement_ids(item)
    for rid in ids:
        if rid not in reqs:
            pytest.fail(f"test names requirement {rid}, which is not in {catalogue.CATALOGUE}", pytrace=False)
    for rid in ids:
        _allure_labels(reqs[rid])
        item.user_properties.append(("requirement", rid))  # JUnit: a <property> per requirement
    item.stash[_VERSIONS] = dict(versions)
    na = {rid: why for rid in ids if (why := catalogue.not_applicable(reqs[rid], versions))}
    item.stash[_NOT_APPLICABLE] = na
    if ids and len(na) == len(ids):
        pytest.skip("not-applicable: " + "; ".join(f"{rid} {why}" for rid, why in na.items()))


def _allure_labels(req: catalogue.Requirement) -> None:
    """The requirement, its level and its upstream sources on the test's Allure page."""
    allure.dynamic.label("requirement", req.id)
    allure.dynamic.tag(req.level)
    for s in req.sources:
        allure.dynamic.link(s.url, name=f"{req.id} {s.kind}: {s.quote[:80] or s.url}")


class Claims:
    """The `claim` fixture's value: `with claim("ID"): ...` attributes the block's assertions."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self._ids = set(requirement_ids(item))
        self._done = item.stash.setdefault(_CLAIMS, {})

    def applies(self, rid: str) -> bool:
        return rid not in self._item.stash.get(_NOT_APPLICABLE, {})

    @contextmanager
    def __call__(self, rid: str) -> Iterator[None]:
        if rid not in self._ids:
            raise ValueError(f"claim({rid!r}): the test is not marked @pytest.mark.requirement({rid!r})")
        if not self.applies(rid):
            self._done[rid] = _Claimed("not-applicable", message=self._item.stash[_NOT_APPLICABLE][rid])
        done = self._done.setdefault(rid, _Claimed("passed"))
        try:
            yield
        except AssertionError as exc:
            if done.raw != "not-applicable":  # a claim made several times keeps every failure
                done.raw = "failed"
                done.failures.extend(failures_of(exc))


# Set by the plugin for tests on a cluster it can check: given a phase's start and end
# (time.time()), says why the cluster under test was broken then (a component process died, or
# it was starved of CPU), or how another test's objects stood in the way, or None. A failure
# while it is broken is `error`, not a verdict.
INFRA_BROKEN = pytest.StashKey[Callable[[float, float], str | None]]()


@pytest.fixture
def claim(request: pytest.FixtureRequest) -> Claims:
    """Attribute checks to one of the test's requirements (see the module docstring)."""
    return Claims(request.node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    result = yield
    failed = {rid: c for rid, c in item.stash.get(_CLAIMS, {}).items() if c.raw == "failed"}
    if failed:
        raise ClaimsFailed("\n\n".join(f"{rid}: {c.all_messages()}" for rid, c in failed.items()))
    return result


def _raw(report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None) -> tuple[str, str, str]:
    """(raw outcome, exception name, message) of a phase as a whole."""
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = str(reason).removeprefix("Skipped: ")
        return "skipped", "", reason  # not-applicable comes from the catalogue's version rule alone (gate)
    if not report.failed:
        return "passed", "", ""
    exc = excinfo.value if excinfo else None
    name = type(exc).__name__ if exc is not None else ""
    message = str(exc) if exc is not None else report.longreprtext
    contract = isinstance(exc, AssertionError) or (
        isinstance(exc, ApiException) and not admission.rbac_denied(exc) and not admission.webhook_unreachable(exc)
    )
    return ("failed" if report.when == "call" and contract else "error"), name, message or report.longreprtext


def outcomes(item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo[None]) -> dict[str, verdicts.Outcome]:
    """Every requirement of the test: its verdict as of this phase."""
    reqs = catalogue.default()
    versions = item.stash.get(_VERSIONS, {})
    na = item.stash.get(_NOT_APPLICABLE, {})
    claimed = item.stash.get(_CLAIMS, {})
    raw, exc, message = _raw(report, call.excinfo)
    claims_only = isinstance(call.excinfo.value if call.excinfo else None, ClaimsFailed)
    broken: str | None = None
    if report.failed and INFRA_BROKEN in item.stash:
        broken = item.stash[INFRA_BROKEN](call.start, call.stop)
    whole = failures_of(call.excinfo.value) if raw == "failed" and call.excinfo and not claims_only else None
    unclaimed = _never_claimed(item)
    out = {}
    for rid in requirement_ids(item):
        r, e, m, f = raw, exc, message, whole
        if rid in na:
            r, e, m, f = "not-applicable", "", na[rid], None
        elif report.when == "call" and rid in claimed:
            c = claimed[rid]
            r, e, m, f = c.raw, "", c.all_messages() or c.message, c.failures or None
            if r != "not-applicable" and raw in ("failed", "error") and not claims_only:
                r, e, m, f = _with_outside_failure(rid, c, raw, exc, message, whole)
        elif report.when == "call" and claimed and (claims_only or raw == "passed"):
            if rid not in unclaimed:
                continue  # this case of the test claims other requirements; another case claims this one
            r, e, m, f = "error", "UnclaimedRequirement", unclaimed[rid], None
        if r in ("failed", "error") and broken:  # name the dead or starved component, whatever the failure looked like
            r, e, m = "error", "InfraError", f"{broken}\n\n{m}"
        out[rid] = verdicts.classify(rid, reqs[rid].level, r, m, e, versions, deviations.default(), item.nodeid, f)
    return out


def _with_outside_failure(
    rid: str, c: _Claimed, raw: str, exc: str, message: str, whole: list[verdicts.Failure] | None
) -> tuple[str, str, str, list[verdicts.Failure] | None]:
    """(raw, exception, message, failures) of a claimed requirement whose test then failed in code
    outside every claim (the shared steps). That failure belongs to every requirement of the test,
    whatever its claims recorded: an assertion joins the claim's own failures, each matched against
    the known deviations on its own (a claim that failed as a listed deviation never hides it); an
    unexpected exception makes the requirement `error`."""
    if raw == "error":
        own = f" ({rid}'s own checks passed)" if c.raw == "passed" else ""
        return "error", exc, f"the test failed outside its claims{own}: {message}", None
    failures = c.failures + (whole or [(exc, message)])  # as raised: a listed symptom still matches it
    return "failed", exc, "\n\n".join(m for _e, m in failures), failures


def _never_claimed(item: pytest.Item) -> dict[str, str]:
    """Requirement -> why it is an error: the applicable requirements a test that claims checks is
    marked with but never claimed. One test, one scenario: such a requirement was not checked, and
    must not read passed or vanish into not-run. The cases of a parametrized test may each claim
    their own requirement and say nothing of the others."""
    claimed = item.stash.get(_CLAIMS, {})
    if not claimed or getattr(item, "callspec", None) is not None:
        return {}
    na = item.stash.get(_NOT_APPLICABLE, {})
    return {
        rid: (
            f"the test is marked with {rid} but never entered claim({rid!r}) (it claimed "
            f"{', '.join(sorted(claimed))}): {rid}'s checks are not attributed, so it cannot read passed; "
            f"put its checks under claim({rid!r}) (a harness bug, not a verdict on LWS or Kueue)"
        )
        for rid in requirement_ids(item)
        if rid not in claimed and rid not in na
    }


_TOLERATED = ("known-deviation", "warning", "passed", "not-applicable", "deviation-fixed?")


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if not requirement_ids(item) or (report.when != "call" and report.passed):
        return report
    found = outcomes(item, report, call)
    ran_on = item.stash.get(RAN_ON, "")
    report.user_properties.append(
        (VERDICTS_PROPERTY, json.dumps({"ran_on": ran_on, "requirements": {k: v.to_dict() for k, v in found.items()}}))
    )
    unclaimed = _never_claimed(item) if report.when == "call" else {}
    if report.passed and unclaimed:  # the test body passed, but not every requirement it names was checked
        report.outcome = "failed"
        report.longrepr = "\n".join(unclaimed.values())
    expected = {rid: o for rid, o in found.items() if o.verdict in ("known-deviation", "warning")}
    if report.failed and report.when == "call" and expected and all(o.verdict in _TOLERATED for o in found.values()):
        report.outcome = "skipped"
        report.wasxfail = "; ".join(
            f"{rid} {o.verdict}" + (f" ({o.deviation})" if o.deviation else "") for rid, o in expected.items()
        )
    return report


def read_verdicts(user_properties: list[tuple[str, Any]]) -> tuple[str, dict[str, verdicts.Outcome]]:
    """(ran_on, requirement -> outcome) from one phase report's user properties."""
    for key, value in user_properties:
        if key == VERDICTS_PROPERTY:
            doc = json.loads(value)
            return str(doc.get("ran_on", "")), {k: verdicts.Outcome(**v) for k, v in doc["requirements"].items()}
    return "", {}
