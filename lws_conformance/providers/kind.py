"""The kind provider: real kubelets in Docker containers, with LWS and Kueue built here.

`up`, in order:
1. **Engine** (`toolchain.engine`): the user's Docker when it answers (`kind.engine: auto`), else
   the harness's private engine; `kind.engine: private | user` forces one.
2. **Images**: the node image `kind.node_image` names, else one built on this machine
   (`toolchain.nodeimage`: the same Kubernetes version and module set as the local cluster), plus
   the pod network daemon, the workload image (agnhost, from the same Kubernetes module) and the
   LWS and Kueue controllers, each an image of the very binary the local cluster would run
   (module versions or `sources.<component>` builds). Nothing is pulled: every pod names an image
   the nodes hold, with `imagePullPolicy: IfNotPresent`. A node image built here already holds the
   pod network daemon and the workload images; the controllers' images (which change with
   `sources.<component>`) are loaded with `kind load` into the control-plane node, the only node
   they run on; with a given `kind.node_image` every image is loaded into every node.
3. **Cluster**: `kind create cluster` from a generated config (a control plane and one worker per
   profile node, labelled with the profile's block / rack / hostname labels and the harness pool
   label; kind's default CNI off; one more worker, tainted, for chaos experiments that pause a
   node: `chaos_node`), then the pod network daemon, every node Ready.
4. **GPUs**: kind cannot set extended resources, so `nvidia.com/gpu` is advertised by patching
   node status; the kubelet drops capacity it does not own when a node re-registers, so
   `restart_node` re-applies it (kubernetes PR #64784; Kueue's TAS e2e does the same patch).
5. **Controllers**: LWS's and Kueue's `config/default`, rendered from the module source with
   `kubectl kustomize` (what their releases publish), with the controller image swapped for the
   local one; then the Kueue Topology and ResourceFlavor, as on the local cluster.

Every command is a `Cmd` run through an injectable `Runner`, so plans are unit-tested as argv.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import images as test_images
from ..errors import InfraError, UserError
from ..install import manifests
from ..profile import Profile, Topology
from ..toolchain import cache as bincache
from ..toolchain import engine as engines
from ..toolchain import manifests_dir, nodeimage
from ..toolchain.gobuild import Progress, build
from . import discovery, nodes
from .base import ClusterHandle
from .components import state_root
from .existing import release_run

# Release manifests: kustomize namePrefix + namespace; the controller container is `manager`.
CONTROLLERS = {
    "lws": ("lws-system", "lws-controller-manager"),
    "kueue": ("kueue-system", "kueue-controller-manager"),
}
# The kubelet may only set labels outside these namespaces on itself (NodeRestriction); others
# are applied with `kubectl label` once the nodes exist.
RESTRICTED_LABEL_SUFFIXES = ("kubernetes.io", "k8s.io")
CAPABILITIES = frozenset({"node-restart", "real-kubelet"})
# The node only chaos experiments use: tainted so no other pod lands there, outside the Kueue pool,
# without GPUs. Pausing it (a node whose kubelet and containers freeze) disturbs no other test.
CHAOS_LABEL = "lwsc.x-k8s.io/chaos"
CHAOS_TAINT = {"key": CHAOS_LABEL, "value": "true", "effect": "NoSchedule"}
CHAOS_TOLERATION = {"key": CHAOS_LABEL, "operator": "Exists", "effect": "NoSchedule"}  # for pods meant to run there
# What the chaos node advertises besides: TPUs, so pods requesting them run there and their
# processes show the TPU variables LWS injects (no other node offers google.com/tpu).
CHAOS_TPUS = ("google.com/tpu", 16)
NETWORK = "kind"  # kind's network name; on the private engine the harness creates it first
BRIDGE = "lwsc-kind0"
CNI_NAMESPACE = "kube-system"
CNI_NAME = "lwsc-pod-network"
WORKLOAD_TAGS = nodeimage.WORKLOAD_TAGS  # the workload images the suites name, and their tags


@dataclass(frozen=True)
class Completed:
    """What a command returned (the subset of CompletedProcess the provider reads)."""

    returncode: int
    stdout: str = ""
    stderr: str = ""


Runner = Callable[[Sequence[str], str | None, dict[str, str] | None], Completed]


def subprocess_runner(argv: Sequence[str], stdin: str | None, env: dict[str, str] | None = None) -> Completed:
    proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, env=env)
    return Completed(proc.returncode, proc.stdout, proc.stderr)


@dataclass(frozen=True)
class Cmd:
    """One step of a plan: the exact argv, optional stdin, and why it is there."""

    argv: tuple[str, ...]
    why: str
    stdin: str | None = None
    attempts: int = 1  # > 1 for steps racing a just-started webhook or controller

    def line(self) -> str:
        return " ".join(self.argv) + (" < (stdin)" if self.stdin is not None else "")


@dataclass(frozen=True)
class KindTools:
    kind: str
    docker: str
    kubectl: str

    @classmethod
    def resolve(
        cls,
        kind: str | None = None,
        docker: str | None = None,
        kubectl: str | None = None,
        which: Callable[[str], str | None] = shutil.which,
        built: Callable[[str], str] | None = None,
    ) -> KindTools:
        """Each tool from its flag; else kind and kubectl are the harness's own builds (`built`,
        from the Go module proxy like every other binary) and docker comes from PATH. A missing
        one is a one-line UserError naming the flag."""
        found: dict[str, str] = {}
        for name, given, flag in (
            ("kind", kind, "--kind-bin"),
            ("docker", docker, "--docker-bin"),
            ("kubectl", kubectl, "--kubectl-bin"),
        ):
            if given:
                if not Path(given).is_file():
                    raise UserError(f"the kind provider's {name} ({given}) does not exist; fix {flag}")
                found[name] = given
                continue
            path = built(name) if built is not None and name != "docker" else which(name)
            if not path:
                raise UserError(
                    f"the kind provider needs {name} (not on PATH); install it (Debian: "
                    f"`apt-get install docker.io`, or `scripts/bootstrap --kind`) or pass {flag}=/path/to/{name}"
                )
            found[name] = str(path)
        return cls(**found)


def said(out: Completed) -> str:
    """The line of a failed command's output that says why: kind's `ERROR:` line (it prints
    warnings first), else the first line."""
    lines = [ln.strip() for ln in (out.stderr or out.stdout).strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("ERROR", "error", "Error"))]
    return (errors or lines or ["no output"])[0]


def worker_names(cluster: str, count: int) -> list[str]:
    """kind's node names: `<cluster>-worker`, `<cluster>-worker2`, ... in config order."""
    return [f"{cluster}-worker" + (str(i) if i > 1 else "") for i in range(1, count + 1)]


