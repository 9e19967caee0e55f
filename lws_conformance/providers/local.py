"""The embedded local cluster: real control plane + kwok + real LWS and Kueue, as processes.

`LocalCluster` is its life cycle (up, reuse, down, fault hooks, in-place controller upgrades); the
start-up sequence is `providers.boot`, the state directory and component processes
`providers.components`. Any failure on the way up stops everything already started: nothing is
left running.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from kubernetes.client import ApiextensionsV1Api

from ..errors import InfraError, UserError
from ..install import pki
from ..k8s.client import api_client
from ..profile import RESOLVED_FILE, Profile, read_resolved
from ..toolchain import ensure_binaries
from ..toolchain.gobuild import Progress
from . import process, reuse
from .base import ClusterHandle
from .boot import BootSequence
from .components import COVERAGE_GRACE, ORDER, state_root
from .existing import release_run
from .ports import claim_port_range, release_port_range


@contextmanager
def claimed_cluster(profile_at: Callable[[int], Profile], name: str, progress: Progress) -> Iterator[LocalCluster]:
    """An extra local cluster (a test's private one) on a claimed block of ports: `profile_at`
    gives its profile for the claimed base port. Brought up on entry; brought down and its ports
    released on exit, also when the bring-up itself failed."""
    port = claim_port_range()
    cluster: LocalCluster | None = None
    try:
        cluster = LocalCluster(profile_at(port), name=name)
        cluster.up(progress)
        yield cluster
    finally:
        if cluster is not None:
            cluster.down()
        release_port_range(port)


def down_private(run_id: str, profile: Profile) -> list[str]:
    """The safety net after a suite run: bring down the private clusters of `run_id` its tests
    left running (an xdist worker killed before its teardown finished, e.g. on Ctrl-C); `profile`
    is the run's."""
    left = sorted(d.name for d in state_root().glob(f"private-{run_id}-*") if d.is_dir())
    for name in left:
        LocalCluster(profile, name=name).down()
    return left


def recorded(cluster_dir: Path) -> LocalCluster | None:
    """The local cluster whose state is `cluster_dir`, with the profile it was brought up with
    (its `profile.resolved.yaml`); None when it records none."""
    resolved = cluster_dir / RESOLVED_FILE
    if not resolved.is_file():
        return None
    return LocalCluster(read_resolved(resolved), name=cluster_dir.name)


PORT_FILE = "base_port"  # in the state directory: the base port the cluster runs on


class LocalCluster(BootSequence):
    """A local cluster by name, brought up from its profile (`base.Provider`)."""

    creates = True  # base.Provider: this provider brings clusters up and down

    def handle(self) -> ClusterHandle | None:
        if not self.handle_file.is_file():
            return None
        return ClusterHandle.from_json(self.handle_file.read_text())

    def release(self, run_id: str) -> list[str]:
        """base.Provider: the cluster stays (reused or kept): delete what run `run_id` created."""
        return release_run(self.kubeconfig, run_id)

    def running(self) -> bool:
        recs = {r.name: r for r in self.records()}
        return self.handle_file.is_file() and all(n in recs and process.alive(recs[n]) for n in ORDER)

    def up(self, progress: Progress) -> ClusterHandle:
        """Bring the cluster up, or return the running one (idempotent)."""
        existing = self.handle()
        if existing and self.running():
            if existing.versions != self.profile.versions or existing.topology != self.profile.topology:
                raise UserError(
                    f"cluster '{self.name}' is running with other versions or topology; "
                    f"run `lwsc down --name {self.name}` first, or use --name for a second cluster"
                )
            reuse.verify(self, progress)  # the reused cluster still matches its profile
            if not (self.dir / RESOLVED_FILE).is_file():
                self.profile.write_resolved(self.dir / RESOLVED_FILE)
            progress(f"cluster '{self.name}' is already up")
            return existing
        if self.records() or self.dir.exists():
            progress(f"cluster '{self.name}' has stale state; cleaning it up")
            self.down()
        self._check_ports()
        binaries = ensure_binaries(self.profile, progress)
        started = time.monotonic()
        try:
            handle = self._start(binaries, progress)
        except BaseException:
            self.down(keep_logs=True)
            raise
        (self.dir / PORT_FILE).write_text(str(self.profile.base_port))  # how `lwsc --name` finds it again
        self.profile.write_resolved(self.dir / RESOLVED_FILE)  # what chaos faults restart it with
        progress(f"cluster '{self.name}' ready in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")
        return handle

    def stop_component(self, component: str) -> None:
        """Fault hook: stop one process (e.g. the LWS controller) without touching the rest."""
        for rec in self.records():
            if rec.name == component:
                process.stop(rec, grace=COVERAGE_GRACE if self.coverage_env(component) else 3.0)
                dataclasses.replace(rec, stopped=True).save(self.pid_dir)  # the health check's "not dead"

    def start_component(self, component: str) -> None:
        """Fault hook: restart a component stopped by `stop_component`, with its saved argv."""
        argv_file = self.dir / "argv" / f"{component}.yaml"
        argv = yaml.safe_load(argv_file.read_text())
        rec = process.start(component, argv, self.log(component), self.pid_dir, env=self.process_env(component))
        deadline = time.monotonic() + self.profile.ready_seconds
        self._wait_component(rec, deadline)
        if component == "kube-apiserver":
            # /readyz can pass before the CRDs' paths are installed again (their requests get 503
            # "the request has been made before all known HTTP paths have been installed")
            api = api_client(self.kubeconfig)
            try:
                crds = api.sanitize_for_serialization(ApiextensionsV1Api(api).list_custom_resource_definition())
                self._wait_crds(api, crds["items"], deadline)
            finally:
                api.close()

    def replace_controller(self, component: str, to: Profile, progress: Progress) -> None:
        """In-place upgrade (or downgrade) of the `component` controller ("lws" or "kueue") to
        `to`'s version, as an operator does it: stop the controller, apply the new version's
        CRDs (and wait until they are served), start the new binary with the same configuration
        and flags, then apply its webhook configurations (removing ones the new version no longer
        has). Nodes, pods and every other process stay as they are; the handle reports `to`."""
        deadline = time.monotonic() + self.profile.ready_seconds
        target = LocalCluster(to, name=self.name)
        bins = ensure_binaries(to, progress)
        ca = pki.Pki.at(self.dir / "pki").ca_crt.read_bytes()
        _, old_hooks = self._manifests(bins["kubectl"], component, ca)
        crds, hooks = target._manifests(bins["kubectl"], component, ca)
        argv = self.saved_argv(component)
        if not argv:
            raise InfraError(f"cluster '{self.name}' has no saved command line for {component}")
        progress(f"{component}: replacing {self.profile.versions[component]} by {to.versions[component]}")
        self.stop_component(component)
        self._apply(bins["kubectl"], crds)
        api = api_client(self.kubeconfig)
        try:
            self._wait_crds(api, crds, deadline)
        finally:
            api.close()
        rec = self._launch(component, [str(bins[component]), *argv[1:]], to)
        self._wait_component(rec, deadline)
        gone = {(h["kind"], h["metadata"]["name"]) for h in old_hooks} - {
            (h["kind"], h["metadata"]["name"]) for h in hooks
        }
        for kind, name in sorted(gone):
            self._kubectl(bins["kubectl"], "delete", kind, name, "--ignore-not-found")
        self._apply(bins["kubectl"], hooks)
        self.profile = to
        self._write_handle()
