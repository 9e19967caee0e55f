"""Chaos guard rails, without a cluster: refusals, dry runs, the fault ledger, Ctrl-C.

A stub CoreV1Api records every call, so "refused" and "dry run" are proven by the absence of any
mutating call, not by trusting the return value.
"""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from chaoslib.experiment import run_experiment

from lws_conformance.chaos import actions, probes, runner, safety
from lws_conformance.k8s.objects import RUN_LABEL
from lws_conformance.profile import RESOLVED_FILE, load_profile
from lws_conformance.providers.nodes import MANAGED_LABEL

Obj = dict[str, Any]
MUTATING = ("delete_namespaced_pod", "patch_namespaced_pod_status", "patch_node", "patch_node_status")
PFX = "leaderworkerset.sigs.k8s.io/"
CFG = {"kubeconfig": "/nonexistent/kubeconfig", "namespace": "ns"}


def _pod(name: str, group: str = "0", rev: str = "h1", ready: bool = True) -> Obj:
    worker = "0" if name.count("-") == 1 else name.rsplit("-", 1)[1]
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {
                PFX + "name": "l",
                PFX + "group-index": group,
                PFX + "worker-index": worker,
                PFX + "template-revision-hash": rev,
            },
        },
        "spec": {"nodeName": "n1"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "c", "restartCount": 0, "state": {"running": {}}}],
        },
    }


