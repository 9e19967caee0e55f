"""The catalogue is consistent with the tests that claim to prove it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lws_conformance import catalogue
from lws_conformance.catalogue import Requirement, not_applicable

ROOT = Path(__file__).resolve().parent.parent


def _marked_tests() -> dict[str, set[str]]:
    """requirement id -> {path::test} found by parsing suites/ (no import)."""
    found: dict[str, set[str]] = {}
    for f in ROOT.glob("suites/**/test_*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                for dec in node.decorator_list:
                    if (
                        isinstance(dec, ast.Call)
                        and isinstance(dec.func, ast.Attribute)
                        and dec.func.attr == "requirement"
                    ):
                        for arg in dec.args:
                            if isinstance(arg, ast.Constant):
                                found.setdefault(arg.value, set()).add(f"{f.relative_to(ROOT)}::{node.name}")
    return found


def test_every_marker_names_a_catalogued_requirement() -> None:
    unknown = set(_marked_tests()) - set(catalogue.default())
    assert not unknown, f"tests mark requirements missing from the catalogue: {sorted(unknown)}"


def test_every_requirement_lists_exactly_the_tests_that_mark_it() -> None:
    marked = _marked_tests()
    for req in catalogue.default().values():
        assert set(req.tests) == marked.get(req.id, set()), f"{req.id}: catalogue tests != marked tests"


def test_gating_compares_versions_numerically() -> None:
    req = Requirement("LWS-X-001", "x", "It MUST.", {"lws": "v0.10.0"}, ())
    assert not_applicable(req, {"lws": "v0.9.0"}) == "requires lws >= v0.10.0, installed v0.9.0"
    assert not_applicable(req, {"lws": "v0.10.0"}) is None
    assert "not installed" in (not_applicable(req, {}) or "")


def test_bad_catalogue_entries_are_rejected(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("requirements:\n- {id: LWS-X-001, area: x, must: It should., since: {lws: v0.1.0}}\n")
    with pytest.raises(ValueError, match="MUST"):
        catalogue.load(f)
