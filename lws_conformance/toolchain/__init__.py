"""Obtaining binaries: prebuilt path, local source checkout, or a cached module build."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..profile import Profile
from . import cache, diskspace, download
from .gobuild import Progress, build, builds_forbidden, module_dir, module_download, not_built
from .recipes import COVERAGE_COMPONENTS, RECIPES, check_replace

__all__ = ["coverage_dir", "covered", "ensure_binaries", "manifests_dir", "missing", "resolve", "unbuilt"]


def covered(profile: Profile, component: str) -> bool:
    """Is `component` built coverage-instrumented? Profile key build.coverage: true (LWS and
    Kueue), or a list of them (an upgrade's start version is left out, `Profile.upgrade_start`)."""
    wanted = (profile.raw.get("build") or {}).get("coverage")
    return component in COVERAGE_COMPONENTS and (wanted is True or (isinstance(wanted, list) and component in wanted))


def coverage_dir(profile: Profile, cluster: str) -> Path:
    """Where the instrumented controllers of cluster `cluster` write their counters ($GOCOVERDIR):
    build.coverage_dir, else <cache>/coverage/<cluster>. Shared by every process and restart
    (Go names each file by process and time), kept after the cluster is brought down."""
    given = (profile.raw.get("build") or {}).get("coverage_dir")
    return Path(str(given)).resolve() if given else cache.cache_root() / "coverage" / cluster


def ensure_binaries(profile: Profile, progress: Progress) -> dict[str, Path]:
    """Every binary the local cluster needs, building what is missing (cached by version).

    Versions only a build provides (LWS, Kueue) are resolved first, so a version the proxy
    refuses fails in seconds, not after twenty minutes of building; then official release
    binaries are downloaded and verified where the release servers answer (etcd, Kubernetes,
    kwok), the rest is resolved, and free disk space is checked once for what must be built.
    """
    if builds_forbidden() and (todo := unbuilt(profile)):
        raise not_built([what for what, _log in todo], todo[0][1], profile.name)
    missing = resolve(profile)
    to_build = [c for c in missing if not download.fetch(c, profile.versions[c], progress)]
    for component in to_build:
        if download.assets(component, profile.versions[component]):
            module_download(RECIPES[component].module, profile.versions[component])
    if to_build:
        diskspace.check(to_build, progress)
    found: dict[str, Path] = {}
    for component, recipe in RECIPES.items():
        overrides = {b: profile.binaries.get(b) for b in recipe.binaries}
        if all(overrides.values()):
            for name, path in overrides.items():
                found[name] = _checked(name, Path(str(path)))
            continue
        directory = build(
            component,
            profile.versions[component],
            profile.sources.get(component),
            progress,
            coverage=covered(profile, component),
            replace=profile.go_replace.get(component),
        )
        for name in recipe.binaries:
            override = overrides[name]
            found[name] = _checked(name, Path(override) if override else directory / name)
    return found


def resolve(profile: Profile) -> list[str]:
    """The components of `profile` that are neither given nor cached, after resolving those only a
    build provides with the Go module proxy (seconds; a version it refuses is a `UserError`)."""
    missing = []
    for component, recipe in RECIPES.items():
        check_replace(recipe, profile.go_replace.get(component, {}))
    for component, recipe in RECIPES.items():
        needed = not all(profile.binaries.get(b) for b in recipe.binaries)
        version, source = profile.versions[component], profile.sources.get(component)
        replace = profile.go_replace.get(component)
        entry = cache.bin_dir(component, version, coverage=covered(profile, component), replace=replace)
        cached = entry.is_dir() and cache.damaged(entry, recipe.binaries) is None
        if needed and not source and not cached:
            missing.append(component)
            if not download.assets(component, version):  # only a build provides it: resolve now
                module_download(recipe.module, version)
    return missing


def missing(profile: Profile) -> list[str]:
    """Components `ensure_binaries` would build from Go source (neither given nor cached)."""
    return [what for what, _log in unbuilt(profile)]


def unbuilt(profile: Profile) -> list[tuple[str, Path]]:
    """(component and version, its build log) of each component `ensure_binaries` would obtain
    (neither given nor cached)."""
    todo = []
    for component, recipe in RECIPES.items():
        if all(profile.binaries.get(b) for b in recipe.binaries):
            continue
        version = profile.versions[component]
        source, replace = profile.sources.get(component), profile.go_replace.get(component)
        directory = cache.bin_dir(component, version, source, covered(profile, component), replace)
        if not all((directory / b).is_file() for b in recipe.binaries):
            todo.append((f"{component} {source or version}", cache.build_dir(component, directory.name) / "build.log"))
    return todo


def _checked(name: str, path: Path) -> Path:
    if not path.is_file():
        raise UserError(f"binary for {name} not found at {path}; fix binaries.{name} in the profile")
    return path


def manifests_dir(profile: Profile, component: str) -> Path:
    """The module (or checkout) root whose config/ holds the CRDs and webhook manifests."""
    if component not in ("lws", "kueue"):
        raise ValueError(component)
    return module_dir(component, profile.versions[component], profile.sources.get(component))