def chaos_node(profile: Profile, cluster: str) -> str | None:
    """The chaos node's kind name (the worker after the profile's), or None when
    `kind.chaos_node` is false."""
    if not kind_settings(profile).get("chaos_node", True):
        return None
    return worker_names(cluster, profile.topology.nodes + 1)[-1]


def state_dir(name: str) -> Path:
    """Where `lwsc --profile kind` keeps a cluster's kubeconfig, config and handle."""
    return state_root() / f"kind-{name}"


def _restricted(key: str) -> bool:
    prefix = key.partition("/")[0] if "/" in key else ""
    return any(prefix == s or prefix.endswith("." + s) for s in RESTRICTED_LABEL_SUFFIXES)


def node_labels(t: Topology, node: str, block: str, rack: str) -> dict[str, str]:
    """Every label a worker must carry: topology, harness pool/ownership; hostname only when the
    profile names a custom hostname label (the kubelet sets `kubernetes.io/hostname` itself)."""
    labels = {
        t.block_label: block,
        t.rack_label: rack,
        nodes.MANAGED_LABEL: "true",
        nodes.POOL_LABEL[0]: nodes.POOL_LABEL[1],
    }
    if t.hostname_label != "kubernetes.io/hostname":
        labels[t.hostname_label] = node
    return labels


def workers(t: Topology, cluster: str) -> list[tuple[str, dict[str, str]]]:
    """(kind node name, labels) per profile node, in the profile's stable order."""
    layout = nodes.node_names(t)
    return [
        (kind_name, node_labels(t, kind_name, block, rack))
        for kind_name, (_n, block, rack) in zip(worker_names(cluster, len(layout)), layout, strict=True)
    ]


def cgroup_v1(root: Path = Path("/sys/fs/cgroup")) -> bool:
    return root.is_dir() and not (root / "cgroup.controllers").is_file()


