"""The kind provider's plans and the private engine's pieces, without an engine.

The provider's commands go through an injectable runner and are checked here as argv; the OCI
runtime front runs for real against a stand-in runc, and the GPU status patch runs with the real
kubectl against a private local cluster's API server. The provider end to end, on a real engine,
is `tests/test_kind_cluster.py`.
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
from lws_conformance.toolchain import engine

PROJECT = Path(__file__).resolve().parent.parent


class FakeRunner:
    """Records every argv; answers from a table of (argv prefix -> Completed) rules."""

    def __init__(self, rules: dict[tuple[str, ...], list[kind.Completed]] | None = None) -> None:
        self.calls: list[tuple[tuple[str, ...], str | None]] = []
        self.rules = rules or {}

    def __call__(self, argv: Sequence[str], stdin: str | None, env: dict[str, str] | None = None) -> kind.Completed:
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
    workers, chaos = cfg["nodes"][1:-1], cfg["nodes"][-1]
    assert len(workers) == t.nodes == 32 and {w["role"] for w in workers} == {"worker"}
    for w, (_fake, block, rack) in zip(workers, nodes.node_names(t), strict=True):
        assert w["labels"][t.block_label] == block and w["labels"][t.rack_label] == rack
        assert w["labels"][nodes.POOL_LABEL[0]] == nodes.POOL_LABEL[1]  # the ResourceFlavor selects it
        assert t.hostname_label not in w["labels"]  # the kubelet sets kubernetes.io/hostname itself
    assert kind.worker_names("lwsc", 3) == ["lwsc-worker", "lwsc-worker2", "lwsc-worker3"]
    # the chaos node: last, tainted, outside the pool (no Kueue flavor, no GPUs), the harness's
    assert chaos["role"] == "worker" and chaos["labels"] == {nodes.MANAGED_LABEL: "true", kind.CHAOS_LABEL: "true"}
    join = yaml.safe_load(chaos["kubeadmConfigPatches"][0])
    assert join == {"kind": "JoinConfiguration", "nodeRegistration": {"taints": [kind.CHAOS_TAINT]}}
    assert kind.chaos_node(profile, "lwsc") == "lwsc-worker33"
    off = load_profile("large", ["kind.chaos_node=false"])
    assert kind.chaos_node(off, "lwsc") is None and len(kind.kind_config(off, "lwsc")["nodes"]) == 33


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
    labels = [cmd.argv for cmd in c.plan_network("cni") if "label" in cmd.argv]
    assert len(labels) == c.profile.topology.nodes
    assert labels[0] == (
        "/opt/kubectl", "--kubeconfig", str(c.kubeconfig), "label", "node", "lwsc-worker", "--overwrite",
        "topology.kubernetes.io/block=b1",
    )  # fmt: skip


def test_create_command_line_and_the_config_kind_needs_here(tmp_path: Path) -> None:
    """No --wait (nodes turn Ready only once the provider's pod network runs), kind's default CNI
    off, and with a node image built here kubeadm is told the etcd and CoreDNS tags it holds."""
    c = make(tmp_path)
    (create,) = c.plan_create("lwsc.local/kind-node:v1.36.3-abc")
    assert create.argv == (
        "/opt/kind", "create", "cluster", "--name", "lwsc", "--config", str(c.config_file),
        "--kubeconfig", str(c.kubeconfig), "--retain", "--image", "lwsc.local/kind-node:v1.36.3-abc",
    )  # fmt: skip
    cfg = kind.kind_config(c.profile, "lwsc", local_image=True, v1=True)
    assert cfg["networking"] == {"disableDefaultCNI": True}
    patches = [yaml.safe_load(p) for p in cfg["kubeadmConfigPatches"]]
    assert patches[0]["etcd"]["local"]["imageTag"] == c.profile.versions["etcd"]
    assert patches[0]["dns"]["imageTag"] == "v1.14.3"
    assert patches[-1] == {"kind": "KubeletConfiguration", "failCgroupV1": False}
    assert "kubeadmConfigPatches" not in kind.kind_config(c.profile, "lwsc", local_image=False, v1=False)


def test_a_node_image_built_here_gets_the_throwaway_cluster_settings_unless_turned_off(tmp_path: Path) -> None:
    """GOGC/GOMEMLIMIT for every control-plane component and etcd, ECDSA keys, and the kubelets'
    cAdvisor housekeeping, as kubeadm v1beta4 fields (lists of name/value); kind.test_cluster_settings
    false gives kind's own configuration; a given node image (any kubeadm API) gets none of it."""
    c = make(tmp_path, "kind.test_cluster_settings=true")
    cfg = kind.kind_config(c.profile, "lwsc", local_image=True, v1=False)
    patches = [yaml.safe_load(p) for p in cfg["kubeadmConfigPatches"]]
    cluster = patches[0]
    assert cluster["kind"] == "ClusterConfiguration" and cluster["encryptionAlgorithm"] == "ECDSA-P256"
    for env in (cluster["apiServer"], cluster["controllerManager"], cluster["scheduler"], cluster["etcd"]["local"]):
        assert env["extraEnvs"][0] == {"name": "GOGC", "value": "400"}
        assert env["extraEnvs"][1]["name"] == "GOMEMLIMIT" and env["extraEnvs"][1]["value"].endswith("iB")
    housekeeping = {"kubeletExtraArgs": [{"name": "housekeeping-interval", "value": "30s"}]}
    assert patches[1:] == [
        {"kind": "InitConfiguration", "nodeRegistration": housekeeping},
        {"kind": "JoinConfiguration", "nodeRegistration": housekeeping},
    ]
    for off in (make(tmp_path, "kind.test_cluster_settings=false"), make(tmp_path)):  # off by default
        (only,) = kind.kind_config(off.profile, "lwsc", local_image=True, v1=False)["kubeadmConfigPatches"]
        assert set(yaml.safe_load(only)) == {"kind", "etcd", "dns"}


def test_network_plan_installs_the_pod_network_then_waits_for_every_node(tmp_path: Path) -> None:
    c = make(tmp_path)
    plan = c.plan_network("lwsc.local/kind-cni:k")
    assert plan[0].argv == ("/opt/kind", "load", "docker-image", "lwsc.local/kind-cni:k", "--name", "lwsc")
    c.held = frozenset({"lwsc.local/kind-cni:k"})  # a node image built here holds it: no load
    assert c.plan_network("lwsc.local/kind-cni:k") == plan[1:]
    plan = plan[1:]
    docs = list(yaml.safe_load_all(plan[0].stdin or ""))
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    container = ds["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "lwsc.local/kind-cni:k" and container["imagePullPolicy"] == "IfNotPresent"
    assert {"name": "CONTROL_PLANE_ENDPOINT", "value": "lwsc-control-plane:6443"} in container["env"]
    assert ds["spec"]["template"]["spec"]["hostNetwork"] is True
    assert plan[1].argv[3:] == ("wait", "node", "--all", "--for=condition=Ready", "--timeout=300s")


def _docs(deploy: str) -> list[dict[str, object]]:
    return [
        {"kind": "Namespace", "metadata": {"name": "x"}},
        {
            "kind": "Deployment",
            "metadata": {"name": deploy},
            "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": "upstream:v1"}]}}},
        },
    ]


