"""The local cluster's start-up, in its order (each step a method).

Everything binds to 127.0.0.1. Start order matters: etcd -> apiserver -> CRDs -> KCM, scheduler,
kwok, fake nodes -> LWS and Kueue -> their webhook configurations (failurePolicy Fail: applied
only once the servers answer) -> Kueue Topology and ResourceFlavor. The state that sequence
installs is kept after the first cluster of a set of inputs as a provisioned-state snapshot
(`snapshot`); later clusters restore it and skip the installation.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .. import resources
from ..errors import InfraError, UserError
from ..install import controllers, pki
from ..install import crds as crd_checks
from ..k8s.client import api_client
from ..k8s.wait import wait_for
from ..toolchain import cache as bincache
from ..toolchain.gobuild import Progress, module_dir
from . import nodes, process, snapshot
from .base import PLAIN_PODS, ClusterHandle
from .components import ClusterState

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
# The controllers KCM runs: only those whose work a suite, the harness or a project test reads on
# this provider (kind runs its own KCM with every default controller). Each with what needs it:
KCM_CONTROLLERS = (
    "statefulset-controller",  # LWS's leader and worker StatefulSets make every pod
    "garbage-collector-controller",  # ownerReferences: a deleted LWS, group or StatefulSet takes its pods,
    # StatefulSets, Services, claims (LWS-VOL-*) and Kueue Workloads with it
    "namespace-controller",  # a test's namespace, and all it holds, goes at its end (and at `lwsc down` of a kept run)
    "serviceaccount-controller",  # "default" ServiceAccount of every namespace: admission refuses pods without it
    "node-lifecycle-controller",  # a silent node turns NotReady and unreachable-tainted (CHAOS-NODE-*, node faults)
    "taint-eviction-controller",  # pods leave a NoExecute-tainted node (node loss, TAS taint tests)
    "pod-garbage-collector-controller",  # pods of a deleted node are collected (CHAOS-NODE-001..003)
    "persistentvolume-binder-controller",  # claims bind to hostPath PVs (LWS-VOL-*, ROLL restarts with claims)
    "persistentvolumeclaim-protection-controller",  # a deleted claim's finalizer is lifted (whenScaled Delete)
    "persistentvolume-protection-controller",  # a released PV's finalizer is lifted (reclaimPolicy Delete)
    "job-controller",  # `lwsc launch`'s Job on the local cluster (tests/e2e/test_incluster_rbac.py)
    "resourcequota-controller",  # the quota that holds that Job's pod back (status.hard, read by admission)
)
# Replaces kwok's pod-delete stage (why: in the file).
POD_DELETE_STAGE = resources.fixtures() / "kwok" / "pod-delete.yaml"
CAPABILITIES = frozenset({"stop-controller", "restart-apiserver", "node-failure", "pod-status-faults", PLAIN_PODS})


class BootSequence(ClusterState):
    """Brings a cluster's processes up in order and installs its state (or restores a snapshot)."""

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
        stale: list[dict[str, Any]] = []
        if stored:  # before the API server reads them: the snapshot's CRDs pointed at this cluster
            self._wait_component(etcd, deadline)
            etcd_url = f"http://127.0.0.1:{self.port('etcd')}"
            stale = snapshot.point_stored_conversions(etcd_url, snapshot.stale_conversions(stored, crds))
        self._start_apiserver(bins, p, deadline, etcd)
        self._wait_component(etcd, deadline)
        progress("starting KCM, scheduler, kwok" + ("" if stored else "; installing LWS and Kueue CRDs"))
        kcm, sched, kwok = self._start_kube_components(bins, p)
        api = api_client(self.kubeconfig)
        try:
            if not stored:
                self._install_state(bins["kubectl"], api, crds)
            else:
                self._point_conversion_webhooks(api, stale)
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
        """Not waited for on a fresh cluster: the API server, started right after, waits for it (and
        its readiness checks etcd), so the two start-ups overlap. A restored one waits for it first
        (`point_stored_conversions`)."""
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
                "--authorization-mode=RBAC",  # no Node authorizer: no kubelet runs (kwok's nodes use the admin cert)
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
                f"--controllers={','.join(KCM_CONTROLLERS)}",
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
                manage_unlabelled=self.profile.kueue_manage_unlabelled,
                pods_ready=self.profile.kueue_pods_ready,
                feature_gates=self.profile.kueue_feature_gates,
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