def kind_config(profile: Profile, cluster: str, local_image: bool = False, v1: bool | None = None) -> dict[str, Any]:
    """The kind Cluster config: a control plane and one labelled worker per profile node, kind's
    default CNI off (the provider installs the pod network). With a node image built here,
    kubeadm is told the etcd and CoreDNS tags that image holds; on a cgroup v1 host the kubelet
    is allowed to run there (Kubernetes >= 1.35 refuses it by default)."""
    cfg_nodes: list[dict[str, Any]] = [{"role": "control-plane"}]
    for _name, labels in workers(profile.topology, cluster):
        allowed = {k: v for k, v in labels.items() if not _restricted(k)}
        cfg_nodes.append({"role": "worker", "labels": allowed})
    if chaos_node(profile, cluster):
        join = {"kind": "JoinConfiguration", "nodeRegistration": {"taints": [CHAOS_TAINT]}}
        cfg_nodes.append(
            {
                "role": "worker",
                "labels": {nodes.MANAGED_LABEL: "true", CHAOS_LABEL: "true"},
                "kubeadmConfigPatches": [yaml.safe_dump(join)],
            }
        )
    cfg: dict[str, Any] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": cluster,
        "networking": {"disableDefaultCNI": True},
        "nodes": cfg_nodes,
    }
    patches = []
    if local_image:
        s = kind_settings(profile)
        cluster_cfg: dict[str, Any] = {
            "kind": "ClusterConfiguration",
            "etcd": {"local": {"imageTag": profile.versions["etcd"]}},
            "dns": {"imageTag": str(s.get("coredns_version") or "v1.14.3")},
        }
        if s.get("test_cluster_settings", False):
            patches += throwaway_cluster_patches(cluster_cfg)
        patches.insert(0, yaml.safe_dump(cluster_cfg))
    if cgroup_v1() if v1 is None else v1:
        patches.append(yaml.safe_dump({"kind": "KubeletConfiguration", "failCgroupV1": False}))
    if patches:
        cfg["kubeadmConfigPatches"] = patches
    return cfg


# The control plane's Go runtime: GOGC 400 (a collection when the heap has grown by 4x its live
# size, not the default 1x) under a soft GOMEMLIMIT, past which Go collects as needed whatever GOGC
# says, as on the local cluster: a kind cluster lives minutes, so memory is traded for CPU.
GO_GC = "400"
GO_MEMORY_LIMIT = {"apiServer": "2GiB", "controllerManager": "512MiB", "scheduler": "384MiB", "etcd": "512MiB"}
# cAdvisor's per-container housekeeping (stats the kubelet collects for the summary API and its
# eviction manager): every 30 s instead of 10-15 s. No suite or controller reads container stats.
HOUSEKEEPING_INTERVAL = "30s"


def _go_env(component: str) -> list[dict[str, str]]:
    return [{"name": "GOGC", "value": GO_GC}, {"name": "GOMEMLIMIT", "value": GO_MEMORY_LIMIT[component]}]


def throwaway_cluster_patches(cluster_cfg: dict[str, Any]) -> list[str]:
    """Settings of a throwaway test cluster (`kind.test_cluster_settings`, default off; kubeadm
    v1beta4, the API kind uses for Kubernetes >= 1.36, as the node image built here is): GOGC and
    GOMEMLIMIT of the API server, controller manager, scheduler and etcd (`cluster_cfg` gains
    them), ECDSA P-256 keys for every certificate kubeadm makes (cheaper TLS handshakes on every
    connection), and the kubelets' cAdvisor housekeeping (`HOUSEKEEPING_INTERVAL`). The other
    patches (kubelet flags) are returned; kind itself already turns off image garbage collection
    and the disk eviction thresholds."""
    for component in ("apiServer", "controllerManager", "scheduler"):
        cluster_cfg[component] = {"extraEnvs": _go_env(component)}
    cluster_cfg["etcd"]["local"]["extraEnvs"] = _go_env("etcd")
    cluster_cfg["encryptionAlgorithm"] = "ECDSA-P256"
    kubelet_args = {"kubeletExtraArgs": [{"name": "housekeeping-interval", "value": HOUSEKEEPING_INTERVAL}]}
    return [
        yaml.safe_dump({"kind": doc, "nodeRegistration": kubelet_args})
        for doc in ("InitConfiguration", "JoinConfiguration")
    ]


def kind_settings(profile: Profile) -> dict[str, Any]:
    raw = profile.raw.get("kind") or {}
    return dict(raw) if isinstance(raw, dict) else {}


CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
# What runs on the control-plane node rather than on the workers the suites fill: the controllers
# and CoreDNS. The releases ask 1 CPU for each of LWS's two replicas and 500m for Kueue, which
# would take half of a 2-CPU worker each; on kind they ask this instead (limits unchanged).
SYSTEM_REQUESTS = {"cpu": "100m", "memory": "128Mi"}
LOG_ARGS = ("--zap-log-level=2",)  # what the local cluster starts both controllers with


