"""The project's text speaks of the project, never of how it was developed.

Every tracked (or new, not ignored) text file is scanned for the marks of development narrative:
numbered work periods ("session 6", "sessions 7-8"), this project's own work-item numbers
("issue #14", "issues 13-15", a bare "#13"), "stop 3", "this turn", "this session". Upstream
references stay allowed: a repository-qualified number (`lws#998`, `kueue#14405`,
`kubernetes-sigs/lws/pull/963`), "PR #963" / "PRs #933, #980" / "pull request #12" and the lists
that continue them ("lws#797/#798", "PR #933 / #980"), a GitHub changelog or commit subject's
"(#9135)", an upstream issue named as such ("kwok issue #1"), an observer's "event #181", HTML
colours and character references. Verbatim recorded cluster output (tests/data/*.timeline.json)
is not prose and is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import repo_files

ROOT = Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".txt"}
# This file's own examples are the rule's test data.
SELF = "tests/test_narrative.py"
# Verbatim recorded cluster output: watch events as the API server sent them.
RECORDINGS = re.compile(r"^tests/data/[^/]+\.timeline\.json$")

SESSION = re.compile(r"\b(?:this\s+session|this\s+turn|sessions?[ -]+\d+|stop\s+\d+\b)", re.IGNORECASE)
# "issue 20", "issues 13-15", "issue #14": ours unless an upstream project or repository names it.
ISSUE = re.compile(r"(?P<before>[\w./-]*\s*)\bissues?\s+#?\d+", re.IGNORECASE)
UPSTREAM_OWNER = re.compile(
    r"(?:lws|kueue|kwok|kind|kubernetes|k8s|upstream|pytest|xdist|pytest-xdist|github|[\w.-]+/[\w.-]+)\s*$",
    re.IGNORECASE,
)
# A bare "#13" (not preceded by a word character, '/' or '&': lws#998, pull/#, &#10; are never
# matched; colours such as fill="#888" or color:#222 are allowed below).
BARE = re.compile(r"(?<![\w/&#])#(?P<n>\d+)\b")
ALLOWED_BEFORE_BARE = re.compile(
    r"(?:(?:fill|stroke|color|background)\s*[=:]\s*[\"']?|\bPRs?|\bpull\s+request|\bevent|(?:lws|kueue|kwok|kind|kubernetes|upstream|[\w.-]+/[\w.-]+)\s+issues?|[\w.-]+#\d+|\bPRs?\s+#\d+|[\w.-]*#\d+\s*(?:,|/|and|or))\s*$",
    re.IGNORECASE,
)
CHANGELOG_REF = re.compile(r"\(#\d+(?:,\s*#\d+)*\)")
# A quoted colour literal: "#999", '#c00'.
COLOUR = re.compile(r"(?<=[\"'])#(?:[0-9a-fA-F]{3}){1,2}(?=[\"'])")


def _files() -> list[Path]:
    files = []
    for name in repo_files():
        path = ROOT / name
        if RECORDINGS.match(name) or name == SELF or not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES or (path.suffix == "" and _is_script(path)):
            files.append(path)
    return files


def _is_script(path: Path) -> bool:
    head = path.read_bytes()[:200]
    return head.startswith(b"#!") and b"\0" not in head


def hits(text: str) -> list[str]:
    """Every piece of development narrative in `text`, as "line N: ...". Pure, unit-tested below."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        masked = COLOUR.sub("    ", CHANGELOG_REF.sub(lambda m: " " * len(m.group()), line))
        for m in SESSION.finditer(masked):
            found.append(f"line {lineno}: {m.group().strip()!r}")
        for m in ISSUE.finditer(masked):
            if not UPSTREAM_OWNER.search(m.group("before")):
                found.append(f"line {lineno}: {m.group()[len(m.group('before')) :]!r}")
        for m in BARE.finditer(masked):
            if not ALLOWED_BEFORE_BARE.search(masked[: m.start()]):
                found.append(f"line {lineno}: {m.group()!r}")
    return found


@pytest.mark.parametrize(
    "text",
    [
        "measured in session 6",
        "Session 8, idle",
        "sessions 7-8",
        "the session-5-style run",
        "this session's matrix",
        "done in this turn",
        "stop 3 of the plan",
        "before issues 13–15 added requirements",
        "(issue #19)",
        "issue 14 §1",
        "see #13 for the plan",
        '"note": "#13 reverted"',
    ],
)
def test_narrative_is_found(text: str) -> None:
    assert hits(text), text


@pytest.mark.parametrize(
    "text",
    [
        "lws#998, fixed on main by PR #999",
        "kubernetes-sigs/lws/pull/963 and kueue#14405",
        "lws PRs #933 and #980",
        "PR #933 / #980",
        "lws#797/#798 the last instance",
        "the lws#225 / #280 class of bugs",
        "kueue PR #14405 (open)",
        "'Fixed a bug (#9898, #10010)'",
        "Merge pull request #12 from x/y",
        "violated at event #181 (seq 182)",
        'fill="#888" color:#222 &#10;',
        "pytest-dev/pytest-xdist#1386",
        "kwok issue #1200",
        "# 1. a numbered comment",
        '"breaks": "kueue#9135 reverted"',
        "font color: #222;",
        'colour.get(s.revision, "#999")',
        "stops kube-apiserver for 2 s",
    ],
)
def test_upstream_references_pass(text: str) -> None:
    assert not hits(text), hits(text)


def test_no_development_narrative_in_the_tree() -> None:
    files = _files()
    assert any(p.name == "README.md" for p in files)
    problems = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        problems += [f"{path.relative_to(ROOT)} {h}" for h in hits(text)]
    assert not problems, "development narrative (speak of the project, not of its history):\n" + "\n".join(problems)
