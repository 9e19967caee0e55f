"""The kind provider: a Docker-backed cluster for developers, with the released LWS and Kueue.

Everything is a plan of exact command lines run through an injectable `Runner`, so the config,
the install order and every argv can be tested without Docker (this project's machines have a
`docker` client but no engine). `kind`, `docker` and `kubectl` come from flags or PATH and are
never downloaded: a silent download would test a binary nobody chose.

Shape of the cluster: one control-plane plus one worker per profile node, each worker labelled
with the profile's block / rack (/ hostname, when that is not the kubelet's own
`kubernetes.io/hostname`) labels and the harness pool label the Kueue ResourceFlavor selects.
kind cannot set extended resources, so `nvidia.com/gpu` is advertised by patching node *status*;
the kubelet drops capacity it does not own when a node re-registers, so `restart_node` re-applies
it (kubernetes PR #64784; Kueue's TAS e2e does the same patch in its BeforeSuite).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InfraError, UserError
from ..profile import Profile, Topology
from ..toolchain.gobuild import Progress
from . import nodes
from .base import ClusterHandle
from .existing import release_run

RELEASE_URL = "https://github.com/kubernetes-sigs/{repo}/releases/download/{tag}/manifests.yaml"
# Release manifests: kustomize namePrefix + namespace; the controller container is `manager`.
CONTROLLERS = {
    "lws": ("lws-system", "lws-controller-manager"),
    "kueue": ("kueue-system", "kueue-controller-manager"),
}
# The kubelet may only set labels outside these namespaces on itself (NodeRestriction); others
# are applied with `kubectl label` once the nodes exist.
RESTRICTED_LABEL_SUFFIXES = ("kubernetes.io", "k8s.io")
CAPABILITIES = frozenset({"node-restart"})


@dataclass(frozen=True)
class Completed:
    """What a command returned (the subset of CompletedProcess the provider reads)."""

    returncode: int
    stdout: str = ""
    stderr: str = ""


Runner = Callable[[Sequence[str], str | None], Completed]


def subprocess_runner(argv: Sequence[str], stdin: str | None) -> Completed:
    proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True)
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
    ) -> KindTools:
        """Each tool from its flag, else PATH; a missing one is a one-line UserError naming the flag."""
        found: dict[str, str] = {}
        for name, given, flag in (
            ("kind", kind, "--kind-bin"),
            ("docker", docker, "--docker-bin"),
            ("kubectl", kubectl, "--kubectl-bin"),
        ):
            path = given or which(name)
            if not path or (given and not Path(given).is_file()):
                where = f"{given} does not exist" if given else "not on PATH"
                raise UserError(
                    f"the kind provider needs {name} ({where}); install it yourself and pass {flag}=/path/to/{name} "
                    f"(the harness never downloads it)"
                )
            found[name] = str(path)
        return cls(**found)


def release_manifest_url(component: str, version: str) -> str:
    repo = {"lws": "lws", "kueue": "kueue"}[component]
    return RELEASE_URL.format(repo=repo, tag=version)


def worker_names(cluster: str, count: int) -> list[str]:
    """kind's node names: `<cluster>-worker`, `<cluster>-worker2`, ... in config order."""
    return [f"{cluster}-worker" + (str(i) if i > 1 else "") for i in range(1, count + 1)]


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


def kind_config(profile: Profile, cluster: str) -> dict[str, Any]:
    """The kind Cluster config: a control plane and one labelled worker per profile node."""
    cfg_nodes: list[dict[str, Any]] = [{"role": "control-plane"}]
    for _name, labels in workers(profile.topology, cluster):
        allowed = {k: v for k, v in labels.items() if not _restricted(k)}
        cfg_nodes.append({"role": "worker", "labels": allowed})
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "name": cluster, "nodes": cfg_nodes}


def kind_settings(profile: Profile) -> dict[str, Any]:
    raw = profile.raw.get("kind") or {}
    return dict(raw) if isinstance(raw, dict) else {}