def test_controllers_run_the_local_image_and_nothing_else_changes(tmp_path: Path) -> None:
    docs = _docs("lws-controller-manager")
    out = kind.controller_docs(docs, "lws", "lwsc.local/lws:v0.9.0-abc")
    pod_spec = out[1]["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod_spec["containers"][0] == {
        "name": "manager",
        "image": "lwsc.local/lws:v0.9.0-abc",
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": kind.SYSTEM_REQUESTS},
        "args": ["--zap-log-level=2"],  # the reconciles the controller-pod chaos test reads
    }
    assert pod_spec["nodeSelector"] == {kind.CONTROL_PLANE: ""}  # the workers stay the suites'
    assert {"key": kind.CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"} in pod_spec["tolerations"]
    assert out[0] == docs[0] and docs[1]["spec"]["template"]["spec"]["containers"][0]["image"] == "upstream:v1"  # type: ignore[index]
    with pytest.raises(InfraError, match="no Deployment kueue-controller-manager"):
        kind.controller_docs(docs, "kueue", "x")


def test_install_plan_loads_applies_waits_then_gpus_then_kueue_objects(tmp_path: Path) -> None:
    c = make(tmp_path)
    controllers = {
        "lws": ("lwsc.local/lws:a", kind.controller_docs(_docs("lws-controller-manager"), "lws", "lwsc.local/lws:a")),
        "kueue": (
            "lwsc.local/kueue:b",
            kind.controller_docs(_docs("kueue-controller-manager"), "kueue", "lwsc.local/kueue:b"),
        ),
    }
    plan = c.plan_install(controllers, ["lwsc.local/workload:a"])
    lines = [p.argv for p in plan]
    assert lines[0] == (
        "/opt/kind", "load", "docker-image", "lwsc.local/lws:a", "lwsc.local/kueue:b",
        "--name", "lwsc", "--nodes", "lwsc-control-plane",
    )  # fmt: skip  # the controllers run on the control-plane node only
    assert lines[1] == ("/opt/kind", "load", "docker-image", "lwsc.local/workload:a", "--name", "lwsc")
    c.held = frozenset({"lwsc.local/workload:a"})  # a node image built here holds it: no load
    assert [p.argv for p in c.plan_install(controllers, ["lwsc.local/workload:a"])] == lines[:1] + lines[2:]
    plan, lines = plan[1:], lines[1:]
    assert lines[1][3:] == ("apply", "--server-side", "--force-conflicts", "-f", "-")
    assert "lwsc.local/lws:a" in (plan[1].stdin or "") and "lwsc.local/kueue:b" in (plan[2].stdin or "")
    assert lines[3][3:8] == ("-n", "lws-system", "rollout", "status", "deployment/lws-controller-manager")
    advertised = [p for p in plan if "--subresource=status" in p.argv]
    assert len(advertised) == c.profile.topology.nodes + 1  # GPUs on each worker, TPUs on the chaos node
    assert advertised[-1].argv == c.resource_patch("lwsc-worker5", "google.com/tpu", 16).argv
    assert "Topology" in (plan[-2].stdin or "") and plan[-2].attempts > 1


def test_failed_step_is_retried_then_named(tmp_path: Path) -> None:
    failing = kind.Completed(1, "", 'Error from server (InternalError): failed calling webhook "vtopology"')
    runner = FakeRunner({("/opt/kubectl", "--kubeconfig"): [failing]})
    c = make(tmp_path, runner=runner)
    step = kind.Cmd(("/opt/kubectl", "--kubeconfig", "k", "apply"), "Kueue Topology and ResourceFlavor", attempts=4)
    with pytest.raises(InfraError, match="Kueue Topology and ResourceFlavor failed.*failed calling webhook"):
        c.execute(step)
    assert len(runner.calls) == 4


def test_restart_node_re_advertises_its_gpus(tmp_path: Path) -> None:
    runner = FakeRunner()
    c = make(tmp_path, runner=runner)
    c.restart_node("lwsc-worker2")
    argvs = [a for a, _ in runner.calls]
    assert argvs[0] == ("/opt/docker", "restart", "lwsc-worker2")
    assert argvs[1][3:] == ("wait", "node/lwsc-worker2", "--for=condition=Ready", "--timeout=300s")
    assert argvs[2] == c.gpu_patch("lwsc-worker2").argv and len(argvs) == 3


def test_tools_come_from_flags_or_the_harness_builds_and_a_missing_one_names_its_flag() -> None:
    tools = kind.KindTools.resolve(which=lambda name: f"/usr/bin/{name}", built=lambda name: f"/cache/{name}")
    assert tools == kind.KindTools(kind="/cache/kind", docker="/usr/bin/docker", kubectl="/cache/kubectl")
    with pytest.raises(UserError, match=r"needs docker \(not on PATH\).*docker.io.*--docker-bin="):
        kind.KindTools.resolve(which=lambda name: None, built=lambda name: f"/cache/{name}")
    with pytest.raises(UserError, match="/nope/kind.*does not exist; fix --kind-bin"):
        kind.KindTools.resolve(kind="/nope/kind", which=lambda name: f"/usr/bin/{name}")


def test_no_engine_and_no_dockerd_is_one_line_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine.shutil, "which", lambda name: None)
    with pytest.raises(UserError) as err:
        engine.ensure("auto", "/bin/false", lambda _m: None)
    assert "dockerd is not installed" in str(err.value) and "docker.io" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="kind.engine=user but"):
        engine.ensure("user", "/bin/false", lambda _m: None)
    with pytest.raises(UserError, match="kind.engine must be one of"):
        engine.ensure("podman", "/bin/false", lambda _m: None)


