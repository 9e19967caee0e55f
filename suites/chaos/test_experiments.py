"""The chaos/*.yaml experiments, run in-process through chaoslib's API (`lws_conformance.chaos.runner`).

Why: the same experiment files users run with `chaos run` are the conformance evidence. Each
run writes its journal to `reports/chaos/<run-id>/<test>.journal.json`; a journal that is not
"completed", deviated, or has a failed activity fails the test (`runner.problems`).

Pod-level experiments run on the shared cluster inside the test's namespace. Anything that stops
a process or fails a node runs on this worker's private cluster (`private_scenario`), pinned to
one xdist worker, and is undone by the experiment (or by the fault ledger, whatever happens).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from lws_conformance import workloads
from lws_conformance.chaos import probes, runner, safety
from lws_conformance.providers import nodes, process
from lws_conformance.providers.local import LocalCluster
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster
REPORTS = Path(__file__).resolve().parents[2] / "reports" / "chaos"
PRIVATE = pytest.mark.xdist_group("chaos-private")
Obj = dict[str, Any]


def _run(sc: Scenario, exp: str | Obj, request: pytest.FixtureRequest, run_id: str, **cfg: Any) -> runner.Journal:
    path = runner.EXPERIMENTS / f"{exp}.yaml" if isinstance(exp, str) else exp
    journal_file = REPORTS / run_id / f"{request.node.name}.journal.json"
    config = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace, "lws": "chaos", **cfg}
    journal = runner.run(path, config, journal_file)
    outputs = runner.outputs(journal)
    for key in ("seconds-to-recover",):
        if isinstance(outputs.get(key), int | float):
            request.node.user_properties.append(("recovery_s", outputs[key]))
    problems = runner.problems(journal)
    assert not problems, f"experiment {path}: {problems} (journal: {journal_file})"
    assert not safety.pending(), f"faults left applied: {safety.pending()}"
    return journal


def ctrl_c() -> None:
    """An action that is the user pressing Ctrl-C (SIGINT to this process)."""
    signal.raise_signal(signal.SIGINT)


def _lws(name: str = "chaos", replicas: int = 2, size: int = 3, **kw: Any) -> Obj:
    obj = workloads.lws(name, replicas=replicas, size=size, **kw)
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupOnPodRestart"
    return obj


# -- pod-level, shared cluster -------------------------------------------------------------------
@pytest.mark.requirement("CHAOS-EXP-001")
@pytest.mark.parametrize("experiment", ["worker-container-restart", "leader-pod-kill", "worker-pod-failed"])
def test_lws_returns_to_steady_state_after_pod_faults(
    scenario: Scenario, request: pytest.FixtureRequest, run_id: str, experiment: str
) -> None:
    scenario.create(_lws())
    journal = _run(scenario, experiment, request, run_id)
    assert isinstance(runner.outputs(journal)["seconds-to-recover"], float)


# -- process- and node-level, private cluster ------------------------------------------------------
@PRIVATE
@pytest.mark.requirement("CHAOS-EXP-002")
def test_restart_during_lws_controller_outage_is_handled_after_restart(
    private_scenario: Scenario, request: pytest.FixtureRequest, run_id: str
) -> None:
    private_scenario.create(_lws())
    _run(private_scenario, "lws-controller-restart", request, run_id)


@PRIVATE
@pytest.mark.requirement("CHAOS-EXP-003")
def test_kueue_outage_delays_but_does_not_break_a_group_restart(
    private_scenario: Scenario, request: pytest.FixtureRequest, run_id: str, unique: str
) -> None:
    sc = private_scenario
    topo = sc.cluster.topology
    sc.create(workloads.resource_flavor(unique))
    sc.create(workloads.cluster_queue(unique, unique, {"cpu": "10", "memory": "10Gi", topo.gpu_resource: "6"}))
    sc.create(workloads.local_queue("lq", unique))
    sc.create(_lws(gpus=1, gpu_resource=topo.gpu_resource, queue="lq"))
    _run(sc, "kueue-controller-kill", request, run_id)


@PRIVATE
@pytest.mark.requirement("CHAOS-EXP-004")
def test_apiserver_restart_leaves_controllers_and_groups_running(
    private_scenario: Scenario, request: pytest.FixtureRequest, run_id: str
) -> None:
    private_scenario.create(_lws())
    journal = _run(private_scenario, "apiserver-restart", request, run_id)
    restart = runner.outputs(journal)["restart-apiserver"]
    assert restart["components_down_after_restart"] == [], restart


@PRIVATE
@pytest.mark.requirement("CHAOS-EXP-005")
def test_node_failure_is_reported_and_the_group_recovers_when_the_node_returns(
    private_scenario: Scenario, request: pytest.FixtureRequest, run_id: str, unique: str
) -> None:
    """A dedicated fake node (same GPU capacity as the others, outside the Kueue pool) hosts the
    only group; it stops heartbeating, KCM marks it NotReady and the LWS reports 0 ready groups;
    it returns, its GPU capacity is intact, and the LWS is steady again with the same pods."""
    sc = private_scenario
    topo = sc.cluster.topology
    node = nodes.node_manifest(topo, f"lwsc-{unique}", "chaos", "chaos-r1")
    node["metadata"]["labels"].pop(nodes.POOL_LABEL[0])
    sc.core.create_node(node)  # type: ignore[arg-type]  # the client accepts dicts
    try:
        sc.core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
        obj = _lws(replicas=1, size=2)
        for key in ("leaderTemplate", "workerTemplate"):
            obj["spec"]["leaderWorkerTemplate"][key]["spec"]["nodeSelector"] = {
                topo.hostname_label: node["metadata"]["name"]
            }
        sc.create(obj)
        cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
        assert probes.seconds_until_steady("chaos", 60, configuration=cfg) >= 0
        uids = probes.pod_uids("chaos", configuration=cfg)
        journal = _run(sc, "node-failure", request, run_id, node=node["metadata"]["name"])
        out = runner.outputs(journal)
        failed, back = out["stop-node-heartbeat"][0], out["node-returns"]
        request.node.user_properties.append(("node_not_ready_s", failed["not_ready_after_s"]))
        assert out["group-reported-not-ready"] == 0
        assert back["pods_reported_ready"], "KCM never marked the node's pods not Ready"
        alloc = sc.core.read_node(node["metadata"]["name"]).status.allocatable  # type: ignore[union-attr]
        assert alloc and alloc.get(topo.gpu_resource) == str(topo.gpus_per_node), alloc
        assert probes.pod_uids("chaos", configuration=cfg) == uids, "a node outage (no deletion) recreated pods"
    finally:
        sc.core.delete_node(node["metadata"]["name"])


@PRIVATE
@pytest.mark.requirement("CHAOS-SAFETY-001")
def test_ctrl_c_during_an_experiment_leaves_no_controller_stopped(
    private_scenario: Scenario, private_cluster: LocalCluster, tmp_path: Path
) -> None:
    """chaostoolkit swallows KeyboardInterrupt and skips rollbacks on an interrupted run; the
    runner must still restart the controller the method stopped, then re-raise the interrupt."""
    sc = private_scenario
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
    exp = runner.load(runner.EXPERIMENTS / "lws-controller-restart.yaml", cfg)
    exp["method"] = [
        exp["method"][0],  # kill-lws-controller (no duration: stays down until undone)
        {
            "type": "action",
            "name": "ctrl-c",
            "provider": {"type": "python", "module": __name__, "func": "ctrl_c"},
        },
    ]
    del exp["steady-state-hypothesis"]
    with pytest.raises(KeyboardInterrupt):
        runner.run(exp, cfg, tmp_path / "j.json")
    lws = [r for r in private_cluster.records() if r.name == "lws"]
    assert lws and process.alive(lws[0]), "the LWS controller was left stopped after Ctrl-C"
    assert not safety.pending()
    journal = (tmp_path / "j.json").read_text()
    assert '"status": "interrupted"' in journal