@dataclass
class KindCluster:
    profile: Profile
    tools: KindTools
    name: str = "lwsc"
    state_dir: Path = Path(".")
    run: Runner = subprocess_runner
    sleep: Callable[[float], None] = time.sleep
    log: list[str] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def config_file(self) -> Path:
        return self.state_dir / "kind-config.yaml"

    @property
    def handle_file(self) -> Path:
        return self.state_dir / "handle.json"

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

    def engine_check(self) -> Cmd:
        return Cmd((self.tools.docker, "info", "--format", "{{.ServerVersion}}"), "a Docker engine answers")

    def plan_create(self) -> list[Cmd]:
        argv = [
            self.tools.kind,
            "create",
            "cluster",
            "--name",
            self.name,
            "--config",
            str(self.config_file),
            "--kubeconfig",
            str(self.kubeconfig),
            "--wait",
            f"{int(self.profile.ready_seconds)}s",
        ]
        if self.settings.get("node_image"):
            argv += ["--image", str(self.settings["node_image"])]
        steps = [Cmd(tuple(argv), "create the cluster from the generated config")]
        for node, labels in workers(self.profile.topology, self.name):
            restricted = [f"{k}={v}" for k, v in sorted(labels.items()) if _restricted(k)]
            if restricted:
                steps.append(
                    Cmd(self._kubectl("label", "node", node, "--overwrite", *restricted), "labels kubelet may not set")
                )
        return steps

    def gpu_patch(self, node: str) -> Cmd:
        t = self.profile.topology
        key = t.gpu_resource.replace("~", "~0").replace("/", "~1")
        patch = [
            {"op": "add", "path": f"/status/capacity/{key}", "value": str(t.gpus_per_node)},
            {"op": "add", "path": f"/status/allocatable/{key}", "value": str(t.gpus_per_node)},
        ]
        return Cmd(
            self._kubectl("patch", "node", node, "--subresource=status", "--type=json", "-p", json.dumps(patch)),
            f"advertise {t.gpus_per_node} {t.gpu_resource} on {node}",
        )

    def plan_install(self) -> list[Cmd]:
        """Load local images, apply both release manifests (server-side: Kueue's CRDs exceed the
        client-side annotation limit), swap in local images, wait for the controllers, create the
        Kueue Topology and ResourceFlavor (retried: the webhook may not serve yet)."""
        steps: list[Cmd] = []
        images = {c: self.settings.get(f"{c}_image") for c in CONTROLLERS}
        for comp, image in images.items():
            if image:
                steps.append(
                    Cmd(
                        (self.tools.kind, "load", "docker-image", str(image), "--name", self.name), f"load {comp} image"
                    )
                )
        for comp in CONTROLLERS:
            url = release_manifest_url(comp, self.profile.versions[comp])
            steps.append(Cmd(self._kubectl("apply", "--server-side", "-f", url), f"install {comp} from {url}"))
        for comp, (ns, deploy) in CONTROLLERS.items():
            image = images[comp]
            if image:
                patch = {
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "manager", "image": str(image), "imagePullPolicy": "IfNotPresent"}
                                ]
                            }
                        }
                    }
                }
                steps.append(
                    Cmd(
                        self._kubectl(
                            "-n", ns, "patch", "deployment", deploy, "--type=strategic", "-p", json.dumps(patch)
                        ),
                        f"run the locally built {comp} image {image}",
                    )
                )
        timeout = f"--timeout={int(self.profile.ready_seconds)}s"
        for comp, (ns, deploy) in CONTROLLERS.items():
            steps.append(
                Cmd(self._kubectl("-n", ns, "rollout", "status", f"deployment/{deploy}", timeout), f"{comp} up")
            )
        for node, _labels in workers(self.profile.topology, self.name):
            steps.append(self.gpu_patch(node))
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
                attempts=10,
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
            out = self.run(cmd.argv, cmd.stdin)
            if out.returncode == 0:
                return out
            if attempt < cmd.attempts:
                self.sleep(2.0)
        first = (out.stderr.strip().splitlines() or out.stdout.strip().splitlines() or ["no output"])[0]
        raise InfraError(f"kind provider: {cmd.why} failed: `{' '.join(cmd.argv[:4])} ...`: {first}")

    def check_engine(self) -> None:
        cmd = self.engine_check()
        out = self.run(cmd.argv, None)
        if out.returncode != 0:
            why = (out.stderr.strip().splitlines() or ["no output"])[-1]
            raise UserError(
                f"the kind provider needs a running Docker engine and `{self.tools.docker} info` failed ({why}); "
                f"start Docker or use the local provider (--provider local)"
            )

    def up(self, progress: Progress) -> ClusterHandle:
        """Create the kind cluster and install LWS and Kueue, or return the one up already."""
        if self.running():
            progress(f"kind cluster '{self.name}' is already up")
            return ClusterHandle.from_json(self.handle_file.read_text())
        self.check_engine()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(yaml.safe_dump(kind_config(self.profile, self.name), sort_keys=False))
        progress(f"creating kind cluster '{self.name}' ({self.profile.topology.nodes} workers)")
        try:
            for cmd in self.plan_create():
                self.execute(cmd)
            progress(f"installing LWS {self.profile.versions['lws']} and Kueue {self.profile.versions['kueue']}")
            for cmd in self.plan_install():
                self.execute(cmd)
            server = self._server_version()
        except BaseException:
            self.down()
            raise
        versions = {"kubernetes": server, "lws": self.profile.versions["lws"], "kueue": self.profile.versions["kueue"]}
        handle = ClusterHandle(
            provider="kind",
            kubeconfig=self.kubeconfig,
            versions=versions,
            topology=self.profile.topology,
            kueue_topology_name=self.profile.kueue_topology_name,
            kueue_flavor_name=self.profile.kueue_flavor_name,
            capabilities=CAPABILITIES,
        )
        self.handle_file.write_text(handle.to_json())
        return handle

    def _server_version(self) -> str:
        out = self.execute(Cmd(self._kubectl("version", "-o", "json"), "read the server version"))
        try:
            return str(json.loads(out.stdout)["serverVersion"]["gitVersion"])
        except (ValueError, KeyError) as exc:
            raise InfraError(f"kind provider: unreadable `kubectl version -o json` output ({exc})") from None

    def down(self) -> None:
        self.run(
            (self.tools.kind, "delete", "cluster", "--name", self.name, "--kubeconfig", str(self.kubeconfig)), None
        )
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def advertise_gpus(self, only: Sequence[str] | None = None) -> None:
        """(Re-)advertise the fake GPUs; call after any node-level fault."""
        for node, _labels in workers(self.profile.topology, self.name):
            if only is None or node in only:
                self.execute(self.gpu_patch(node))

    def restart_node(self, node: str) -> None:
        """Node-level fault: restart a worker's container, wait for Ready, re-advertise its GPUs
        (the kubelet re-registers and may drop capacity it does not own)."""
        self.execute(Cmd((self.tools.docker, "restart", node), f"restart node {node}"))
        timeout = f"--timeout={int(self.profile.ready_seconds)}s"
        self.execute(Cmd(self._kubectl("wait", f"node/{node}", "--for=condition=Ready", timeout), f"{node} Ready"))
        self.advertise_gpus([node])