def test_capabilities_missing_from_the_bounding_set_are_named() -> None:
    assert engine.missing_capabilities("CapBnd:\t000001ffffffffff\n") == []
    assert engine.missing_capabilities("CapBnd:\t000001fffeffffff\n") == ["CAP_SYS_RESOURCE"]
    argv = engine.dockerd_argv("/usr/sbin/dockerd", Path("/c/engine"), Path("/c/engine/oci-runtime"))
    assert "--iptables=false" in argv and "--ip-masq=false" in argv and "--bridge=none" in argv
    assert argv[argv.index("--default-runtime") + 1] == "lwsc"
    assert "--add-runtime" not in engine.dockerd_argv("/usr/sbin/dockerd", Path("/c/engine"), None)


def test_the_oci_runtime_front_drops_the_capabilities_for_create_and_exec(tmp_path: Path) -> None:
    """The generated front, run for real with a stand-in runc that prints what it was given."""
    fake_runc = tmp_path / "runc"
    fake_runc.write_text('#!/bin/sh\necho runc "$@"\n')
    fake_runc.chmod(0o755)
    front = tmp_path / "front"
    front.write_text(engine.runtime_script(["CAP_SYS_RESOURCE"], str(fake_runc), sys.executable))
    front.chmod(0o755)
    caps = {"bounding": ["CAP_SYS_ADMIN", "CAP_SYS_RESOURCE"], "effective": ["CAP_SYS_RESOURCE"]}
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps({"process": {"capabilities": caps}}))
    out = subprocess.run(
        [str(front), "--root", "/r", "create", "--bundle", str(bundle), "id1"], capture_output=True, text=True
    )
    assert out.stdout.strip() == f"runc --root /r create --bundle {bundle} id1"
    assert json.loads((bundle / "config.json").read_text())["process"]["capabilities"] == {
        "bounding": ["CAP_SYS_ADMIN"],
        "effective": [],
    }
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"capabilities": caps}))
    subprocess.run([str(front), "exec", "--process", str(process), "id1"], check=True, capture_output=True)
    assert json.loads(process.read_text())["capabilities"]["bounding"] == ["CAP_SYS_ADMIN"]


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


