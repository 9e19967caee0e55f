"""The docs: figures rendered from the results files cannot drift, every relative link of README.md
and docs/ resolves (to an existing file and, for a Markdown page, to one of its headings), and the
README stays a user's page (details live in docs/).

`scripts/render-figures` writes the tables between `<!-- figures:NAME -->` markers of README.md and
docs/*.md from benchmarks/results/*.json and benchmarks/mutants/results*.json. Here it renders into
a copy of the pages: each page must come out byte for byte as it is in the tree.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
RENDERER = ROOT / "scripts" / "render-figures"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Every Markdown page whose links are checked: README.md and docs/ with its sub-folders.
LINKED_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
README_MAX_LINES = 250
MARKER = re.compile(r"<!-- (/?)figures:([\w-]+) -->")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _render_copy(tmp_path: Path) -> Path:
    out = tmp_path / "site"
    (out / "docs").mkdir(parents=True)
    shutil.copy(ROOT / "README.md", out / "README.md")
    for page in PAGES[1:]:
        shutil.copy(page, out / "docs" / page.name)
    subprocess.run([sys.executable, str(RENDERER), "--out", str(out)], check=True, cwd=tmp_path)
    return out


def test_every_rendered_block_matches_its_results_files(tmp_path: Path) -> None:
    out = _render_copy(tmp_path)
    stale = []
    for page in PAGES:
        rendered = out / page.relative_to(ROOT)
        if rendered.read_text(encoding="utf-8") != page.read_text(encoding="utf-8"):
            stale.append(str(page.relative_to(ROOT)))
    assert not stale, f"figures out of date in {stale}: run `.venv/bin/python scripts/render-figures`"


def test_blocks_are_well_formed_and_each_is_placed() -> None:
    placed: dict[str, str] = {}
    for page in PAGES:
        open_blocks: list[str] = []
        for closing, name in MARKER.findall(page.read_text(encoding="utf-8")):
            if not closing:
                open_blocks.append(name)
                assert name not in placed, f"block {name} in {placed[name]} and {page.name}"
                placed[name] = page.name
            else:
                assert open_blocks and open_blocks.pop() == name, f"{page.name}: unbalanced marker {name}"
        assert not open_blocks, f"{page.name}: unclosed {open_blocks}"
    source = RENDERER.read_text(encoding="utf-8")
    known = set(re.findall(r'"([\w-]+)": [\w_]+,?', source.split("BLOCKS")[1].split("}")[0]))
    assert known and known == set(placed), f"rendered blocks {sorted(known)} vs placed {sorted(placed)}"


def test_a_changed_results_file_shows_as_a_stale_block(tmp_path: Path) -> None:
    """The check can fail: a block whose figures were edited by hand is re-rendered."""
    out = _render_copy(tmp_path)
    page = out / "docs" / "performance.md"
    text = page.read_text(encoding="utf-8")
    edited = re.sub(r"(<!-- figures:bringup -->\n)", r"\1| hand-typed | figure |\n", text, count=1)
    assert edited != text
    page.write_text(edited, encoding="utf-8")
    check = subprocess.run(
        [sys.executable, str(RENDERER), "--out", str(out), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 1 and "performance.md" in check.stderr
    subprocess.run([sys.executable, str(RENDERER), "--out", str(out)], check=True)
    assert page.read_text(encoding="utf-8") == text


def _renderer() -> object:
    import importlib.util
    from importlib.machinery import SourceFileLoader

    loader = SourceFileLoader("render_figures", str(RENDERER))
    spec = importlib.util.spec_from_loader("render_figures", loader)
    assert spec
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("proof", "refusal"),
    [
        ({"mutant": "lws-56"}, None),  # results-discriminating.json: LWS-EXCL-003 failed
        ({"mutant": "lws-20"}, "does not show it red"),  # red for LWS-EXCL-001, not -003
        ({"generated": "0000deadbeef"}, "does not show it red"),
        ({"recording": "tests/test_docs.py::no_such_test"}, "does not show it red"),
    ],
)
def test_a_discriminating_proof_must_show_its_requirement_red(proof: dict[str, str], refusal: str | None) -> None:
    """The discriminating-scenario table resolves each proof against its results file."""
    rf: Any = _renderer()
    if refusal is None:
        assert "lws-56 failed" in rf._proof("LWS-EXCL-003", proof)
    else:
        with pytest.raises(SystemExit, match=refusal):
            rf._proof("LWS-EXCL-003", proof)


def test_a_sharded_kind_run_is_as_slow_as_its_slowest_shard() -> None:
    """The k-th round of each shard label forms sharded run k; a run missing a shard has no figure."""
    rf: Any = _renderer()
    rounds = [("before", 1000.0), ("after", 1200.0), ("shard1-of-2", 620.0), ("shard2-of-2", 710.0)]
    rounds += [("shard1-of-2", 650.0), ("shard2-of-2", 600.0), ("shard1-of-2", 999.0)]
    doc = {
        "rounds": [{"label": label, "wall_s": wall} for label, wall in rounds],
        "median_by_label": {"before": {"wall_s": 1000.0}, "after": {"wall_s": 1200.0}},
    }
    assert rf.kind_summary(doc) == {"wall": 1.2, "shards": {2: [710.0, 650.0]}}


def test_the_readme_is_a_users_page() -> None:
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move details to a page of docs/ and link it"
    )


COUNTS = re.compile(r"(\d+) requirements[:( ]+\**(\d+) MUST, (\d+) SHOULD")


def test_the_stated_requirement_counts_are_the_catalogue_s() -> None:
    from lws_conformance import catalogue

    levels = [r.level for r in catalogue.load().values()]
    want = (len(levels), levels.count("MUST"), levels.count("SHOULD"))
    stated = [
        (str(page.relative_to(ROOT)), tuple(int(n) for n in m))
        for page in LINKED_PAGES
        for m in COUNTS.findall(page.read_text(encoding="utf-8"))
    ]
    assert any(page == "README.md" for page, _ in stated)
    wrong = [(page, counts) for page, counts in stated if counts != want]
    assert not wrong, f"requirement counts (all, MUST, SHOULD) {wrong}; the catalogue has {want}"


# How the tool was developed, not what it does: "now" (outside quotes of upstream text and code),
# "earlier/later rounds", "since corrected", "first read as".
NARRATIVE = re.compile(
    r"\bnow\b|\b(?:earlier|later|previous) rounds?\b|\bsince (?:corrected|fixed)\b|\bfirst read as\b", re.IGNORECASE
)
QUOTED = re.compile(r'"[^"\n]*"|`[^`\n]*`|“[^”\n]*”')


def narrative(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [
        f"line {n}: {m.group()!r}"
        for n, line in enumerate(text.splitlines(), 1)
        for m in NARRATIVE.finditer(QUOTED.sub(lambda q: " " * len(q.group()), line))
    ]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("The recorder now resumes where it was.", True),
        ("Earlier rounds on a loaded machine measured more.", True),
        ("its failed cells are harness expectations since corrected", True),
        ('upstream says "WaitForPodsReady is now enabled by default"', False),
        ("`lwsc now` in code", False),
        ("The recorder resumes where it was; a snowy known deviation", False),
    ],
)
def test_narrative_words_are_found(text: str, found: bool) -> None:
    assert bool(narrative(text)) is found


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_speak_in_the_present_tense(page: Path) -> None:
    hits = narrative(page.read_text(encoding="utf-8"))
    assert not hits, f"{page.relative_to(ROOT)} narrates its history (say what the tool does): {hits}"


def test_link_pages_cover_the_docs_sub_folders() -> None:
    assert any(p.parent.name == "upstream" for p in LINKED_PAGES)


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {broken}"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    """The check can fail: a missing file, and a missing heading of an existing page."""
    (tmp_path / "other.md").write_text("# A heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n[ok](other.md#a-heading) [gone](missing.md) [anchor](other.md#no-such) [web](https://x.y/z)\n"
        "```\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["missing.md", "other.md#no-such (no such heading)"]


def broken_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold commands, not links
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http(s)://, mailto:, or an anchor on the same page
        path, _, anchor = target.partition("#")
        dest = page.parent / path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}
