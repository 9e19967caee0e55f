"""Rollout-with-readiness-probe scenarios shared by the real-kubelet and simulated-kubelet tests of ROLL-PROBE."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lws_conformance.testing import Claims, Scenario, images, run_in_pod, workloads
from lws_conformance.testing import predicates as P

Obj = dict[str, Any]
READY_FILE = "/tmp/ready"
HOLD = 8.0  # seconds (x timeouts.scale) watched for "no other group is taken down"
STEP = 90.0  # seconds (x timeouts.scale) for the rollout to move on once a group is Ready


def _container(command: str) -> Obj:
    return {
        "name": "main",
        "image": images.ref("agnhost"),
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", command],
        "readinessProbe": {"exec": {"command": ["cat", READY_FILE]}, "periodSeconds": 1, "failureThreshold": 1},
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }


OLD = f"echo ok > {READY_FILE}; exec /agnhost pause"
NEW = "exec /agnhost pause"  # the updated worker: not Ready until the test writes READY_FILE


def rollout_lws(name: str) -> Obj:
    obj = workloads.lws(name, replicas=3, size=2)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        lwt[key]["spec"] = {"containers": [_container(OLD)], "terminationGracePeriodSeconds": 1}
    return obj


def _by_name(pods: list[Obj]) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in P.live(pods)}


def _replaced(group: int, name: str, uids: dict[str, str]) -> Any:
    """Group `group`'s pods are new (UIDs not in `uids`), its worker Running with its container
    started, so an exec reaches it."""
    members = (f"{name}-{group}", f"{name}-{group}-1")

    def check(pods: list[Obj]) -> dict[str, Obj] | None:
        live = _by_name(pods)
        if any(m not in live or live[m]["metadata"]["uid"] == uids[m] for m in members):
            return None
        worker = live[members[1]].get("status") or {}
        started = any(c.get("started") for c in worker.get("containerStatuses") or [])
        return live if worker.get("phase") == "Running" and started else None

    return check


def _untouched(groups: list[int], name: str, uids: dict[str, str]) -> Any:
    """A violation: a pod of `groups` replaced, being deleted or gone."""
    members = [m for g in groups for m in (f"{name}-{g}", f"{name}-{g}-1")]

    def violation(pods: list[Obj]) -> str | None:
        every = {p["metadata"]["name"]: p for p in pods}
        for m in members:
            pod = every.get(m)
            if pod is None:
                return f"{m} is gone"
            if pod["metadata"]["uid"] != uids[m]:
                return f"{m} was replaced"
            if pod["metadata"].get("deletionTimestamp"):
                return f"{m} is being deleted"
        return None

    return violation


def _pass_probe(sc: Scenario, pod: str) -> None:
    ran = run_in_pod(sc.api, sc.namespace, pod, "main", ["/bin/sh", "-c", f"echo ok > {READY_FILE}"], timeout=30)
    assert ran.returncode == 0, f"exec in {pod} exited {ran.returncode}: {ran.stderr.strip()!r}"


def rollout_waits_for_probes(
    sc: Scenario, claim: Claims, name: str, worker_spec: Obj, pass_probe: Callable[[str], None]
) -> None:
    """Three groups of 2 Ready; the worker template's spec is patched with `worker_spec`, whose
    pods stay not Ready until `pass_probe(pod)`; the rollout is checked group by group."""
    expected = P.expected_pod_names(name, 3, 2)
    sc.create(rollout_lws(name))
    pods = sc.wait_pods(
        lambda ps: P.live(ps) if P.names(ps) == expected and all(P.pod_ready(p) for p in P.live(ps)) else None,
        "3 groups of 2 pods Ready (their probes pass)",
        timeout=180,
    )
    sc.wait_lws(name, sc.settled(3), "Available with 3 ready groups")
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    sc.patch_lws(name, {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": worker_spec}}}})
    sc.wait_pods(_replaced(2, name, uids), "group 2 recreated from the new template, its worker running", timeout=STEP)
    with claim("ROLL-PROBE-001"):
        violation = sc.observe_pods(_untouched([0, 1], name, uids), duration=HOLD)
        assert violation is None, (
            f"while {name}-2-1's readiness probe fails (maxUnavailable 1), "
            f"the rollout took another group down: {violation}"
        )
    with claim("ROLL-PROBE-002"):
        for group in (2, 1, 0):
            if group != 2:
                sc.wait_pods(
                    _replaced(group, name, uids),
                    f"once group {group + 1}'s probes pass, group {group} is updated",
                    timeout=STEP,
                )
            pass_probe(f"{name}-{group}-1")
        sc.wait_lws(name, sc.settled(3), "the rollout complete: 3 updated, ready groups", timeout=STEP)
