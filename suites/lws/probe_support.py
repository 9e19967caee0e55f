"""Readiness-probe scenarios shared by the real-kubelet and simulated-kubelet tests of LWS-PROBE."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lws_conformance.testing import Claims, Scenario, images, run_in_pod, workloads
from lws_conformance.testing import predicates as P

from . import lws_helpers as L

Obj = dict[str, Any]
READY_FILE = "/tmp/ready"
WINDOW = 3.0  # seconds (x timeouts.scale) the unready status is watched for


def probed_lws(name: str, replicas: int, size: int) -> Obj:
    """Leaders and workers Ready only while READY_FILE exists (written at start)."""
    obj = workloads.lws(name, replicas=replicas, size=size)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for spec in (lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]):
        container = spec["containers"][0]
        container.pop("args", None)
        container.update(
            image=images.ref("agnhost"),
            command=["/bin/sh", "-c", f"echo ok > {READY_FILE}; exec /agnhost pause"],
            readinessProbe={
                "exec": {"command": ["cat", READY_FILE]},
                "periodSeconds": 1,
                "failureThreshold": 1,
            },
        )
        spec["terminationGracePeriodSeconds"] = 1
    return obj


def set_probe(sc: Scenario, pod: str, ready: bool) -> None:
    """Make the kubelet's probe of `pod` pass (write READY_FILE) or fail (remove it)."""
    script = f"echo ok > {READY_FILE}" if ready else f"/bin/busybox rm -f {READY_FILE}"
    ran = run_in_pod(sc.api, sc.namespace, pod, _container(sc, pod), ["/bin/sh", "-c", script], timeout=30)
    assert ran.returncode == 0, f"exec in {pod} ({script!r}) exited {ran.returncode}: {ran.stderr.strip()!r}"


def _container(sc: Scenario, pod: str) -> str:
    return str(sc.core.read_namespaced_pod(pod, sc.namespace).spec.containers[0].name)


def _only_unready(expected: set[str], unready: str, uids: dict[str, str]) -> Any:
    """The same pods (UIDs), all Ready but `unready`, which is Running and not Ready."""

    def check(pods: list[Obj]) -> list[Obj] | None:
        live = P.live(pods)
        if P.names(pods) != expected or any(p["metadata"]["uid"] != uids[p["metadata"]["name"]] for p in live):
            return None
        target = next(p for p in live if p["metadata"]["name"] == unready)
        ok = all(P.pod_ready(p) != (p["metadata"]["name"] == unready) for p in live)
        return live if ok and (target.get("status") or {}).get("phase") == "Running" else None

    return check


def _recreated(sc: Scenario, uids: dict[str, str]) -> list[str]:
    now = {p.metadata.name: p.metadata.uid for p in sc.core.list_namespaced_pod(sc.namespace).items}
    return sorted(n for n, u in uids.items() if now.get(n) != u)


def probe_flips(sc: Scenario, claim: Claims, name: str, target: str, set_ready: Callable[[bool], None]) -> None:
    """Two groups of 3 (`probed_lws`) Ready; `set_ready(False)` makes `target`'s readiness probe
    fail, `set_ready(True)` pass again; the LWS status is checked meanwhile and after."""
    size = 3
    expected = P.expected_pod_names(name, 2, size)
    sc.create(probed_lws(name, 2, size))
    pods = sc.wait_pods(P.ready_exactly(expected), "2 groups of 3 pods Ready (their probes pass)", timeout=180)
    sc.wait_lws(name, sc.settled(2), "Available with 2 ready groups")
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    set_ready(False)
    sc.wait_pods(_only_unready(expected, target, uids), f"the same pods, all Ready but {target} (its probe fails)")
    with claim("LWS-PROBE-001"):
        sc.wait_lws(name, L.one_ready_group_of_two, "readyReplicas 1 of 2, Progressing=True")
        violation = L.watched(sc, name, L.one_ready_group_of_two, WINDOW)
        assert violation is None, f"with {target}'s readiness probe failing: {violation}"
    with claim("LWS-PROBE-002"):
        sc.wait_lws(name, L.not_available, "Available=False")
        violation = L.watched(sc, name, L.not_available, WINDOW)
        assert violation is None, f"with {target}'s readiness probe failing: {violation}"
        recreated = _recreated(sc, uids)
        assert not recreated, f"a failing readiness probe recreated {recreated}"

    set_ready(True)
    sc.wait_pods(P.ready_exactly(expected, uids), f"{target}'s probe passes: every pod Ready again")
    with claim("LWS-PROBE-001"):
        sc.wait_lws(name, lambda o: (o.get("status") or {}).get("readyReplicas") == 2, "readyReplicas 2 again")
    with claim("LWS-PROBE-002"):
        assert (
            P.condition(sc.wait_lws(name, sc.settled(2), "Available again with 2 ready groups"), "Available") == "True"
        )
