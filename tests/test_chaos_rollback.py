"""Exact rollback of every chaos action, as pure logic on recorded objects: each action's
before/after diff (`chaos.state`), the node re-creation and status restore of a node failure,
the process comparison of controller kills and restarts, and the verification control that
fails an experiment leaving anything changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lws_conformance.chaos import actions, control, runner, state
from lws_conformance.profile import load_profile
from lws_conformance.providers import nodes

Obj = dict[str, Any]
KWOK_DEFAULTS = {"cpu": "1k", "memory": "1Ti", "pods": "1M"}


def profile_node(name: str = "gpu-b1-r1-n1") -> Obj:
    """A fake node as `lwsc up` leaves it: the profile's manifest, Ready, kwok's heartbeat fields."""
    node = copy.deepcopy(nodes.node_manifest(load_profile().topology, name, "b1", "b1-r1"))
    node["status"]["allocatable"] = dict(node["status"]["capacity"])  # the manifest shares one dict
    node["metadata"].update(uid="u-1", resourceVersion="100", creationTimestamp="2026-11-30T18:00:00Z")
    node["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] = "0"
    node["status"]["phase"] = "Running"
    node["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    node["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "lastHeartbeatTime": "t0",
            "lastTransitionTime": "t0",
            "reason": "KubeletReady",
        },
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "t0", "lastTransitionTime": "t0"},
    ]
    return node


def kwok_defaulted(node: Obj) -> Obj:
    """What an inexact restore once left after the standalone node-failure rollback: the node re-created, kwok's
    node-initialize defaults merged over cpu/memory/pods (the GPU count survived), kubelet kwok-0.8.0."""
    after = copy.deepcopy(node)
    after["metadata"].update(uid="u-2", resourceVersion="200", creationTimestamp="2026-11-30T18:05:00Z")
    for key in ("capacity", "allocatable"):
        after["status"][key].update(KWOK_DEFAULTS)
    after["status"]["nodeInfo"]["kubeletVersion"] = "kwok-0.8.0"
    for c in after["status"]["conditions"]:
        c.update(lastHeartbeatTime="t9", lastTransitionTime="t9")
    return after


def apply_status_patch(node: Obj, patch: list[Obj]) -> Obj:
    """JSON patch `add` ops on /status/<key> (all `status_restore_patch` emits)."""
    out = copy.deepcopy(node)
    for op in patch:
        assert op["op"] == "add" and op["path"].startswith("/status/"), op
        out["status"][op["path"].split("/")[2]] = copy.deepcopy(op["value"])
    return out


# -- node failure ---------------------------------------------------------------------------------


def test_the_issue_20_node_differs_in_capacity_allocatable_and_kubelet_version() -> None:
    before = profile_node()
    differs = state.diff(state.node_state(before), state.node_state(kwok_defaulted(before)))
    assert differs == [
        "allocatable.cpu: '32' -> '1k'",
        "allocatable.memory: '256Gi' -> '1Ti'",
        "allocatable.pods: '110' -> '1M'",
        "capacity.cpu: '32' -> '1k'",
        "capacity.memory: '256Gi' -> '1Ti'",
        "capacity.pods: '110' -> '1M'",
        "nodeInfo.kubeletVersion: 'fake' -> 'kwok-0.8.0'",
    ]


def test_node_state_ignores_only_what_a_recreation_and_heartbeats_change() -> None:
    before = profile_node()
    after = copy.deepcopy(before)
    after["metadata"].update(uid="other", resourceVersion="9", creationTimestamp="later", managedFields=[{}])
    after["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] = "15"
    after["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 1}}
    for c in after["status"]["conditions"]:
        c.update(lastHeartbeatTime="t5", lastTransitionTime="t5", reason="x", message="y")
    assert state.diff(state.node_state(before), state.node_state(after)) == []


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda n: n["metadata"]["labels"].pop("cloud.provider.com/topology-rack"),
            "labels.cloud.provider.com/topology-rack",
        ),
        (lambda n: n["metadata"]["annotations"].pop("kwok.x-k8s.io/node"), "annotations.kwok.x-k8s.io/node"),
        (
            lambda n: n["spec"].update(taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
            "taints",
        ),
        (lambda n: n["spec"].update(unschedulable=True), "spec.unschedulable"),
        (lambda n: n["status"]["conditions"][0].update(status="Unknown"), "conditions.Ready"),
        (lambda n: n["status"]["addresses"].pop(), "addresses"),
        (lambda n: n["status"]["allocatable"].update({"nvidia.com/gpu": "0"}), "allocatable.nvidia.com/gpu"),
    ],
)
def test_node_state_catches_every_compared_field(change: Any, expected: str) -> None:
    before = profile_node()
    after = copy.deepcopy(before)
    change(after)
    differs = state.diff(state.node_state(before), state.node_state(after))
    assert len(differs) == 1 and differs[0].startswith(expected), differs


def test_node_failure_then_restore_recreates_the_recorded_node_exactly() -> None:
    """fail (re-created without kwok) then restore (re-created from the record, with kwok), kwok
    defaulting the status in between: the restore patch brings back every compared field."""
    before = profile_node()
    failed_body = actions.node_body(before, kwok=False)
    assert "kwok.x-k8s.io/node" not in failed_body["metadata"]["annotations"]
    assert failed_body["metadata"]["labels"] == before["metadata"]["labels"]
    restored_body = actions.node_body(before, kwok=True)
    assert restored_body["spec"] == before["spec"]
    recreated = {**restored_body, "status": kwok_defaulted(before)["status"]}
    recreated["metadata"] = {**restored_body["metadata"], "uid": "u-3"}
    fixed = apply_status_patch(recreated, actions.status_restore_patch(before))
    assert state.diff(state.node_state(before), state.node_state(fixed)) == []


def test_restore_patch_replaces_maps_so_keys_kwok_added_go_away() -> None:
    before = profile_node()
    extra = kwok_defaulted(before)
    extra["status"]["capacity"]["ephemeral-storage"] = "1Ti"
    fixed = apply_status_patch(extra, actions.status_restore_patch(before))
    assert fixed["status"]["capacity"] == before["status"]["capacity"]


def test_node_body_keeps_taints_a_user_had_before_the_fault() -> None:
    before = profile_node()
    before["spec"]["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    assert actions.node_body(before, kwok=True)["spec"]["taints"] == before["spec"]["taints"]


# -- pod faults: what they change, and nothing else ------------------------------------------------


def running_pod() -> Obj:
    return {
        "metadata": {"name": "chaos-0-1", "uid": "p-1"},
        "spec": {"nodeName": "gpu-b1-r1-n1"},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "t0"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"},
            ],
            "containerStatuses": [
                {"name": "c", "ready": True, "restartCount": 2, "state": {"running": {"startedAt": "t0"}}}
            ],
        },
    }


def test_container_restart_patch_changes_restart_count_and_last_state_only() -> None:
    pod = running_pod()
    patch = actions.restart_patch(pod, 0, "t1")
    after = copy.deepcopy(pod)
    for op in patch:
        if op["op"] in ("add", "replace"):
            after["status"]["containerStatuses"][0][op["path"].rsplit("/", 1)[1]] = op["value"]
    differs = state.diff(pod, after)
    assert [d.split(":")[0] for d in differs] == [
        "status.containerStatuses[0].lastState",
        "status.containerStatuses[0].restartCount",
    ], differs
    assert after["status"]["containerStatuses"][0]["lastState"]["terminated"]["startedAt"] == "t0"
    assert [op["path"] for op in patch if op["op"] == "test"][0] == "/metadata/uid"


def test_failed_status_touches_phase_containers_and_readiness_only() -> None:
    pod = running_pod()
    body = actions.failed_status(pod, "t1")["status"]
    after = {**pod, "status": {**pod["status"], **body}}
    changed = {d.split(":")[0] for d in state.diff(pod, after)}
    assert changed == {
        "status.phase",
        "status.containerStatuses[0].ready",
        "status.containerStatuses[0].started",
        "status.containerStatuses[0].state.running",
        "status.containerStatuses[0].state.terminated",
        "status.conditions[0].status",
        "status.conditions[0].lastTransitionTime",
    }
    assert [c["status"] for c in body["conditions"]] == ["False", "True"]  # PodScheduled untouched


# -- controller faults -----------------------------------------------------------------------------


def test_process_state_compares_command_line_and_health_not_pid() -> None:
    before = state.process_state(["/bin/lws", "--config=a"], True, True)
    assert state.diff(before, state.process_state(["/bin/lws", "--config=a"], True, True)) == []
    assert state.diff(before, state.process_state(["/bin/lws", "--config=b"], True, True)) == [
        "argv[1]: '--config=a' -> '--config=b'"
    ]
    assert state.diff(before, state.process_state(None, False, False)) == [
        "argv: ['/bin/lws', '--config=a'] -> None",
        "ready: True -> False",
        "running: True -> False",
    ]


def test_snapshot_diff_names_the_node_or_process() -> None:
    before = {
        "nodes": {"n1": state.node_state(profile_node("n1"))},
        "processes": {"lws": state.process_state(["a"], True, True)},
    }
    after = copy.deepcopy(before)
    after["nodes"]["n1"]["capacity"]["cpu"] = "1k"
    after["processes"]["lws"]["ready"] = False
    assert state.snapshot_diff(before, after) == [
        "node n1.capacity.cpu: '32' -> '1k'",
        "process lws.ready: True -> False",
    ]
    del after["nodes"]["n1"]
    assert "node n1: " in state.snapshot_diff(before, after)[0]


# -- the verification control ----------------------------------------------------------------------


def test_control_fails_the_experiment_when_the_cluster_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {"nodes": {"n1": state.node_state(profile_node("n1"))}, "processes": {}}
    after = {"nodes": {"n1": state.node_state(kwok_defaulted(profile_node("n1")))}, "processes": {}}
    snaps = iter([before, after])
    monkeypatch.setattr(control.capture, "snapshot", lambda kc: next(snaps))
    monkeypatch.setattr(control, "SETTLE_SECONDS", 0.0)
    control.before_experiment_control(None, configuration={"kubeconfig": "kc"})
    journal: Obj = {"status": "completed", "deviated": False}
    control.after_experiment_control(None, state=journal)
    assert journal["status"] == "failed"
    assert "node n1.capacity.cpu: '32' -> '1k'" in journal["lwsc_state_diff"]
    assert any("cluster differs from before" in p for p in runner.problems(journal))


def test_differences_in_what_lws_and_kueue_do_not_run_are_no_verdict() -> None:
    """A node or a control-plane process changed after the experiment: the harness or the machine
    failed (the test raises InfraError: error). LWS's or Kueue's own process stays a verdict."""
    journal: Obj = {
        "status": "failed",
        "lwsc_state_diff": [
            "process etcd.ready: True -> False",
            "process kube-apiserver.ready: True -> False",
            "node n1.capacity.cpu: '32' -> '1k'",
            "process lws.ready: True -> False",
            "process kueue: {'argv': ['kueue'], 'running': True, 'ready': True} -> <absent>",
        ],
    }
    assert runner.infrastructure_differences(journal) == journal["lwsc_state_diff"][:3]
    only_controllers = {"lwsc_state_diff": journal["lwsc_state_diff"][3:]}
    assert runner.infrastructure_differences(only_controllers) == []
    assert len([p for p in runner.problems(only_controllers) if "cluster differs" in p]) == 2
    assert runner.infrastructure_differences({"status": "completed"}) == []


def test_control_leaves_an_identical_cluster_s_journal_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = {"nodes": {"n1": state.node_state(profile_node("n1"))}, "processes": {}}
    monkeypatch.setattr(control.capture, "snapshot", lambda kc: copy.deepcopy(snap))
    control.before_experiment_control(None, configuration={"kubeconfig": "kc"})
    journal: Obj = {"status": "completed", "deviated": False}
    control.after_experiment_control(None, state=journal)
    assert journal == {"status": "completed", "deviated": False}


def test_a_returning_node_posts_a_fresh_heartbeat_a_failing_one_keeps_its_own() -> None:
    """KCM refreshes its cached node status only when lastHeartbeatTime changes: a node given back
    to kwok with the heartbeat KCM last saw would stay Ready=Unknown in KCM's cache, and every pod
    added to it would be marked not Ready (reused-cluster false reds after node-failure)."""
    before = profile_node()
    recorded = [c["lastHeartbeatTime"] for c in before["status"]["conditions"]]
    returning = actions.reregistered_status(before, returning=True, now="2030-01-01T00:00:00Z")
    assert [c["lastHeartbeatTime"] for c in returning["conditions"]] == ["2030-01-01T00:00:00Z"] * len(recorded)
    assert [c["status"] for c in returning["conditions"]] == [c["status"] for c in before["status"]["conditions"]]
    failing = actions.reregistered_status(before, returning=False, now="2030-01-01T00:00:00Z")
    assert [c["lastHeartbeatTime"] for c in failing["conditions"]] == recorded
    assert failing["capacity"] == before["status"]["capacity"] and "conditions" in failing


def test_a_fault_the_harness_could_not_apply_is_no_verdict() -> None:
    """The node-container-pause experiment of kind run 20261207-053828: `docker pause` failed in the
    runtime ("unable to freeze"), so the probe that followed timed out and the unpause found nothing
    paused; the pause is what `faults_not_applied` names, not the probe."""
    refused = (
        "chaoslib.exceptions.ActivityFailed: lws_conformance.chaos.safety.ChaosRefused: docker pause "
        "kshardr21-worker5 failed on kshardr21: OCI runtime pause failed: unable to freeze: unknown\n"
    )
    journal: dict[str, Any] = {
        "run": [
            {
                "activity": {"type": "action", "name": "pause-node-container"},
                "status": "failed",
                "exception": [refused],
            },
            {
                "activity": {"type": "probe", "name": "group-reported-not-ready"},
                "status": "failed",
                "exception": ["lws_conformance.chaos.safety.ChaosRefused: (a probe's failure stays a problem)\n"],
            },
            {
                "activity": {"type": "action", "name": "kill-leader-pod"},
                "status": "failed",
                "exception": ["kubernetes.client.exceptions.ApiException: (404) leader pod not found\n"],
            },
        ]
    }
    unapplied = runner.faults_not_applied(journal)
    assert unapplied == [
        "run action pause-node-container: chaoslib.exceptions.ActivityFailed: lws_conformance.chaos.safety."
        "ChaosRefused: docker pause kshardr21-worker5 failed on kshardr21: OCI runtime pause failed: unable to "
        "freeze: unknown"
    ]
    assert len(runner.problems(journal)) == 4  # every failure is still a problem (status and three activities)
    assert runner.faults_not_applied({"run": journal["run"][1:]}) == []
