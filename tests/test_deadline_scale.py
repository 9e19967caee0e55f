"""One deadline rule: every primitive taking a deadline applies `timeouts.scale` itself, so its
callers pass plain seconds (no cluster: each primitive's API call is replaced)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lws_conformance.errors import InfraError
from lws_conformance.k8s import execute, logs
from lws_conformance.k8s.wait import SCALE_ENV
from lws_conformance.providers.components import ClusterState
from lws_conformance.scenario import Scenario


@pytest.fixture
def scale_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCALE_ENV, "3")


def test_run_in_pod_waits_the_scaled_deadline(monkeypatch: pytest.MonkeyPatch, scale_3: None) -> None:
    waited: list[float] = []

    class Resp:
        def run_forever(self, timeout: float) -> None:
            waited.append(timeout)

        def read_stdout(self) -> str:
            return "out"

        def read_stderr(self) -> str:
            return ""

        def read_channel(self, _n: int) -> str:
            return '{"status": "Success"}'

        def is_open(self) -> bool:
            return False

        def close(self) -> None:
            pass

    monkeypatch.setattr(execute, "stream", lambda *_a, **_kw: Resp())
    ran = execute.run_in_pod(client.ApiClient(), "ns", "pod", "c", ["true"], timeout=30)
    assert (ran.returncode, ran.stdout) == (0, "out")
    assert waited == [90]


def test_wait_pod_log_waits_the_scaled_deadline(monkeypatch: pytest.MonkeyPatch, scale_3: None) -> None:
    asked: list[float] = []

    class Stream:
        def __iter__(self) -> Any:
            return iter([b"starting\n"])

        def release_conn(self) -> None:
            pass

    def read(*_a: Any, _request_timeout: float, **_kw: Any) -> Stream:
        asked.append(_request_timeout)
        return Stream()

    monkeypatch.setattr(client.CoreV1Api, "read_namespaced_pod_log", lambda _self, *a, **kw: read(*a, **kw))
    with pytest.raises(InfraError, match=r"within 6s; last: starting"):
        logs.wait_pod_log(client.ApiClient(), "ns", "pod", "c", ("ready",), timeout=2)
    assert asked and 5 < asked[0] <= 6


def test_wait_log_waits_the_scaled_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCALE_ENV, "4")
    state = ClusterState.__new__(ClusterState)
    monkeypatch.setattr(ClusterState, "log", lambda _self, component: tmp_path / f"{component}.log")
    (tmp_path / "lws.log").write_text("starting\n")
    started = time.monotonic()
    with pytest.raises(InfraError, match=r"within 0s; last: starting"):
        state.wait_log("lws", ("ready",), 0, 0.1)
    assert time.monotonic() - started >= 0.4  # 0.1 s times the scale 4


def _scenario() -> Scenario:
    return Scenario(client.ApiClient(), None, "ns", None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "call", "kwargs"),
    [
        ("Pod", "list_namespaced_pod", {"namespace": "ns", "label_selector": "a=b"}),
        ("ControllerRevision", "list_namespaced_controller_revision", {"namespace": "ns", "label_selector": "a=b"}),
        ("Node", "list_node", {"label_selector": "a=b"}),
        (
            "Workload",
            "list_namespaced_custom_object",
            {"namespace": "ns", "group": "kueue.x-k8s.io", "version": "v1beta2", "plural": "workloads"}
            | {"label_selector": "a=b"},
        ),
        (
            "LeaderWorkerSet",
            "list_namespaced_custom_object",
            {"namespace": "ns", "group": "leaderworkerset.x-k8s.io", "version": "v1", "plural": "leaderworkersets"}
            | {"label_selector": "a=b"},
        ),
        (
            "MultiKueueCluster",
            "list_cluster_custom_object",
            {"group": "kueue.x-k8s.io", "version": "v1beta2", "plural": "multikueueclusters", "label_selector": "a=b"},
        ),
        (
            "ClusterQueue",
            "list_cluster_custom_object",
            {"group": "kueue.x-k8s.io", "version": "v1beta2", "plural": "clusterqueues", "label_selector": "a=b"},
        ),
    ],
)
def test_lister_maps_a_kind_to_its_list_call(kind: str, call: str, kwargs: dict[str, str]) -> None:
    fn, got = _scenario().lister(kind, "a=b")
    assert (fn.__name__, got) == (call, kwargs)


def test_lister_adds_a_field_selector_and_another_namespace() -> None:
    fn, got = _scenario().lister("LeaderWorkerSet", namespace="other", field_selector="metadata.name=x")
    assert fn.__name__ == "list_namespaced_custom_object"
    assert got["namespace"] == "other" and got["field_selector"] == "metadata.name=x" and "label_selector" not in got


def test_wait_objects_hands_plain_seconds_and_its_wording_to_wait_for(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_wait_for(_api: Any, list_fn: Any, predicate: Any, **kw: Any) -> str:
        seen.update(kw, list_fn=list_fn.__name__)
        return "done"

    monkeypatch.setattr("lws_conformance.scenario.wait_for", fake_wait_for)
    sc = _scenario()
    assert sc.wait_objects("Workload", bool, "Admitted", timeout=30, selector="u=1") == "done"
    assert seen["timeout"] == 30 and seen["what"] == "Workload objects (u=1) in ns" and seen["condition"] == "Admitted"
    assert seen["list_fn"] == "list_namespaced_custom_object" and seen["diagnose"] == sc.diagnose
    sc.wait_objects_gone("LeaderWorkerSet", "gone", what="LWSs in ns", field_selector="metadata.name=x")
    assert seen["what"] == "LWSs in ns" and seen["field_selector"] == "metadata.name=x" and seen["timeout"] == 60
    sc.wait_objects("Node", bool, "Ready")
    assert seen["what"] == "Node objects" and seen["list_fn"] == "list_node"
