"""Chaos on kind without a cluster: what the node-container faults refuse, and the lock that lets a
test disturbing the whole shared cluster run alone."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lws_conformance.chaos import node_containers, safety
from lws_conformance.plugin import shared_cluster_turn
from lws_conformance.providers import kind
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.providers.nodes import MANAGED_LABEL


def _handle(name: str, kubeconfig: Path) -> ClusterHandle:
    from lws_conformance.profile import load_profile

    return ClusterHandle(
        provider="kind",
        kubeconfig=kubeconfig,
        versions={},
        topology=load_profile("kind").topology,
        kueue_topology_name="t",
        kueue_flavor_name="f",
        endpoints={"kind-cluster": name, "docker-host": "unix:///nowhere.sock", "kind-chaos-node": f"{name}-worker5"},
    )


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "state"


def _brought_up(state: Path, name: str) -> Path:
    d = kind.state_dir(name)
    d.mkdir(parents=True)
    (d / "kubeconfig").write_text("{}")
    (d / "handle.json").write_text(_handle(name, d / "kubeconfig").to_json())
    return d / "kubeconfig"


def test_only_a_kind_cluster_lwsc_brought_up_may_have_its_nodes_faulted(state: Path, tmp_path: Path) -> None:
    kc = _brought_up(state, "c")
    assert safety.kind_cluster(kc).endpoints["kind-cluster"] == "c"
    elsewhere = tmp_path / "user" / "kubeconfig"
    elsewhere.parent.mkdir()
    elsewhere.write_text("{}")
    with pytest.raises(safety.ChaosRefused, match="is not a kind cluster lwsc brought up"):
        safety.kind_cluster(elsewhere)  # a vendor's kubeconfig
    local = state / "default" / "kubeconfig"  # a local harness cluster: no kind handle
    local.parent.mkdir()
    local.write_text("{}")
    with pytest.raises(safety.ChaosRefused, match="is not a kind cluster lwsc brought up"):
        safety.kind_cluster(local)
    (kc.parent / "handle.json").write_text(_handle("other", kc).to_json())  # a handle naming another cluster
    with pytest.raises(safety.ChaosRefused, match="is not a kind cluster lwsc brought up"):
        safety.kind_cluster(kc)


def test_only_the_chaos_node_is_paused() -> None:
    node = {"metadata": {"name": "n", "labels": {MANAGED_LABEL: "true", kind.CHAOS_LABEL: "true"}}}
    safety.check_chaos_node(node)
    with pytest.raises(safety.ChaosRefused, match="only the chaos node is paused"):
        safety.check_chaos_node({"metadata": {"name": "n", "labels": {MANAGED_LABEL: "true"}}})
    with pytest.raises(safety.ChaosRefused, match="not created by the harness"):
        safety.check_chaos_node({"metadata": {"name": "n", "labels": {kind.CHAOS_LABEL: "true"}}})


def test_a_container_of_another_kind_cluster_is_refused(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = _handle("c", tmp_path / "kc")
    docker = tmp_path / "bin" / "docker"
    docker.parent.mkdir()
    monkeypatch.setenv("PATH", f"{docker.parent}:/usr/bin:/bin")
    docker.write_text("#!/bin/sh\necho c\n")
    docker.chmod(0o755)
    safety.check_kind_container(handle, "c-worker")
    docker.write_text("#!/bin/sh\necho other\n")
    with pytest.raises(safety.ChaosRefused, match="container c-worker is not a node of kind cluster c"):
        safety.check_kind_container(handle, "c-worker")
    docker.write_text("#!/bin/sh\necho 'Error: No such object: x' >&2; exit 1\n")
    with pytest.raises(safety.ChaosRefused, match="No such object"):
        safety.check_kind_container(handle, "x")


def test_pausing_refuses_before_touching_anything(state: Path, tmp_path: Path) -> None:
    with pytest.raises(safety.ChaosRefused, match="is not a kind cluster lwsc brought up"):
        node_containers.pause_node("n", configuration={"kubeconfig": str(tmp_path / "kubeconfig")})
    with pytest.raises(safety.ChaosRefused, match="is not a kind cluster lwsc brought up"):
        node_containers.delete_controller_pod("lws", configuration={"kubeconfig": str(tmp_path / "kubeconfig")})
    kc = _brought_up(state, "c")
    with pytest.raises(safety.ChaosRefused, match="unknown controller 'etcd'"):
        node_containers.delete_controller_pod("etcd", configuration={"kubeconfig": str(kc)})
    assert not safety.pending()


def test_an_alone_test_waits_for_running_tests_and_holds_back_new_ones(state: Path) -> None:
    """Shared holders run together; an `alone` test waits until they end, and a test arriving
    while it waits starts only after it (the gate), so running tests cannot starve it."""
    order: list[str] = []
    first_in, alone_waiting, release_first, alone_done = (threading.Event() for _ in range(4))

    def shared(name: str, entered: threading.Event | None, hold: threading.Event | None) -> None:
        with shared_cluster_turn("r", alone=False):
            order.append(f"{name} in")
            if entered:
                entered.set()
            if hold:
                hold.wait(10)
            order.append(f"{name} out")

    def alone() -> None:
        alone_waiting.set()
        with shared_cluster_turn("r", alone=True):
            order.append("alone in")
            order.append("alone out")
        alone_done.set()

    t1 = threading.Thread(target=shared, args=("first", first_in, release_first))
    t1.start()
    assert first_in.wait(10)
    t2 = threading.Thread(target=alone)
    t2.start()
    assert alone_waiting.wait(10)
    assert not alone_done.wait(0.3)  # the running test still holds its share
    t3 = threading.Thread(target=shared, args=("late", None, None))
    t3.start()
    assert not alone_done.wait(0.3)
    assert "late in" not in order  # held at the gate while the alone test waits
    release_first.set()
    for t in (t1, t2, t3):
        t.join(10)
    assert order.index("first out") < order.index("alone in") < order.index("alone out") < order.index("late in")