class FakeCore:
    """Records calls; serves one namespace (labelled or not), pods and nodes."""

    def __init__(self, ns_labels: dict[str, str], pods: list[Obj] = (), nodes: list[Obj] = ()) -> None:  # type: ignore[assignment]
        self.ns_labels, self.pods, self.nodes = ns_labels, list(pods), list(nodes)
        self.calls: list[str] = []
        self.api_client = SimpleNamespace(close=lambda: None)

    def __getattr__(self, name: str) -> Any:
        if name in MUTATING:
            return lambda *a, **k: self.calls.append(name)
        raise AttributeError(name)

    def read_namespace(self, name: str) -> Any:
        self.calls.append("read_namespace")
        return SimpleNamespace(metadata=SimpleNamespace(labels=self.ns_labels))

    def list_namespaced_pod(self, ns: str, label_selector: str = "") -> Any:
        self.calls.append("list_namespaced_pod")
        return SimpleNamespace(items=self.pods)

    def list_node(self, label_selector: str = "") -> Any:
        self.calls.append("list_node")
        return SimpleNamespace(items=self.nodes)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Install a FakeCore (harness namespace, three pods) behind `actions`; returns a setter."""
    holder: dict[str, FakeCore] = {}

    def install(core: FakeCore) -> FakeCore:
        holder["core"] = core
        return core

    monkeypatch.setattr(actions, "api_client", lambda _kc: SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(actions.client, "CoreV1Api", lambda _api=None: holder["core"])
    install(FakeCore({RUN_LABEL: "r1"}, [_pod("l-0"), _pod("l-0-1"), _pod("l-0-2")]))
    return install


def _mutations(core: FakeCore) -> list[str]:
    return [c for c in core.calls if c in MUTATING]


# -- refusals --------------------------------------------------------------------------------
@pytest.mark.parametrize("selector", ["", "   ", None, "!app", "!a,!b"])
@pytest.mark.parametrize("fault", [actions.kill_pods, actions.restart_containers, actions.fail_pods])
def test_selectorless_pod_faults_are_refused_before_any_call(fake: Any, fault: Any, selector: Any) -> None:
    core = fake(FakeCore({RUN_LABEL: "r1"}, [_pod("l-0")]))
    with pytest.raises(safety.ChaosRefused, match="without a label selector"):
        fault(selector, 1, configuration=CFG)
    assert core.calls == []


@pytest.mark.parametrize("fault", [actions.kill_pods, actions.restart_containers, actions.fail_pods])
def test_pod_faults_are_refused_in_a_namespace_the_harness_did_not_create(fake: Any, fault: Any) -> None:
    core = fake(FakeCore({"team": "someone-else"}, [_pod("l-0")]))
    with pytest.raises(safety.ChaosRefused, match=RUN_LABEL):
        fault(f"{PFX}name=l", "all", configuration=CFG)
    assert _mutations(core) == [] and "list_namespaced_pod" not in core.calls


@pytest.mark.parametrize("quantity", [0, -1, "some", 1.5j])
def test_nonsense_quantities_are_refused(fake: Any, quantity: Any) -> None:
    core = fake(FakeCore({RUN_LABEL: "r1"}, [_pod("l-0")]))
    with pytest.raises(safety.ChaosRefused, match="quantity"):
        actions.kill_pods(f"{PFX}name=l", quantity, configuration=CFG)
    assert _mutations(core) == []


def test_node_faults_refuse_nodes_the_harness_did_not_create(fake: Any) -> None:
    mine = {"metadata": {"name": "gpu-1", "labels": {MANAGED_LABEL: "true"}}}
    theirs = {"metadata": {"name": "prod-1", "labels": {}}}
    core = fake(FakeCore({}, nodes=[mine, theirs]))
    with pytest.raises(safety.ChaosRefused, match="prod-1"):
        actions.fail_nodes("kubernetes.io/os=linux", "all", configuration=CFG)
    with pytest.raises(safety.ChaosRefused, match="without a label selector"):
        actions.fail_nodes("", configuration=CFG)
    assert _mutations(core) == []


def test_node_faults_refuse_the_shared_cluster(fake: Any) -> None:
    """A harness node on a cluster that is neither private-* nor named disposable: refused before
    anything is touched (CFG's kubeconfig is no local lwsc cluster at all)."""
    node = {"metadata": {"name": "gpu-1", "labels": {MANAGED_LABEL: "true"}}}
    core = fake(FakeCore({}, nodes=[node]))
    with pytest.raises(safety.ChaosRefused, match="not a local lwsc cluster"):
        actions.fail_nodes("x=y", 1, configuration=CFG)
    with pytest.raises(safety.ChaosRefused, match="not a local lwsc cluster"):
        actions.restore_node("gpu-1", configuration=CFG)
    assert _mutations(core) == []


def test_process_faults_only_on_private_or_named_clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path))
    recorded = load_profile(overrides=["network.base_port=19000", "timeouts.ready_seconds=77"])
    for name in ("default", "private-r1-gw0", "mine"):
        (tmp_path / name / "pids").mkdir(parents=True)
        (tmp_path / name / "kubeconfig").write_text(
            "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:19002'}}]\n"
        )
        recorded.write_resolved(tmp_path / name / RESOLVED_FILE)  # what `up` leaves in its state
    with pytest.raises(safety.ChaosRefused, match="'default'"):
        safety.local_cluster(tmp_path / "default" / "kubeconfig")
    with pytest.raises(safety.ChaosRefused, match="'mine'"):
        safety.local_cluster(tmp_path / "mine" / "kubeconfig", disposable="other")
    assert safety.local_cluster(tmp_path / "mine" / "kubeconfig", disposable="mine").name == "mine"
    private = safety.local_cluster(tmp_path / "private-r1-gw0" / "kubeconfig")
    assert private.profile.base_port == 19000 and private.profile.ready_seconds == 77  # the cluster's own profile
    (tmp_path / "mine" / RESOLVED_FILE).unlink()  # brought up by an older harness: no profile to restart it with
    with pytest.raises(safety.ChaosRefused, match="records no profile"):
        safety.local_cluster(tmp_path / "mine" / "kubeconfig", disposable="mine")
    with pytest.raises(safety.ChaosRefused, match="no pid record"):
        safety.check_component(private, "lws")  # the harness never started it there
    with pytest.raises(safety.ChaosRefused, match="unknown component"):
        safety.check_component(private, "sshd")
    elsewhere = tmp_path.parent / "kubeconfig"
    with pytest.raises(safety.ChaosRefused, match="not a local lwsc cluster"):
        safety.local_cluster(elsewhere)


# -- dry runs ------------------------------------------------------------------------------------
def test_dry_run_lists_targets_and_touches_nothing(fake: Any) -> None:
    core = fake(FakeCore({RUN_LABEL: "r1"}, [_pod("l-0-2"), _pod("l-0"), _pod("l-0-1")]))
    killed = actions.kill_pods(f"{PFX}name=l", 2, dry_run=True, configuration=CFG)
    assert [t["name"] for t in killed] == ["l-0", "l-0-1"]
    restarted = actions.restart_containers(f"{PFX}name=l", "all", dry_run=True, configuration=CFG)
    assert [t["restart_count"] for t in restarted] == [0, 0, 0]
    assert len(actions.fail_pods(f"{PFX}name=l", 1, dry_run=True, configuration=CFG)) == 1
    node = {"metadata": {"name": "gpu-1", "labels": {MANAGED_LABEL: "true"}}}
    core.nodes = [node]
    assert actions.fail_nodes("x=y", dry_run=True, configuration=CFG) == [{"name": "gpu-1"}]
    assert _mutations(core) == [], core.calls


