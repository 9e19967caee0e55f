"""Everything the project cites lives upstream or in this repository.

Two rules, checked over every tracked (or new, not ignored) file:
- no file names a directory outside the checkout (`/work/shared`, `../shared`) or one of the
  working notes that were never part of the project (the six file names in `NOTES`): a reader of
  the repository cannot open them, so code, comments, docs and results cite upstream files
  (file@version, URL) or the project's own docs instead;
- no requirement source (fixtures/requirements/*.yaml) is a `file:` URL outside the repository.

No file is exempt but this one (its patterns are the rule's data): recorded results under
benchmarks/results are text the harness wrote from the catalogue, so they follow the catalogue.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

from tests.conftest import repo_files

ROOT = Path(__file__).resolve().parent.parent
SELF = "tests/test_no_outside_references.py"
CATALOGUE = ROOT / "fixtures" / "requirements"
OUTSIDE_DIRS = ("/work/shared", "../shared")
NOTES = (
    "lws-behaviour.md",
    "kueue-behaviour.md",
    "upstream-audit.md",
    "harness-anchors.md",
    "local-control-plane.md",
    "kind-without-a-registry.md",
)
PATTERN = re.compile("|".join(re.escape(s) for s in (*OUTSIDE_DIRS, *NOTES)))


def _files() -> list[str]:
    return [n for n in repo_files() if n != SELF and (ROOT / n).is_file()]


def hits(text: str) -> list[str]:
    """Every outside reference in `text`, as "line N: ...". Pure, unit-tested below."""
    return [f"line {n}: {m.group()!r}" for n, line in enumerate(text.splitlines(), 1) for m in PATTERN.finditer(line)]


def outside_file_url(url: str, root: Path = ROOT) -> str | None:
    """Why a `file:` source url points outside `root` (or at nothing), or None when it is not a
    `file:` url or names an existing file of the repository. Pure but for the existence check."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    if parsed.netloc not in ("", "localhost"):
        return f"names host {parsed.netloc!r}"
    path = Path(unquote(parsed.path))
    target = (path if path.is_absolute() else root / path).resolve()
    if not target.is_relative_to(root.resolve()):
        return f"{target} is outside the repository"
    if not target.exists():
        return f"{target} does not exist"
    return None


@pytest.mark.parametrize(
    "text",
    [
        "see /work/shared/docs/x.md",
        "start order: ../shared/docs/notes.md",
        "(lws-behaviour.md §4.4)",
        "url: file:///somewhere/kueue-behaviour.md",
        "upstream-audit.md, harness-anchors.md",
        "local-control-plane.md §3.9",
        "kind-without-a-registry.md",
    ],
)
def test_outside_references_are_found(text: str) -> None:
    assert hits(text), text


@pytest.mark.parametrize(
    "text",
    [
        "leaderworkerset_controller.go rollingUpdateParameters@v0.9.0",
        "docs/chaos.md and docs/providers.md",
        "shared headless Service (subdomainPolicy Shared)",
        "the shared cluster, /work/main/shared.py",
        "site/content/en/docs/tasks/run/leaderworkerset.md",
    ],
)
def test_project_and_upstream_references_pass(text: str) -> None:
    assert not hits(text), hits(text)


def test_file_urls_outside_the_repository_are_refused(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("x")
    assert outside_file_url(f"file://{tmp_path}/docs/a.md", tmp_path) is None
    assert outside_file_url("file:docs/a.md", tmp_path) is None
    assert outside_file_url("https://github.com/kubernetes-sigs/lws/blob/v0.9.0/README.md", tmp_path) is None
    assert outside_file_url("file:///work/shared/docs/lws.md", tmp_path)
    assert outside_file_url(f"file://{tmp_path}/../elsewhere.md", tmp_path)
    assert outside_file_url("file:../docs/a.md", tmp_path)
    assert outside_file_url(f"file://{tmp_path}/docs/missing.md", tmp_path)
    assert outside_file_url(f"file://otherhost{tmp_path}/docs/a.md", tmp_path)


def test_no_tracked_file_references_outside_the_repository() -> None:
    files = _files()
    assert "README.md" in files and "fixtures/requirements/chaos.yaml" in files
    problems = []
    for name in files:
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        problems += [f"{name} {h}" for h in hits(text)]
    assert not problems, "references outside the repository (cite upstream or the project's docs):\n" + "\n".join(
        problems
    )


def test_no_requirement_source_is_a_file_url_outside_the_repository() -> None:
    files = sorted(CATALOGUE.glob("*.yaml"))
    assert files
    problems, sources = [], 0
    for f in files:
        for req in (yaml.safe_load(f.read_text()) or {}).get("requirements", []):
            for src in req.get("sources") or []:
                sources += 1
                why = outside_file_url(str(src.get("url", "")))
                if why:
                    problems.append(f"{f.name} {req.get('id')} {src.get('url')}: {why}")
    assert sources > 100, sources
    assert not problems, "requirement sources outside the repository:\n" + "\n".join(problems)
