"""docs/architecture.md is the map of the tree: it names every module and package folder of
lws_conformance/, every module of a package, every script and every benchmarks/ entry, names no
path that does not exist, and its layers table is the import-linter layers contract, which holds
every module and package of lws_conformance/.

How the page names things (pure parsing, unit-tested below):
- a path is a backticked token whose first segment is a top-level entry of the tree
  (`lws_conformance/plugin.py`, `scripts/bootstrap`, `benchmarks/mutants/`); tokens with spaces or
  placeholders (`<run-id>`, `*`, `$`) are commands or patterns, not paths;
- in a table row whose first cell is a package folder (`lws_conformance/providers/`), the other
  backticked tokens ending in `.py` or holding a `/` (`boot.py`, `kindnode/ctr`) are files of that
  package, relative to it;
- the layers table is the rows `| N | `a`, `b` | job |` under "## Layers", top to bottom.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import repo_files

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "lws_conformance"
TICKED = re.compile(r"`([^`\s]+)`")
PLACEHOLDER = re.compile(r"[<>*${}=|]")


def _code_free(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def named_paths(text: str, top_level: set[str]) -> set[str]:
    """The repository paths a page names: backticked tokens whose first segment is a top-level entry."""
    found = set()
    for token in TICKED.findall(_code_free(text)):
        if PLACEHOLDER.search(token):
            continue
        if token.split("/", 1)[0] in top_level and (token in top_level or "/" in token):
            found.add(token)
    return found


def package_rows(text: str, top_level: set[str]) -> dict[str, set[str]]:
    """Package folder -> the files of it its row names (relative to the folder; a token starting
    with a top-level entry of the tree is a repository path, not one of the package's files)."""
    rows: dict[str, set[str]] = {}
    for line in _code_free(text).splitlines():
        m = re.match(rf"^\|\s*`({PACKAGE}/[\w]+/)`\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        files = {
            t
            for t in TICKED.findall(m.group(2))
            if not PLACEHOLDER.search(t) and (t.endswith(".py") or "/" in t) and t.split("/", 1)[0] not in top_level
        }
        rows.setdefault(m.group(1), set()).update(files)
    return rows


def layers_table(text: str) -> list[set[str]]:
    """The layers table under '## Layers', top to bottom: each row's set of module names."""
    section = _code_free(text).split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        m = re.match(r"^\|\s*\d+\w?\s*\|([^|]*)\|", line)
        if m:
            layers.append(set(TICKED.findall(m.group(1))))
    return layers


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [{m.strip().removeprefix(f"{PACKAGE}.") for m in re.split(r"[|:]", row)} for row in layers]


def _tree() -> list[str]:
    return [name for name in repo_files() if (ROOT / name).is_file()]


def _top_level(files: list[str]) -> set[str]:
    return {name.split("/", 1)[0] for name in files}


def _modules_and_packages(files: list[str]) -> set[str]:
    """Every top-level module and package of lws_conformance/ (by name, as import-linter sees them)."""
    found = set()
    for name in files:
        parts = name.split("/")
        if parts[0] != PACKAGE or len(parts) < 2:
            continue
        if len(parts) == 2 and parts[1].endswith(".py") and parts[1] != "__init__.py":
            found.add(parts[1].removesuffix(".py"))
        elif len(parts) > 2 and (ROOT / PACKAGE / parts[1] / "__init__.py").is_file():
            found.add(parts[1])
    return found


# The parsing, on examples.

EXAMPLE = """\
# Page
## Layers
| layer | modules | job |
|---|---|---|
| 1 | `cli` | `lwsc` |
| 2 | `a`, `b` | two |
## Folder by folder
| `lws_conformance/pkg/` | `one.py` (x), `sub/tool` (y), `pkg.thing`, `lwsc run`, `scripts/tool` |
Run `scripts/tool` on `reports/<run-id>/`, `chaos run chaos/X.yaml` or `lws_conformance/x.py`.
```
`scripts/in-a-code-block`
```
"""


def test_parsing_finds_paths_package_files_and_layers() -> None:
    top = {"scripts", "reports", "chaos", "lws_conformance"}
    assert named_paths(EXAMPLE, top) == {"lws_conformance/pkg/", "scripts/tool", "lws_conformance/x.py"}
    assert package_rows(EXAMPLE, top) == {"lws_conformance/pkg/": {"one.py", "sub/tool"}}
    assert layers_table(EXAMPLE) == [{"cli"}, {"a", "b"}]


# The page against the tree.


def test_the_layers_contract_holds_every_module_and_package() -> None:
    in_contract = set().union(*_contract_layers())
    missing = _modules_and_packages(_tree()) - in_contract
    assert not missing, f"in no import-linter layer (pyproject.toml): {sorted(missing)}"


def test_the_layers_table_is_the_contract() -> None:
    doc, contract = layers_table(DOC.read_text(encoding="utf-8")), _contract_layers()
    assert doc == contract, (
        "docs/architecture.md's layers table differs from pyproject.toml's layers contract:\n"
        + "\n".join(
            f"{i}: doc {sorted(d)} vs contract {sorted(c)}"
            for i, (d, c) in enumerate(zip(doc, contract, strict=False), 1)
            if d != c
        )
        + (f"\n{len(doc)} rows vs {len(contract)} layers" if len(doc) != len(contract) else "")
    )


def test_every_path_the_page_names_exists() -> None:
    files = _tree()
    text = DOC.read_text(encoding="utf-8")
    missing = sorted(p for p in named_paths(text, _top_level(files)) if not (ROOT / p).exists())
    for folder, names in package_rows(text, _top_level(files)).items():
        missing += sorted(f"{folder}{n}" for n in names if not (ROOT / folder / n).is_file())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def _expected_names(files: list[str]) -> set[str]:
    """What the page must name: each module and package folder of lws_conformance/, each script,
    each benchmarks/ entry (a folder as `benchmarks/NAME/`)."""
    want = set()
    for name in files:
        parts = name.split("/")
        if parts[0] == PACKAGE and len(parts) == 2 and parts[1].endswith(".py"):
            want.add(name)
        elif parts[0] == PACKAGE and len(parts) > 2:
            want.add(f"{PACKAGE}/{parts[1]}/")
        elif parts[0] == "scripts" and len(parts) == 2:
            want.add(name)
        elif parts[0] == "benchmarks":
            want.add(name if len(parts) == 2 else f"benchmarks/{parts[1]}/")
    return want


def test_the_page_names_every_module_package_script_and_benchmark() -> None:
    files = _tree()
    named = named_paths(DOC.read_text(encoding="utf-8"), _top_level(files))
    missing = sorted(_expected_names(files) - named)
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_each_package_row_names_every_file_of_its_package() -> None:
    rows = package_rows(DOC.read_text(encoding="utf-8"), _top_level(_tree()))
    missing = []
    for name in _tree():
        parts = name.split("/")
        if parts[0] != PACKAGE or len(parts) < 3 or parts[-1] == "__init__.py":
            continue
        folder, rest = f"{PACKAGE}/{parts[1]}/", "/".join(parts[2:])
        if rest not in rows.get(folder, set()):
            missing.append(name)
    assert not missing, f"docs/architecture.md's package rows do not name: {missing}"


@pytest.mark.parametrize(
    ("files", "doc", "complaint"),
    [
        (["scripts/new-tool"], "", "scripts/new-tool"),
        (["benchmarks/newbench/run"], "", "benchmarks/newbench/"),
        (["lws_conformance/newpkg/__init__.py"], "", "lws_conformance/newpkg/"),
        (["lws_conformance/runconfig.py"], "`lws_conformance/runconfig`", "lws_conformance/runconfig.py"),
    ],
)
def test_an_unnamed_entry_is_found(files: list[str], doc: str, complaint: str) -> None:
    """The check can fail: a new script, benchmark, package or module the page does not name."""
    named = named_paths(doc, _top_level(files))
    assert complaint in _expected_names(files) - named
