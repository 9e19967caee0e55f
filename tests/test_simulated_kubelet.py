"""What the harness writes in a kubelet's place (`lws_conformance.chaos.kubelet`), where the report
says it ran, and the catalogue's account of every requirement the local cluster cannot run."""

from __future__ import annotations

import ast
import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from lws_conformance import catalogue, verdicts
from lws_conformance.chaos import kubelet
from lws_conformance.k8s import predicates as P
from lws_conformance.report import summary
from lws_conformance.scenario import NEEDS_KIND, NEEDS_KUBELET, SIMULATED_HERE

ROOT = Path(__file__).resolve().parent.parent
Obj = dict[str, Any]
AT = "2026-12-06T10:00:00Z"


# -- a JSON patch (RFC 6902: add, replace, test), as the API server applies it ---------------------
class PatchTestFailed(Exception):
    pass


def _walk(doc: Any, path: str) -> tuple[Any, str | int]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    for p in parts[:-1]:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    last = parts[-1]
    return doc, (last if not isinstance(doc, list) or last == "-" else int(last))


def apply(doc: Obj, ops: list[Obj]) -> Obj:
    out = copy.deepcopy(doc)
    for op in ops:
        parent, key = _walk(out, op["path"])
        if op["op"] == "test":
            if parent[key] != op["value"]:
                raise PatchTestFailed(f"{op['path']}: {parent[key]!r} != {op['value']!r}")
        elif op["op"] == "add" and isinstance(parent, list):
            parent.insert(len(parent) if key == "-" else int(key), copy.deepcopy(op["value"]))
        elif op["op"] in ("add", "replace"):
            if op["op"] == "replace" and (key not in parent if isinstance(parent, dict) else False):
                raise KeyError(f"replace of a missing {op['path']}")
            parent[key] = copy.deepcopy(op["value"])
        else:
            raise ValueError(op)
    return out


def _pod(init: bool = False) -> Obj:
    spec: Obj = {"nodeName": "n1", "containers": [{"name": "main", "image": "img"}]}
    if init:
        spec["initContainers"] = [{"name": "init", "image": "img-init"}]
    return {
        "metadata": {"name": "p-1-1", "uid": "u1"},
        "spec": spec,
        "status": {
            "phase": "Pending",
            "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
        },
    }


def _running(init: bool = False) -> Obj:
    pod = _pod(init)
    return apply(pod, kubelet.started(pod, True, "100.65.0.1", "100.64.0.1", at=AT))


