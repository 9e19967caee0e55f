"""The suites' side of the kit (lws_conformance.testing), read from their source: every harness
import goes through the kit, no suite imports another test module or edits sys.path, suites are
packages, and no suite scales a deadline itself (every primitive of the kit does)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lws_conformance import testing

SUITES = Path(__file__).resolve().parent.parent / "suites"
# A suite module's harness imports besides the kit: (module path, imported module). The suites'
# conftest names the plugin for pytest to load (importing the kit there would import the plugin
# before pytest, which could then not rewrite its asserts); the MultiKueue worker's cluster handle
# (mk_helpers.MultiKueue.local_cluster) is built from a profile.
EXCEPTIONS = {
    ("conftest.py", "lws_conformance.resources"),
    ("multikueue/mk_helpers.py", "lws_conformance.profile"),
    ("multikueue/mk_helpers.py", "lws_conformance.providers.local"),
}
SCALE_NAMES = {"scale", "timeout_scale"}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(SUITES)), ast.parse(p.read_text(), str(p))) for p in sorted(SUITES.rglob("*.py"))]


def _harness_imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("lws_conformance"):
            out.append((str(node.module), [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("lws_conformance")]
    return out


def test_suites_import_the_harness_through_the_kit_only() -> None:
    wrong = [
        f"{path}: {module}"
        for path, tree in _modules()
        for module, _ in _harness_imports(tree)
        if module != "lws_conformance.testing" and (path, module) not in EXCEPTIONS
    ]
    assert not wrong, f"suite imports of harness internals (import them from lws_conformance.testing): {wrong}"


def test_every_name_a_suite_takes_from_the_kit_is_public() -> None:
    exported = set(testing.__all__)
    missing = [
        f"{path}: {name}"
        for path, tree in _modules()
        for module, names in _harness_imports(tree)
        if module == "lws_conformance.testing"
        for name in names
        if name not in exported
    ]
    assert not missing, f"names not in lws_conformance.testing.__all__: {missing}"
    assert sorted(exported) == sorted(set(testing.__all__)) and all(hasattr(testing, n) for n in exported)


def test_no_suite_imports_a_test_module_or_edits_sys_path() -> None:
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                last = (node.module or "").rsplit(".", 1)[-1]
                names = [a.name for a in node.names] if not node.module else []
                if last.startswith("test_") or any(n.startswith("test_") for n in names):
                    found.append(f"{path}:{node.lineno} imports a test module")
            elif isinstance(node, ast.Import):
                found += [f"{path}:{node.lineno} imports {a.name}" for a in node.names if "test_" in a.name]
            elif isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
                found.append(f"{path}:{node.lineno} touches sys.path")
    assert not found, found


def test_suites_are_packages() -> None:
    dirs = [SUITES, *(d for d in SUITES.iterdir() if d.is_dir() and any(d.glob("*.py")))]
    assert [str(d) for d in dirs if not (d / "__init__.py").is_file()] == []


def calls(node: ast.AST, names: set[str]) -> bool:
    """Does `node` call a function or method named one of `names` anywhere inside it?"""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in names:
                return True
    return False


def scale_sites(tree: ast.Module) -> list[int]:
    """Lines where a suite imports the scale or multiplies (or divides) by it."""
    imports = [
        n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and any(a.name == "scale" for a in n.names)
    ]
    products = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mult | ast.Div)
        and (calls(n.left, SCALE_NAMES) or calls(n.right, SCALE_NAMES))
    ]
    return sorted(imports + products)


def test_no_suite_scales_a_deadline_itself() -> None:
    found = {path: lines for path, tree in _modules() if (lines := scale_sites(tree))}
    assert not found, f"suites multiplying by timeouts.scale (pass plain seconds; the kit's waits scale): {found}"


@pytest.mark.parametrize(
    "source",
    [
        "from lws_conformance.k8s.wait import scale\n",
        "t = 30 * scale()\n",
        "t = round(10 * timeout_scale())\n",
        "t = wait.scale() * 5\n",
    ],
)
def test_the_scale_check_catches(source: str) -> None:
    assert scale_sites(ast.parse(source))


def test_the_scale_check_lets_plain_seconds_and_named_settings_pass() -> None:
    assert not scale_sites(ast.parse("t = 30\nu = round(scaled_seconds(10))\nv = {'timeout_scale': timeout_scale()}\n"))


def test_one_ready_exactly() -> None:
    defined = [
        f"{path}:{node.lineno}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") == "ready_exactly"
    ]
    assert defined == [], f"suites define their own ready_exactly (use predicates.ready_exactly): {defined}"
