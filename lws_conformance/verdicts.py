"""What one requirement's outcome in one test means, and how outcomes combine (pure).

Raw outcomes (what happened to the requirement's checks in a test): passed, failed (an
assertion: the cluster did not do what the sentence says), error (the harness or infrastructure
broke: a fixture, a private cluster, an unexpected exception), skipped, not-applicable.

Verdicts (what a reader may conclude):
- passed            every check of the requirement held;
- failed            a MUST did not hold — LWS or Kueue broke a promise (exit 1);
- warning           a SHOULD did not hold (upstream intent, nothing documented; never gates);
- known-deviation   it failed with the symptom of a listed upstream bug affecting this version;
- deviation-fixed?  a listed deterministic deviation did not reproduce: update the list
                    (fails the run with --strict);
- error             nothing can be concluded, the harness or infrastructure broke (exit 3);
- partial           some of its tests passed, others were skipped: not every case was checked;
- not-applicable    the installed version predates the requirement;
- not-run           none of its tests ran (deselected, or every one skipped).
"""

from __future__ import annotations

from dataclasses import dataclass

from .deviations import Deviation, applicable, own_message

# Worst first: a requirement's verdict over several tests is the worst of theirs.
ORDER = (
    "failed",
    "error",
    "deviation-fixed?",
    "warning",  # before known-deviation: a SHOULD failing otherwise than the known symptom shows
    "known-deviation",
    "partial",
    "passed",
    "not-applicable",
    "not-run",
)
RAW = ("passed", "failed", "error", "skipped", "not-applicable")
PRIVATE = "private local cluster"  # where tests that kill controllers or fail nodes run
# Added to where a test ran when it wrote the kubelet's reports itself (pod status on the local
# cluster, whose kwok nodes run no container): `Scenario.require_simulated_kubelet`.
SIMULATED = "simulated kubelet"


# The skips of a provider's variant of a check: on the local cluster, a real-kubelet or kind test
# whose simulated-kubelet twin checks the same requirements there (`require_real_kubelet` /
# `require_kind` with `simulated_by`), and on real kubelets the twin itself
# (`require_simulated_kubelet`). Next to a test of the same requirement that ran, such a skip leaves
# no case unchecked, so it makes no `partial`; every other skip (a kind-only case without a twin)
# still does.
VARIANT_SKIPS = (
    "not-run on the local cluster: its simulated-kubelet variant",
    "not-run on real kubelets:",
)


def simulated(ran_on: str) -> str:
    """Where a test ran ("" = the cluster under test) once it simulated the kubelet."""
    return f"{ran_on}, {SIMULATED}" if ran_on else SIMULATED


DEVIATION_SEP = ", "  # an outcome's `deviation`: the matched ids, in order


@dataclass(frozen=True)
class Outcome:
    """One requirement in one test."""

    verdict: str
    detail: str = ""
    deviation: str = ""  # the matched (or no longer reproducing) deviations' ids, DEVIATION_SEP-joined

    def to_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict, "detail": self.detail, "deviation": self.deviation}


Failure = tuple[str, str]  # (exception class name, the assertion's whole message)


def classify(
    requirement: str,
    level: str,
    raw: str,
    message: str,
    exception: str,
    versions: dict[str, str],
    devs: tuple[Deviation, ...] | list[Deviation],
    nodeid: str = "",
    failures: list[Failure] | None = None,
) -> Outcome:
    """The verdict of one requirement's raw outcome in test `nodeid`. A failed outcome may carry
    several `failures` (every failed check of the requirement in the test, default the one
    `(exception, message)`): it is `known-deviation` only when every one of them shows the
    symptom of an applicable listed deviation; one unmatched failure makes it failed (MUST) or
    warning (SHOULD), whatever the others matched."""
    if raw not in RAW:
        raise ValueError(f"raw outcome {raw!r} is not one of {RAW}")
    if raw in ("error", "not-applicable"):
        return Outcome(raw, message)
    if raw == "skipped":
        return Outcome("not-run", message)
    known = applicable(devs, requirement, versions, nodeid)
    if raw == "failed":
        return _failed(level, failures or [(exception, message)], known)
    for dev in known:
        if dev.kind == "deterministic":
            return Outcome(
                "deviation-fixed?",
                f"{dev.id} ({dev.reference()}) is listed for {dev.component} {versions.get(dev.component)} but did "
                "not reproduce: if upstream fixed it, narrow its `affected` range in fixtures/known-deviations.yaml",
                dev.id,
            )
    races = [d for d in known if d.kind != "deterministic"]
    note = "; ".join(f"{d.kind} {d.id} did not reproduce in this test ({d.reference()})" for d in races)
    return Outcome("passed", note)


