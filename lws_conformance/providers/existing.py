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
from . import apicheck, preflight
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
    """Which cluster a kubeconfig (and context) names, as kubectl would pick it."""

    kubeconfig: Path
    context: str
    server: str

    def __str__(self) -> str:
        return f"{self.server} (context {self.context}, kubeconfig {self.kubeconfig})"


def _read(kubeconfig: Path) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = yaml.safe_load(kubeconfig.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read kubeconfig {kubeconfig}: {str(exc).splitlines()[0]}") from None
    return doc


def _context(doc: dict[str, Any], kubeconfig: Path, name: str) -> dict[str, Any]:
    """The kubeconfig's context entry `name`; one line naming the contexts it has otherwise."""
    contexts = {c.get("name"): c for c in doc.get("contexts") or []}
    if name not in contexts:
        raise UserError(f"context '{name}' not in {kubeconfig}; it has: {', '.join(sorted(contexts)) or 'none'}")
    entry: dict[str, Any] = contexts[name]
    return entry


def target(kubeconfig: Path, context: str | None) -> Target:
    """The cluster `kubeconfig` names under `context` (default: its current-context); one line
    naming the fix when the file, the context or its cluster is not there."""
    doc = _read(kubeconfig)
    name = context or doc.get("current-context")
    if not name:
        raise UserError(f"kubeconfig {kubeconfig} has no current-context; pass --context NAME")
    ctx = _context(doc, kubeconfig, str(name)).get("context") or {}
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or []}
    server = str(clusters.get(ctx.get("cluster"), {}).get("server") or "")
    if not server:
        raise UserError(f"context '{name}' of {kubeconfig} names no cluster with a server; fix the kubeconfig")
    return Target(kubeconfig, str(name), server)


def reachable(t: Target) -> str:
    """The server's Kubernetes version; one line (exit 2) in seconds when it cannot be used: not
    answering, refusing the credentials, no Kubernetes API server, TLS or proxy failing
    (`apicheck`, through the client's own request path)."""
    return apicheck.check(t.kubeconfig, t.context, t.server)


def pin_context(kubeconfig: Path, context: str, out: Path) -> Path:
    """A self-contained copy of `kubeconfig` whose current context is `context`.

    Suites build clients from a kubeconfig path alone; pinning the context into a copy (with
    relative file references made absolute) keeps them unaware of contexts.
    """
    doc = _read(kubeconfig)
    ctx = _context(doc, kubeconfig, context)
    cluster_name, user_name = ctx["context"].get("cluster"), ctx["context"].get("user")
    base = kubeconfig.resolve().parent

    def absolute(section: dict[str, Any]) -> dict[str, Any]:
        return {k: (str(base / v) if k in _PATH_KEYS and v and not os.path.isabs(v) else v) for k, v in section.items()}

    pinned = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "contexts": [ctx],
        "clusters": [
            {**c, "cluster": absolute(c.get("cluster") or {})}
            for c in doc.get("clusters") or []
            if c["name"] == cluster_name
        ],
        "users": [
            {**u, "user": absolute(u.get("user") or {})} for u in doc.get("users") or [] if u["name"] == user_name
        ],
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

    kubeconfig: Path | None  # None: not given (up says how to give it)
    context: str | None
    profile: Profile
    out: Path  # the run's report directory: preflight.json and handle.json go there
    pinned: Path | None = None  # where a context-pinned copy goes (a private 0600 file), with --context
    creates = False

    @property
    def handle_file(self) -> Path:
        return self.out / "handle.json"

    def running(self) -> bool:
        return True  # a cluster the user runs

    def up(self, progress: Callable[[str], None]) -> ClusterHandle:
        if self.kubeconfig is None:
            raise UserError(NEEDS_KUBECONFIG)
        if not self.kubeconfig.is_file():
            raise UserError(f"kubeconfig {self.kubeconfig} does not exist; pass --kubeconfig PATH")
        try:
            if self.context and self.pinned:
                self.pinned.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self.pinned.touch(mode=0o600)
                self.kubeconfig = pin_context(self.kubeconfig, self.context, self.pinned)
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
