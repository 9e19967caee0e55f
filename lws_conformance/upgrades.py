"""In-place controller upgrades for the suites (LWS-UPGRADE-*, KUEUE-UPGRADE-*): the versions a
test starts under (profile key `upgrade.<component>_from`), and a private local cluster brought up
with one of them, to be upgraded inside the test by `LocalCluster.replace_controller` to the
profile's own version (`versions.<component>`, or its `sources.<component>` tree)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from .profile import Profile
from .providers.local import LocalCluster, claimed_cluster
from .session_profile import run_profile


def target(config: pytest.Config, port: int | None = None) -> Profile:
    """The profile under test (what the upgrade goes to), optionally on `port`."""
    return run_profile(config).with_overrides([f"network.base_port={port}"] if port else [])


def parametrize_starts(metafunc: pytest.Metafunc, component: str) -> None:
    """One case per version in `upgrade.<component>_from` for a test taking a `start` argument
    (a single `None` case when the list is empty: the test then skips and says why). Each case is
    marked `upgrade_start(component, version)`: `lwsc run` builds that version before pytest."""
    if "start" in metafunc.fixturenames:
        froms = [p.versions[component] for p in target(metafunc.config).upgrade_starts(component)]
        cases = [pytest.param(v, marks=pytest.mark.upgrade_start(component, v)) for v in froms]
        metafunc.parametrize("start", cases or [None], ids=lambda v: f"from-{v}")


@contextmanager
def start_cluster(config: pytest.Config, run_id: str, component: str, start: str | None) -> Iterator[LocalCluster]:
    """A local cluster of the test's own, running `component` at version `start`, everything else
    as the profile under test says; brought down (and its ports released) at the end."""
    if start is None:
        pytest.skip(f"profile key upgrade.{component}_from is empty: no version to upgrade from")
    version = start

    def profile_at(port: int) -> Profile:
        return target(config, port).upgrade_start(component, version)

    def progress(msg: str) -> None:
        print(f"[lwsc private upgrade] {msg}", file=sys.stderr, flush=True)

    with claimed_cluster(profile_at, f"private-{run_id}-{component}{start.replace('.', '')}", progress) as cluster:
        yield cluster
