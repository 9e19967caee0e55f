"""The requirement catalogue: id, level, one statement, upstream sources, since-version, tests.

In the spirit of Kubernetes' conformance.yaml: requirements are data (`fixtures/requirements/*.yaml`),
tests name the requirement they prove with `@pytest.mark.requirement("LWS-...")`, and reports
group verdicts by requirement. Gating reads the installed versions: a requirement newer than the
installed component is "not-applicable", never failed and never silently skipped.

Levels (RFC 2119 words, as the AI-conformance KARs use them):
- MUST: an upstream document, API field comment or KEP promises the behaviour, by default (not
  behind a feature gate that is off by default). Gates a release.
- SHOULD: only upstream code, tests, issues or release notes show the intent, or the behaviour
  needs a default-off gate. Reported, never gates.
A release note is not a promise: a CHANGELOG entry is a PR's own summary of what it changed
(`kind: changelog`, with its section). Only the upgrade notes ("Actions Required Before
Upgrading", formerly "Urgent Upgrade Notes"), written for users to act on, state a contract or a
default and may back a MUST; "Bug or Regression", "Feature", "API Change" and the other sections
never do. Every requirement cites its upstream sources; the harness's own notes (`kind: harness`)
and the declaration of a default-off gate (`kind: alpha`) may be cited in addition, never alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from . import resources

CATALOGUE = resources.fixtures() / "requirements"
_ID = re.compile(r"^(LWS|KUEUE|ROLL|CHAOS|SCALE)-[A-Z]+-\d{3}$")
LEVELS = ("MUST", "SHOULD")
# What each kind of source is: promises (doc, api, kep) make a MUST; intent (code, test, issue)
# makes a SHOULD; a `changelog` entry promises only from a section of CONTRACT_SECTIONS; `alpha`
# quotes the declaration of a feature gate that is off by default, which the behaviour needs (no
# MUST then); `harness` is our own summary. `alpha` and `harness` never count on their own.
PROMISE_KINDS = ("doc", "api", "kep")
INTENT_KINDS = ("code", "test", "issue")
SOURCE_KINDS = (*PROMISE_KINDS, "changelog", *INTENT_KINDS, "alpha", "harness")
# The sections of a CHANGELOG (Kubernetes' release-notes tool). The upgrade notes state a contract
# or a default users must act on; every other section summarises what a PR changed.
CONTRACT_SECTIONS = ("Actions Required Before Upgrading", "Urgent Upgrade Notes")
CHANGELOG_SECTIONS = (
    *CONTRACT_SECTIONS,
    "API Change",
    "Feature",
    "Bug or Regression",
    "Deprecation",
    "Documentation",
    "Other (Cleanup or Flake)",
    "Failing Test",
)
# A release note wherever it is published: a CHANGELOG file or a GitHub release page.
_RELEASE_NOTE_URL = re.compile(r"/CHANGELOG(?:[/.-]|$)|/releases/tag/", re.I)
_DEFAULT_OFF = re.compile(r"\bdefault:?\s*false\b", re.I)


@dataclass(frozen=True)
class Source:
    kind: str  # one of SOURCE_KINDS
    url: str  # a page, or a file pinned to a tag/commit (…/blob/v0.9.0/path#L10-L12)
    quote: str = ""  # the sentence, comment or assertion, verbatim (whitespace folded)
    section: str = ""  # a changelog entry's section (one of CHANGELOG_SECTIONS)

    @property
    def upstream(self) -> bool:
        return self.kind != "harness"

    @property
    def promises(self) -> bool:
        """Can this source alone back a MUST?"""
        return self.kind in PROMISE_KINDS or (self.kind == "changelog" and self.section in CONTRACT_SECTIONS)


@dataclass(frozen=True)
class Requirement:
    id: str
    area: str
    statement: str
    since: dict[str, str]  # component -> first version where it holds
    tests: tuple[str, ...]
    level: str = "MUST"
    sources: tuple[Source, ...] = ()
    # Why the default run (the local cluster: kwok nodes, no container runs) has no test of it, not
    # even one writing what a kubelet would report: what only real kubelets, processes or nodes
    # show. "" when a test of it runs there.
    not_simulated: str = ""
    # component -> the first version where the requirement no longer applies: what it checks was
    # removed upstream (e.g. a feature gate locked on); {} while it still applies.
    until: dict[str, str] = field(default_factory=dict)

    @property
    def gating(self) -> bool:
        """Does a failure of this requirement fail the run?"""
        return self.level == "MUST"


def parse_version(v: str) -> tuple[int, int, int]:
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", v)
    if not m:
        raise ValueError(f"not a version: {v!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


_ON_MAIN = re.compile(r"\+main\.(\d+)(?:@|$)")


def reached(have: str, mark: str) -> bool:
    """Does the code of version `have` contain what version `mark` introduced?

    Releases compare as versions. A build from main is named `vX.Y.Z+main.N@<sha>` (gitsource):
    N first-parent commits after the tag vX.Y.Z on main, which squash-merges, so along main
    (tag, N) orders the code. A main mark (`since: v0.10.0+main.6`, the PR's commit) is reached by
    a main build at or after it and by the next minor release on; patch releases of the same minor
    are cut from release branches and are not assumed to carry it. A release mark is reached by a
    main build whose tag is at or after it."""
    have_main, mark_main = _ON_MAIN.search(have), _ON_MAIN.search(mark)
    hv, mv = parse_version(have), parse_version(mark)
    if not mark_main:
        return hv >= mv
    if have_main:
        return (hv, int(have_main.group(1))) >= (mv, int(mark_main.group(1)))
    return hv[:2] > mv[:2]


def not_applicable(req: Requirement, installed: dict[str, str]) -> str | None:
    """Why `req` does not apply to the installed versions, or None if it applies."""
    for component, since in req.since.items():
        have = installed.get(component)
        if have is None:
            return f"{component} is not installed (requirement holds since {component} {since})"
        if not reached(have, since):
            return f"requires {component} >= {since}, installed {have}"
    for component, until in req.until.items():
        have = installed.get(component)
        if have is not None and reached(have, until):
            return f"applies before {component} {until} only, installed {have}"
    return None


def _sources(rid: str, raws: list[dict[str, str]]) -> tuple[Source, ...]:
    out = []
    for raw in raws:
        quote = " ".join(str(raw.get("quote", "")).split())
        src = Source(str(raw["kind"]), str(raw["url"]), quote, str(raw.get("section", "")))
        if src.kind not in SOURCE_KINDS:
            raise ValueError(f"{rid}: source kind {src.kind!r} is not one of {SOURCE_KINDS}")
        if not src.url.startswith(("https://", "file:")):
            raise ValueError(f"{rid}: source url {src.url!r} is not a https:// URL")
        if src.kind in (*PROMISE_KINDS, "changelog", "alpha", "code", "test") and not src.quote:
            raise ValueError(f"{rid}: a {src.kind} source must quote the upstream text ({src.url})")
        if src.kind != "changelog" and _RELEASE_NOTE_URL.search(src.url):
            raise ValueError(f"{rid}: {src.url} is a release note: kind changelog, with its section, not {src.kind}")
        if src.kind == "changelog" and src.section not in CHANGELOG_SECTIONS:
            raise ValueError(
                f"{rid}: a changelog source names its section, one of {CHANGELOG_SECTIONS} "
                f"(got {src.section!r}, {src.url})"
            )
        if src.kind != "changelog" and src.section:
            raise ValueError(f"{rid}: only a changelog source has a section ({src.url})")
        if src.kind == "alpha" and not _DEFAULT_OFF.search(src.quote):
            raise ValueError(f"{rid}: an alpha source quotes the gate's declaration with its default false ({src.url})")
        out.append(src)
    return tuple(out)


def check(req: Requirement) -> None:
    """The rules every catalogued requirement follows (ValueError naming the rule)."""
    if not _ID.match(req.id):
        raise ValueError(f"requirement id {req.id!r} does not match {_ID.pattern}")
    if req.level not in LEVELS:
        raise ValueError(f"{req.id}: level {req.level!r} is not one of {LEVELS}")
    if not re.search(rf"\b{req.level}\b", req.statement):
        raise ValueError(f"{req.id}: a {req.level} requirement's statement must say {req.level}")
    other = "SHOULD" if req.level == "MUST" else "MUST"
    if re.search(rf"\b{other}\b", req.statement):
        raise ValueError(f"{req.id}: a {req.level} requirement's statement must not say {other} (split it)")
    kinds = {s.kind for s in req.sources}
    if req.level == "MUST" and not any(s.promises for s in req.sources):
        raise ValueError(
            f"{req.id}: MUST needs an upstream doc, api or kep source, or a changelog entry of "
            f"{' / '.join(CONTRACT_SECTIONS)} (code, tests, issues and other release notes make a SHOULD)"
        )
    if req.level == "MUST" and "alpha" in kinds:
        raise ValueError(f"{req.id}: MUST on a feature gate that is off by default (an alpha source): a SHOULD")
    if not kinds - {"harness", "alpha"}:
        raise ValueError(f"{req.id}: cites no upstream source (our own docs are never a source on their own)")
    for v in (*req.since.values(), *req.until.values()):
        parse_version(v)
    for component, until in req.until.items():
        since = req.since.get(component)
        if since is not None and parse_version(until) <= parse_version(since):
            raise ValueError(f"{req.id}: until {component} {until} is not after since {since}")


def load(path: Path = CATALOGUE, *, strict: bool = True) -> dict[str, Requirement]:
    """Every requirement in `path` (a YAML file, or a directory of them), validated; `strict`
    applies the provenance rules of `check` (levels and sources)."""
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    raws = [raw for f in files for raw in (yaml.safe_load(f.read_text()) or {}).get("requirements", [])]
    out: dict[str, Requirement] = {}
    for raw in raws:
        if "statement" not in raw or "level" not in raw:
            raise ValueError(f"{raw.get('id')}: needs `level` and `statement` (see fixtures/requirements/README.md)")
        text = str(raw["statement"])
        req = Requirement(
            id=raw["id"],
            area=raw["area"],
            statement=" ".join(text.split()),
            since={k: str(v) for k, v in raw["since"].items()},
            tests=tuple(raw.get("tests", ())),
            level=str(raw["level"]),
            sources=_sources(raw["id"], raw.get("sources", [])),
            not_simulated=" ".join(str(raw.get("not_simulated", "")).split()),
            until={k: str(v) for k, v in (raw.get("until") or {}).items()},
        )
        if req.id in out:
            raise ValueError(f"duplicate requirement id {req.id}")
        if strict:
            check(req)
        elif not re.search(r"\b(MUST|SHOULD)\b", req.statement):
            raise ValueError(f"{req.id}: the statement must say MUST or SHOULD")
        out[req.id] = req
    return out


@cache
def default() -> dict[str, Requirement]:
    return load()
