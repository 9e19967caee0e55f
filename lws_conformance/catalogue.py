"""The requirement catalogue: id, one MUST sentence, the version it holds since, proving tests.

In the spirit of Kubernetes' conformance.yaml: requirements are data (`fixtures/requirements/*.yaml`),
tests name the requirement they prove with `@pytest.mark.requirement("LWS-...")`, and reports
group verdicts by requirement. Gating reads the installed versions: a requirement newer than the
installed component is "not-applicable", never failed and never silently skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

CATALOGUE = Path(__file__).resolve().parent.parent / "fixtures" / "requirements"
_ID = re.compile(r"^(LWS|KUEUE|ROLL|CHAOS)-[A-Z]+-\d{3}$")


@dataclass(frozen=True)
class Requirement:
    id: str
    area: str
    must: str
    since: dict[str, str]  # component -> first version where it holds
    tests: tuple[str, ...]
    upstream: tuple[str, ...] = field(default=())


def parse_version(v: str) -> tuple[int, int, int]:
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", v)
    if not m:
        raise ValueError(f"not a version: {v!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def not_applicable(req: Requirement, installed: dict[str, str]) -> str | None:
    """Why `req` does not apply to the installed versions, or None if it applies."""
    for component, since in req.since.items():
        have = installed.get(component)
        if have is None:
            return f"{component} is not installed (requirement holds since {component} {since})"
        if parse_version(have) < parse_version(since):
            return f"requires {component} >= {since}, installed {have}"
    return None


def load(path: Path = CATALOGUE) -> dict[str, Requirement]:
    """Every requirement in `path` (a YAML file, or a directory of them), validated."""
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    raws = [raw for f in files for raw in (yaml.safe_load(f.read_text()) or {}).get("requirements", [])]
    out: dict[str, Requirement] = {}
    for raw in raws:
        req = Requirement(
            id=raw["id"],
            area=raw["area"],
            must=" ".join(raw["must"].split()),
            since={k: str(v) for k, v in raw["since"].items()},
            tests=tuple(raw.get("tests", ())),
            upstream=tuple(raw.get("upstream", ())),
        )
        if not _ID.match(req.id):
            raise ValueError(f"requirement id {req.id!r} does not match {_ID.pattern}")
        if req.id in out:
            raise ValueError(f"duplicate requirement id {req.id}")
        if " MUST " not in f" {req.must} ":
            raise ValueError(f"{req.id}: the statement must contain MUST")
        for v in req.since.values():
            parse_version(v)
        out[req.id] = req
    return out


@cache
def default() -> dict[str, Requirement]:
    return load()