def _failed(level: str, failures: list[Failure], known: list[Deviation]) -> Outcome:
    """Each failure matched on its own; the first unmatched one decides the detail."""
    matched: list[tuple[Deviation, str]] = []
    unmatched: list[str] = []
    for exc, msg in failures:
        dev = next((d for d in known if d.matches(exc, msg)), None)
        if dev is None:
            unmatched.append(own_message(msg))  # as the check wrote it, without pytest's introspection
        else:
            matched.append((dev, own_message(msg)))
    if unmatched:
        head = (
            "" if len(failures) == 1 else f"{len(unmatched)} of {len(failures)} failures match no listed deviation\n\n"
        )
        also = "".join(f"\n\nalso failed, as listed deviation {d.id} ({d.reference()}): {m}" for d, m in matched)
        return Outcome("warning" if level == "SHOULD" else "failed", head + "\n\n".join(unmatched) + also)
    ids = list(dict.fromkeys(d.id for d, _m in matched))
    detail = "\n\n".join(f"{d.id}: {d.title} ({d.reference()})\n\n{m}" for d, m in matched)
    return Outcome("known-deviation", detail, DEVIATION_SEP.join(ids))


def deviation_ids(outcome: Outcome) -> list[str]:
    return [d for d in outcome.deviation.split(DEVIATION_SEP) if d]


def combine(outcomes: list[Outcome]) -> Outcome:
    """A requirement's verdict over all of its tests: the worst, except that passes next to
    skipped tests make `partial` (a case was not checked), and only skips make `not-run`. A
    provider's variant skipped (VARIANT_SKIPS) next to a test that ran counts for nothing."""
    if not outcomes:
        return Outcome("not-run", "none of its tests was selected")
    verdicts = {o.verdict for o in outcomes}
    if verdicts <= {"not-applicable"}:
        return outcomes[0]
    ran = [o for o in outcomes if o.verdict != "not-applicable"]
    # A deviation seen in one test is not fixed because another test did not show it.
    seen = {d for o in ran if o.verdict == "known-deviation" for d in deviation_ids(o)}
    ran = [Outcome("passed") if o.verdict == "deviation-fixed?" and o.deviation in seen else o for o in ran]
    if {o.verdict for o in ran} == {"not-run"}:
        return ran[0]
    # the variant of a check that is not this provider's, next to one that ran: no gap
    ran = [o for o in ran if not (o.verdict == "not-run" and o.detail.startswith(VARIANT_SKIPS))]
    worst = min(ran, key=lambda o: ORDER.index(o.verdict))
    skipped = [o for o in ran if o.verdict == "not-run"]
    if worst.verdict == "passed" and skipped:
        return Outcome("partial", f"{len(skipped)} of {len(ran)} tests skipped: {skipped[0].detail}")
    if worst.verdict == "passed":  # keep the notes (e.g. a race that did not reproduce)
        return Outcome("passed", "; ".join(dict.fromkeys(o.detail for o in ran if o.detail)))
    if worst.verdict == "known-deviation":  # every test's matched deviations, not one test's
        kd = [o for o in ran if o.verdict == "known-deviation"]
        ids = list(dict.fromkeys(d for o in kd for d in deviation_ids(o)))
        return Outcome(worst.verdict, "\n\n".join(dict.fromkeys(o.detail for o in kd)), DEVIATION_SEP.join(ids))
    return worst
