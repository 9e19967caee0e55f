"""Harness self-test: each of the 7 experiments in chaos/, run standalone with the real
`chaos run` CLI the way docs/chaos.md describes, leaves every harness node and every process of the
cluster exactly as before (a node-failure rollback once re-created gpu-b1-r1-n1 with kwok's
default capacity). Plus the proof that the check can fail: an experiment whose method relabels a
node ends "failed" and `chaos run` exits 1.

All on one private cluster (one xdist group, so one worker brings it up): about 6 min here (2
shared cores), the node failure alone ~1 min (KCM's 40 s node-monitor grace period). Harness
properties, not catalogued requirements.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from lws_conformance import chaos_target
from lws_conformance.chaos import capture, runner, state
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.wait import observe, wait_for
from lws_conformance.providers.local import LocalCluster
from lws_conformance.scenario import Scenario

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("chaos-rollback")]
PROJECT = Path(__file__).resolve().parents[2]
CHAOS = Path(sys.executable).parent / "chaos"
NODE = "gpu-b1-r1-n1"  # the node the node-failure experiment fails
ALL = sorted(runner.EXPERIMENTS.glob("*.yaml"))
# the local cluster's experiments; those tagged kind act on a kind cluster's node containers
EXPERIMENTS = [p.stem for p in ALL if "kind" not in (yaml.safe_load(p.read_text()).get("tags") or [])]


def chaos_run(experiment: Path, env: dict[str, str], journal: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHAOS), "run", "--journal-path", str(journal), str(experiment)],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT), **env},
        capture_output=True,
        text=True,
        timeout=480,
    )


def test_there_are_seven_local_experiments_and_two_for_kind() -> None:
    assert len(EXPERIMENTS) == 7 and len(ALL) == 9, (EXPERIMENTS, ALL)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_a_standalone_experiment_leaves_every_node_and_process_as_it_was(
    private_scenario: Scenario, private_cluster: LocalCluster, tmp_path: Path, experiment: str
) -> None:
    kubeconfig = str(private_cluster.kubeconfig)
    node = NODE if experiment == "node-failure" else None
    # an LWS name of its own: pods named like those of the previous test's still-terminating
    # namespace (same LWS name) once kept a group from turning Ready in time here
    lws = f"chaos-{EXPERIMENTS.index(experiment)}"
    scale = float(os.environ.get("LWSC_TIMEOUT_SCALE") or 1)
    env = chaos_target.create(kubeconfig, private_scenario.namespace, lws, node, timeout=120 * scale)
    env["LWSC_DISPOSABLE_CLUSTER"] = private_cluster.name
    before = capture.snapshot(kubeconfig)
    heartbeat = ready_heartbeat(private_scenario, node) if node else None
    proc = chaos_run(runner.EXPERIMENTS / f"{experiment}.yaml", env, tmp_path / "journal.json")
    journal = json.loads((tmp_path / "journal.json").read_text())
    problems = runner.problems(journal)
    assert proc.returncode == 0, f"chaos run exited {proc.returncode}: {problems}\n{proc.stderr[-2000:]}"
    differs = state.snapshot_diff(before, capture.snapshot(kubeconfig))
    assert not differs, f"{experiment} left the cluster changed: {differs}"
    assert not journal.get("lwsc_state_diff")
    if node:
        after = ready_heartbeat(private_scenario, node)
        assert after > heartbeat, (
            f"node {node} returned with its Ready heartbeat {after} not newer than before the fault "
            f"({heartbeat}): KCM keeps its cached Ready=Unknown for such a node (actions.reregistered_status)"
        )
        assert_new_pod_stays_ready(private_scenario, node, scale)


def ready_heartbeat(scenario: Scenario, node: str) -> Any:
    conds = scenario.core.read_node(node).status.conditions or []
    return next(c.last_heartbeat_time for c in conds if c.type == "Ready")


def _pod_ready(objs: list[dict[str, Any]]) -> str | None:
    conds = {c["type"]: c["status"] for c in (objs[0].get("status") or {}).get("conditions") or []} if objs else {}
    return conds.get("Ready")


def assert_new_pod_stays_ready(scenario: Scenario, node: str, scale: float) -> None:
    """The restored node is equal for KCM too, not only in the API: a pod placed on it after the
    experiment turns Ready and stays Ready for two KCM node-monitor periods (KCM judged new pods
    there by a stale cached Ready=Unknown when the returning node carried its old heartbeat)."""
    name = "after-node-failure"
    scenario.core.create_namespaced_pod(
        scenario.namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
        },
    )
    api = scenario.api
    kw = {"namespace": scenario.namespace, "field_selector": f"metadata.name={name}"}
    wait_for(
        api,
        scenario.core.list_namespaced_pod,
        lambda o: _pod_ready(o) == "True",
        what=f"pod {name} on {node}",
        condition="Ready",
        timeout=60 * scale,
        **kw,
    )
    seen = observe(
        api,
        scenario.core.list_namespaced_pod,
        lambda o: f"Ready={_pod_ready(o)}" if _pod_ready(o) != "True" else None,
        duration=10 * scale,
        **kw,
    )
    assert not seen, f"pod {name} on the restored node {node} turned {seen} (KCM still judging the node not ready)"


def relabel_node(name: str, configuration: dict[str, Any] | None = None) -> dict[str, str]:
    """A faulty action for the proof below: changes a node and never restores it."""
    api = api_client((configuration or {})["kubeconfig"])
    try:
        client.CoreV1Api(api).patch_node(name, {"metadata": {"labels": {"lwsc-proof": "changed"}}})
    finally:
        api.close()
    return {"relabelled": name}


def test_an_experiment_that_leaves_a_node_changed_fails(
    private_scenario: Scenario, private_cluster: LocalCluster, tmp_path: Path
) -> None:
    kubeconfig = str(private_cluster.kubeconfig)
    cfg = {"kubeconfig": kubeconfig, "namespace": private_scenario.namespace}
    exp = runner.load(runner.EXPERIMENTS / "leader-pod-kill.yaml", cfg)
    del exp["steady-state-hypothesis"]
    exp["method"] = [
        {
            "type": "action",
            "name": "relabel-node",
            "provider": {"type": "python", "module": __name__, "func": "relabel_node", "arguments": {"name": NODE}},
        }
    ]
    path = tmp_path / "faulty.json"
    path.write_text(json.dumps(exp))
    env = {"LWSC_KUBECONFIG": kubeconfig, "LWSC_NAMESPACE": private_scenario.namespace}
    try:
        proc = chaos_run(path, env, tmp_path / "journal.json")
    finally:
        private_scenario.core.patch_node(NODE, {"metadata": {"labels": {"lwsc-proof": None}}})
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert journal["status"] == "failed"
    assert journal["lwsc_state_diff"] == [f"node {NODE}.labels.lwsc-proof: <absent> -> 'changed'"]
