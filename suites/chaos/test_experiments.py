"""The chaos/*.yaml experiments, run in-process through chaoslib's API (`lws_conformance.chaos.runner`).

Why: the same experiment files users run with `chaos run` are the conformance evidence. Each
run writes its journal to `reports/chaos/<run-id>/<test>.journal.json`; a journal that is not
"completed", deviated, or has a failed activity fails the test (`runner.problems`); a fault the
harness could not apply or undo (`runner.faults_not_applied`), or a node or a control-plane
process not as before the experiment, is no verdict (`error`: the fault tooling, the rollback or
the machine failed, not LWS or Kueue; `runner.infrastructure_differences`).

Pod-level experiments run on the shared cluster inside the test's namespace. Anything that stops
a process or fails a node runs on this worker's private cluster (`private_scenario`), pinned to
one xdist worker, and is undone by the experiment (or by the fault ledger, whatever happens).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    CHAOS_TOLERATION,
    POOL_LABEL,
    InfraError,
    Scenario,
    actions,
    api_client,
    artifact_dir,
    chaos_local_cluster,
    faults_pending,
    history,
    node_containers,
    node_manifest,
    observe,
    probes,
    process_alive,
    record,
    runner,
    saved,
    to_dict,
    wait_for,
    workloads,
)
from lws_conformance.testing import predicates as P

pytestmark = pytest.mark.cluster
REPORTS = artifact_dir(Path.cwd() / "reports") / "chaos"
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
    if unapplied := runner.faults_not_applied(journal):
        raise InfraError(
            f"experiment {path}: the harness could not apply or undo its fault, so nothing was tested (not an "
            f"LWS/Kueue verdict): {unapplied} (journal: {journal_file})"
        )
    if infra := runner.infrastructure_differences(journal):
        raise InfraError(
            f"experiment {path}: the cluster under test is not as before the experiment, in what LWS and Kueue "
            f"do not run (not an LWS/Kueue verdict): {infra} (journal: {journal_file})"
        )
    problems = runner.problems(journal)
    assert not problems, f"experiment {path}: {problems} (journal: {journal_file})"
    assert not faults_pending(), f"faults left applied: {faults_pending()}"
    return journal


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


# -- CHAOS-EXP-003: the Kueue outage, in order ---------------------------------------------------
# The experiment file's method restarts the worker container and only then stops Kueue, so the
# group restart may be over before the outage begins. The test runs it reordered: Kueue stopped,
# the outage confirmed (process gone and the API server refusing pod creation through Kueue's
# webhook), then the restart, a watched window in which the restarted group cannot come back, then
# Kueue started again. The whole run is recorded (timeline observer), so the admitted group 1 is
# checked at every watch event, from before the outage to after the recovery.
_OUTAGE: dict[str, Any] = {}
HOLD_SECONDS = 5.0


def kueue_outage_confirmed(lws: str, configuration: Obj | None = None) -> Obj:
    """Probe: Kueue's process is down and the API server cannot create a pod in the namespace
    (Kueue's pod webhook, failurePolicy Fail, does not answer). Remembers the restarted group's
    current pods, to tell the new ones apart."""
    cfg = configuration or {}
    cluster = chaos_local_cluster(actions.kubeconfig_of(cfg), cfg.get("lwsc_disposable_cluster"))
    running = [r.pid for r in cluster.records() if r.name == "kueue" and process_alive(r)]
    assert not running, f"Kueue still running (pids {running}) after it was stopped"
    api = api_client(actions.kubeconfig_of(cfg))
    try:
        ns = actions.namespace_of(cfg)
        core = client.CoreV1Api(api)
        probe = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": "lwsc-outage-probe-"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        try:
            core.create_namespaced_pod(ns, probe, dry_run="All")  # type: ignore[arg-type]  # dicts accepted
            refused = ""
        except ApiException as exc:
            refused = str(exc.body or exc.reason)
        assert "webhook" in refused, f"pod creation in {ns} still admitted while Kueue is down: {refused or 'accepted'}"
        pods = [
            to_dict(api, p) for p in core.list_namespaced_pod(ns, label_selector=actions.group_selector(lws, 0)).items
        ]
    finally:
        api.close()
    _OUTAGE.update(confirmed=time.time(), group0={p["metadata"]["uid"] for p in pods})
    return {"kueue_running": False, "pod_create_refused": refused[:300]}


def restart_held_during_outage(lws: str, within: float = 30, configuration: Obj | None = None) -> Obj:
    """Probe: the group restart began during the outage (the old leader is being deleted or gone),
    and for HOLD_SECONDS no pod of the restarted group is created (watched): it needs Kueue."""
    cfg = configuration or {}
    api = api_client(actions.kubeconfig_of(cfg))
    try:
        core, ns = client.CoreV1Api(api), actions.namespace_of(cfg)
        old = _OUTAGE["group0"]
        selector = actions.group_selector(lws, 0, 0)

        def leader_going(pods: list[Obj]) -> bool:
            return not [p for p in P.live(pods) if p["metadata"]["uid"] in old]

        wait_for(
            api,
            core.list_namespaced_pod,
            leader_going,
            what=f"leader {lws}-0 in {ns}",
            condition="the old leader deleted (the group restart began while Kueue is down)",
            timeout=within,
            namespace=ns,
            label_selector=selector,
        )
        began = time.time()

        def new_pod(pods: list[Obj]) -> str | None:
            fresh = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["uid"] not in old)
            return f"pods {fresh} of the restarted group created while Kueue was down" if fresh else None

        created = observe(
            api,
            core.list_namespaced_pod,
            new_pod,
            duration=HOLD_SECONDS,
            namespace=ns,
            label_selector=actions.group_selector(lws, 0),
        )
        assert created is None, created
    finally:
        api.close()
    _OUTAGE.update(restart_began=began, kueue_start=time.time())
    return {"restart_began_after_s": round(began - _OUTAGE["confirmed"], 2), "held_s": HOLD_SECONDS}


def _kueue_outage_experiment(cfg: Obj) -> Obj:
    """chaos/kueue-controller-kill.yaml with its method in the order the requirement needs."""
    exp = runner.load(runner.EXPERIMENTS / "kueue-controller-kill.yaml", cfg)
    steps = {a["name"]: a for a in exp["method"]}
    restart, recover = steps["restart-worker-container"], steps["seconds-to-recover"]
    kill = {
        **steps["kill-kueue-controller"],
        "provider": {**steps["kill-kueue-controller"]["provider"], "arguments": {}},
    }

    def probe(name: str, func: str) -> Obj:
        provider = {"type": "python", "module": __name__, "func": func, "arguments": {"lws": "${lws}"}}
        return {"type": "probe", "name": name, "provider": provider}

    start = {
        "type": "action",
        "name": "start-kueue-controller",
        "provider": {
            "type": "python",
            "module": "lws_conformance.chaos.actions",
            "func": "start_component",
            "arguments": {"component": "kueue"},
        },
    }
    confirmed, held = (
        probe("kueue-outage-confirmed", "kueue_outage_confirmed"),
        probe("restart-held", "restart_held_during_outage"),
    )
    exp["method"] = [kill, confirmed, restart, held, start, recover]
    return exp


@PRIVATE
@pytest.mark.requirement("CHAOS-EXP-003")
def test_kueue_outage_delays_but_does_not_break_a_group_restart(
    private_scenario: Scenario, request: pytest.FixtureRequest, run_id: str, unique: str, tmp_path: Path
) -> None:
    """Group 0 is restarted while Kueue is down and comes back whole (gated, then released under its
    admission) once Kueue is back; group 1, admitted, is untouched at every watch event of the run:
    same Ready, ungated pods, its Workload Admitted with quota, never evicted."""
    sc = private_scenario
    topo = sc.cluster.topology
    sc.create(workloads.resource_flavor(unique))
    sc.create(workloads.cluster_queue(unique, unique, {"cpu": "10", "memory": "10Gi", topo.gpu_resource: "6"}))
    sc.create(workloads.local_queue("lq", unique))
    sc.create(_lws(gpus=1, gpu_resource=topo.gpu_resource, queue="lq"))
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace, "lws": "chaos"}
    assert probes.seconds_until_steady("chaos", 60, configuration=cfg) >= 0
    uid = sc.lws("chaos")["metadata"]["uid"]
    wl = [workloads.lws_workload_name("chaos", uid, g) for g in (0, 1)]

    def admitted(objs: list[Obj]) -> bool:
        ok = {o["metadata"]["name"] for o in objs if P.condition(o, "Admitted") == "True"}
        return set(wl) <= ok

    sc.wait_objects("Workload", admitted, f"{wl} Admitted", what=f"Workloads in {sc.namespace}")
    _OUTAGE.clear()
    with record(sc.api, sc.namespace) as tl:
        journal = _run(sc, _kueue_outage_experiment(cfg), request, run_id)
    events = saved(tl, artifact_dir(tmp_path), "kueue-outage", lws="chaos")
    timeline = artifact_dir(tmp_path) / "kueue-outage.timeline.json"
    order = [a["activity"]["name"] for a in journal["run"]]
    assert order.index("kueue-outage-confirmed") < order.index("restart-worker-container"), order
    assert _OUTAGE["confirmed"] < _OUTAGE["restart_began"] < _OUTAGE["kueue_start"], _OUTAGE

    disturbed = history.group_disturbances(events, "chaos", 1, 3, wl[1])
    assert not disturbed, f"the admitted group 1 was disturbed: {disturbed} (timeline: {timeline})"
    new = {}
    for e in events:
        labels = e.obj.get("labels") or {}
        if e.kind == "Pod" and labels.get(P.GROUP_INDEX) == "0" and e.obj["uid"] not in _OUTAGE["group0"]:
            new.setdefault(e.obj["name"], e)
    assert sorted(new) == sorted(P.expected_pod_names("chaos", 1, 3)), f"group 0 not recreated whole: {sorted(new)}"
    early = [
        f"{n} at {e.wall - _OUTAGE['kueue_start']:+.2f}s" for n, e in new.items() if e.wall < _OUTAGE["kueue_start"]
    ]
    assert not early, f"group 0 pods created before Kueue was started again: {early} (timeline: {timeline})"
    ungated = [n for n, e in new.items() if not e.obj.get("gated")]
    assert not ungated, f"recreated pods {ungated} not created behind Kueue's gate (timeline: {timeline})"


@PRIVATE
@pytest.mark.requirement("CHAOS-EXP-004")
def test_apiserver_restart_leaves_controllers_and_groups_running(
    private_scenario: Scenario, request: pytest.FixtureRequest, run_id: str
) -> None:
    """The groups are left alone: the same pods (by UID, not only by name) before and after, the
    LWS itself not recreated; the experiment's pods-kept probe watches the 30 s after the restart."""
    sc = private_scenario
    sc.create(_lws())
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
    assert probes.seconds_until_steady("chaos", 60, configuration=cfg) >= 0
    before, lws_uid = probes.pod_uids("chaos", configuration=cfg), sc.lws("chaos")["metadata"]["uid"]
    journal = _run(sc, "apiserver-restart", request, run_id)
    restart = runner.outputs(journal)["restart-apiserver"]
    assert restart["components_down_after_restart"] == [], restart
    after = probes.pod_uids("chaos", configuration=cfg)
    changed = {
        n: (before.get(n), after.get(n)) for n in sorted(set(before) | set(after)) if before.get(n) != after.get(n)
    }
    assert not changed, f"pods recreated or gone across the API server restart (name: (uid before, after)): {changed}"
    assert sc.lws("chaos")["metadata"]["uid"] == lws_uid, "the LWS was recreated across the API server restart"


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
    node = node_manifest(topo, f"lwsc-{unique}", "chaos", "chaos-r1")
    node["metadata"]["labels"].pop(POOL_LABEL[0])
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


# -- node-, container- and controller-level on kind (real kubelets; `chaos.node_containers`) ------
def _containers(sc: Scenario) -> dict[str, tuple[str, int]]:
    """Pod name -> (UID, restarts of all its containers) for the LWS `chaos`."""
    return {
        p["metadata"]["name"]: (
            p["metadata"]["uid"],
            sum(int(c.get("restartCount") or 0) for c in (p.get("status") or {}).get("containerStatuses") or []),
        )
        for p in P.live(sc.pods(actions.group_selector("chaos")))
    }


@pytest.mark.exclusive("kind-chaos-node")
@pytest.mark.requirement("CHAOS-EXP-006")
def test_frozen_node_is_reported_and_its_group_resumes_with_the_same_containers(
    scenario: Scenario, request: pytest.FixtureRequest, run_id: str
) -> None:
    """The kind cluster's chaos node (tainted: no other test's pods) hosts the only group; its
    container is paused, so its kubelet and containers freeze and its Lease is not renewed: KCM's
    node lifecycle marks it NotReady, and the LWS must report 0 ready groups. Unpaused, the same
    processes go on: the LWS is steady again with the same pods and no container restarted."""
    sc = scenario
    node = sc.require_kind(chaos_node=True)
    obj = _lws(replicas=1, size=2)
    for key in ("leaderTemplate", "workerTemplate"):
        spec = obj["spec"]["leaderWorkerTemplate"][key]["spec"]
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        spec["tolerations"] = [dict(CHAOS_TOLERATION)]
    sc.create(obj)
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
    assert probes.seconds_until_steady("chaos", 120, configuration=cfg) >= 0
    before = _containers(sc)
    journal = _run(sc, "node-container-pause", request, run_id, node=node)
    out = runner.outputs(journal)
    request.node.user_properties.append(("node_not_ready_s", out["pause-node-container"]["not_ready_after_s"]))
    request.node.user_properties.append(("node_ready_again_s", out["unpause-node-container"]["ready_after_s"]))
    assert out["group-reported-not-ready"] == 0
    after = _containers(sc)
    assert after == before, f"a frozen node (no deletion, no restart) changed pods or restarts: {before} -> {after}"


@pytest.mark.requirement("CHAOS-EXP-007")
def test_container_killed_through_the_runtime_recreates_its_group(
    scenario: Scenario, request: pytest.FixtureRequest, run_id: str
) -> None:
    """Under RecreateGroupOnPodRestart, group 0's worker 1 container is SIGKILLed by crictl in its
    node (no API write); the kubelet restarts it, and LWS must recreate group 0 whole (every pod
    new) while group 1 keeps its pods and containers."""
    sc = scenario
    sc.require_kind(simulated_by="test_simulated_container_exit_recreates_its_group")
    sc.create(_lws())
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
    assert probes.seconds_until_steady("chaos", 120, configuration=cfg) >= 0
    before = _containers(sc)
    journal = _run(sc, "worker-container-kill", request, run_id)
    killed = runner.outputs(journal)["kill-worker-container"]
    assert [k["name"] for k in killed] == ["chaos-0-1"], killed
    after = _containers(sc)
    group0 = sorted(n for n in before if n == "chaos-0" or n.startswith("chaos-0-"))
    kept = sorted(n for n in group0 if after.get(n, ("",))[0] == before[n][0])
    assert not kept, f"group 0 not recreated whole after its worker's container was killed: {kept} kept their UIDs"
    others = {n: v for n, v in before.items() if n not in group0}
    assert {n: after.get(n) for n in others} == others, "group 1 was touched by group 0's container kill"


GRACE, PRE_STOP = 30, 5  # the pods' terminationGracePeriodSeconds and their preStop hook's sleep


@pytest.mark.requirement("CHAOS-GRACE-001")
def test_recreated_group_pods_terminate_gracefully(scenario: Scenario, request: pytest.FixtureRequest) -> None:
    """A group of 2 whose containers sleep 5 s in a preStop hook (grace period 30 s); its worker's
    container is killed through the runtime, so LWS deletes the leader to recreate the group.
    Watched: every old pod must be deleted with its own grace period (deletionGracePeriodSeconds
    30, not 0) and stay terminating at least as long as its preStop hook sleeps (the kubelet ran
    it; the main process, agnhost pause, exits on SIGTERM at once)."""
    sc = scenario
    sc.require_kind(simulated_by="test_simulated_recreated_group_pods_terminate_gracefully")
    obj = _lws(replicas=1, size=2)
    for key in ("leaderTemplate", "workerTemplate"):
        spec = obj["spec"]["leaderWorkerTemplate"][key]["spec"]
        spec["terminationGracePeriodSeconds"] = GRACE
        for c in spec["containers"]:
            c["lifecycle"] = {"preStop": {"sleep": {"seconds": PRE_STOP}}}
    sc.create(obj)
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
    assert probes.seconds_until_steady("chaos", 120, configuration=cfg) >= 0
    old = {uid: name for name, (uid, _r) in _containers(sc).items()}
    terminating: dict[str, tuple[float, Any]] = {}  # uid -> (first seen terminating, its grace period)
    gone: dict[str, float] = {}

    def all_old_gone(pods: list[Obj]) -> bool:
        now, present = time.monotonic(), {p["metadata"]["uid"]: p for p in pods}
        for uid in old:
            meta = (present.get(uid) or {}).get("metadata") or {}
            if meta.get("deletionTimestamp") and uid not in terminating:
                terminating[uid] = (now, meta.get("deletionGracePeriodSeconds"))
            if uid not in present and uid not in gone:
                gone[uid] = now
        return len(gone) == len(old)

    node_containers.kill_containers(actions.group_selector("chaos", 0, 1), "worker", configuration=cfg)
    sc.wait_pods(all_old_gone, f"the old pods {sorted(old.values())} deleted and gone", timeout=GRACE + 60)
    wrong = []
    for uid, name in sorted(old.items(), key=lambda kv: kv[1]):
        if uid not in terminating:
            wrong.append(f"{name}: gone without being seen terminating (deleted without a grace period?)")
            continue
        since, grace = terminating[uid]
        took = gone[uid] - since
        request.node.user_properties.append((f"terminating_s[{name}]", round(took, 1)))
        if grace != GRACE:
            wrong.append(f"{name}: deleted with deletionGracePeriodSeconds {grace}, not its own {GRACE}")
        if took < PRE_STOP * 0.9:
            wrong.append(f"{name}: gone {took:.1f}s after it began terminating, before its {PRE_STOP}s preStop ended")
    assert not wrong, "\n".join(wrong)
