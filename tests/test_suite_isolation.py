"""Suites that share the cluster's nodes between tests take turns where Kueue cannot tell the
tests apart: every test that places pods through a TAS flavor of its own over the shared nodes
(`kueue_helpers.tas_queue`, directly or through a helper of its module) carries
`@pytest.mark.exclusive(K.SHARED_NODES_TAS)` (why: the comment beside SHARED_NODES_TAS)."""

from __future__ import annotations

import ast

from tests.test_suite_kit import SUITES, calls

MARK = "pytest.mark.exclusive(K.SHARED_NODES_TAS)"
# The scale profile runs suites/scale alone, its tests one at a time (exclusive("scale")).
ALONE = {"scale"}


def unmarked(source: str) -> list[str]:
    """The tests of a module that reach `tas_queue` without the turn-taking mark."""
    tree = ast.parse(source)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    reaching = {"tas_queue"}
    while True:  # helpers that reach it, also through other helpers
        more = {f.name for f in funcs if not f.name.startswith("test_") and calls(f, reaching)} - reaching
        if not more:
            break
        reaching |= more
    return [
        f.name
        for f in funcs
        if f.name.startswith("test_") and calls(f, reaching) and MARK not in {ast.unparse(d) for d in f.decorator_list}
    ]


def test_every_test_with_a_tas_flavor_on_the_shared_nodes_takes_turns() -> None:
    missing = {
        f"{path.relative_to(SUITES)}::{name}"
        for path in SUITES.rglob("test_*.py")
        if path.relative_to(SUITES).parts[0] not in ALONE
        for name in unmarked(path.read_text())
    }
    assert not missing, f"TAS flavors on the shared nodes without {MARK}: {sorted(missing)}"


def test_the_check_sees_a_test_that_reaches_tas_queue_through_helpers() -> None:
    source = """
def _setup(sc):
    _queue(sc)

def _queue(sc):
    K.tas_queue(sc, None, "u", {})

@pytest.mark.requirement("X")
def test_direct(sc):
    K.tas_queue(sc, None, "u", {})

def test_helper(sc):
    _setup(sc)

@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_marked(sc):
    _queue(sc)

def test_other(sc):
    K.plain_queue(sc, "u", {})
"""
    assert unmarked(source) == ["test_direct", "test_helper"]