def test_a_stopped_node_or_a_silent_engine_is_an_infra_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """providers.health for kind, with a stand-in docker on PATH that prints the node states."""
    from lws_conformance.providers import health

    profile = load_profile("kind")
    handle = ClusterHandle(
        provider="kind",
        kubeconfig=tmp_path / "kc",
        versions={},
        topology=profile.topology,
        kueue_topology_name="default",
        kueue_flavor_name="f",
        endpoints={"kind-cluster": "c", "docker-host": "unix:///nowhere.sock"},
    )
    docker = tmp_path / "docker"
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    states = ["c-control-plane running"] + [f"c-worker{i} running" for i in range(profile.topology.nodes)]
    docker.write_text("#!/bin/sh\nprintf '%s\\n' " + " ".join(f"'{s}'" for s in states) + "\n")
    docker.chmod(0o755)
    assert health.dead_components(handle) is None
    states[2] = "c-worker1 exited"
    docker.write_text("#!/bin/sh\nprintf '%s\\n' " + " ".join(f"'{s}'" for s in states[:-1]) + "\n")
    said = health.dead_components(handle)
    assert said and "c-worker1 is exited" in said and "1 node container(s) of c are gone" in said
    docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2; exit 1\n")
    assert "its Docker engine does not answer (Cannot connect" in (health.dead_components(handle) or "")
    # the chaos node is counted but its state not judged: chaos experiments pause it on purpose
    handle.endpoints["kind-chaos-node"] = "c-chaos"
    states = ["c-control-plane running", "c-chaos paused"] + [f"c-w{i} running" for i in range(profile.topology.nodes)]
    docker.write_text("#!/bin/sh\nprintf '%s\\n' " + " ".join(f"'{s}'" for s in states) + "\n")
    assert health.dead_components(handle) is None
    docker.write_text("#!/bin/sh\nprintf '%s\\n' " + " ".join(f"'{s}'" for s in states[:-1]) + "\n")
    assert "1 node container(s) of c are gone" in (health.dead_components(handle) or "")


