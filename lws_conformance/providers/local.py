"""The embedded local cluster: real control plane + kwok + real LWS and Kueue, as processes.

Everything binds to 127.0.0.1. Start order matters (see ../shared/docs/local-control-plane.md):
etcd -> apiserver -> CRDs -> KCM, scheduler, kwok, fake nodes -> LWS and Kueue -> their webhook
configurations (failurePolicy Fail: applied only once the servers answer) -> Kueue Topology and
ResourceFlavor. Any failure on the way stops everything already started: nothing is left running.
The state that sequence installs is kept after the first cluster of a set of inputs as a
provisioned-state snapshot (`snapshot`); later clusters restore it and skip the installation.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .. import resources
from ..errors import InfraError, UserError
from ..install import controllers, manifests, pki
from ..install import crds as crd_checks
from ..k8s.client import api_client
from ..k8s.wait import wait_for
from ..profile import Profile, load_profile
from ..toolchain import cache as bincache
from ..toolchain import ensure_binaries, manifests_dir
from ..toolchain.gobuild import Progress, module_dir
from . import nodes, process, reuse, snapshot
from .base import ClusterHandle
from .existing import release_run

ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "lws", "kueue")
PORT_OFFSETS = {
    "etcd": 0,
    "etcd-peer": 1,
    "kube-apiserver": 2,
    "kube-controller-manager": 3,
    "kube-scheduler": 4,
    "lws-webhook": 10,
    "lws-metrics": 11,
    "lws-health": 12,
    "kueue-webhook": 20,
    "kueue-metrics": 21,
    "kueue-health": 22,
}
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
)
# The default StorageClass: KCM's development hostPath provisioner (`--enable-hostpath-provisioner`)
# makes a PV under /tmp/hostpath_pv/ for each claim, so volumeClaimTemplates bind as on a real cluster.
DEFAULT_STORAGE_CLASS = {
    "metadata": {"name": "lwsc-hostpath", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "kubernetes.io/host-path",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
}
# Replaces kwok's pod-delete stage (why: in the file).
POD_DELETE_STAGE = resources.fixtures() / "kwok" / "pod-delete.yaml"
CAPABILITIES = frozenset({"stop-controller", "restart-apiserver", "node-failure", "pod-status-faults"})


def state_root() -> Path:
    env = os.environ.get("LWSC_STATE_DIR")
    return Path(env) if env else Path.home() / ".local" / "state" / "lws-conformance"


def claim_port_range(first: int = 19000, last: int = 29000, step: int = 100) -> int:
    """Claim a free block of ports for an extra cluster (private test clusters, benchmarks).

    Concurrent pytest sessions on one machine must not pick the same ports, so a base port is
    claimed with a file holding our pid (a claim whose pid is gone is stale) under a lock, and
    only when every port of the block is free right now. `release_port_range` gives it back.
    """
    claims = state_root() / "port-claims"
    claims.mkdir(parents=True, exist_ok=True)
    with bincache.locked("port-claims"):
        for base in range(first, last, step):
            claim = claims / str(base)
            if claim.is_file():
                try:
                    os.kill(int(claim.read_text() or 0), 0)
                    continue  # claimed by a live process
                except (ProcessLookupError, ValueError):
                    claim.unlink()
            if all(process.port_free(base + off) for off in PORT_OFFSETS.values()):
                claim.write_text(str(os.getpid()))
                return base
    raise UserError(f"no free block of {step} ports between {first} and {last} on 127.0.0.1; stop stale clusters")


def release_port_range(base: int) -> None:
    (state_root() / "port-claims" / str(base)).unlink(missing_ok=True)


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


def down_private(run_id: str) -> list[str]:
    """The safety net after a suite run: bring down the private clusters of `run_id` its tests
    left running (an xdist worker killed before its teardown finished, e.g. on Ctrl-C)."""
    left = sorted(d.name for d in state_root().glob(f"private-{run_id}-*") if d.is_dir())
    for name in left:
        LocalCluster(load_profile("default"), name=name).down()
    return left


@dataclass
class LocalCluster:
    profile: Profile
    name: str = "default"

    @property
    def dir(self) -> Path:
        return state_root() / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def handle_file(self) -> Path:
        return self.dir / "handle.json"

    def port(self, what: str) -> int:
        return self.profile.base_port + PORT_OFFSETS[what]

    @property
    def pid_dir(self) -> Path:
        return self.dir / "pids"

    def log(self, component: str) -> Path:
        return self.dir / "logs" / f"{component}.log"

    def records(self) -> list[process.ProcRecord]:
        return process.ProcRecord.load_all(self.pid_dir)

    # -- public operations ---------------------------------------------------------------

    def handle(self) -> ClusterHandle | None:
        if not self.handle_file.is_file():
            return None
        return ClusterHandle.from_json(self.handle_file.read_text())

    creates = True  # base.Provider: this provider brings clusters up and down

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
        progress(f"cluster '{self.name}' ready in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")
        return handle

    def down(self, keep_logs: bool = False) -> None:
        """Kill every process this cluster started and remove its state (but for the logs, when
        a failed start-up's error message points at them). Nothing of a cluster outlives its
        `down`, so nothing needs a graceful stop."""
        process.kill_all(self.records())
        if not keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        for child in self.dir.iterdir() if self.dir.is_dir() else []:
            if child.name != "logs":
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()

    def stop_component(self, component: str) -> None:
        """Fault hook: stop one process (e.g. the LWS controller) without touching the rest."""
        for rec in self.records():
            if rec.name == component:
                process.stop(rec)

    def start_component(self, component: str) -> None:
        """Fault hook: restart a component stopped by `stop_component`, with its saved argv."""
        argv_file = self.dir / "argv" / f"{component}.yaml"
        argv = yaml.safe_load(argv_file.read_text())
        rec = process.start(component, argv, self.log(component), self.pid_dir)
        self._wait_component(rec, time.monotonic() + self.profile.ready_seconds)

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
        rec = self._launch(component, [str(bins[component]), *argv[1:]])
        self._wait_component(rec, deadline)
        gone = {(h["kind"], h["metadata"]["name"]) for h in old_hooks} - {
            (h["kind"], h["metadata"]["name"]) for h in hooks
        }
        for kind, name in sorted(gone):
            self._kubectl(bins["kubectl"], "delete", kind, name, "--ignore-not-found")
        self._apply(bins["kubectl"], hooks)
        self.profile = to
        self._write_handle()

    def log_offset(self, component: str) -> int:
        """The size of `component`'s log now: `wait_log` from it reads only what came later."""
        path = self.log(component)
        return path.stat().st_size if path.is_file() else 0

    def wait_log(self, component: str, needles: tuple[str, ...], offset: int, timeout: float) -> str:
        """The first line of `component`'s log after byte `offset` containing every needle, read as the
        process writes it (a `tail -f`: a process log has no watch API); InfraError naming the
        component, the text and the log's last line when it does not come within `timeout` s."""
        path, deadline, last = self.log(component), time.monotonic() + timeout, ""
        tick = threading.Event()
        while True:
            with path.open("rb") as fh:
                fh.seek(offset)
                for raw in fh:
                    if not raw.endswith(b"\n"):
                        break  # a line still being written: read it whole next time
                    offset += len(raw)
                    last = raw.decode(errors="replace").rstrip()
                    if all(n in last for n in needles):
                        return last
            if time.monotonic() >= deadline:
                raise InfraError(
                    f"{component} log {path}: no line with {needles!r} within {timeout:.0f}s; last: {last[:300]}"
                )
            tick.wait(0.1)

    def healthy(self, component: str, within: float = 2.0) -> bool:
        """True if `component` runs and its health endpoint answers (kwok: runs) within `within` s."""
        recs = [r for r in self.records() if r.name == component]
        if not recs or not process.alive(recs[0]):
            return False
        if component == "kwok":
            return True
        url, ctx, expect = self._health_url(component)
        try:
            process.wait_healthy(recs[0], url, time.monotonic() + within, ctx=ctx, expect=expect)
        except UserError:
            return False
        return True

    def saved_argv(self, component: str) -> list[str] | None:
        """The command line this cluster started `component` with (what a restart reuses)."""
        argv_file = self.dir / "argv" / f"{component}.yaml"
        return yaml.safe_load(argv_file.read_text()) if argv_file.is_file() else None

    def installed_manifests(self, component: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(CRDs, webhook configurations) of `component` as this cluster installs them (cached render)."""
        kubectl = bincache.cache_root() / "bin" / "kubernetes" / self.profile.versions["kubernetes"] / "kubectl"
        return self._manifests(kubectl, component, pki.Pki.at(self.dir / "pki").ca_crt.read_bytes())

    # -- internals ----------------------------------------------------------------------

    @staticmethod
    def _ordered(recs: list[process.ProcRecord]) -> list[process.ProcRecord]:
        rank = {n: i for i, n in enumerate(ORDER)}
        return sorted(recs, key=lambda r: rank.get(r.name, len(ORDER)))

    def _check_ports(self) -> None:
        lo, hi = process.ephemeral_ports()
        top = self.profile.base_port + max(PORT_OFFSETS.values())
        if self.profile.base_port <= hi and top >= lo:
            raise UserError(
                f"ports {self.profile.base_port}-{top} lie in the kernel's ephemeral range {lo}-{hi} "
                f"(/proc/sys/net/ipv4/ip_local_port_range), where any outgoing connection may take them; "
                f"choose a base port below {lo - max(PORT_OFFSETS.values()) - 1} (--set network.base_port=<n>)"
            )
        for what, off in PORT_OFFSETS.items():
            port = self.profile.base_port + off
            if not process.port_free(port):
                raise UserError(
                    f"port {port} ({what}) on 127.0.0.1 is in use; stop whatever holds it "
                    f"(`lwsc down`?) or choose other ports with --set network.base_port=<n>"
                )

    def _launch(self, name: str, argv: list[str]) -> process.ProcRecord:
        argv_dir = self.dir / "argv"
        argv_dir.mkdir(parents=True, exist_ok=True)
        (argv_dir / f"{name}.yaml").write_text(yaml.safe_dump(argv))
        return process.start(name, argv, self.log(name), self.pid_dir)

    def _tls(self, verify: bool) -> ssl.SSLContext:
        p = pki.Pki.at(self.dir / "pki")
        if verify:
            ctx = ssl.create_default_context(cafile=str(p.ca_crt))
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(str(p.admin_crt), str(p.admin_key))
        return ctx

    def _health_url(self, component: str) -> tuple[str, ssl.SSLContext | None, str | None]:
        if component == "etcd":
            return f"http://127.0.0.1:{self.port('etcd')}/health", None, '"health":"true"'
        if component == "kube-apiserver":
            return f"https://127.0.0.1:{self.port('kube-apiserver')}/readyz", self._tls(True), None
        if component in ("kube-controller-manager", "kube-scheduler"):
            return f"https://127.0.0.1:{self.port(component)}/healthz", self._tls(False), None
        if component in ("lws", "kueue"):
            return f"http://127.0.0.1:{self.port(component + '-health')}/readyz", None, None
        raise KeyError(component)

    def _wait_component(
        self, rec: process.ProcRecord, deadline: float, needs: tuple[process.ProcRecord, ...] = ()
    ) -> None:
        if rec.name == "kwok":
            return  # no health endpoint without its kubelet server; nodes turning Ready prove it
        url, ctx, expect = self._health_url(rec.name)
        process.wait_healthy(rec, url, deadline, ctx=ctx, expect=expect, needs=needs)

    def _kubectl(self, kubectl: Path, *args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [str(kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["no output"])[0]
            raise InfraError(f"kubectl {' '.join(args[:2])} failed: {first}")
        return proc.stdout

    def _apply(self, kubectl: Path, docs: list[dict[str, Any]], force: bool = True) -> None:
        """Server-side apply (Kueue's Workload CRD is too large for client-side apply)."""
        flags = ["--force-conflicts"] if force else []
        self._kubectl(kubectl, "apply", "--server-side", *flags, "-f", "-", stdin=manifests.dump(docs))

    def _manifests(self, kubectl: Path, component: str, ca: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        version = self.profile.versions[component]
        source = self.profile.sources.get(component)
        root = manifests_dir(self.profile, component)
        key = bincache.source_key(source) if source else version
        cache_file = (
            self.dir / "manifests" / f"{component}-{key}.json"
            if source
            else bincache.cache_root() / "manifests" / f"{component}-{key}.json"
        )
        docs = manifests.render(kubectl, root, cache_file)
        return manifests.split(manifests.rewrite(docs, self.port(f"{component}-webhook"), ca))

    def _start(self, bins: dict[str, Path], progress: Progress) -> ClusterHandle:
        """With snapshots on, the cluster starts on a copy of the provisioned-state snapshot of
        its inputs (`snapshot`); the first cluster of a key provisions from scratch and saves it
        (under a lock per key: clusters starting meanwhile wait, then restore it), so every
        cluster runs on the same restored state."""
        inputs = self._snapshot_inputs(bins) if self.profile.snapshots else None
        if inputs is None:
            return self._boot(bins, progress, None)
        key = snapshot.key(inputs)
        stored = snapshot.find(key)
        if stored is None:
            with bincache.locked(f"snapshot-{key}"):
                stored = snapshot.find(key)
                if stored is None:
                    self._boot(bins, progress, None, save=(key, inputs))
                    self.down()
                    stored = snapshot.find(key)
        if stored is None:
            raise InfraError(f"the snapshot just saved in {snapshot.root() / key} does not verify; check the disk")
        snapshot.restore(stored, self.dir)
        return self._boot(bins, progress, stored)

    def _boot(
        self,
        bins: dict[str, Path],
        progress: Progress,
        stored: Path | None,
        save: tuple[str, dict[str, Any]] | None = None,
    ) -> ClusterHandle:
        """Start-up in its documented order (module docstring); each step is a method below. On a
        restored snapshot (`stored`) the installation steps are skipped; with `save`, the freshly
        provisioned cluster is stopped and kept as the snapshot of that key."""
        deadline = time.monotonic() + self.profile.ready_seconds
        p, certs = self._prepare_state()
        ca = p.ca_crt.read_bytes()
        lws_crds, lws_hooks = self._manifests(bins["kubectl"], "lws", ca)
        kueue_crds, kueue_hooks = self._manifests(bins["kubectl"], "kueue", ca)
        crds, hooks = lws_crds + kueue_crds, lws_hooks + kueue_hooks
        progress("starting etcd and kube-apiserver" + (" from a provisioned snapshot" if stored else ""))
        etcd = self._start_etcd(bins)
        self._start_apiserver(bins, p, deadline, etcd)
        self._wait_component(etcd, deadline)
        progress("starting KCM, scheduler, kwok" + ("" if stored else "; installing LWS and Kueue CRDs"))
        kcm, sched, kwok = self._start_kube_components(bins, p)
        api = api_client(self.kubeconfig)
        try:
            if not stored:
                self._install_state(bins["kubectl"], api, crds)
            else:
                self._point_conversion_webhooks(api, snapshot.stale_conversions(stored, crds))
            self._wait_crds(api, crds, deadline)
            progress("starting LWS and Kueue controllers")
            lws, kueue = self._start_controllers(bins, certs)
            for rec in (kcm, sched, lws, kueue):
                self._wait_component(rec, deadline)
            if not process.alive(kwok):
                raise UserError(process.exit_message(kwok))
            progress("registering webhooks" + ("" if stored else "; creating Kueue Topology and ResourceFlavor"))
            self._register_webhooks(api, hooks)
            if not stored:
                self._apply_kueue_topology(bins["kubectl"])
            self._wait_nodes_ready(api, deadline)
            if not stored:  # again: kwok's node-initialize may have written its defaults over ours
                self._create_nodes(client.CoreV1Api(api))
            self._wait_default_sa(api, deadline)
            if save:
                self._save_snapshot(api, hooks, progress)
                snapshot.save(save[0], self.dir, save[1], crds)
        finally:
            api.close()
        return self._write_handle()

    def _install_state(self, kubectl: Path, api: client.ApiClient, crds: list[dict[str, Any]]) -> None:
        """What a snapshot holds, installed from scratch: CRDs, namespaces, StorageClass, nodes."""
        self._apply(kubectl, crds)
        core = client.CoreV1Api(api)
        for ns in ("lws-system", "kueue-system"):
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        client.StorageV1Api(api).create_storage_class(DEFAULT_STORAGE_CLASS)  # type: ignore[arg-type]
        self._create_nodes(core)

    @staticmethod
    def _register_webhooks(api: client.ApiClient, hooks: list[dict[str, Any]]) -> None:
        """Create the webhook configurations (a fresh or restored cluster has none; a subprocess
        `kubectl apply` costs more than the requests)."""
        admission = client.AdmissionregistrationV1Api(api)
        for hook in hooks:
            if hook["kind"] == "ValidatingWebhookConfiguration":
                admission.create_validating_webhook_configuration(hook)  # type: ignore[arg-type]
            else:
                admission.create_mutating_webhook_configuration(hook)  # type: ignore[arg-type]

    @staticmethod
    def _point_conversion_webhooks(api: client.ApiClient, crds: list[dict[str, Any]]) -> None:
        """Point `crds`' conversion webhooks (restored from a snapshot made on other ports) here."""
        ext = client.ApiextensionsV1Api(api)

        def point(crd: dict[str, Any]) -> None:
            body = {"spec": {"conversion": crd["spec"]["conversion"]}}
            ext.patch_custom_resource_definition(crd["metadata"]["name"], body)

        with ThreadPoolExecutor(max_workers=8) as pool:  # each update rebuilds that CRD's storage
            list(pool.map(point, crds))

    def _snapshot_inputs(self, bins: dict[str, Path]) -> dict[str, Any]:
        kubectl = bins["kubectl"]
        crds = self._manifests(kubectl, "lws", b"")[0] + self._manifests(kubectl, "kueue", b"")[0]
        return snapshot.inputs(self.profile, bins, crds)

    def _save_snapshot(self, api: client.ApiClient, hooks: list[dict[str, Any]], progress: Progress) -> None:
        """Stop this freshly provisioned cluster for `snapshot.save`: the webhook configurations
        are deleted first, the controllers stopped, then the Events they wrote and kwok's node
        leases deleted, then the API server and etcd stopped cleanly."""
        progress("saving a provisioned-state snapshot (once for these versions, CRDs and topology)")
        admission = client.AdmissionregistrationV1Api(api)
        for hook in hooks:
            if hook["kind"] == "ValidatingWebhookConfiguration":
                admission.delete_validating_webhook_configuration(hook["metadata"]["name"])
            else:
                admission.delete_mutating_webhook_configuration(hook["metadata"]["name"])
        recs = self._ordered(self.records())
        for rec in reversed(recs):
            if rec.name not in ("etcd", "kube-apiserver"):
                process.stop(rec)
        core = client.CoreV1Api(api)
        for ns in core.list_namespace().items:
            core.delete_collection_namespaced_event(str(ns.metadata.name))  # type: ignore[union-attr]
        # The node leases name the stopped kwok as holder: a kwok started on the snapshot within
        # their duration (node_grace_seconds) would leave every node unmanaged until they expire
        # (pods bound there Pending for ~40 s, measured); kwok creates them anew.
        client.CoordinationV1Api(api).delete_collection_namespaced_lease("kube-node-lease")
        for rec in reversed(recs):
            if rec.name in ("etcd", "kube-apiserver"):
                process.stop(rec, grace=10.0)

    def _prepare_state(self) -> tuple[pki.Pki, Path]:
        """PKI, the webhook serving certificate directory, Kueue's metrics certs, the kubeconfig."""
        p = pki.Pki.at(self.dir / "pki")  # restored from a snapshot, or made for this cluster
        if not p.exists():
            p = pki.generate(self.dir / "pki")
        certs = self.dir / "pki" / "webhook"
        certs.mkdir(parents=True, exist_ok=True)
        shutil.copy(p.admin_crt, certs / "tls.crt")
        shutil.copy(p.admin_key, certs / "tls.key")
        self._kueue_metrics_certs()
        self.kubeconfig.write_text(pki.kubeconfig(p, f"https://127.0.0.1:{self.port('kube-apiserver')}"))
        return p, certs

    def _start_etcd(self, bins: dict[str, Path]) -> process.ProcRecord:
        """Not waited for: the API server, started right after, waits for it (and its readiness
        checks etcd), so the two start-ups overlap."""
        etcd_url = f"http://127.0.0.1:{self.port('etcd')}"
        peer_url = f"http://127.0.0.1:{self.port('etcd-peer')}"
        etcd = self._launch(
            "etcd",
            [
                str(bins["etcd"]),
                "--name=node0",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=node0={peer_url}",
                "--auto-compaction-retention=1",
                "--quota-backend-bytes=8589934592",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        return etcd

    def _start_apiserver(self, bins: dict[str, Path], p: pki.Pki, deadline: float, etcd: process.ProcRecord) -> None:
        apiserver = self._launch(
            "kube-apiserver",
            [
                str(bins["kube-apiserver"]),
                f"--etcd-servers=http://127.0.0.1:{self.port('etcd')}",
                "--etcd-prefix=/registry",
                "--allow-privileged=true",
                "--authorization-mode=Node,RBAC",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port('kube-apiserver')}",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
                "--service-cluster-ip-range=10.96.0.0/16",
                f"--tls-cert-file={p.admin_crt}",
                f"--tls-private-key-file={p.admin_key}",
                f"--client-ca-file={p.ca_crt}",
                f"--service-account-key-file={p.admin_key}",
                f"--service-account-signing-key-file={p.admin_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--proxy-client-key-file={p.admin_key}",
                f"--proxy-client-cert-file={p.admin_crt}",
                "--enable-priority-and-fairness=false",
                "--max-requests-inflight=0",
                "--max-mutating-requests-inflight=0",
            ],
        )
        self._wait_component(apiserver, deadline, needs=(etcd,))

    def _start_kube_components(
        self, bins: dict[str, Path], p: pki.Pki
    ) -> tuple[process.ProcRecord, process.ProcRecord, process.ProcRecord]:
        """KCM, scheduler and kwok (not waited for here: they come up while the CRDs go in)."""
        kc = str(self.kubeconfig)
        common = [
            f"--kubeconfig={kc}",
            "--bind-address=127.0.0.1",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--leader-elect=false",
        ]
        kcm = self._launch(
            "kube-controller-manager",
            [
                str(bins["kube-controller-manager"]),
                *common,
                f"--secure-port={self.port('kube-controller-manager')}",
                f"--root-ca-file={p.ca_crt}",
                f"--service-account-private-key-file={p.admin_key}",
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
                f"--node-monitor-grace-period={self.profile.node_grace_seconds}s",
                "--concurrent-statefulset-syncs=10",
                "--concurrent-gc-syncs=30",
                "--enable-hostpath-provisioner",  # PVs for the default StorageClass (DEFAULT_STORAGE_CLASS)
            ],
        )
        sched = self._launch(
            "kube-scheduler",
            [
                str(bins["kube-scheduler"]),
                *common,
                f"--secure-port={self.port('kube-scheduler')}",
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
            ],
        )
        return kcm, sched, self._start_kwok(bins)

    def _start_kwok(self, bins: dict[str, Path]) -> process.ProcRecord:
        kwok_dir = module_dir("kwok", self.profile.versions["kwok"], None)
        stage_args = [f"--config={kwok_dir / 'kustomize' / 'stage' / s}" for s in KWOK_STAGES]
        stage_args.append(f"--config={POD_DELETE_STAGE}")
        return self._launch(
            "kwok",
            [
                str(bins["kwok"]),
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={nodes.KWOK_ANNOTATION[0]}={nodes.KWOK_ANNOTATION[1]}",
                "--cidr=10.244.0.0/16",
                "--node-ip=127.0.0.1",
                f"--node-lease-duration-seconds={self.profile.node_grace_seconds}",  # renewed every quarter
                *stage_args,
            ],
        )

    def _start_controllers(self, bins: dict[str, Path], certs: Path) -> tuple[process.ProcRecord, process.ProcRecord]:
        """LWS and Kueue, each with its configuration file (only once their CRDs are served)."""
        kc = str(self.kubeconfig)
        lws_cfg = controllers.write(
            self.dir / "config" / "lws.yaml",
            controllers.lws_config(self.port("lws-webhook"), self.port("lws-metrics"), self.port("lws-health"), certs),
        )
        kueue_cfg = controllers.write(
            self.dir / "config" / "kueue.yaml",
            controllers.kueue_config(
                self.port("kueue-webhook"),
                self.port("kueue-metrics"),
                self.port("kueue-health"),
                certs,
                manage_unlabelled=self.profile.raw["kueue"].get("manage_jobs_without_queue_name") is True,
            ),
        )
        lws = self._launch("lws", [str(bins["lws"]), f"--config={lws_cfg}", f"--kubeconfig={kc}", "--zap-log-level=2"])
        kueue = self._launch(
            "kueue", [str(bins["kueue"]), f"--config={kueue_cfg}", f"--kubeconfig={kc}", "--zap-log-level=2"]
        )
        return lws, kueue

    def _apply_kueue_topology(self, kubectl: Path) -> None:
        t = self.profile.topology
        self._apply(
            kubectl,
            [
                nodes.kueue_topology(t, self.profile.kueue_topology_name),
                nodes.kueue_flavor(self.profile.kueue_flavor_name, self.profile.kueue_topology_name),
            ],
            force=False,
        )

    def _write_handle(self) -> ClusterHandle:
        handle = ClusterHandle(
            provider="local",
            kubeconfig=self.kubeconfig,
            versions=dict(self.profile.versions),
            topology=self.profile.topology,
            kueue_topology_name=self.profile.kueue_topology_name,
            kueue_flavor_name=self.profile.kueue_flavor_name,
            logs={r.name: r.log for r in self.records()},
            capabilities=CAPABILITIES,
            endpoints={"lws-metrics": f"https://127.0.0.1:{self.port('lws-metrics')}/metrics"},
        )
        self.handle_file.write_text(handle.to_json())
        return handle

    def _kueue_metrics_certs(self) -> None:
        """Kueue insists on /etc/kueue/metrics/certs/tls.{crt,key} (hard-coded); give it a pair
        from a throw-away CA, never the cluster's admin key."""
        target = controllers.KUEUE_METRICS_CERT_DIR
        if (target / "tls.crt").is_file() and (target / "tls.key").is_file():
            return
        try:
            throwaway = pki.generate(self.dir / "pki" / "kueue-metrics")
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(throwaway.admin_crt, target / "tls.crt")
            shutil.copy(throwaway.admin_key, target / "tls.key")
        except PermissionError:
            raise UserError(
                f"Kueue needs {target}/tls.crt and tls.key (a path hard-coded in Kueue) and it is not "
                f"writable; run once as root: mkdir -p {target} && chmod a+rwx {target}"
            ) from None

    def _create_nodes(self, core: client.CoreV1Api) -> None:
        """Create (or re-assert) every fake node: two calls a node, 8 at a time (the scale
        profile's 1,000 nodes took ~46 s one by one under load)."""

        def one(where: tuple[str, str, str]) -> None:
            body = nodes.node_manifest(self.profile.topology, *where)
            try:
                core.create_node(body)  # type: ignore[arg-type]  # the client accepts dicts
            except ApiException as exc:
                if exc.status != 409:
                    raise
            core.patch_node_status(where[0], {"status": body["status"]})

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, nodes.node_names(self.profile.topology)))

    def _wait_crds(self, api: client.ApiClient, crds: list[dict[str, Any]], deadline: float) -> None:
        """Every CRD we applied Established, then served by discovery (`install.crds`): a
        controller started earlier can fail its start-up REST mappings and exit."""
        names = [c["metadata"]["name"] for c in crds]
        wait_for(
            api,
            client.ApiextensionsV1Api(api).list_custom_resource_definition,
            lambda objs: not crd_checks.not_established(objs, names),
            what=f"{len(names)} LWS and Kueue CRDs",
            condition="every one Established",
            timeout=max(1.0, deadline - time.monotonic()),
        )
        self._wait_discovery(crd_checks.served_resources(crds), deadline)

    def _wait_discovery(self, expected: dict[str, set[str]], deadline: float) -> None:
        """Poll discovery (it cannot be watched) until every served group/version lists its
        resources, in the aggregated `/apis` document and in `/apis/<group>/<version>`."""
        missing: list[str] = []
        while True:
            aggregated = self._get_json("/apis", crd_checks.AGGREGATED_ACCEPT)
            if aggregated is None:  # not answered: nothing can be taken as served
                aggregated = {"kind": "APIGroupDiscoveryList", "items": []}
            per_version = {gv: self._get_json(f"/apis/{gv}", "application/json") for gv in expected}
            missing = crd_checks.missing_from_discovery(expected, aggregated, per_version)
            if not missing:
                return
            if time.monotonic() >= deadline:
                raise InfraError(
                    f"CRDs Established but not served by discovery in time: {'; '.join(missing[:6])}; "
                    "raise timeouts.ready_seconds or check the kube-apiserver log "
                    f"({self.log('kube-apiserver')})"
                )
            time.sleep(0.1)

    def _get_json(self, path: str, accept: str) -> dict[str, Any] | None:
        """GET `path` from the API server as the admin; None on 404 or a connection error."""
        url = f"https://127.0.0.1:{self.port('kube-apiserver')}{path}"
        req = urllib.request.Request(url, headers={"Accept": accept})
        try:
            with urllib.request.urlopen(req, timeout=5, context=self._tls(True)) as resp:
                body: dict[str, Any] = json.loads(resp.read())
                return body
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def _wait_nodes_ready(self, api: client.ApiClient, deadline: float) -> None:
        expected = self.profile.topology.nodes
        core = client.CoreV1Api(api)

        def ready(objs: list[dict[str, Any]]) -> bool:
            good = 0
            for o in objs:
                conds = {c["type"]: c["status"] for c in (o.get("status") or {}).get("conditions") or []}
                taints = [
                    t for t in (o.get("spec") or {}).get("taints") or [] if t["key"].startswith("node.kubernetes.io/")
                ]
                good += conds.get("Ready") == "True" and not taints
            return good == expected

        wait_for(
            api,
            core.list_node,
            ready,
            what=f"{expected} fake nodes",
            condition="Ready with no node.kubernetes.io taints",
            timeout=max(1.0, deadline - time.monotonic()),
            diagnose=lambda: f"kwok log: {self.log('kwok')}; KCM log: {self.log('kube-controller-manager')}",
            label_selector=f"{nodes.MANAGED_LABEL}=true",
        )

    def _wait_default_sa(self, api: client.ApiClient, deadline: float) -> None:
        core = client.CoreV1Api(api)
        wait_for(
            api,
            core.list_namespaced_service_account,
            lambda objs: any(o["metadata"]["name"] == "default" for o in objs),
            what="ServiceAccount default/default",
            condition="created by KCM",
            timeout=max(1.0, deadline - time.monotonic()),
            diagnose=lambda: f"KCM log: {self.log('kube-controller-manager')}",
            namespace="default",
        )
