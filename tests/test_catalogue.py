"""The catalogue is consistent with the tests that claim to prove it."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lws_conformance import catalogue
from lws_conformance.catalogue import Requirement, not_applicable

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _marked_tests() -> dict[str, set[str]]:
    """requirement id -> {path::test}, from pytest's own collection of suites/ (so markers applied
    by helpers such as `proves_invariants` count); nothing runs, no cluster is needed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reqs.json"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "suites",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--lwsc-requirements-out={out}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.is_file(), f"collection failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        by_node: dict[str, list[str]] = json.loads(out.read_text())
    found: dict[str, set[str]] = {}
    for nodeid, rids in by_node.items():
        for rid in rids:
            found.setdefault(rid, set()).add(nodeid.split("[")[0])
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


def test_until_ends_a_requirement_where_upstream_removed_what_it_checks() -> None:
    req = Requirement("KUEUE-X-001", "x", "It SHOULD.", {"kueue": "v0.16.0"}, (), until={"kueue": "v0.18.0"})
    assert not_applicable(req, {"kueue": "v0.17.0"}) is None
    assert not_applicable(req, {"kueue": "v0.18.0"}) == "applies before kueue v0.18.0 only, installed v0.18.0"
    assert not_applicable(req, {"kueue": "v0.18.0+main.3@abc"}) is not None  # a main build after the tag
    assert not_applicable(req, {"kueue": "v0.15.0"}) == "requires kueue >= v0.16.0, installed v0.15.0"
    with pytest.raises(ValueError, match="not after since"):
        catalogue.check(
            Requirement(
                "KUEUE-X-002",
                "x",
                "It SHOULD.",
                {"kueue": "v0.18.0"},
                (),
                level="SHOULD",
                sources=(catalogue.Source("code", "https://example.test/a.go#L1", "q"),),
                until={"kueue": "v0.18.0"},
            )
        )


@pytest.mark.parametrize(
    ("have", "mark", "expected"),
    [
        ("v0.10.0", "v0.9.0", True),
        ("v0.9.0", "v0.10.0", False),
        ("v0.10.0+main.11@060ab4d", "v0.10.0", True),  # main after the tag contains it
        ("v0.10.0+main.11@060ab4d", "v0.10.1", False),  # not a patch cut from a release branch
        ("v0.10.0+main.11@060ab4d", "v0.10.0+main.6", True),
        ("v0.10.0+main.6@e9d2c6f", "v0.10.0+main.6", True),
        ("v0.10.0+main.5@aaaaaaa", "v0.10.0+main.6", False),
        ("v0.10.0+main.11@060ab4d.dirty", "v0.10.0+main.6", True),
        ("v0.10.0", "v0.10.0+main.6", False),
        ("v0.10.1", "v0.10.0+main.6", False),  # a patch release need not carry main's commit
        ("v0.11.0", "v0.10.0+main.6", True),
        ("v0.10.0+feature-x.40@bbbbbbb", "v0.10.0+main.6", False),  # other branches: the tag only
    ],
)
def test_main_builds_order_by_commits_after_their_tag(have: str, mark: str, expected: bool) -> None:
    assert catalogue.reached(have, mark) is expected


API = "https://github.com/kubernetes-sigs/lws/blob/v0.9.0/api/leaderworkerset/v1/leaderworkerset_types.go"
NOTES = "https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/CHANGELOG/CHANGELOG-0.19.md#L102"
GATES = "https://github.com/kubernetes-sigs/kueue/blob/v0.17.0/pkg/features/kube_features.go#L540-L542"
OFF = "'ShortWorkloadNames: {{Version: version.MustParse(\"0.17\"), Default: false, PreRelease: featuregate.Alpha}}'"


def _entry(level: str, statement: str, sources: str) -> str:
    return (
        f"requirements:\n- {{id: LWS-X-001, area: x, level: {level}, statement: '{statement}', "
        f"since: {{lws: v0.1.0}}, sources: [{sources}]}}\n"
    )


