"""The existing-cluster provider: a vendor's cluster, adopted read-only from a kubeconfig.

Nothing is installed or changed outside what tests create. Versions are read from the cluster
(see `preflight`), topology label keys and the GPU resource come from the profile (`lwsc
discover` proposes one). Tests that break things or eat the whole capacity are marked
`destructive` and only run with `--lwsc-allow-destructive` on a cluster the harness did not
create. Cleanup deletes exactly what carries the run label `lwsc.x-k8s.io/run`, nothing else.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from ..errors import UserError
from ..k8s.client import api_client
from ..k8s.objects import RUN_LABEL, list_cluster_scoped, sweep_run
from ..profile import Profile
from . import apicheck, kubeconfigs, preflight
from .base import ClusterHandle

# Providers whose clusters the harness created and throws away: destructive tests may run there.
DISPOSABLE = frozenset({"local", "kind"})
_PATH_KEYS = {"certificate-authority", "client-certificate", "client-key", "tokenFile"}
NEEDS_KUBECONFIG = "the existing provider needs --kubeconfig PATH (and optionally --context NAME)"
NO_LIFECYCLE = (
    "the existing provider adopts a cluster you run; there is nothing to bring up or down "
    "(use `lwsc preflight --kubeconfig PATH`, `lwsc run --kubeconfig PATH`, `lwsc cleanup`)"
)


def destructive_skip_reason(handle: ClusterHandle, allowed: bool) -> str | None:
    """Why a `destructive` test must not run on this cluster, or None if it may."""
    if allowed or handle.provider in DISPOSABLE:
        return None
    return (
        f"destructive: breaks things or needs the whole capacity; not run on a {handle.provider} cluster "
        f"the harness did not create unless --lwsc-allow-destructive is given"
    )


@dataclass(frozen=True)
class Target:
    """Which cluster a kubeconfig (and context) names, as kubectl would pick it; `files` are every
    kubeconfig merged to find it (several: a `$KUBECONFIG` list), `kubeconfig` the first of them."""

    kubeconfig: Path
    context: str
    server: str
    files: tuple[Path, ...] = ()
    chosen_by: str = "--kubeconfig"
    as_is: bool = True  # `kubeconfig` alone, under its own current-context, names this cluster

    @property
    def config_file(self) -> str:
        """What clients load (`api_client(t.config_file, t.context)`): the file, or the list merged."""
        return kubeconfigs.joined(self.files or (self.kubeconfig,))

    @property
    def merged(self) -> bool:
        return len(self.files) > 1

    def __str__(self) -> str:
        return f"{self.server} (context {self.context}, kubeconfig {self.config_file})"


def target(kubeconfig: Path, context: str | None) -> Target:
    """The cluster the one file `kubeconfig` names under `context` (default: its current-context)."""
    return _target((kubeconfig,), context, "--kubeconfig")


def chosen(
    kubeconfig: str | Path | None,
    *,
    env: str | None,
    env_name: str = "$KUBECONFIG",
    own: Path | None = None,
    own_why: str = "",
    given_by: str = "--kubeconfig",
) -> tuple[tuple[Path, ...], str] | None:
    """The precedence alone (`resolve`): the kubeconfig files the rule picks and what picked
    them, or None when nothing names a cluster. Nothing is read."""
    if kubeconfig:
        return (Path(kubeconfig).expanduser(),), given_by
    entries = tuple(Path(p).expanduser() for p in (env or "").split(os.pathsep) if p)
    if entries:
        return entries, env_name
    if own is not None:
        return (own,), own_why
    return None


def resolve(
    kubeconfig: str | Path | None,
    context: str | None,
    *,
    env: str | None = None,
    own: Path | None = None,
    own_why: str = "",
    given_by: str = "--kubeconfig",
    missing: str = NEEDS_KUBECONFIG,
) -> Target:
    """The one rule every command chooses its cluster by (docs/providers.md):

    the file `kubeconfig` (--kubeconfig, `given_by`) > every entry of `env` ($KUBECONFIG, merged
    as kubectl merges them, entries that do not exist skipped; pass None where $KUBECONFIG does
    not apply) > `own`, the kubeconfig of the harness's own cluster (`own_why` says which) > a
    `UserError` saying `missing`. Never ~/.kube/config unless it is named. The context:
    `context` (--context) > the merged current-context. Exec and auth-provider users work:
    clients load the files through `kubernetes.config`."""
    picked = chosen(kubeconfig, env=env, own=own, own_why=own_why, given_by=given_by)
    if picked is None:
        raise UserError(missing)
    files, why = picked
    if why == "$KUBECONFIG":
        found = tuple(p for p in files if p.is_file())
        if not found:
            raise UserError(f"kubeconfig {files[0]} ($KUBECONFIG) does not exist; pass --kubeconfig PATH")
        files = found
    elif not files[0].is_file():
        raise UserError(f"kubeconfig {files[0]} ({why}) does not exist; pass --kubeconfig PATH")
    return _target(files, context, why)


def _target(files: tuple[Path, ...], context: str | None, chosen_by: str) -> Target:
    """The cluster `files` (merged) name under `context` (default: the current-context); one line
    naming the fix when the file, the context or its cluster is not there."""
    view = kubeconfigs.read(files)
    where = kubeconfigs.joined(files)
    name = context or view.current_context
    if not name:
        raise UserError(f"kubeconfig {where} has no current-context; pass --context NAME")
    ctx = view.entry("contexts", name)
    if ctx is None:
        raise UserError(f"context '{name}' not in {where}; it has: {', '.join(view.names('contexts')) or 'none'}")
    cluster = view.entry("clusters", (ctx[0].get("context") or {}).get("cluster"))
    server = str(((cluster[0].get("cluster") or {}) if cluster else {}).get("server") or "")
    if not server:
        raise UserError(f"context '{name}' of {where} names no cluster with a server; fix the kubeconfig")
    as_is = len(files) == 1 and name == view.current_context
    return Target(files[0], str(name), server, files, chosen_by, as_is)


def reachable(t: Target) -> str:
    """The server's Kubernetes version; one line (exit 2) in seconds when it cannot be used: not
    answering, refusing the credentials, no Kubernetes API server, TLS or proxy failing
    (`apicheck`, through the client's own request path)."""
    return apicheck.check(t.config_file, t.context, t.server)


def pin_context(kubeconfig: Path, context: str, out: Path) -> Path:
    """A self-contained copy of `kubeconfig` whose current context is `context` (`pin`)."""
    return pin(target(kubeconfig, context), out)


def pin(t: Target, out: Path) -> Path:
    """A self-contained kubeconfig of `t` alone: its context (current), cluster and user, taken
    from the merged files, relative file references made absolute against the file each came from.

    Suites build clients from a kubeconfig path alone; pinning the context into a copy keeps them
    unaware of contexts and of `$KUBECONFIG` lists.
    """
    view = kubeconfigs.read(t.files or (t.kubeconfig,))
    ctx = view.entry("contexts", t.context)
    assert ctx is not None  # `t` was resolved from these files
    inner = ctx[0].get("context") or {}

    def section(kind: str, name: str | None, key: str) -> list[dict[str, Any]]:
        found = view.entry(kind, name)
        if found is None:
            return []
        entry, origin = found
        base = origin.resolve().parent
        body = {
            k: (str(base / v) if k in _PATH_KEYS and v and not os.path.isabs(v) else v)
            for k, v in (entry.get(key) or {}).items()
        }
        return [{**entry, key: body}]

    pinned = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": t.context,
        "contexts": [ctx[0]],
        "clusters": section("clusters", inner.get("cluster"), "cluster"),
        "users": section("users", inner.get("user"), "user"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(pinned, sort_keys=False))
    out.chmod(0o600)
    return out


def adopt(
    kubeconfig: Path, profile: Profile, known: dict[str, str] | None = None
) -> tuple[ClusterHandle, preflight.Report]:
    """A handle for a cluster the harness did not create, plus the preflight that built it.

    Versions are what the cluster shows; where it shows none, the profile's value is used and the
    preflight says so (a `warn` line naming `--set versions.<c>=`).
    """
    if not kubeconfig.is_file():
        raise UserError(f"kubeconfig {kubeconfig} does not exist; pass --kubeconfig PATH")
    api = api_client(kubeconfig)
    try:
        report = preflight.run(api, profile.topology, known)
    finally:
        api.close()
    versions: dict[str, str] = {}
    for component, found in report.versions.items():
        if found.version:
            versions[component] = found.version
        elif found.installed and component in profile.versions:
            versions[component] = profile.versions[component]
            report.add(
                f"{component} version (assumed)",
                "warn",
                f"using the profile's {profile.versions[component]}; pass --set versions.{component}=<vX.Y.Z> "
                f"if that is not what runs (version gating depends on it)",
            )
    handle = ClusterHandle(
        provider="existing",
        kubeconfig=kubeconfig,
        versions=versions,
        topology=profile.topology,
        kueue_topology_name=profile.kueue_topology_name,
        kueue_flavor_name=profile.kueue_flavor_name,
    )
    return handle, report


@dataclass
class ExistingCluster:
    """The existing provider behind `base.Provider`: `up` adopts the cluster (preflight, written to
    `out`/preflight.json; a failed check is one line and exit 2), `release` deletes what a run
    created there and the private context-pinned kubeconfig copy; nothing ever stops the cluster."""

    target: Target | None  # None: not given (up says how to give it)
    profile: Profile
    out: Path  # the run's report directory: preflight.json and handle.json go there
    pinned: Path | None = None  # where a pinned copy goes (a private 0600 file) when the target is not a file as is
    creates = False
    kubeconfig: Path | None = None  # what the suites use: the target's file, or its pinned copy

    @property
    def handle_file(self) -> Path:
        return self.out / "handle.json"

    def running(self) -> bool:
        return True  # a cluster the user runs

    def up(self, progress: Callable[[str], None]) -> ClusterHandle:
        if self.target is None:
            raise UserError(NEEDS_KUBECONFIG)
        if not self.target.kubeconfig.is_file():
            raise UserError(f"kubeconfig {self.target.kubeconfig} does not exist; pass --kubeconfig PATH")
        self.kubeconfig = self.target.kubeconfig
        try:
            if not self.target.as_is and self.pinned:  # --context, or a $KUBECONFIG list
                self.pinned.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self.pinned.touch(mode=0o600)
                self.kubeconfig = pin(self.target, self.pinned)
            handle, report = adopt(self.kubeconfig, self.profile)
            print(report.text(), file=sys.stderr)
            if report.failed:  # nothing is written: the run never starts
                first = next(c for c in report.checks if c.status == "fail")
                why = f"{first.name}: {first.detail}"
                raise UserError(f"preflight failed: {why}; nothing was run (see `lwsc preflight`)")
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "preflight.json").write_text(json.dumps(report.to_dict(), indent=2))
        except BaseException:
            self._unpin()
            raise
        self.handle_file.write_text(handle.to_json())
        return handle

    def down(self) -> None:
        raise UserError(NO_LIFECYCLE)

    def release(self, run_id: str) -> list[str]:
        try:
            return release_run(self.kubeconfig, run_id) if self.kubeconfig else []
        finally:
            self._unpin()

    def _unpin(self) -> None:
        if self.pinned:
            self.pinned.unlink(missing_ok=True)