# -- the reports ------------------------------------------------------------------------------------
def test_a_started_pod_is_running_and_ready_with_its_init_containers_completed() -> None:
    pod = _running(init=True)
    st = pod["status"]
    assert st["phase"] == "Running" and P.pod_ready(pod) and st["qosClass"] == "BestEffort"
    assert st["containerStatuses"][0]["state"] == {"running": {"startedAt": AT}}
    assert st["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert {c["type"]: c["status"] for c in st["conditions"]}["PodScheduled"] == "True"
    assert not P.pod_ready(apply(_pod(), kubelet.started(_pod(), False, "ip", "host", at=AT)))


def test_a_container_exit_then_restart_is_reported_as_a_kubelet_does() -> None:
    pod = _running()
    exited = apply(pod, kubelet.container_exited(pod, "main", 3, at=AT))
    st = exited["status"]["containerStatuses"][0]
    assert st["state"]["terminated"]["exitCode"] == 3 and st["restartCount"] == 0 and not st["ready"]
    assert exited["status"]["phase"] == "Running" and not P.pod_ready(exited)
    assert P.condition(exited, "ContainersReady") == "False"
    restarted = apply(exited, kubelet.container_restarted(exited, "main", at=AT))
    st = restarted["status"]["containerStatuses"][0]
    assert st["restartCount"] == 1 and st["lastState"]["terminated"]["exitCode"] == 3 and "running" in st["state"]
    assert P.pod_ready(restarted)
    with pytest.raises(AssertionError, match="has not exited"):
        kubelet.container_restarted(pod, "main")


def test_a_report_made_from_a_stale_pod_fails_instead_of_clobbering() -> None:
    pod = _running()
    exited = apply(pod, kubelet.container_exited(pod, "main", 137, at=AT))
    restart = kubelet.container_restarted(exited, "main", at=AT)
    restarted = apply(exited, restart)
    with pytest.raises(PatchTestFailed, match="restartCount"):
        apply(restarted, restart)  # written twice: the second finds restartCount 1, not 0
    replaced = copy.deepcopy(exited)
    replaced["metadata"]["uid"] = "u2"
    with pytest.raises(PatchTestFailed, match="uid"):
        apply(replaced, restart)


def test_an_init_container_failure_then_restart_keeps_the_pod_pending() -> None:
    pod = _pod(init=True)
    failed = apply(pod, kubelet.init_failed(pod, "init", exit_code=1, at=AT))
    st = failed["status"]
    assert st["phase"] == "Pending" and st["qosClass"] == "BestEffort"
    assert st["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert st["initContainerStatuses"][0]["restartCount"] == 0
    assert st["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["Initialized"]["status"] == "False" and conds["Initialized"]["reason"] == "ContainersNotInitialized"
    assert conds["PodScheduled"]["status"] == "True" and not P.pod_ready(failed)
    restarted = apply(failed, kubelet.init_restarted(failed, "init", at=AT))
    init = restarted["status"]["initContainerStatuses"][0]
    assert init["restartCount"] == 1 and init["lastState"]["terminated"]["exitCode"] == 1
    assert restarted["status"]["phase"] == "Pending"
    assert restarted["status"]["containerStatuses"][0]["restartCount"] == 0
    again = apply(restarted, kubelet.init_failed(restarted, "init", at=AT))  # it fails again: the count stays
    assert again["status"]["initContainerStatuses"][0]["restartCount"] == 1
    assert again["status"]["initContainerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    with pytest.raises(AssertionError, match="has not failed"):
        kubelet.init_restarted(apply(_pod(True), kubelet.started(_pod(True), True, "i", "h", at=AT)), "init")


def test_a_readiness_flip_changes_readiness_only() -> None:
    pod = _running()
    unready = apply(pod, kubelet.readiness(pod, False, at=AT))
    assert not P.pod_ready(unready) and unready["status"]["containerStatuses"][0]["ready"] is False
    assert unready["status"]["containerStatuses"][0]["restartCount"] == 0
    assert unready["status"]["containerStatuses"][0]["state"] == pod["status"]["containerStatuses"][0]["state"]
    again = apply(unready, kubelet.readiness(unready, True, at=AT))
    assert P.pod_ready(again) and again["status"]["containerStatuses"][0]["ready"] is True
    with pytest.raises(AssertionError, match="not a running pod"):
        kubelet.readiness(_pod(), False)


# -- where it ran ---------------------------------------------------------------------------------
def test_a_simulated_test_says_so_where_it_ran() -> None:
    assert summary._where("", "local") == "local cluster under test"
    assert summary._where(verdicts.simulated(""), "local") == "local cluster under test, simulated kubelet"
    assert summary._where(verdicts.PRIVATE, "local") == verdicts.PRIVATE
    on_private = verdicts.simulated(verdicts.PRIVATE)
    assert summary._where(on_private, "local") == "private local cluster, simulated kubelet"
    row = summary.Row(
        "X", "a", "MUST", "s", {}, [], "passed", 0.0, tests=[{"nodeid": "t", "verdict": "passed", "ran_on": on_private}]
    )
    assert summary.private_only(row)
    row.tests[0]["ran_on"] = verdicts.simulated("")
    assert not summary.private_only(row)


TWIN_SKIP = SIMULATED_HERE.format(twin="t") + NEEDS_KUBELET


def test_the_row_of_a_simulated_test_reads_simulated_kubelet() -> None:
    req = catalogue.default()["CHAOS-RESTART-010"]
    results = [
        summary.TestResult(
            "suites/chaos/test_restart_simulated.py::t",
            1.0,
            {req.id: verdicts.Outcome("passed").to_dict()},
            ran_on=verdicts.simulated(""),
        ),
        summary.TestResult(
            "suites/chaos/test_restart_policy.py::t", 0.0, {req.id: verdicts.Outcome("not-run", TWIN_SKIP).to_dict()}
        ),
    ]
    (row,) = [r for r in summary.build({req.id: req}, results) if r.id == req.id]
    assert row.verdict == "passed" and row.ran_on == ["local cluster under test, simulated kubelet"]


# -- every requirement the local cluster cannot run says why -----------------------------------------
NEEDS = ("require_real_kubelet", "require_kind")


@functools.cache
def _kind_only_functions(path: Path) -> frozenset[str]:
    """The functions of a suite module that skip on the local cluster: they call
    `require_real_kubelet` / `require_kind`, or (transitively) a function of this module, or one
    imported from a sibling test module, that does."""
    tree = ast.parse(path.read_text())
    calls: dict[str, set[str]] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            calls[fn.name] = {
                (c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id)
                for c in ast.walk(fn)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute | ast.Name)
            }
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("test_"):
            sibling = path.parent / f"{node.module}.py"
            theirs = _kind_only_functions(sibling)
            imported |= {a.asname or a.name for a in node.names if a.name in theirs}
    bad = {f for f, called in calls.items() if called & set(NEEDS)} | imported
    while True:
        more = {f for f, called in calls.items() if called & bad} - bad
        if not more:
            return frozenset(bad)
        bad |= more


def _kind_only(test: str) -> bool:
    path, _, fn = test.partition("::")
    return fn in _kind_only_functions(ROOT / path)


def test_kind_only_detection_follows_helpers() -> None:
    assert _kind_only("suites/lws/test_member_dns.py::test_every_member_resolves_by_host_name_under_shared_subdomain")
    assert _kind_only("suites/chaos/test_restart_policy.py::test_an_init_container_restart_recreates_its_group")
    simulated_init = "test_simulated_init_container_restart_recreates_its_group"
    assert not _kind_only(f"suites/chaos/test_restart_simulated.py::{simulated_init}")
    assert not _kind_only("suites/chaos/test_restart_policy.py::test_recreate_group_emits_a_recreate_group_event")


def test_every_requirement_the_local_cluster_cannot_run_says_why() -> None:
    """A requirement whose every test needs a real kubelet or kind has a local variant that writes
    the kubelet's reports, or its catalogue entry says why it cannot (`not_simulated`); one with a
    test the local cluster runs says nothing of the kind."""
    missing, stale = [], []
    for req in catalogue.default().values():
        only_kind = bool(req.tests) and all(_kind_only(t) for t in req.tests)
        if only_kind and not req.not_simulated:
            missing.append(req.id)
        if req.not_simulated and not only_kind:
            stale.append(req.id)
    assert not missing, f"kind-only requirements with neither a simulated variant nor a reason: {missing}"
    assert not stale, f"not_simulated on requirements the local cluster runs: {stale}"


def test_a_providers_variant_skipped_next_to_one_that_ran_is_no_gap() -> None:
    passed, failed = verdicts.Outcome("passed"), verdicts.Outcome("failed", "group 1 not recreated")
    twin = SIMULATED_HERE.format(twin="test_simulated_x")
    real = verdicts.Outcome("not-run", twin + NEEDS_KUBELET)
    kind = verdicts.Outcome("not-run", twin + NEEDS_KIND)
    fake = verdicts.Outcome("not-run", "not-run on real kubelets: the test reports ... by patching pod status")
    other = verdicts.Outcome("not-run", "not-run: needs a private local cluster")
    assert verdicts.combine([real, passed]).verdict == "passed"
    assert verdicts.combine([kind, passed]).verdict == "passed"
    assert verdicts.combine([passed, fake]).verdict == "passed"
    assert verdicts.combine([real, failed]).verdict == "failed"
    assert verdicts.combine([real, passed, other]).verdict == "partial"  # any other skip is still a gap
    assert verdicts.combine([real]).verdict == "not-run" and verdicts.combine([real, fake]).verdict == "not-run"
    # a kind-only case without a simulated twin (a controller pod deleted mid-rollout) stays a gap
    for lone in (NEEDS_KUBELET, NEEDS_KIND):
        assert verdicts.combine([passed, verdicts.Outcome("not-run", lone)]).verdict == "partial"
    assert (twin + NEEDS_KUBELET).startswith(verdicts.VARIANT_SKIPS)
    assert not NEEDS_KUBELET.startswith(verdicts.VARIANT_SKIPS) and not NEEDS_KIND.startswith(verdicts.VARIANT_SKIPS)


def test_every_named_simulated_twin_checks_the_same_requirements() -> None:
    """`simulated_by` makes a skip no gap, so the twin it names must exist, simulate the kubelet and
    claim every requirement of the test that names it."""
    tests_of: dict[str, set[str]] = {}
    for req in catalogue.default().values():
        for t in req.tests:
            tests_of.setdefault(t.partition("::")[2].split("[")[0], set()).add(req.id)
    named = 0
    for path in sorted((ROOT / "suites").rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
                for kw in call.keywords:
                    if kw.arg == "simulated_by" and isinstance(kw.value, ast.Constant):
                        twin, named = str(kw.value.value), named + 1
                        assert twin in tests_of, f"{path.name}::{fn.name}: simulated_by {twin!r} is no test"
                        assert tests_of.get(fn.name, set()) <= tests_of[twin], (
                            f"{fn.name} claims {sorted(tests_of.get(fn.name, set()) - tests_of[twin])}, "
                            f"which its twin {twin} does not"
                        )
    assert named >= 7


def test_the_scripted_kubelet_runs_the_longest_pre_stop_sleep() -> None:
    pod = _pod()
    assert kubelet.pre_stop_seconds(pod) == 0
    pod["spec"]["containers"] = [
        {"name": "a", "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}},
        {"name": "b", "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}},
        {"name": "c", "lifecycle": {"preStop": {"sleep": {"seconds": 2}}}},
    ]
    assert kubelet.pre_stop_seconds(pod) == 5
