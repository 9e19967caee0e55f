"""The existing-cluster provider: discovery, preflight, read-only adoption, exact cleanup.

The "vendor cluster" is a worker-private local cluster started separately (`private_cluster`);
the code under test gets only its kubeconfig. What the private cluster really is (its profile)
is the oracle the answers are checked against, never an input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance.errors import UserError
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.objects import RUN_LABEL
from lws_conformance.profile import load_profile
from lws_conformance.providers import discovery, existing, preflight
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.providers.local import LocalCluster
from lws_conformance.resources import plugin_args

PROJECT = Path(__file__).resolve().parent.parent


def lwsc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", *args], capture_output=True, text=True, cwd=PROJECT, timeout=300
    )


# -- pure parts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "component", "version"),
    [
        ("registry.k8s.io/lws/lws:v0.9.0", "lws", "v0.9.0"),
        ("registry.k8s.io/kueue/kueue:v0.17.0@sha256:abcd", "kueue", "v0.17.0"),
        ("us-central1-docker.pkg.dev/k8s-staging-images/lws/lws:v0.10.0-rc.1", "lws", "v0.10.0-rc.1"),
        ("registry.k8s.io/lws/lws:latest", "lws", None),
        ("registry.k8s.io/kueue/kueue:v0.17.0", "lws", None),
        ("localhost:5000/lws:0.8.0", "lws", "v0.8.0"),
    ],
)
def test_version_from_controller_image(image: str, component: str, version: str | None) -> None:
    assert preflight.image_version(image, component) == version


def _node(name: str, labels: dict[str, str], gpus: int, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    alloc = {"cpu": "96", "memory": "1Ti", "pods": "110"} | ({resource: str(gpus)} if gpus else {})
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": alloc},
    }


def test_discovery_finds_nested_vendor_keys_among_distractors() -> None:
    nodes = [
        _node(
            f"n{i}",
            {
                "cloud.google.com/gce-topology-block": f"blk{i // 4}",
                "cloud.google.com/gce-topology-subblock": f"sub{i // 2}",
                "topology.kubernetes.io/zone": "z1",  # one value: not a useful level here
                "example.com/rack-serial": f"s{i}",  # unique per node: not a grouping
            },
            4,
        )
        for i in range(8)
    ]
    nodes.append(_node("cpu-only", {"topology.kubernetes.io/zone": "z1"}, 0))  # ignored: no accelerator
    p = discovery.propose(nodes)
    t = p.data["topology"]
    assert (t["block_label"], t["rack_label"]) == (
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
    )
    assert (t["blocks"], t["racks_per_block"], t["nodes_per_rack"], t["gpus_per_node"]) == (2, 2, 2, 4)
    assert t["gpu_resource"] == "nvidia.com/gpu" and p.gpu_nodes == 8 and p.nodes_seen == 9


def test_discovery_infers_unknown_keys_and_reports_uneven_racks() -> None:
    nodes = [_node(f"a{i}", {"acme.io/spine": "s1", "acme.io/leaf": f"l{i // 3}"}, 8, "amd.com/gpu") for i in range(5)]
    p = discovery.propose(nodes)
    t = p.data["topology"]
    assert (t["block_label"], t["rack_label"], t["gpu_resource"]) == ("acme.io/spine", "acme.io/leaf", "amd.com/gpu")
    assert (t["blocks"], t["racks_per_block"], t["nodes_per_rack"]) == (1, 2, 2)
    assert any("different numbers of nodes ([2, 3])" in n for n in p.notes)


def test_discovery_says_what_it_could_not_find() -> None:
    p = discovery.propose([_node("x", {}, 0)])
    assert "block_label" not in p.data["topology"] and "gpu_resource" not in p.data["topology"]
    assert any("set topology.gpu_resource" in n for n in p.notes)
    assert any("set topology.block_label" in n for n in p.notes)


def test_pin_context_keeps_one_context_with_absolute_paths(tmp_path: Path) -> None:
    kc = tmp_path / "kc" / "config"
    kc.parent.mkdir()
    kc.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "a",
                "contexts": [
                    {"name": "a", "context": {"cluster": "ca", "user": "ua"}},
                    {"name": "b", "context": {"cluster": "cb", "user": "ub"}},
                ],
                "clusters": [
                    {"name": "ca", "cluster": {"server": "https://a"}},
                    {"name": "cb", "cluster": {"server": "https://b", "certificate-authority": "certs/ca.crt"}},
                ],
                "users": [{"name": "ua", "user": {"token": "x"}}, {"name": "ub", "user": {"client-key": "/abs/k"}}],
            }
        )
    )
    out = existing.pin_context(kc, "b", tmp_path / "pinned")
    doc = yaml.safe_load(out.read_text())
    assert doc["current-context"] == "b" and [c["name"] for c in doc["contexts"]] == ["b"]
    assert doc["clusters"] == [
        {"name": "cb", "cluster": {"server": "https://b", "certificate-authority": str(kc.parent / "certs/ca.crt")}}
    ]
    assert doc["users"] == [{"name": "ub", "user": {"client-key": "/abs/k"}}]
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(UserError, match="context 'c' not in .* it has: a, b"):
        existing.pin_context(kc, "c", tmp_path / "x")


def _two_context_kubeconfig(tmp_path: Path) -> Path:
    kc = tmp_path / "vendor.kubeconfig"
    contexts = [{"name": n, "context": {"cluster": n, "user": n}} for n in ("a", "b")]
    clusters = [{"name": n, "cluster": {"server": f"https://{n}"}} for n in ("a", "b")]
    users = [{"name": n, "user": {"token": "t"}} for n in ("a", "b")]
    kc.write_text(yaml.safe_dump({"current-context": "a", "contexts": contexts, "clusters": clusters, "users": users}))
    return kc


@pytest.mark.parametrize("preflight_fails", [False, True])
def test_adopted_cluster_lifecycle_leaves_no_credentials_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preflight_fails: bool
) -> None:
    """`lwsc run --kubeconfig K --context b` through base.Provider: up pins the context into a
    private copy, writes preflight.json and the handle; release cleans the run up through the
    copy and removes it. A failed preflight is one line (exit 2) and leaves no copy either."""
    seen: dict[str, Any] = {}

    def adopt(kubeconfig: Path, profile: Any) -> tuple[ClusterHandle, preflight.Report]:
        seen["adopted"] = yaml.safe_load(kubeconfig.read_text())["current-context"]
        report = preflight.Report()
        report.add("nodes", "fail" if preflight_fails else "ok", "-")
        handle = ClusterHandle("existing", kubeconfig, {}, profile.topology, "t", "f")
        return handle, report

    monkeypatch.setattr(existing, "adopt", adopt)
    monkeypatch.setattr(existing, "release_run", lambda kc, run_id: seen.setdefault("released", (kc, run_id)) and [])
    out, pinned = tmp_path / "run", tmp_path / "state" / "run.kubeconfig"
    out.mkdir()
    target = existing.ExistingCluster(
        existing.target(_two_context_kubeconfig(tmp_path), "b"), load_profile(), out, pinned=pinned
    )
    assert not target.creates and target.running()
    if preflight_fails:
        with pytest.raises(UserError, match="preflight failed"):
            target.up(lambda _msg: None)
        assert not pinned.exists() and not target.handle_file.exists()
        return
    handle = target.up(lambda _msg: None)
    assert seen["adopted"] == "b" and handle.kubeconfig == pinned and oct(pinned.stat().st_mode & 0o777) == "0o600"
    assert json.loads((out / "preflight.json").read_text())["ok"] and target.handle_file.is_file()
    assert target.release("r1") == [] and seen["released"] == (pinned, "r1") and not pinned.exists()
    with pytest.raises(UserError, match="nothing to bring up or down"):
        target.down()


def test_destructive_policy() -> None:
    t = load_profile().topology
    h = ClusterHandle("existing", Path("/k"), {}, t, "default", "tas-flavor")
    reason = existing.destructive_skip_reason(h, allowed=False)
    assert reason and "--lwsc-allow-destructive" in reason
    assert existing.destructive_skip_reason(h, allowed=True) is None
    for provider in ("local", "kind"):
        h2 = ClusterHandle(provider, Path("/k"), {}, t, "default", "tas-flavor")
        assert existing.destructive_skip_reason(h2, allowed=False) is None


# -- against a private local cluster, given only its kubeconfig --------------------------------


@pytest.fixture
def vendor_kubeconfig(private_cluster: LocalCluster) -> Path:
    return private_cluster.kubeconfig


@pytest.mark.cluster
def test_discover_proposes_the_clusters_real_topology(
    vendor_kubeconfig: Path, private_cluster: LocalCluster, tmp_path: Path
) -> None:
    out = tmp_path / "vendor.yaml"
    proc = lwsc("discover", "--kubeconfig", str(vendor_kubeconfig), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_text() and proc.stdout.startswith("# Proposed by `lwsc discover`")
    proposed = load_profile(str(out))  # a loadable profile, not just YAML
    assert proposed.provider == "existing"
    assert proposed.topology == private_cluster.profile.topology


@pytest.mark.cluster
def test_preflight_reports_capacity_and_says_versions_are_not_visible(vendor_kubeconfig: Path) -> None:
    proc = lwsc("preflight", "--kubeconfig", str(vendor_kubeconfig), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    checks = {c["name"]: c for c in doc["checks"]}
    assert doc["ok"] is True
    assert checks["api server"]["detail"].startswith("Kubernetes v")
    # Controllers run as processes with URL webhooks: no Deployment, no CRD version label.
    assert doc["versions"]["lws"]["version"] is None and checks["lws version"]["status"] == "warn"
    assert "version not visible" in checks["lws version"]["detail"]
    t = load_profile().topology
    assert checks["gpu capacity"]["status"] == "ok"
    assert (
        f"{t.nodes * t.gpus_per_node} {t.gpu_resource} allocatable on {t.nodes} node(s)"
        in checks["gpu capacity"]["detail"]
    )
    assert checks["topology labels"]["status"] == "ok"


@pytest.fixture
def fake_release_deployment(vendor_kubeconfig: Path) -> Iterator[None]:
    """What a release install leaves in lws-system: a controller Deployment (0 replicas here)."""
    api = api_client(vendor_kubeconfig)
    apps = client.AppsV1Api(api)
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "lws-controller-manager", "namespace": "lws-system"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "lwsc-preflight-test"}},
            "template": {
                "metadata": {"labels": {"app": "lwsc-preflight-test"}},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": "registry.k8s.io/lws/lws:v0.8.0",
                            "args": ["--config=/c.yaml", "--feature-gates=SomeGate=true"],
                        }
                    ]
                },
            },
        },
    }
    apps.create_namespaced_deployment("lws-system", body)
    yield
    try:
        apps.delete_namespaced_deployment("lws-controller-manager", "lws-system")
    except ApiException as exc:
        if exc.status != 404:
            raise
    api.close()


@pytest.mark.cluster
def test_preflight_reads_version_and_gates_from_the_controller_deployment(
    vendor_kubeconfig: Path, fake_release_deployment: None
) -> None:
    handle, report = existing.adopt(vendor_kubeconfig, load_profile())
    assert handle.versions["lws"] == "v0.8.0" and handle.provider == "existing"
    assert "Deployment lws-system/lws-controller-manager" in report.versions["lws"].source
    gates = next(c for c in report.checks if c.name == "lws feature gates")
    assert gates.detail == "SomeGate=true"


@pytest.mark.cluster
def test_cleanup_deletes_this_runs_objects_and_nothing_else(vendor_kubeconfig: Path, run_id: str) -> None:
    api = api_client(vendor_kubeconfig)
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    mine, other = f"c{run_id[-6:]}a", f"c{run_id[-6:]}b"
    names = {"mine": f"lwsc-clean-{mine}", "other": f"lwsc-clean-{other}", "plain": f"lwsc-clean-{mine}-plain"}
    labels = {"mine": {RUN_LABEL: mine}, "other": {RUN_LABEL: other}, "plain": {}}
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": f"lwsc-clean-{mine}", "labels": {RUN_LABEL: mine}},
        "spec": {},
    }
    try:
        for key, name in names.items():
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels[key])))
        custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", flavor)
        proc = lwsc("cleanup", "--kubeconfig", str(vendor_kubeconfig), "--run-id", mine)
        assert proc.returncode == 0, proc.stderr
        assert sorted(proc.stdout.splitlines()) == [
            f"deleted Namespace/{names['mine']}",
            f"deleted ResourceFlavor/lwsc-clean-{mine}",
        ]

        def gone_or_terminating(name: str) -> bool:
            try:
                ns = core.read_namespace(name)
            except ApiException as exc:
                return exc.status == 404
            return bool(ns.metadata and ns.metadata.deletion_timestamp)

        assert gone_or_terminating(names["mine"])
        assert not gone_or_terminating(names["other"]) and not gone_or_terminating(names["plain"])
        with pytest.raises(ApiException) as err:
            custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", f"lwsc-clean-{mine}")
        assert err.value.status == 404
        refused = lwsc("cleanup", "--kubeconfig", str(vendor_kubeconfig))
        assert refused.returncode == 2 and "exactly one of --run-id" in refused.stderr
    finally:
        for name in names.values():
            try:
                core.delete_namespace(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        api.close()


INNER_TEST = """
import pytest

