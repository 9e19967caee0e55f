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

from .deviations import Deviation, applicable

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


@dataclass(frozen=True)
class Outcome:
    """One requirement in one test."""

    verdict: str
    detail: str = ""
    deviation: str = ""  # the matched (or no longer reproducing) deviation's id

    def to_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict, "detail": self.detail, "deviation": self.deviation}


def classify(
    requirement: str,
    level: str,
    raw: str,
    message: str,
    exception: str,
    versions: dict[str, str],
    devs: tuple[Deviation, ...] | list[Deviation],
    nodeid: str = "",
) -> Outcome:
    """The verdict of one requirement's raw outcome in test `nodeid`."""
    if raw not in RAW:
        raise ValueError(f"raw outcome {raw!r} is not one of {RAW}")
    if raw in ("error", "not-applicable"):
        return Outcome(raw, message)
    if raw == "skipped":
        return Outcome("not-run", message)
    known = applicable(devs, requirement, versions, nodeid)
    if raw == "failed":
        for dev in known:
            if dev.matches(exception, message):
                return Outcome("known-deviation", f"{dev.id}: {dev.title} ({dev.reference()})\n\n{message}", dev.id)
        return Outcome("warning" if level == "SHOULD" else "failed", message)
    for dev in known:
        if dev.kind == "deterministic":
            return Outcome(
                "deviation-fixed?",
                f"{dev.id} ({dev.reference()}) is listed for {dev.component} {versions.get(dev.component)} but did "
                "not reproduce: if upstream fixed it, narrow its `affected` range in fixtures/known-deviations.yaml",
                dev.id,
            )
    races = [d for d in known if d.kind == "race"]
    note = "; ".join(f"race {d.id} did not reproduce in this test ({d.reference()})" for d in races)
    return Outcome("passed", note)


def combine(outcomes: list[Outcome]) -> Outcome:
    """A requirement's verdict over all of its tests: the worst, except that passes next to
    skipped tests make `partial` (a case was not checked), and only skips make `not-run`."""
    if not outcomes:
        return Outcome("not-run", "none of its tests was selected")
    verdicts = {o.verdict for o in outcomes}
    if verdicts <= {"not-applicable"}:
        return outcomes[0]
    ran = [o for o in outcomes if o.verdict != "not-applicable"]
    # A deviation seen in one test is not fixed because another test did not show it.
    seen = {o.deviation for o in ran if o.verdict == "known-deviation"}
    ran = [Outcome("passed") if o.verdict == "deviation-fixed?" and o.deviation in seen else o for o in ran]
    if {o.verdict for o in ran} == {"not-run"}:
        return ran[0]
    worst = min(ran, key=lambda o: ORDER.index(o.verdict))
    skipped = [o for o in ran if o.verdict == "not-run"]
    if worst.verdict == "passed" and skipped:
        return Outcome("partial", f"{len(skipped)} of {len(ran)} tests skipped: {skipped[0].detail}")
    if worst.verdict == "passed":  # keep the notes (e.g. a race that did not reproduce)
        return Outcome("passed", "; ".join(dict.fromkeys(o.detail for o in ran if o.detail)))
    return worst


def gates(verdict: str, level: str, *, strict: bool = False, certify: bool = False) -> bool:
    """Does this verdict of a requirement of `level` fail the run (exit 1)?"""
    if level != "MUST":
        return False
    if verdict == "failed":
        return True
    if verdict == "deviation-fixed?":
        return strict
    return certify and verdict in ("error", "not-run", "partial")
