"""Kubeconfig files read as kubectl reads them: one file, or every entry of a `$KUBECONFIG` list
merged by `kubernetes.config`'s own loader (`KubeConfigMerger`, what `load_kube_config` does with
a list): the first file that names a cluster, context or user wins; the first file that sets
`current-context` gives it (kubectl's rule); entries that do not exist are skipped."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KubeConfigMerger

from ..errors import UserError

SECTIONS = ("clusters", "contexts", "users")


def joined(files: tuple[Path, ...]) -> str:
    """The files as one `load_kube_config(config_file=...)` argument (merged when several)."""
    return os.pathsep.join(str(f) for f in files)


@dataclass(frozen=True)
class Merged:
    """The merged view: each entry with the file it came from (relative paths are relative to it)."""

    files: tuple[Path, ...]
    current_context: str | None
    entries: dict[str, dict[str, tuple[dict[str, Any], Path]]]  # section -> name -> (entry, its file)

    def entry(self, section: str, name: str | None) -> tuple[dict[str, Any], Path] | None:
        return self.entries[section].get(str(name)) if name else None

    def names(self, section: str) -> list[str]:
        return sorted(self.entries[section])


def read(files: tuple[Path, ...]) -> Merged:
    """The merged kubeconfig of `files`; one line naming the file when one cannot be read."""
    try:
        merger = KubeConfigMerger(joined(files))
    except (OSError, yaml.YAMLError, ConfigException) as exc:
        raise UserError(f"cannot read kubeconfig {joined(files)}: {str(exc).splitlines()[0]}") from None
    if merger.config is None:
        raise UserError(f"kubeconfig {joined(files)} does not exist; pass --kubeconfig PATH")
    entries: dict[str, dict[str, tuple[dict[str, Any], Path]]] = {s: {} for s in SECTIONS}
    for section in SECTIONS:
        for node in merger.config.value.get(section) or []:
            value = node.value if hasattr(node, "value") else node
            if isinstance(value, dict) and "name" in value:
                entries[section][str(value["name"])] = (value, Path(getattr(node, "path", None) or files[0]))
    current = next(
        (
            str(merger.config_files[p]["current-context"])
            for p in merger.paths
            if isinstance(merger.config_files[p], dict) and merger.config_files[p].get("current-context")
        ),
        None,
    )
    return Merged(tuple(Path(p) for p in merger.paths), current, entries)