def test_a_real_restart_is_a_json_patch_keeping_the_phase(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    core = fake(FakeCore({RUN_LABEL: "r1"}, [_pod("l-0-1")]))
    seen: list[Any] = []
    monkeypatch.setattr(core, "patch_namespaced_pod_status", lambda *a, **k: seen.append((a, k)), raising=False)
    actions.restart_containers(f"{PFX}name=l", 1, configuration=CFG)
    ((args, kwargs),) = seen
    assert kwargs["_content_type"] == "application/json-patch+json"
    ops = {(op["op"], op["path"]): op.get("value") for op in args[2]}
    assert ops[("replace", "/status/containerStatuses/0/restartCount")] == 1
    assert ops[("test", "/status/phase")] == "Running" and not any(p == "/status/phase" for o, p in ops if o != "test")


# -- the ledger and Ctrl-C ---------------------------------------------------------------------
UNDONE: list[str] = []


def ctrl_c() -> None:
    """An action that is the user pressing Ctrl-C."""
    signal.raise_signal(signal.SIGINT)


def apply_fake_fault(tag: str = "x") -> str:
    """An action for the experiments below: a fault whose undo is observable."""
    safety.applied(f"fake/{tag}", f"fake fault {tag}", lambda: UNDONE.append(tag))
    return tag


def _interrupted_experiment(controls: bool) -> Obj:
    exp: Obj = {
        "version": "1.0.0",
        "title": "a fault, then Ctrl-C",
        "description": "unit test",
        "method": [
            {
                "type": "action",
                "name": "fault",
                "provider": {"type": "python", "module": __name__, "func": "apply_fake_fault"},
            },
            {
                "type": "action",
                "name": "ctrl-c",
                "provider": {"type": "python", "module": __name__, "func": "ctrl_c"},
            },
        ],
    }
    if controls:
        exp["controls"] = [
            {"name": "lwsc-restore", "provider": {"type": "python", "module": "lws_conformance.chaos.control"}}
        ]
    return exp


@pytest.mark.usefixtures("sigint_is_ctrl_c")
def test_runner_undoes_faults_after_ctrl_c_and_reraises(tmp_path: Path) -> None:
    UNDONE.clear()
    with pytest.raises(KeyboardInterrupt):
        runner.run(_interrupted_experiment(controls=False), {}, tmp_path / "j.json")
    assert UNDONE == ["x"] and not safety.pending()
    assert '"status": "interrupted"' in (tmp_path / "j.json").read_text()


@pytest.mark.usefixtures("sigint_is_ctrl_c")
def test_chaostoolkit_swallows_ctrl_c_and_the_control_undoes_the_fault() -> None:
    """What `chaos run` does: run_experiment returns (no exception) with status interrupted and
    plays no rollbacks; the lwsc-restore control is what undoes the fault."""
    UNDONE.clear()
    journal = run_experiment(_interrupted_experiment(controls=True), settings={})
    assert journal["status"] == "interrupted"
    assert UNDONE == ["x"] and not safety.pending()


def test_restore_all_keeps_going_past_a_failing_undo() -> None:
    UNDONE.clear()
    safety.applied("a", "fault a", lambda: UNDONE.append("a"))
    safety.applied("b", "fault b", lambda: 1 / 0)
    safety.applied("c", "fault c", lambda: UNDONE.append("c"))
    errors = safety.restore_all()
    assert sorted(UNDONE) == ["a", "c"] and len(errors) == 1 and "fault b" in errors[0]
    assert not safety.pending()


# -- steady-state checks ---------------------------------------------------------------------
LWS = {"metadata": {"name": "l"}, "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2}}}


def test_steady_state_checks_name_each_violation() -> None:
    steady = [_pod("l-0"), _pod("l-0-1"), _pod("l-1", "1"), _pod("l-1-1", "1")]
    assert probes.steady_state_violations(LWS, steady) == []
    partial = [_pod("l-0"), _pod("l-0-1", ready=False), _pod("l-1", "1"), _pod("l-1-1", "1")]
    assert any("group 0 partially running" in v for v in probes.steady_state_violations(LWS, partial))
    mixed = [_pod("l-0"), _pod("l-0-1", rev="h2"), _pod("l-1", "1"), _pod("l-1-1", "1")]
    assert probes.revision_violations(LWS, mixed) == ["group 0 mixes revisions ['h1', 'h2']"]
    missing = [_pod("l-0"), _pod("l-0-1"), _pod("l-1", "1")]
    assert probes.names_violations(LWS, missing) == ["missing pods ['l-1-1']"]
    assert probes.ready_violations(LWS, missing) == ["group 1: 1/2 pods Ready"]