def test_a_failed_command_is_named_by_its_error_line_not_a_warning_before_it() -> None:
    out = kind.Completed(
        1, "", "cgroup v1 is deprecated in Kubernetes\nCreating cluster ...\nERROR: node(s) already exist\n"
    )
    assert kind.said(out) == "ERROR: node(s) already exist"
    assert kind.said(kind.Completed(1, "", "only this\nand that")) == "only this"
    assert kind.said(kind.Completed(1)) == "no output"


def test_up_refuses_a_cluster_of_its_name_it_did_not_bring_up_and_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kind would refuse to create it, and the failed up's clean-up would then delete another
    state's (or the user's) cluster of that name: refused first, one line, nothing run after."""
    runner = FakeRunner({("/opt/kind", "get", "clusters"): [kind.Completed(0, "other\nlwsc\n")]})
    c = make(tmp_path, runner=runner)
    monkeypatch.setattr(c, "engine", lambda _p: engine.Engine("unix:///x.sock", private=True, docker="/opt/docker"))
    with pytest.raises(UserError, match=r"kind cluster named 'lwsc' already exists .* choose another --name"):
        c.up(lambda _m: None)
    assert [a for a, _ in runner.calls] == [("/opt/kind", "get", "clusters")]
    assert not c.state_dir.exists()


def test_handle_topology_carries_the_workers_real_capacity(tmp_path: Path) -> None:
    """kind nodes are the machine: suites size pods from the real allocatable, not the profile's."""
    item = {"status": {"allocatable": {"cpu": "2", "memory": "24000Mi", "pods": "110"}}}
    small = {"status": {"allocatable": {"cpu": "1900m", "memory": "23Gi", "pods": "110"}}}
    listed = kind.Completed(0, json.dumps({"items": [item, small, item, item]}))
    runner = FakeRunner({("/opt/kubectl", "--kubeconfig"): [listed]})
    c = make(tmp_path, runner=runner)
    t = c._real_capacity()
    assert (t.cpu_per_node, t.memory_per_node, t.pods_per_node) == ("1900m", "23Gi", 110)
    assert (t.blocks, t.gpus_per_node) == (c.profile.topology.blocks, c.profile.topology.gpus_per_node)
    runner = FakeRunner({("/opt/kubectl", "--kubeconfig"): [kind.Completed(0, json.dumps({"items": [item]}))]})
    with pytest.raises(InfraError, match="1 node\\(s\\) labelled lwsc.x-k8s.io/pool=gpu, the profile has 4"):
        make(tmp_path, runner=runner)._real_capacity()


