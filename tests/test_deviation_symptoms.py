"""Every known deviation's symptom against messages: one real message of the failure it describes
must match (the WHOLE message, `Deviation.matches`), and other failures the same test can produce
-- another picture, all n of n tries, a wait timeout, a later check -- must not. The messages are
data (tests/data/deviation_examples.yaml), so a symptom edited in fixtures/known-deviations.yaml
is held to the same examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from lws_conformance import deviations
from lws_conformance.deviations import Deviation, own_message

EXAMPLES_FILE = Path(__file__).parent / "data" / "deviation_examples.yaml"
DEVIATIONS = {d.id: d for d in deviations.load()}


def _examples() -> dict[str, dict[str, list[str]]]:
    raw = yaml.safe_load(EXAMPLES_FILE.read_text()) or {}
    assert isinstance(raw, dict)
    return raw


EXAMPLES = _examples()


def _exception(dev: Deviation) -> str:
    """The exception class a real failure of this deviation has (its `exception`, if given)."""
    return dev.exception or "AssertionError"


def test_every_deviation_has_examples_and_every_example_a_deviation() -> None:
    assert sorted(EXAMPLES) == sorted(DEVIATIONS)
    for did, entry in EXAMPLES.items():
        assert set(entry) == {"matches", "refuses"}, did


@pytest.mark.parametrize("did", sorted(DEVIATIONS))
def test_symptom_matches_its_failure_and_refuses_the_test_s_other_failures(did: str) -> None:
    dev, entry = DEVIATIONS[did], EXAMPLES.get(did) or {}
    matches, refuses = entry.get("matches") or [], entry.get("refuses") or []
    if not matches or not refuses:
        pytest.fail(
            f"deviation {did} needs examples in {EXAMPLES_FILE.name}: at least one real message its symptom "
            f"matches and one other failure of the same test it refuses (has {len(matches)} / {len(refuses)})"
        )
    exc = _exception(dev)
    for msg in matches:
        assert dev.matches(exc, msg), f"{did} does not match its own failure:\n{msg}"
    for msg in refuses:
        assert not dev.matches(exc, msg), f"{did} matches another failure of its test:\n{msg}"
    # the symptom describes the whole message, not a fragment: cut short or preceded by something
    # else, the real one no longer matches
    for msg in matches:
        own = own_message(msg)
        first_line = own.split("\n")[0]
        assert not dev.matches(exc, first_line[: len(first_line) // 2]), f"{did} matches half of its message"
        assert not dev.matches(exc, f"something else failed; {own}"), f"{did} matches inside another message"
    if dev.exception:
        assert not dev.matches("RuntimeError", matches[0]), f"{did} ignores its exception class"


@pytest.mark.parametrize("did", sorted(d.id for d in DEVIATIONS.values() if d.kind == "race"))
def test_a_race_s_symptom_refuses_the_picture_in_every_try(did: str) -> None:
    """A race shows in some tries, never all: its examples include the all-n-of-n failure (or, for
    a race of revisions created within one second, the failure that shows in the tries where the
    race cannot happen, with A and B seconds apart, too)."""
    refuses = (EXAMPLES.get(did) or {}).get("refuses") or []
    everyone = [m for m in refuses if re.search(r" (\d+) of \1 (tries|groups)|every one of them", m)]
    assert everyone, f"race {did} has no all-of-n example among its refusals"


def test_pytest_introspection_and_its_indentation_are_not_part_of_the_message() -> None:
    dev = DEVIATIONS["lws-cond-pairing"]
    real = EXAMPLES["lws-cond-pairing"]["matches"][0]
    rewritten = real.replace("\n", "\n  ") + "\nassert not [Violation(invariant='condition-pairing', ...)]"
    assert dev.matches("AssertionError", rewritten)
    assert not dev.matches("AssertionError", real.replace("\n", "\n  "))  # not rewritten: kept as it is
