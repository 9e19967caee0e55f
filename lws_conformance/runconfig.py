"""One `lwsc` invocation, resolved once by `cli.main` before any command runs: the profile with
its --set overrides, the provider, the target's inputs (--kubeconfig, --context, $KUBECONFIG),
the reports directory, the selection, workers, shard and flags, and the subcommand's own
options. Every command receives this frozen `RunConfig`, never the argparse namespace.

The target cluster itself is resolved at its first use (after the command's own input checks,
so a usage mistake is named before a missing kubeconfig), once, by the one rule of
`providers.existing.resolve` (docs/providers.md). The profile goes to pytest as a file
(`Profile.write_resolved`, `<run>/profile.resolved.yaml`); pytest reads exactly that.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .profile import Profile
from .worker_count import Workers

# What `RunConfig` holds as fields; every other option of the subcommand goes to `options`.
RESOLVED = frozenset(
    {
        "command",
        "profile",
        "set",
        "name",
        "provider",
        "kubeconfig",
        "context",
        "reports",
        "focus",
        "skip",
        "workers",
        "shard",
        "certify",
        "strict",
        "keep",
        "dry_run",
        "allow_destructive",
        "accept_known_deviations",
        "in_cluster",
        "pytest_args",
        "kind_bin",
        "docker_bin",
        "kubectl_bin",
        "config",
    }
)


class Options(Mapping[str, Any]):
    """The subcommand's own options (an archive, a namespace, a timeout ...), read-only:
    `cfg.options.namespace` or `cfg.options.get("namespace")`."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no option {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a resolved invocation's options are read-only")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Options({self._values!r})"


@dataclass
class RunState:
    """What happened so far (the only mutable part): main's error path reads it."""

    reports_created: bool = False  # the reports directory did not exist and was created
    run_started: bool = False  # a cluster that refuses from here on makes the run inconclusive (exit 3)


@dataclass(frozen=True)
class RunConfig:
    command: str
    profile: Profile  # --profile with every --set applied, validated, sources resolved
    profile_name: str
    sets: tuple[str, ...]
    name: str  # the local or kind cluster's name
    provider: str  # local, kind or existing (--kubeconfig and --in-cluster mean existing)
    provider_flag: str | None  # --provider as given
    kubeconfig: str | None  # the existing cluster's kubeconfig as given (--kubeconfig, or --in-cluster's)
    kubeconfig_from: str  # what gave it: --kubeconfig, --in-cluster (the pod's ServiceAccount)
    context: str | None  # --context
    kubeconfig_env: str | None  # $KUBECONFIG (every entry) where it applies to this command, else None
    reports: Path | None  # where run directories go (commands that write runs)
    focus: str | None  # --focus (or what --rerun-failed chose)
    skip: str | None
    selection: tuple[str, ...]  # --focus/--skip as pytest -k arguments
    workers: Workers | None  # `lwsc run` and `lwsc matrix`: -n resolved (auto from the machine's cores)
    shard: str | None
    certify: bool = False
    strict: bool = False
    keep: bool = False
    dry_run: bool = False
    allow_destructive: bool = False
    accept_known_deviations: bool = False
    in_cluster: bool = False
    pytest_args: tuple[str, ...] = ()
    tools: tuple[str | None, str | None, str | None] = (None, None, None)  # --kind-bin, --docker-bin, --kubectl-bin
    options: Options = field(default_factory=lambda: Options({}))
    state: RunState = field(default_factory=RunState, compare=False)

    @classmethod
    def of(cls, ns: argparse.Namespace, **resolved: Any) -> RunConfig:
        """The fields `resolved` gives; the subcommand's other options read-only in `options`."""
        return cls(**resolved, options=Options({k: v for k, v in vars(ns).items() if k not in RESOLVED}))