def release_run(kubeconfig: Path, run_id: str) -> list[str]:
    """After a run on a cluster that stays: delete what run `run_id` created there."""
    api = api_client(kubeconfig)
    try:
        return cleanup(api, run_id)
    finally:
        api.close()


def harness_objects(api: client.ApiClient, run_id: str | None = None) -> list[str]:
    """`kind/name` of everything carrying the run label (of one run, or of any run)."""
    selector = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    nss = client.CoreV1Api(api).list_namespace(label_selector=selector).items
    out = [f"Namespace/{ns.metadata.name}" for ns in nss if ns.metadata]
    return out + [f"{kind}/{item['metadata']['name']}" for kind, item in list_cluster_scoped(api, selector)]


def run_ids(api: client.ApiClient) -> list[str]:
    """Every run id that still has labelled namespaces (for `lwsc cleanup --all`)."""
    nss = client.CoreV1Api(api).list_namespace(label_selector=RUN_LABEL).items
    return sorted({(ns.metadata.labels or {})[RUN_LABEL] for ns in nss if ns.metadata})


def cleanup(api: client.ApiClient, run_id: str | None) -> list[str]:
    """Delete what one run (or, with None, every harness run) created; return what was deleted."""
    doomed = harness_objects(api, run_id)
    ids = [run_id] if run_id else sorted(set(run_ids(api)) | _cluster_scoped_run_ids(api))
    for rid in ids:
        sweep_run(api, rid)
    return doomed


def _cluster_scoped_run_ids(api: client.ApiClient) -> set[str]:
    return {item["metadata"]["labels"][RUN_LABEL] for _kind, item in list_cluster_scoped(api, RUN_LABEL)}