def test_adopted(lwsc_cluster):
    print("HANDLE", lwsc_cluster.provider, lwsc_cluster.versions["lws"], lwsc_cluster.kubeconfig)

@pytest.mark.destructive
def test_breaks_things(lwsc_cluster):
    pass
"""


@pytest.mark.cluster
def test_plugin_adopts_existing_cluster_via_context_and_gates_destructive_tests(
    vendor_kubeconfig: Path, tmp_path: Path
) -> None:
    """End to end through pytest: a kubeconfig whose *current* context is bogus, `--lwsc-context`
    picks the real one; `destructive` tests skip unless allowed."""
    doc = yaml.safe_load(vendor_kubeconfig.read_text())
    real = doc["current-context"]
    doc["contexts"].append({"name": "bogus", "context": {"cluster": "nowhere", "user": doc["users"][0]["name"]}})
    doc["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}})
    doc["current-context"] = "bogus"
    kc = tmp_path / "vendor-kubeconfig"
    kc.write_text(yaml.safe_dump(doc))
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER_TEST))

    def inner(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", str(tmp_path / "test_inner.py"), *plugin_args(), "-p", "no:cacheprovider",
             "-rs", "-s", f"--lwsc-kubeconfig={kc}", f"--lwsc-context={real}", "-o", f"rootdir={tmp_path}", *extra],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip

    proc = inner()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "HANDLE existing v0.9.0" in proc.stdout  # assumed from the profile: nothing on the cluster shows it
    assert "1 passed, 1 skipped" in proc.stdout
    assert "destructive: breaks things" in proc.stdout and "--lwsc-allow-destructive" in proc.stdout
    allowed = inner("--lwsc-allow-destructive")
    assert "2 passed" in allowed.stdout, allowed.stdout + allowed.stderr