def on_control_plane(pod_spec: dict[str, Any]) -> None:
    pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), CONTROL_PLANE: ""}
    tolerations = [t for t in pod_spec.get("tolerations") or [] if t.get("key") != CONTROL_PLANE]
    pod_spec["tolerations"] = [*tolerations, {"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}]


def controller_docs(docs: list[dict[str, Any]], component: str, image: str) -> list[dict[str, Any]]:
    """The rendered `config/default` with the controller container running `image` (never
    pulled), on the control-plane node with small CPU requests (`SYSTEM_REQUESTS`), logging at
    the local cluster's level (`LOG_ARGS`: a chaos test reads the reconciles it logs). Nothing
    else changes: the release's RBAC, webhooks, Services and configuration."""
    out = copy.deepcopy(docs)
    _ns, deploy = CONTROLLERS[component]
    found = False
    for doc in out:
        if doc.get("kind") != "Deployment" or doc["metadata"]["name"] != deploy:
            continue
        pod_spec = doc["spec"]["template"]["spec"]
        on_control_plane(pod_spec)
        for c in pod_spec["containers"]:
            if c["name"] == "manager":
                c["image"], c["imagePullPolicy"], found = image, "IfNotPresent", True
                c.setdefault("resources", {})["requests"] = dict(SYSTEM_REQUESTS)
                c["args"] = [*(c.get("args") or []), *LOG_ARGS]
    if not found:
        raise InfraError(f"{component}'s config/default has no Deployment {deploy} with a manager container")
    return out


def _coredns_patch() -> str:
    spec: dict[str, Any] = {}
    on_control_plane(spec)
    spec["containers"] = [{"name": "coredns", "resources": {"requests": dict(SYSTEM_REQUESTS)}}]
    return json.dumps({"spec": {"template": {"spec": spec}}})


COREDNS_PATCH = _coredns_patch()


def pod_network(image: str, endpoint: str) -> list[dict[str, Any]]:
    """The pod network daemon (`toolchain/kindnode/cni-daemon`) on every node, and what it reads."""
    labels = {"app": CNI_NAME}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": CNI_NAME, "namespace": CNI_NAMESPACE}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": CNI_NAME},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": CNI_NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CNI_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": CNI_NAME, "namespace": CNI_NAMESPACE}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": CNI_NAME, "namespace": CNI_NAMESPACE},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": CNI_NAME,
                        "hostNetwork": True,
                        "priorityClassName": "system-node-critical",
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [
                            {
                                "name": "cni",
                                "image": image,
                                "imagePullPolicy": "IfNotPresent",
                                "env": [
                                    {"name": "CONTROL_PLANE_ENDPOINT", "value": endpoint},
                                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                                ],
                                "securityContext": {"privileged": True},
                                "volumeMounts": [{"name": "cni-conf", "mountPath": "/host/etc/cni/net.d"}],
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                            }
                        ],
                        "volumes": [
                            {"name": "cni-conf", "hostPath": {"path": "/etc/cni/net.d", "type": "DirectoryOrCreate"}}
                        ],
                    },
                },
            },
        },
    ]


