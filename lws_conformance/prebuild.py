"""Every binary the selected tests need, obtained before pytest starts (`lwsc build`, `lwsc run`):
the cluster under test's, the private clusters' (their KEY=VALUE variants included) and each
upgrade start version's. Nothing builds inside a test (`toolchain.gobuild.NO_BUILD_ENV`): a
test that still lacks a binary ends in `error` naming the build and its log.

Builds run one at a time (the Go builds use every core already), each with its own progress.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .profile import Profile
from .selection import Selection
from .toolchain import ensure_binaries, resolve, unbuilt

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Need:
    why: str  # who needs these binaries, e.g. "upgrade start lws v0.7.0 (LWS-UPGRADE-*)"
    profile: Profile


def needs(under_test: Profile, provider: str, sel: Selection) -> list[Need]:
    """The local binaries of: the cluster under test (local provider), the private clusters (the
    run's profile with their settings) and the upgrade start versions of the selection (none on
    kind: those tests do not run there)."""
    out = [Need("the cluster under test", under_test)] if provider == "local" else []
    if provider == "kind":
        return out
    for settings in sel.private:
        profile = under_test.with_overrides(settings).private()
        out.append(Need("private clusters" + (f" with {', '.join(settings)}" if settings else ""), profile))
    for component, version in sel.upgrade_starts:
        out.append(Need(f"the upgrade start {component} {version}", under_test.upgrade_start(component, version)))
    return out


def pending(wanted: list[Need]) -> list[tuple[Need, list[str]]]:
    """What of `wanted` is not built yet: each need with the components it adds ("lws v0.7.0")."""
    todo: list[tuple[Need, list[str]]] = []
    seen: set[str] = set()
    for need in wanted:
        fresh = [what for what, _log in unbuilt(need.profile) if what not in seen]
        seen.update(fresh)
        if fresh:
            todo.append((need, fresh))
    return todo


def check(wanted: list[Need]) -> None:
    """Every version still to build resolved with the Go module proxy before any build starts: a
    version it refuses (a typo in upgrade.lws_from) is one line and exit 2 in seconds."""
    for need, _whats in pending(wanted):
        resolve(need.profile)


def build(wanted: list[Need], progress: Progress) -> list[str]:
    """Obtain (build, download or find cached) what `wanted` needs; one progress line per build.
    Returns what was obtained (empty: everything was cached)."""
    todo = pending(wanted)
    if not todo:
        return []
    check(wanted)
    seen = [what for _need, whats in todo for what in whats]
    listing = "; ".join(f"{', '.join(what)} (for {need.why})" for need, what in todo)
    progress(f"to build before the tests start: {listing}")
    for i, (need, what) in enumerate(todo, 1):
        progress(f"build {i}/{len(todo)}: {', '.join(what)} (for {need.why})")
        ensure_binaries(need.profile, progress)
    return sorted(seen)
