"""Known deviations: upstream bugs the harness expects, as data (`fixtures/known-deviations.yaml`).

A deviation names the requirement it breaks, the component versions it affects, its kind
(`deterministic`: every run shows it; `race`: some tries do) and a *symptom*: a regular
expression the WHOLE failure message must match (`re.fullmatch`, so a symptom describes the
entire message, not a fragment of it; `.` does not cross lines unless the symptom says so with
`(?s:...)`), and optionally the exception type. A failure is
`known-deviation` only when an applicable deviation's symptom matches it; any other failure of the
same test stays `failed`. Each deviation cites the upstream issue/PR or, where none exists yet, a
ready-to-file report in the repo (`docs/upstream/<id>.md`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from . import resources
from .catalogue import parse_version, reached

ROOT = resources.root()
FILE = resources.fixtures() / "known-deviations.yaml"
KINDS = ("deterministic", "race", "conditional")


@dataclass(frozen=True)
class Deviation:
    id: str
    requirement: str
    component: str
    introduced: str | None  # first affected version (None: every version the requirement covers)
    # first version without it, a release or a main build `vX.Y.Z+main.N` (catalogue.reached); one
    # per release line when the fix was backported (`fixed_in`)
    fixed: tuple[str, ...]
    kind: str
    symptom: re.Pattern[str]
    exception: str | None  # exception class name the failure must have, if set
    title: str
    upstream: tuple[str, ...]  # issue / PR URLs
    fixed_on_main: str = ""  # e.g. "https://github.com/kubernetes-sigs/lws/pull/963 (no release yet)"
    report: str = ""  # docs/upstream/<id>.md when no upstream issue exists yet
    tests: re.Pattern[str] | None = None  # the test node ids it shows in (default: every test)

    def expected_in(self, nodeid: str) -> bool:
        return self.tests is None or self.tests.search(nodeid) is not None

    def affects(self, versions: dict[str, str]) -> bool:
        have = versions.get(self.component)
        if have is None:
            return False
        if self.introduced and not reached(have, self.introduced):
            return False
        return not fixed_in(have, self.fixed)

    def matches(self, exception: str, message: str) -> bool:
        """Does a failure show this deviation's symptom? The symptom must match the assertion's
        whole message (`own_message`: pytest's introspection, a trailing "\nassert …", dropped)."""
        if self.exception and exception != self.exception:
            return False
        return self.symptom.fullmatch(own_message(message)) is not None

    def reference(self) -> str:
        """The upstream issue/PR, or, where none was filed, the ready-to-file report, saying so."""
        return ", ".join(self.upstream) or f"not reported upstream yet: ready-to-file report {self.report}"


def fixed_in(have: str, fixed: tuple[str, ...]) -> bool:
    """Does version `have` carry the fix? With one `fixed` version: from it on. With several (a fix
    backported to release lines, e.g. v0.16.7, v0.17.2, v0.18.0): a version on the line of one of
    them from that one on, and any later line than the newest; an older line, or a line none of
    them names, keeps the bug."""
    if not fixed:
        return False
    if len(fixed) == 1:
        return reached(have, fixed[0])
    line = parse_version(have)[:2]
    same = [f for f in fixed if parse_version(f)[:2] == line]
    if same:
        return reached(have, same[0])
    return line > max(parse_version(f)[:2] for f in fixed)


def own_message(message: str) -> str:
    """A failure message as the check wrote it: pytest's assertion rewriting appends its
    introspection ("\nassert ...") and indents every further line of the message by two spaces;
    both are undone. Messages not rewritten by pytest (raised explicitly) are kept as they are."""
    own, rewritten, _ = message.partition("\nassert ")
    return own.replace("\n  ", "\n") if rewritten else own


def _versions(raw: object) -> tuple[str, ...]:
    """`fixed:` as one version or a list of them."""
    if not raw:
        return ()
    return tuple(str(v) for v in raw) if isinstance(raw, list) else (str(raw),)


def _one(raw: dict[str, object]) -> Deviation:
    did = str(raw["id"])
    affected = raw.get("affected") or {}
    assert isinstance(affected, dict)
    upstream = tuple(str(u) for u in raw.get("upstream") or ())  # type: ignore[attr-defined]
    dev = Deviation(
        id=did,
        requirement=str(raw["requirement"]),
        component=str(raw["component"]),
        introduced=str(affected["from"]) if affected.get("from") else None,
        fixed=_versions(affected.get("fixed")),
        kind=str(raw["kind"]),
        symptom=re.compile(str(raw["symptom"])),
        exception=str(raw["exception"]) if raw.get("exception") else None,
        title=" ".join(str(raw["title"]).split()),
        upstream=upstream,
        fixed_on_main=str(raw.get("fixed_on_main") or ""),
        report=str(raw.get("report") or ""),
        tests=re.compile(str(raw["tests"])) if raw.get("tests") else None,
    )
    if dev.kind not in KINDS:
        raise ValueError(f"deviation {did}: kind {dev.kind!r} is not one of {KINDS}")
    if not dev.upstream and not dev.report:
        raise ValueError(f"deviation {did}: name the upstream issue/PR, or write docs/upstream/<id>.md")
    if dev.report and not (ROOT / dev.report).is_file():
        raise ValueError(f"deviation {did}: report {dev.report} does not exist")
    if any(not u.startswith("https://") for u in dev.upstream):
        raise ValueError(f"deviation {did}: upstream references must be https:// URLs")
    for v in (dev.introduced, *dev.fixed):
        if v:
            parse_version(v)
    lines = [parse_version(f)[:2] for f in dev.fixed]
    if len(lines) != len(set(lines)):
        raise ValueError(f"deviation {did}: `fixed` names one version per release line")
    return dev


def load(path: Path = FILE) -> list[Deviation]:
    raws = (yaml.safe_load(path.read_text()) or {}).get("deviations", []) if path.is_file() else []
    devs = [_one(r) for r in raws]
    ids = [d.id for d in devs]
    if len(ids) != len(set(ids)):
        raise ValueError(f"duplicate deviation ids in {path}")
    return devs


@cache
def default() -> tuple[Deviation, ...]:
    return tuple(load())


def applicable(
    devs: tuple[Deviation, ...] | list[Deviation], requirement: str, versions: dict[str, str], nodeid: str = ""
) -> list[Deviation]:
    return [d for d in devs if d.requirement == requirement and d.affects(versions) and d.expected_in(nodeid)]