def _sha12(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


@dataclass
class KindCluster:
    profile: Profile
    tools: KindTools
    name: str = "lwsc"
    state_dir: Path = Path(".")
    run: Runner = subprocess_runner
    sleep: Callable[[float], None] = time.sleep
    log: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None  # the engine's DOCKER_HOST for kind and docker
    held: frozenset[str] = frozenset()  # images the node image holds (`images` sets it): never loaded

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def config_file(self) -> Path:
        return self.state_dir / "kind-config.yaml"

    @property
    def handle_file(self) -> Path:
        return self.state_dir / "handle.json"

    @property
    def engine_file(self) -> Path:
        return self.state_dir / "engine.json"

    creates = True  # base.Provider: this provider brings clusters up and down

    def running(self) -> bool:
        """Brought up by lwsc (its handle written) and not taken down since."""
        return self.handle_file.is_file()

    def release(self, run_id: str) -> list[str]:
        """base.Provider: the cluster stays (reused or kept): delete what run `run_id` created."""
        return release_run(self.kubeconfig, run_id)

    @property
    def settings(self) -> dict[str, Any]:
        return kind_settings(self.profile)

    def _kubectl(self, *args: str) -> tuple[str, ...]:
        return (self.tools.kubectl, "--kubeconfig", str(self.kubeconfig), *args)

    # -- plans (pure) --------------------------------------------------------------------

    def plan_create(self, node_image: str | None) -> list[Cmd]:
        argv = [
            self.tools.kind, "create", "cluster", "--name", self.name, "--config", str(self.config_file),
            "--kubeconfig", str(self.kubeconfig), "--retain",
        ]  # fmt: skip
        if node_image:
            argv += ["--image", node_image]
        return [Cmd(tuple(argv), "create the cluster from the generated config")]

    def plan_network(self, image: str) -> list[Cmd]:
        """The pod network, then every node Ready, then the labels the kubelet may not set."""
        timeout = f"--timeout={int(self.profile.ready_seconds)}s"
        endpoint = f"{self.name}-control-plane:6443"
        steps = [] if image in self.held else [Cmd(self.load(image), f"load the pod network image {image}")]
        steps += [
            Cmd(
                self._kubectl("apply", "--server-side", "-f", "-"),
                "install the pod network",
                stdin=yaml.safe_dump_all(pod_network(image, endpoint)),
            ),
            Cmd(self._kubectl("wait", "node", "--all", "--for=condition=Ready", timeout), "every node Ready"),
            Cmd(
                self._kubectl(
                    "-n", "kube-system", "patch", "deployment", "coredns", "--type=strategic", "-p", COREDNS_PATCH
                ),
                "CoreDNS on the control-plane node",
            ),
        ]
        for node, labels in workers(self.profile.topology, self.name):
            restricted = [f"{k}={v}" for k, v in sorted(labels.items()) if _restricted(k)]
            if restricted:
                steps.append(
                    Cmd(self._kubectl("label", "node", node, "--overwrite", *restricted), "labels kubelet may not set")
                )
        return steps

    def load(self, *images: str, node: str | None = None) -> tuple[str, ...]:
        """`kind load` of `images` into every node, or into `node` only."""
        only = ("--nodes", node) if node else ()
        return (self.tools.kind, "load", "docker-image", *images, "--name", self.name, *only)

    @property
    def control_plane(self) -> str:
        return f"{self.name}-control-plane"

    def gpu_patch(self, node: str) -> Cmd:
        t = self.profile.topology
        return self.resource_patch(node, t.gpu_resource, t.gpus_per_node)

    def resource_patch(self, node: str, resource: str, count: int) -> Cmd:
        """Advertise `count` of an extended resource in the node's status (capacity, allocatable)."""
        key = resource.replace("~", "~0").replace("/", "~1")
        patch = [
            {"op": "add", "path": f"/status/capacity/{key}", "value": str(count)},
            {"op": "add", "path": f"/status/allocatable/{key}", "value": str(count)},
        ]
        return Cmd(
            self._kubectl("patch", "node", node, "--subresource=status", "--type=json", "-p", json.dumps(patch)),
            f"advertise {count} {resource} on {node}",
        )

    def plan_install(self, controllers: dict[str, tuple[str, list[dict[str, Any]]]], workload: list[str]) -> list[Cmd]:
        """Load the controller images into the control-plane node (where they run) and the
        workload images the node image does not hold into every node, apply both rendered
        manifests server-side (Kueue's CRDs exceed the client-side annotation limit), wait for the
        controllers, advertise GPUs, create the Kueue Topology and ResourceFlavor (retried: the
        webhook may not serve yet). `controllers`: component -> (image, rendered docs)."""
        images = [img for img, _ in controllers.values()]
        steps = [Cmd(self.load(*images, node=self.control_plane), "load the controller images")]
        missing = [img for img in workload if img not in self.held]
        if missing:
            steps.append(Cmd(self.load(*missing), "load the workload images"))
        for comp, (image, docs) in controllers.items():
            steps.append(
                Cmd(
                    self._kubectl("apply", "--server-side", "--force-conflicts", "-f", "-"),
                    f"install {comp} ({image})",
                    stdin=manifests.dump(docs),
                )
            )
        timeout = f"--timeout={int(self.profile.ready_seconds)}s"
        for comp, (ns, deploy) in CONTROLLERS.items():
            steps.append(
                Cmd(self._kubectl("-n", ns, "rollout", "status", f"deployment/{deploy}", timeout), f"{comp} up")
            )
        # A Deployment rolled out is not a webhook serving (LWS mints its certificate after start):
        # a server-side dry run of an LWS goes through LWS's webhooks, retried until they answer.
        probe = {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lwsc-webhook-probe", "namespace": "default"},
            "spec": {
                "leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
            },
        }
        steps.append(
            Cmd(
                self._kubectl("apply", "--dry-run=server", "-f", "-"),
                "LWS webhooks serving",
                stdin=yaml.safe_dump(probe),
                attempts=60,
            )
        )
        for node, _labels in workers(self.profile.topology, self.name):
            steps.append(self.gpu_patch(node))
        chaos = chaos_node(self.profile, self.name)
        if chaos:
            steps.append(self.resource_patch(chaos, *CHAOS_TPUS))
        t = self.profile.topology
        kueue_objs = [
            nodes.kueue_topology(t, self.profile.kueue_topology_name),
            nodes.kueue_flavor(self.profile.kueue_flavor_name, self.profile.kueue_topology_name),
        ]
        steps.append(
            Cmd(
                self._kubectl("apply", "--server-side", "-f", "-"),
                "Kueue Topology and ResourceFlavor",
                stdin=yaml.safe_dump_all(kueue_objs),
                attempts=15,
            )
        )
        steps.append(Cmd(self._kubectl("-n", "default", "get", "serviceaccount", "default"), "default SA", attempts=30))
        return steps

    # -- execution -----------------------------------------------------------------------

    def execute(self, cmd: Cmd) -> Completed:
        """Run one step; retry it if it may race start-up; a final failure names the step."""
        out = Completed(1)
        for attempt in range(1, cmd.attempts + 1):
            self.log.append(cmd.line())
            out = self.run(cmd.argv, cmd.stdin, self.env)
            if out.returncode == 0:
                return out
            if attempt < cmd.attempts:
                self.sleep(2.0)
        raise InfraError(f"kind provider: {cmd.why} failed: `{' '.join(cmd.argv[:4])} ...`: {said(out)}")

    def engine(self, progress: Progress) -> engines.Engine:
        mode = str(self.settings.get("engine") or "auto")
        engine = engines.ensure(mode, self.tools.docker, progress)
        self.env = engine.env()
        return engine

    def _network(self, engine: engines.Engine) -> None:
        """On the private engine, kind's network without outbound masquerade (kind would create
        it with masquerade on), and its bridge let through a host FORWARD chain that drops."""
        if not engine.private:
            return
        if not engine.run("network", "ls", "-q", "--filter", f"name=^{NETWORK}$").strip():
            engine.run(
                "network", "create", "-d", "bridge",
                "-o", f"com.docker.network.bridge.name={BRIDGE}",
                "-o", "com.docker.network.bridge.enable_ip_masquerade=false",
                "-o", "com.docker.network.driver.mtu=1500",
                "--subnet", str(self.settings.get("subnet") or "172.29.0.0/16"),
                NETWORK,
            )  # fmt: skip
        engines.allow_forward(BRIDGE)

    def _binary(self, component: str, name: str, progress: Progress) -> Path:
        given = self.profile.binaries.get(name)
        if given:
            return Path(given)
        p = self.profile
        replace = p.go_replace.get(component)
        return build(component, p.versions[component], p.sources.get(component), progress, replace=replace) / name

    def _node_inputs(self, progress: Progress) -> nodeimage.NodeInputs:
        s = self.settings
        k8s, node = self.profile.versions["kubernetes"], "kubernetes-node"
        bins: dict[str, Path] = {}
        for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
            bins[b] = self._binary("kubernetes", b, progress)
        bins["etcd"] = self._binary("etcd", "etcd", progress)
        node_dir = build(node, k8s, None, progress)
        for b in ("kubelet", "kubeadm", "kube-proxy", "agnhost"):
            bins[b] = node_dir / b
        bins["coredns"] = build("coredns", str(s.get("coredns_version") or "v1.14.3"), None, progress) / "coredns"
        bins["crictl"] = build("crictl", str(s.get("crictl_version") or "v1.36.0"), None, progress) / "crictl"
        busybox = shutil.which("busybox") or "/bin/busybox"
        if not Path(busybox).is_file():
            raise UserError("the kind workload image needs Debian's static busybox (`scripts/bootstrap --kind`)")
        bins["busybox"] = Path(busybox)
        return nodeimage.NodeInputs(
            kubernetes=k8s,
            etcd=self.profile.versions["etcd"],
            coredns=str(s.get("coredns_version") or "v1.14.3"),
            kind_version=str(s.get("version") or "v0.33.0"),
            binaries=bins,
            mirror=str(s.get("debian_mirror") or nodeimage.NodeInputs.mirror),
        )

    def images(self, engine: engines.Engine, progress: Progress) -> dict[str, str]:
        """Every image the cluster runs, present on `engine`: node, pod network, workloads,
        controllers (name -> reference)."""
        refs: dict[str, str] = {}
        given = self.settings.get("node_image")
        built = nodeimage.ensure(engine, self._node_inputs(progress), progress, node=not given)
        refs["node"], refs["cni"], refs["agnhost"] = str(given or built.node), built.cni, built.agnhost
        refs.update(built.workloads)
        self.held = built.preloaded
        for comp in CONTROLLERS:
            binary = self._binary(comp, comp, progress)
            ref = f"{nodeimage.LOCAL}/{comp}:{self.profile.versions[comp]}-{_sha12(binary)}"
            if not nodeimage.present(engine, ref, _sha12(binary)):
                nodeimage.import_image(
                    engine, ref, [("/manager", binary, 0o755)],
                    ['ENTRYPOINT ["/manager"]', "USER 65532:65532"], _sha12(binary),
                )  # fmt: skip
            refs[comp] = ref
        return refs

    def _controller_docs(self, comp: str, image: str) -> list[dict[str, Any]]:
        source = self.profile.sources.get(comp)
        key = bincache.source_key(source) if source else self.profile.versions[comp]
        cache_file = bincache.cache_root() / "manifests" / f"{comp}-{key}.json"
        if source:
            cache_file = self.state_dir / "manifests" / f"{comp}-{key}.json"
        docs = manifests.render(Path(self.tools.kubectl), manifests_dir(self.profile, comp), cache_file)
        return controller_docs(docs, comp, image)

    def up(self, progress: Progress) -> ClusterHandle:
        """Create the kind cluster and install LWS and Kueue, or return the one up already."""
        engine = self.engine(progress)
        exists = self._exists()
        if self.running():
            if exists:
                progress(f"kind cluster '{self.name}' is already up")
                return ClusterHandle.from_json(self.handle_file.read_text())
            progress(f"kind cluster '{self.name}' was brought up but its nodes are gone: creating it again")
            shutil.rmtree(self.state_dir, ignore_errors=True)
        elif exists:
            self._leftover_or_foreign(engine, progress)
        low = inotify_warning()
        if low:
            progress(low)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.engine_file.write_text(json.dumps({"host": engine.host, "private": engine.private}))
        started = time.monotonic()
        phases: dict[str, float] = {}
        refs = self.images(engine, progress)
        phases["images"] = time.monotonic() - started
        local_image = not self.settings.get("node_image")
        self.config_file.write_text(
            yaml.safe_dump(kind_config(self.profile, self.name, local_image=local_image), sort_keys=False)
        )
        extra = " and a chaos node" if chaos_node(self.profile, self.name) else ""
        progress(
            f"creating kind cluster '{self.name}' on {engine.describe()} ({self.profile.topology.nodes} workers{extra})"
        )
        try:
            self._network(engine)
            mark = time.monotonic()
            for cmd in self.plan_create(refs["node"]):
                self.execute(cmd)
            phases["create"], mark = time.monotonic() - mark, time.monotonic()
            progress(f"kind cluster '{self.name}': pod network, nodes Ready")
            for cmd in self.plan_network(refs["cni"]):
                self.execute(cmd)
            phases["network"], mark = time.monotonic() - mark, time.monotonic()
            progress(f"installing LWS {self.profile.versions['lws']} and Kueue {self.profile.versions['kueue']}")
            controllers = {c: (refs[c], self._controller_docs(c, refs[c])) for c in CONTROLLERS}
            for cmd in self.plan_install(controllers, [refs[n] for n in (*WORKLOAD_TAGS, "agnhost")]):
                self.execute(cmd)
            server = self._server_version()
            topology = self._real_capacity()
            phases["controllers"] = time.monotonic() - mark
        except BaseException:
            self.down()
            raise
        each = ", ".join(f"{phase} {seconds:.0f}s" for phase, seconds in phases.items())
        progress(f"kind cluster '{self.name}' up in {time.monotonic() - started:.0f}s ({each})")
        versions = {"kubernetes": server, "lws": self.profile.versions["lws"], "kueue": self.profile.versions["kueue"]}
        handle = ClusterHandle(
            provider="kind",
            kubeconfig=self.kubeconfig,
            versions=versions,
            topology=topology,
            kueue_topology_name=self.profile.kueue_topology_name,
            kueue_flavor_name=self.profile.kueue_flavor_name,
            capabilities=CAPABILITIES,
            endpoints={
                "kind-cluster": self.name,
                "docker-host": engine.host,
                **({"kind-chaos-node": chaos} if (chaos := chaos_node(self.profile, self.name)) else {}),
            },
            images={test_images.IMAGES[n][0]: refs[n] for n in (*WORKLOAD_TAGS, "agnhost")},
        )
        self.handle_file.write_text(handle.to_json())
        return handle

    def _server_version(self) -> str:
        out = self.execute(Cmd(self._kubectl("version", "-o", "json"), "read the server version"))
        try:
            return str(json.loads(out.stdout)["serverVersion"]["gitVersion"])
        except (ValueError, KeyError) as exc:
            raise InfraError(f"kind provider: unreadable `kubectl version -o json` output ({exc})") from None

    def _exists(self) -> bool:
        """kind lists a cluster of this name on the engine (`engine()` chose it)."""
        out = self.run((self.tools.kind, "get", "clusters"), None, self.env)
        return out.returncode == 0 and self.name in out.stdout.split()

    def _leftover_or_foreign(self, engine: engines.Engine, progress: Progress) -> None:
        """A kind cluster of this name is on the engine and this state has no handle for it: what
        an interrupted `up` of this state left (its engine file written) is removed; any other is
        never created over (kind would refuse) nor deleted by the failed `up`'s clean-up: refused."""
        if self.engine_file.is_file():
            progress(f"removing what an interrupted `lwsc up` left of kind cluster '{self.name}'")
            delete = (self.tools.kind, "delete", "cluster", "--name", self.name)
            self.execute(Cmd(delete, "remove the leftover cluster"))
            return
        raise UserError(
            f"a kind cluster named '{self.name}' already exists on {engine.describe()} and was not brought up "
            f"with this state ({self.state_dir}): choose another --name, or, if it is what an interrupted "
            f"`lwsc up` left, remove it with `lwsc --profile kind down --name {self.name}`"
        )

    def _real_capacity(self) -> Topology:
        """The profile's topology with the workers' real allocatable cpu, memory and pods: a kind
        node is the machine (its cores, its memory), not the profile's fake node, so suites that
        size pods from the topology size them for the nodes that run them."""
        selector = "=".join(nodes.POOL_LABEL)
        read = self._kubectl("get", "nodes", "-l", selector, "-o", "json")
        out = self.execute(Cmd(read, "read the workers' capacity"))
        try:
            workers_seen = json.loads(out.stdout)["items"]
        except (ValueError, KeyError) as exc:
            raise InfraError(f"kind provider: unreadable `kubectl get nodes -o json` output ({exc})") from None
        if len(workers_seen) != self.profile.topology.nodes:
            raise InfraError(
                f"kind provider: {len(workers_seen)} node(s) labelled {selector}, the profile has "
                f"{self.profile.topology.nodes}"
            )
        return dataclasses.replace(self.profile.topology, **discovery.node_capacity(workers_seen))

    def _known_engine(self) -> None:
        """The engine `up` used (down and faults run after a new lwsc process starts)."""
        if self.env is None and self.engine_file.is_file():
            data = json.loads(self.engine_file.read_text())
            self.env = engines.Engine(data["host"], data["private"], self.tools.docker).env()

    def down(self) -> None:
        """Delete the cluster; stop the private engine when no harness cluster is left on it."""
        self._known_engine()
        private = self.env is not None and self.env.get("DOCKER_HOST", "") == engines.private_host()
        self.run(
            (self.tools.kind, "delete", "cluster", "--name", self.name, "--kubeconfig", str(self.kubeconfig)),
            None,
            self.env,
        )
        shutil.rmtree(self.state_dir, ignore_errors=True)
        if private:
            self.stop_idle_engine()

    def stop_idle_engine(self) -> None:
        """Stop the private engine (its images stay in its data root) unless a kind cluster of
        the harness still runs on it."""
        engine = engines.Engine(engines.private_host(), True, self.tools.docker)
        if not engines.running() or not engines.answers(engine):
            return
        if not engine.run("ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster", check=False).strip():
            engine.run("network", "rm", NETWORK, check=False)
            engines.stop()

    def advertise_gpus(self, only: Sequence[str] | None = None) -> None:
        """(Re-)advertise the fake GPUs; call after any node-level fault."""
        for node, _labels in workers(self.profile.topology, self.name):
            if only is None or node in only:
                self.execute(self.gpu_patch(node))

    def restart_node(self, node: str) -> None:
        """Node-level fault: restart a worker's container, wait for Ready, re-advertise its GPUs
        (the kubelet re-registers and may drop capacity it does not own)."""
        self._known_engine()
        self.execute(Cmd((self.tools.docker, "restart", node), f"restart node {node}"))
        timeout = f"--timeout={int(self.profile.ready_seconds)}s"
        self.execute(Cmd(self._kubectl("wait", f"node/{node}", "--for=condition=Ready", timeout), f"{node} Ready"))
        self.advertise_gpus([node])


def node_docker(handle: ClusterHandle, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`docker ARGS` on the engine of the kind cluster `handle` describes (its DOCKER_HOST, as
    `up` recorded it); raises OSError or TimeoutExpired when the engine cannot be reached."""
    host = handle.endpoints.get("docker-host")
    env = {**os.environ, **({"DOCKER_HOST": host} if host else {})}
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, env=env)


def inotify_warning(path: Path = Path("/proc/sys/fs/inotify/max_user_instances")) -> str | None:
    """kind nodes each hold inotify instances; below 512 per user, node or local cluster start-ups
    fail once several run (kind's known issues)."""
    try:
        value = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    if value >= 512:
        return None
    return (
        f"warning: fs.inotify.max_user_instances is {value}; kind nodes and local clusters may run out: "
        "sysctl -w fs.inotify.max_user_instances=1024 fs.inotify.max_user_watches=524288"
    )


def built_tool(profile: Profile, progress: Progress) -> Callable[[str], str]:
    """kind and kubectl as the harness builds them (cached by version)."""

    def get(name: str) -> str:
        if name == "kind":
            version = str(kind_settings(profile).get("version") or "v0.33.0")
            return str(build("kind", version, None, progress) / "kind")
        if name == "kubectl":
            given = profile.binaries.get("kubectl")
            if given:
                return str(given)
            return str(build("kubernetes", profile.versions["kubernetes"], None, progress) / "kubectl")
        raise ValueError(name)

    return get