@pytest.mark.parametrize(
    ("level", "statement", "sources", "error"),
    [
        ("MUST", "It must.", f"{{kind: api, url: '{API}', quote: q}}", "must say MUST"),
        ("MUST", "It MUST, and it SHOULD.", f"{{kind: api, url: '{API}', quote: q}}", "must not say SHOULD"),
        ("MUST", "It MUST.", f"{{kind: code, url: '{API}', quote: q}}", "MUST needs an upstream doc, api or kep"),
        ("SHOULD", "It SHOULD.", "{kind: harness, url: 'file:notes.md'}", "no upstream source"),
        ("SHOULD", "It SHOULD.", "", "no upstream source"),
        ("MUST", "It MUST.", f"{{kind: api, url: '{API}'}}", "must quote"),
        ("MUST", "It MUST.", "{kind: api, url: 'lws_types.go', quote: q}", "https"),
        ("MAY", "It MAY.", f"{{kind: api, url: '{API}', quote: q}}", "level"),
        # A release note is not a promise: a "Bug or Regression" (or "Feature") entry makes a SHOULD ...
        (
            "MUST",
            "It MUST.",
            f"{{kind: changelog, url: '{NOTES}', quote: q, section: Bug or Regression}}",
            "MUST needs an upstream doc, api or kep",
        ),
        (
            "MUST",
            "It MUST.",
            f"{{kind: changelog, url: '{NOTES}', quote: q, section: Feature}}, {{kind: code, url: '{API}', quote: q}}",
            "MUST needs an upstream doc, api or kep",
        ),
        # ... and is filed as a changelog, with its section, never as a doc page.
        ("MUST", "It MUST.", f"{{kind: doc, url: '{NOTES}', quote: q}}", "is a release note"),
        (
            "SHOULD",
            "It SHOULD.",
            "{kind: doc, url: 'https://github.com/kubernetes-sigs/lws/releases/tag/v0.9.0', quote: q}",
            "is a release note",
        ),
        ("SHOULD", "It SHOULD.", f"{{kind: changelog, url: '{NOTES}', quote: q}}", "names its section"),
        ("SHOULD", "It SHOULD.", f"{{kind: changelog, url: '{NOTES}', quote: q, section: Bugs}}", "names its section"),
        ("SHOULD", "It SHOULD.", f"{{kind: api, url: '{API}', quote: q, section: Feature}}", "only a changelog"),
        ("SHOULD", "It SHOULD.", f"{{kind: changelog, url: '{NOTES}', section: Feature}}", "must quote"),
        # A behaviour behind a feature gate that is off by default is never a MUST, whatever promises it.
        (
            "MUST",
            "It MUST.",
            f"{{kind: api, url: '{API}', quote: q}}, {{kind: alpha, url: '{GATES}', quote: {OFF}}}",
            "off by default",
        ),
        ("SHOULD", "It SHOULD.", f"{{kind: alpha, url: '{GATES}', quote: {OFF}}}", "no upstream source"),
        (
            "SHOULD",
            "It SHOULD.",
            f"{{kind: api, url: '{API}', quote: q}}, {{kind: alpha, url: '{GATES}', quote: q}}",
            "default false",
        ),
    ],
)
def test_bad_catalogue_entries_are_rejected(
    tmp_path: Path, level: str, statement: str, sources: str, error: str
) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(_entry(level, statement, sources))
    with pytest.raises(ValueError, match=error):
        catalogue.load(f)


def test_a_well_sourced_entry_loads(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(
        _entry("SHOULD", "It SHOULD.", "{kind: issue, url: 'https://github.com/kubernetes-sigs/lws/issues/1'}")
    )
    assert catalogue.load(f)["LWS-X-001"].level == "SHOULD"


@pytest.mark.parametrize(
    ("level", "sources"),
    [
        # The upgrade notes state a contract or a default for users: they may back a MUST.
        ("MUST", f"{{kind: changelog, url: '{NOTES}', quote: q, section: Actions Required Before Upgrading}}"),
        ("MUST", f"{{kind: changelog, url: '{NOTES}', quote: q, section: Urgent Upgrade Notes}}"),
        # A bug-fix note and a default-off gate make a SHOULD.
        (
            "SHOULD",
            f"{{kind: changelog, url: '{NOTES}', quote: q, section: Bug or Regression}}, "
            f"{{kind: alpha, url: '{GATES}', quote: {OFF}}}",
        ),
    ],
)
def test_release_notes_and_gates_load_at_their_level(tmp_path: Path, level: str, sources: str) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(_entry(level, f"It {level}.", sources))
    req = catalogue.load(f)["LWS-X-001"]
    assert req.level == level and req.sources[0].kind == "changelog" and req.sources[0].section


def test_every_requirement_has_a_level_and_upstream_sources() -> None:
    """The real catalogue under the strict rules; every MUST row cites an upstream https URL."""
    reqs = catalogue.load(strict=True)
    for req in reqs.values():
        if req.level == "MUST":
            assert any(s.upstream and s.url.startswith("https://") for s in req.sources), req.id
