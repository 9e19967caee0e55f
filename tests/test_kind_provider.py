"""The kind provider without Docker: config, install plan and exact command lines.

kind cannot run on this project's machines (a `docker` client, no engine), so the provider's
commands go through an injectable runner and are checked here as argv. Two things do run for
real: `docker info` failing on this machine (the one-line engine error), and the GPU status
patch, executed with the real kubectl against a private local cluster's API server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from lws_conformance.errors import InfraError, UserError
from lws_conformance.k8s.client import api_client
from lws_conformance.profile import load_profile
from lws_conformance.providers import kind, nodes
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.providers.local import LocalCluster

PROJECT = Path(__file__).resolve().parent.parent


class FakeRunner:
    """Records every argv; answers from a table of (argv prefix -> Completed) rules."""

    def __init__(self, rules: dict[tuple[str, ...], list[kind.Completed]] | None = None) -> None:
        self.calls: list[tuple[tuple[str, ...], str | None]] = []
        self.rules = rules or {}

    def __call__(self, argv: Sequence[str], stdin: str | None) -> kind.Completed:
        argv = tuple(argv)
        self.calls.append((argv, stdin))
        for prefix, answers in self.rules.items():
            if argv[: len(prefix)] == prefix and answers:
                return answers.pop(0) if len(answers) > 1 else answers[0]
        if argv[-3:] == ("version", "-o", "json"):
            return kind.Completed(0, json.dumps({"serverVersion": {"gitVersion": "v1.36.1"}}))
        return kind.Completed(0, "ok")


TOOLS = kind.KindTools(kind="/opt/kind", docker="/opt/docker", kubectl="/opt/kubectl")


def make(tmp_path: Path, *sets: str, runner: FakeRunner | None = None, profile: str = "kind") -> kind.KindCluster:
    return kind.KindCluster(
        load_profile(profile, list(sets)),
        TOOLS,
        name="lwsc",
        state_dir=tmp_path / "kind-lwsc",
        run=runner or FakeRunner(),
        sleep=lambda _s: None,
    )


def test_config_has_one_labelled_worker_per_profile_node() -> None:
    profile = load_profile("large")
    t = profile.topology
    cfg = kind.kind_config(profile, "lwsc")
    assert cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4" and cfg["kind"] == "Cluster" and cfg["name"] == "lwsc"
    assert cfg["nodes"][0] == {"role": "control-plane"}
    workers = cfg["nodes"][1:]
    assert len(workers) == t.nodes == 32 and {w["role"] for w in workers} == {"worker"}
    for w, (_fake, block, rack) in zip(workers, nodes.node_names(t), strict=True):
        assert w["labels"][t.block_label] == block and w["labels"][t.rack_label] == rack
        assert w["labels"][nodes.POOL_LABEL[0]] == nodes.POOL_LABEL[1]  # the ResourceFlavor selects it
        assert t.hostname_label not in w["labels"]  # the kubelet sets kubernetes.io/hostname itself
    assert kind.worker_names("lwsc", 3) == ["lwsc-worker", "lwsc-worker2", "lwsc-worker3"]


def test_custom_hostname_label_and_kubelet_restricted_keys(tmp_path: Path) -> None:
    """A custom hostname label gets the kind node name; keys in kubernetes.io / k8s.io namespaces
    cannot be self-set by the kubelet (NodeRestriction), so they move to `kubectl label`."""
    c = make(
        tmp_path,
        "topology.hostname_label=example.com/host",
        "topology.block_label=topology.kubernetes.io/block",
    )
    cfg = kind.kind_config(c.profile, "lwsc")
    first = cfg["nodes"][1]["labels"]
    assert first["example.com/host"] == "lwsc-worker"
    assert "topology.kubernetes.io/block" not in first
    labels = [cmd.argv for cmd in c.plan_create() if "label" in cmd.argv]
    assert len(labels) == c.profile.topology.nodes
    assert labels[0] == (
        "/opt/kubectl", "--kubeconfig", str(c.kubeconfig), "label", "node", "lwsc-worker", "--overwrite",
        "topology.kubernetes.io/block=b1",
    )  # fmt: skip


def test_create_command_line(tmp_path: Path) -> None:
    c = make(tmp_path, "kind.node_image=kindest/node:v1.36.1")
    (create,) = c.plan_create()
    assert create.argv == (
        "/opt/kind", "create", "cluster", "--name", "lwsc", "--config", str(c.config_file),
        "--kubeconfig", str(c.kubeconfig), "--wait", "300s", "--image", "kindest/node:v1.36.1",
    )  # fmt: skip


def test_install_plan_uses_release_manifests_server_side_then_gpus_then_kueue_objects(tmp_path: Path) -> None:
    c = make(tmp_path, "versions.lws=v0.8.0", "versions.kueue=v0.17.0")
    plan = c.plan_install()
    kc = ("/opt/kubectl", "--kubeconfig", str(c.kubeconfig))
    lines = [p.argv for p in plan]
    assert lines[0] == (
        *kc, "apply", "--server-side", "-f",
        "https://github.com/kubernetes-sigs/lws/releases/download/v0.8.0/manifests.yaml",
    )  # fmt: skip
    assert lines[1] == (
        *kc, "apply", "--server-side", "-f",
        "https://github.com/kubernetes-sigs/kueue/releases/download/v0.17.0/manifests.yaml",
    )  # fmt: skip
    assert lines[2] == (
        *kc,
        "-n",
        "lws-system",
        "rollout",
        "status",
        "deployment/lws-controller-manager",
        "--timeout=300s",
    )
    assert lines[3][5:7] == ("rollout", "status") and "deployment/kueue-controller-manager" in lines[3]
    patches = [p for p in plan if "--subresource=status" in p.argv]
    assert [p.argv[5] for p in patches] == kind.worker_names("lwsc", c.profile.topology.nodes)
    assert patches[0].argv == (
        *kc, "patch", "node", "lwsc-worker", "--subresource=status", "--type=json", "-p",
        '[{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "8"}, '
        '{"op": "add", "path": "/status/allocatable/nvidia.com~1gpu", "value": "8"}]',
    )  # fmt: skip
    kueue_objs = plan[-2]
    assert kueue_objs.argv == (*kc, "apply", "--server-side", "-f", "-") and kueue_objs.attempts > 1
    docs = list(yaml.safe_load_all(kueue_objs.stdin or ""))
    assert [d["kind"] for d in docs] == ["Topology", "ResourceFlavor"]
    assert docs[1]["spec"]["nodeLabels"] == {nodes.POOL_LABEL[0]: nodes.POOL_LABEL[1]}
    assert not any(p.argv[1:3] == ("load", "docker-image") for p in plan)


def test_local_controller_image_is_loaded_and_swapped_in(tmp_path: Path) -> None:
    c = make(tmp_path, "kind.lws_image=example.com/lws:dev")
    plan = [p.argv for p in c.plan_install()]
    load = plan.index(("/opt/kind", "load", "docker-image", "example.com/lws:dev", "--name", "lwsc"))
    apply = next(
        i for i, a in enumerate(plan) if "apply" in a and a[-1].endswith("/lws/releases/download/v0.9.0/manifests.yaml")
    )
    swap = next(i for i, a in enumerate(plan) if "patch" in a and "deployment" in a)
    rollout = next(i for i, a in enumerate(plan) if "deployment/lws-controller-manager" in a)
    assert load < apply < swap < rollout, "load before the Deployment exists; swap before waiting for it"
    body = json.loads(plan[swap][-1])
    assert body["spec"]["template"]["spec"]["containers"] == [
        {"name": "manager", "image": "example.com/lws:dev", "imagePullPolicy": "IfNotPresent"}
    ]
    assert plan[swap][3:8] == ("-n", "lws-system", "patch", "deployment", "lws-controller-manager")


def test_up_runs_the_plan_in_order_and_writes_a_kind_handle(tmp_path: Path) -> None:
    runner = FakeRunner()
    c = make(tmp_path, runner=runner)
    handle = c.up(lambda _m: None)
    argvs = [a for a, _ in runner.calls]
    assert argvs[0] == ("/opt/docker", "info", "--format", "{{.ServerVersion}}")
    assert argvs[1][:3] == ("/opt/kind", "create", "cluster")
    assert yaml.safe_load(c.config_file.read_text()) == kind.kind_config(c.profile, "lwsc")
    assert handle.provider == "kind" and handle.versions == {
        "kubernetes": "v1.36.1",
        "lws": "v0.9.0",
        "kueue": "v0.17.0",
    }
    assert ClusterHandle.from_json(c.handle_file.read_text()) == handle
    assert not any(a[1:3] == ("delete", "cluster") for a in argvs)


def test_up_is_idempotent_and_down_forgets_the_cluster(tmp_path: Path) -> None:
    """base.Provider: a second `up` reuses the cluster (no kind/docker call), as `lwsc run` on a
    kind cluster that is up already does; `down` deletes it and the next `up` creates again."""
    runner = FakeRunner()
    c = make(tmp_path, runner=runner)
    assert c.creates and not c.running()
    first = c.up(lambda _m: None)
    calls = len(runner.calls)
    assert c.running() and c.up(lambda _m: None) == first and len(runner.calls) == calls
    c.down()
    assert not c.running() and runner.calls[-1][0][1:3] == ("delete", "cluster")
    c.up(lambda _m: None)
    assert any(a[1:3] == ("create", "cluster") for a, _ in runner.calls[calls + 1 :])


def test_failed_step_is_retried_then_named_and_the_cluster_deleted(tmp_path: Path) -> None:
    failing = kind.Completed(1, "", 'Error from server (InternalError): failed calling webhook "vtopology"')
    runner = FakeRunner()
    c = make(tmp_path, runner=runner)
    real = runner.__call__

    def run(argv: Sequence[str], stdin: str | None) -> kind.Completed:
        """The Kueue objects step (racing Kueue's webhook) fails every time."""
        if stdin and "Topology" in stdin:
            runner.calls.append((tuple(argv), stdin))
            return failing
        return real(argv, stdin)

    c.run = run
    with pytest.raises(InfraError, match="Kueue Topology and ResourceFlavor failed.*failed calling webhook"):
        c.up(lambda _m: None)
    attempts = [a for a, s in runner.calls if s and "Topology" in s]
    assert len(attempts) == 10
    assert runner.calls[-1][0] == (
        "/opt/kind",
        "delete",
        "cluster",
        "--name",
        "lwsc",
        "--kubeconfig",
        str(c.kubeconfig),
    )
    assert not c.state_dir.exists()


def test_restart_node_re_advertises_its_gpus(tmp_path: Path) -> None:
    runner = FakeRunner()
    c = make(tmp_path, runner=runner)
    c.restart_node("lwsc-worker2")
    argvs = [a for a, _ in runner.calls]
    assert argvs[0] == ("/opt/docker", "restart", "lwsc-worker2")
    assert argvs[1][3:] == ("wait", "node/lwsc-worker2", "--for=condition=Ready", "--timeout=300s")
    assert argvs[2] == c.gpu_patch("lwsc-worker2").argv and len(argvs) == 3


def test_missing_tool_names_the_flag_and_is_never_downloaded() -> None:
    with pytest.raises(UserError, match=r"needs kind \(not on PATH\).*--kind-bin=.*never downloads"):
        kind.KindTools.resolve(which=lambda name: None if name == "kind" else f"/usr/bin/{name}")
    with pytest.raises(UserError, match="/nope/kind does not exist"):
        kind.KindTools.resolve(kind="/nope/kind", which=lambda name: f"/usr/bin/{name}")


@pytest.mark.skipif(not shutil.which("docker"), reason="needs a docker client (any engine state)")
def test_no_engine_is_a_one_line_user_error_for_real(tmp_path: Path) -> None:
    """On this machine `docker info` fails (client, no engine): the real check must say so."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        pytest.skip("a Docker engine is running here; this proves the no-engine path only without one")
    tools = kind.KindTools(kind="/bin/true", docker=str(shutil.which("docker")), kubectl="/bin/true")
    c = kind.KindCluster(load_profile("kind"), tools, state_dir=tmp_path / "k")
    with pytest.raises(UserError, match="needs a running Docker engine") as err:
        c.check_engine()
    assert "\n" not in str(err.value)
    proc = subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "--profile", "kind", "--kind-bin", "/bin/true", "up"],
        capture_output=True,
        text=True,
        env={"LWSC_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/local/bin:/usr/bin:/bin"},
        cwd=PROJECT,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("lwsc: error: the kind provider needs a running")


@pytest.mark.cluster
@pytest.mark.skipif(not shutil.which("kubectl"), reason="needs kubectl on PATH")
def test_gpu_status_patch_command_works_on_a_real_api_server(private_cluster: LocalCluster, tmp_path: Path) -> None:
    """The exact patch argv, run with the PATH kubectl against a real kube-apiserver (a private
    local cluster stands in for kind's), advertises capacity and allocatable. A resource name of
    its own keeps the private cluster's real GPUs untouched."""
    resource = "example.com/lwsc-kind-test"
    profile = load_profile("kind", [f"topology.gpu_resource={resource}", "topology.gpus_per_node=3"])
    tools = kind.KindTools(kind="/bin/false", docker="/bin/false", kubectl=str(shutil.which("kubectl")))
    c = kind.KindCluster(profile, tools, state_dir=private_cluster.dir)
    node = nodes.node_names(private_cluster.profile.topology)[0][0]
    api = api_client(private_cluster.kubeconfig)
    core = client.CoreV1Api(api)
    try:
        c.execute(c.gpu_patch(node))
        status = core.read_node_status(node).status
        assert status.capacity[resource] == "3" and status.allocatable[resource] == "3"
    finally:
        key = resource.replace("/", "~1")
        core.patch_node_status(
            node,
            [
                {"op": "remove", "path": f"/status/capacity/{key}"},
                {"op": "remove", "path": f"/status/allocatable/{key}"},
            ],
        )
        api.close()
