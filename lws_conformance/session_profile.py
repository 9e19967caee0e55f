"""The profile of a pytest session of the suites, made once per session.

Under `lwsc run` it is exactly the file `lwsc` resolved (`--lwsc-resolved-profile`, the run's
`profile.resolved.yaml`); a plain `pytest suites` session loads `--lwsc-profile` with its
`--lwsc-set` overrides. xdist workers take the controller's (`WORKER_KEY`), never load their own.
Private-cluster, upgrade and MultiKueue profiles are derived from it (`Profile.with_overrides`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .profile import Profile, from_resolved, load_profile, read_resolved

RESOLVED_OPTION = "--lwsc-resolved-profile"
WORKER_KEY = "lwsc_profile"  # workerinput: the controller's profile, as `Profile.resolved` data
_PROFILE = pytest.StashKey[Profile]()


def run_profile(config: pytest.Config) -> Profile:
    """The session's profile (module docstring); a bad one is a `UserError` each time it is asked."""
    if _PROFILE not in config.stash:
        config.stash[_PROFILE] = _made(config)
    return config.stash[_PROFILE]


def _made(config: pytest.Config) -> Profile:
    handed: dict[str, Any] | None = getattr(config, "workerinput", {}).get(WORKER_KEY)
    if handed is not None:
        return from_resolved(handed)
    resolved = config.getoption(RESOLVED_OPTION)
    if resolved:
        return read_resolved(Path(resolved))
    # a plain `pytest suites` session, without lwsc
    return load_profile(config.getoption("--lwsc-profile"), config.getoption("--lwsc-set"))