def test_up_removes_what_its_own_interrupted_up_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner({("/opt/kind", "get", "clusters"): [kind.Completed(0, "lwsc\n")]})
    c = make(tmp_path, runner=runner)
    c.state_dir.mkdir(parents=True)
    c.engine_file.write_text('{"host": "unix:///x.sock", "private": true}')
    monkeypatch.setattr(c, "engine", lambda _p: engine.Engine("unix:///x.sock", private=True))
    monkeypatch.setattr(c, "images", lambda *_a: (_ for _ in ()).throw(RuntimeError("creating")))
    with pytest.raises(RuntimeError, match="creating"):
        c.up(lambda _m: None)
    assert [a for a, _ in runner.calls][1] == ("/opt/kind", "delete", "cluster", "--name", "lwsc")


def test_build_leftovers_are_removed_but_never_a_kind_node() -> None:
    """Nodes made from a committed build container carry its label: filtering by that label alone
    deleted every node of a running cluster."""
    from lws_conformance.toolchain import nodeimage

    class Fake(engine.Engine):
        def run(self, *args: str, check: bool = True, stdin: bytes | None = None, timeout: float | None = None) -> str:
            calls.append(args)
            if args[:2] == ("ps", "-aq"):
                return "node1\nnode2\n" if f"label={nodeimage.KIND_NODE_LABEL}" in args else "build9\nnode1\nnode2\n"
            return ""

    calls: list[tuple[str, ...]] = []
    assert nodeimage.remove_build_leftovers(Fake("unix:///x.sock", private=True)) == ["build9"]
    assert calls[-1] == ("rm", "-f", "build9")


def test_the_node_image_holds_the_network_and_workload_images_and_starts_go_daemons_with_gogc() -> None:
    """What every cluster would otherwise `kind load` into every node is in the node image built
    here; without a node image (only the helper images asked for) nothing is held."""
    from lws_conformance.toolchain import nodeimage

    workloads = {n: nodeimage.workload_ref("v1.36.3", t) for n, t in nodeimage.WORKLOAD_TAGS.items()}
    node, cni, agnhost = "lwsc.local/kind-node:v1.36.3-k", "lwsc.local/kind-cni:k", "lwsc.local/agnhost:k"
    built = nodeimage.Built(node, cni, agnhost, workloads)
    assert built.preloaded == {
        "lwsc.local/kind-cni:k", "lwsc.local/agnhost:k",
        "lwsc.local/workload:v1.36.3-a", "lwsc.local/workload:v1.36.3-b",
    }  # fmt: skip
    assert nodeimage.Built("", built.cni, built.agnhost, workloads).preloaded == frozenset()
    path, text, _mode = nodeimage.go_dropin("kubelet")
    assert path == "/etc/systemd/system/kubelet.service.d/20-lwsc-go-gc.conf"
    assert text.decode().splitlines() == ["[Service]", 'Environment="GOGC=400" "GOMEMLIMIT=256MiB"']


def test_a_handle_whose_nodes_are_gone_is_not_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner({("/opt/kind", "get", "clusters"): [kind.Completed(0, "other\n")]})
    c = make(tmp_path, runner=runner)
    c.state_dir.mkdir(parents=True)
    c.handle_file.write_text("{}")
    monkeypatch.setattr(c, "engine", lambda _p: engine.Engine("unix:///x.sock", private=True))
    monkeypatch.setattr(c, "images", lambda *_a: (_ for _ in ()).throw(RuntimeError("creating")))
    said: list[str] = []
    with pytest.raises(RuntimeError, match="creating"):
        c.up(said.append)
    assert "its nodes are gone: creating it again" in said[0]
