"""Obtaining binaries: prebuilt path, local source checkout, or a cached module build."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..profile import Profile
from . import cache
from .gobuild import Progress, build, module_dir, module_download
from .recipes import RECIPES

__all__ = ["ensure_binaries", "manifests_dir", "missing"]


def ensure_binaries(profile: Profile, progress: Progress) -> dict[str, Path]:
    """Every binary the local cluster needs, building what is missing (cached by version).

    Every version to build is resolved first, so a version the proxy refuses fails in seconds,
    not after twenty minutes of building the components before it.
    """
    for component, recipe in RECIPES.items():
        needed = not all(profile.binaries.get(b) for b in recipe.binaries)
        version, source = profile.versions[component], profile.sources.get(component)
        cached = all((cache.bin_dir(component, version) / b).is_file() for b in recipe.binaries)
        if needed and not source and not cached:
            module_download(recipe.module, version)
    found: dict[str, Path] = {}
    for component, recipe in RECIPES.items():
        overrides = {b: profile.binaries.get(b) for b in recipe.binaries}
        if all(overrides.values()):
            for name, path in overrides.items():
                found[name] = _checked(name, Path(str(path)))
            continue
        directory = build(component, profile.versions[component], profile.sources.get(component), progress)
        for name in recipe.binaries:
            override = overrides[name]
            found[name] = _checked(name, Path(override) if override else directory / name)
    return found


def missing(profile: Profile) -> list[str]:
    """Components `ensure_binaries` would build from Go source (neither given nor cached)."""
    todo = []
    for component, recipe in RECIPES.items():
        if all(profile.binaries.get(b) for b in recipe.binaries):
            continue
        version = profile.versions[component]
        directory = cache.bin_dir(component, version, profile.sources.get(component))
        if not all((directory / b).is_file() for b in recipe.binaries):
            todo.append(f"{component} {version}")
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
