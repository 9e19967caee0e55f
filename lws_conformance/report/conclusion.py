"""What a run's requirement verdicts mean as a whole: its exit code and the line that says why (pure).

    0  conformant: every applicable MUST passed (with --accept-known-deviations: or failed only
       as a listed upstream bug of the installed versions, and the summary says which were accepted)
    1  not conformant: a MUST failed (not as a listed deviation); with --strict also a listed
       deterministic deviation that no longer reproduces; with --certify also a MUST that errored,
       did not run, ran partly, or failed as a listed deviation that was not accepted
    3  inconclusive: a requirement errored (the harness or the infrastructure broke), or the run
       did not judge every test it collected (pytest interrupted, a lost worker's tests)
    4  not conformant, listed upstream bugs only: every MUST that did not pass is a known
       deviation of the installed versions (each named on the first line)

SHOULD verdicts never change the code. The worst code wins in the order 1, 3, 4, 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import deviations, verdicts

CONFORMANT, FAILED, ERROR, KNOWN_ONLY = 0, 1, 3, 4
CODES = {
    CONFORMANT: "conformant",
    FAILED: "not conformant",
    ERROR: "inconclusive",
    KNOWN_ONLY: "not conformant: listed upstream bugs only",
}


@dataclass(frozen=True)
class Policy:
    """How a run is gated (lwsc run flags), recorded in summary.json."""

    certify: bool = False
    strict: bool = False
    accept_known_deviations: bool = False

    @staticmethod
    def from_meta(meta: dict[str, Any]) -> Policy:
        gate = meta.get("gate") or {}
        return Policy(
            certify=meta.get("mode") == "certify",
            strict=bool(gate.get("strict")),
            accept_known_deviations=bool(gate.get("accept_known_deviations")),
        )

    def to_dict(self) -> dict[str, bool]:
        return {"strict": self.strict, "accept_known_deviations": self.accept_known_deviations}


@dataclass(frozen=True)
class Conclusion:
    code: int
    line: str
    known: list[str] = field(default_factory=list)  # "ID (deviation: reference)" of each MUST known deviation
    accepted: bool = False  # the MUST known deviations were accepted (--accept-known-deviations)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "line": self.line, "must_known_deviations": self.known, "accepted": self.accepted}


def _gates(verdict: str, policy: Policy) -> bool:
    """Does a MUST requirement with this verdict make the run exit 1?"""
    if verdict == "failed":
        return True
    if verdict == "deviation-fixed?":
        return policy.strict
    if verdict == "known-deviation":
        return policy.certify and not policy.accept_known_deviations
    return policy.certify and verdict in ("error", "not-run", "partial")


def _known(row: dict[str, Any], devs: dict[str, deviations.Deviation]) -> str:
    ids = verdicts.deviation_ids(verdicts.Outcome(row["verdict"], deviation=row.get("deviation", "")))
    refs = [f"{d}: {devs[d].reference()}" if d in devs else d for d in ids]
    return f"{row['id']} ({'; '.join(refs) or 'no deviation recorded'})"


def conclude(
    rows: list[dict[str, Any]],
    policy: Policy,
    devs: list[deviations.Deviation] | None = None,
    gaps: list[str] | None = None,
) -> Conclusion:
    """The run's conclusion from its summary rows (dicts with id, level, verdict, deviation) and
    `gaps`: why the run did not judge every test it collected (`completeness.gaps`), which makes
    it inconclusive unless a MUST already failed."""
    by_id = {d.id: d for d in (deviations.default() if devs is None else devs)}
    must = [r for r in rows if r["level"] == "MUST"]
    known = [_known(r, by_id) for r in must if r["verdict"] == "known-deviation"]
    gating = [r for r in must if _gates(r["verdict"], policy)]
    if gating:
        listed = ", ".join(f"{r['id']} {r['verdict']}" for r in gating)
        return Conclusion(FAILED, f"{CODES[FAILED]}: {len(gating)} MUST requirement(s) did not pass: {listed}", known)
    errored = [r["id"] for r in rows if r["verdict"] == "error"]
    if errored:
        return Conclusion(ERROR, f"{CODES[ERROR]}: {len(errored)} requirement(s) errored: {', '.join(errored)}", known)
    if gaps:
        line = f"{CODES[ERROR]}: the run did not judge every test it collected: {'; '.join(gaps)}"
        return Conclusion(ERROR, line, known)
    if known and not policy.accept_known_deviations:
        return Conclusion(
            KNOWN_ONLY, f"{CODES[KNOWN_ONLY]}: {len(known)} MUST known deviation(s): {'; '.join(known)}", known
        )
    counts = _counts(must)
    if known:
        line = (
            f"{CODES[CONFORMANT]} with {len(known)} accepted MUST known deviation(s) (--accept-known-deviations; "
            f"{counts}): {'; '.join(known)}"
        )
        return Conclusion(CONFORMANT, line, known, accepted=True)
    return Conclusion(CONFORMANT, f"{CODES[CONFORMANT]}: every applicable MUST that ran passed ({counts})")


def _counts(must: list[dict[str, Any]]) -> str:
    """ "62 passed, 7 not-applicable, 2 not-run" of the MUST rows."""
    n: dict[str, int] = {}
    for r in must:
        n[r["verdict"]] = n.get(r["verdict"], 0) + 1
    return ", ".join(f"{n[v]} {v}" for v in verdicts.ORDER if v in n) or "no MUST requirement"
