"""What the rollout suite's tests share: the LWS they roll, the template changes that start a
rollout, the partition, the pod and revision checks, the recording and the watched window of one
reconcile. Not a test module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from lws_conformance.testing import (
    Event,
    Scenario,
    Timeline,
    UserError,
    facts,
    record,
    run_profile,
    workloads,
)
from lws_conformance.testing import predicates as P

Obj = dict[str, Any]
LBL = "leaderworkerset.sigs.k8s.io/"
REVISION = LBL + "template-revision-hash"
NAME_LABEL = LBL + "name"
BUMP = "lwsc.x-k8s.io/bump"


def rollout_lws(
    name: str,
    replicas: int,
    size: int,
    mu: int | str = 1,
    ms: int | str = 0,
    partition: int = 0,
    policy: str | None = "None",
) -> Obj:
    """An LWS with the given rollout configuration. `policy` is leaderWorkerTemplate.restartPolicy:
    "None" by default here, so a rollout test sees only rollout behaviour (restart policies have
    their own suite); the matrix also runs under the API default RecreateGroupOnPodRestart
    (`policy=None`: the field is left out, defaulting fills it in), where the update's own pod
    deletions must not look like restarts (lws#291). kwok's pod-delete stage plays once per pod
    (fixtures/kwok/pod-delete.yaml, docs/upstream/kwok-delete-by-name.md), so no replacement pod is
    deleted by the fake kubelet under either policy."""
    obj = workloads.lws(name, replicas=replicas, size=size)
    if policy is not None:
        obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = policy
    else:
        obj["spec"]["leaderWorkerTemplate"].pop("restartPolicy", None)
    obj["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": mu, "maxSurge": ms, "partition": partition},
    }
    return obj


def bump_annotation(sc: Scenario, name: str, value: str) -> None:
    """A worker-template annotation change: a new revision for every group (revision_utils.go getPatch)."""
    sc.patch_lws(
        name, {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"annotations": {BUMP: value}}}}}}
    )


def pods_at(name: str, replicas: int, size: int, revision_of: Any) -> Any:
    """Exactly the pods of `replicas` groups, all Ready, each at the revision `revision_of(group)`."""
    expected = P.expected_pod_names(name, replicas, size)

    def check(pods: list[Obj]) -> list[Obj] | None:
        mine = P.live(pods)
        if P.names(pods) != expected or len(mine) != len(pods) or not all(P.pod_ready(p) for p in mine):
            return None
        for p in mine:
            labels = p["metadata"]["labels"]
            if labels.get(REVISION) != revision_of(int(labels[LBL + "group-index"])):
                return None
        return mine

    return check


def leader_revision(sc: Scenario, name: str) -> str:
    sts = sc.apps.read_namespaced_stateful_set(name, sc.namespace)
    return str(sts.metadata.labels[REVISION])


def one_revision(sc: Scenario, name: str, revision: str) -> None:
    """Exactly one ControllerRevision of the LWS remains, the current one (TruncateRevisions), checked
    via the API. The StatefulSets' own ControllerRevisions carry the same labels (copied from the
    pod template), so only revisions owned by the LeaderWorkerSet count."""

    def check(objs: list[Obj]) -> list[Obj] | None:
        mine = [
            o
            for o in objs
            if any(
                r.get("kind") == "LeaderWorkerSet" and r.get("name") == name
                for r in o["metadata"].get("ownerReferences") or []
            )
        ]
        return mine if len(mine) == 1 and mine[0]["metadata"]["labels"].get(REVISION) == revision else None

    sc.wait_objects(
        "ControllerRevision",
        check,
        f"exactly one, with hash {revision}",
        timeout=30,
        selector=f"{NAME_LABEL}={name}",
        what=f"ControllerRevisions of {sc.namespace}/{name}",
    )


@contextmanager
def recorded(sc: Scenario) -> Iterator[Timeline]:
    with record(sc.api, sc.namespace) as tl:
        yield tl


def from_revision(events: list[Event], revision: str) -> list[facts.StsStep]:
    """The leader StatefulSet spec steps from the first one carrying `revision` on."""
    steps = facts.leader_sts_steps(events)
    first = next((i for i, s in enumerate(steps) if s.revision == revision), None)
    assert first is not None, f"leader StatefulSet never carried revision {revision}: {steps}"
    return steps[first:]


def ready_again_when_the_update_moved(
    events: list[Event], worker: str, steps: list[facts.StsStep], r: int
) -> str | None:
    """The test's precondition lost: `worker`, made unready by a test writing what a kubelet writes
    (test_rollout_faults `_unready`), Ready again when LWS first moved the partition. A real kubelet (kind) owns
    the pod's status and writes its own probe result back; LWS then rightly counts group 1 ready,
    and the first step says nothing of an unready group: no verdict."""
    first = next((s for s in steps if s.partition < r), None)
    seen = [e for e in events if e.kind == "Pod" and e.obj.get("name") == worker and first and e.t <= first.t]
    if first is None or not seen or not seen[-1].obj.get("ready"):
        return None
    return (
        f"InfraError: the test's precondition did not hold (not an LWS/Kueue verdict): {worker}, made unready "
        f"before the update, was Ready again at t={seen[-1].t:.2f}s, when LWS first moved the partition "
        f"(t={first.t:.2f}s, to {first.partition}): its kubelet wrote its own readiness back"
    )


def moved_below(part: int, old: str) -> Any:
    """Violation check for `observe`: a pod of a group below the partition left revision `old`."""

    def moved(pods: list[Obj]) -> str | None:
        bad = [
            p["metadata"]["name"]
            for p in pods
            if int(p["metadata"]["labels"].get(LBL + "group-index", "-1")) < part
            and p["metadata"]["labels"].get(REVISION) != old
        ]
        return f"pods below the partition changed revision: {bad}" if bad else None

    return moved


def held_update(sc: Scenario, name: str, replicas: int, size: int, part: int) -> tuple[str, str]:
    """Create the LWS, let it settle, set spec.partition `part` and change the template; return
    (old, new) revision once the groups at or above the partition are updated and it holds."""
    sc.create(rollout_lws(name, replicas, size))
    sc.wait_lws(name, sc.settled(replicas), f"Available with {replicas} groups")
    old = leader_revision(sc, name)
    set_partition(sc, name, part)
    bump_annotation(sc, name, "1")
    sc.wait_lws(
        name,
        sc.settled(replicas, updated=replicas - part),
        f"Available, updatedReplicas {replicas - part} (partition {part} holding)",
    )
    return old, leader_revision(sc, name)


def set_partition(sc: Scenario, name: str, partition: int) -> None:
    sc.patch_lws(name, {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": partition}}}})


def release_partition(sc: Scenario, name: str, replicas: int, size: int, new: str, done: str, pods: str) -> None:
    """Set spec.partition 0, then wait for the update to finish (`done`: the LWS settled with
    `replicas` groups) and for exactly those groups' pods Ready at revision `new` (`pods`)."""
    set_partition(sc, name, 0)
    sc.wait_lws(name, sc.settled(replicas), done)
    sc.wait_pods(pods_at(name, replicas, size, lambda g: new), pods)


def reconcile_window(config: pytest.Config) -> float:
    """The profile's `timeouts.reconcile_window_seconds`: how long a watched "must never happen"
    window lasts for the consequences of one LWS reconcile (its leader StatefulSet write, then the
    StatefulSet controller's pod deletion) to show. Derived from the latency
    benchmarks/reconcile_latency.py measures; `observe` multiplies it by `timeouts.scale`."""
    value = (run_profile(config).raw.get("timeouts") or {}).get("reconcile_window_seconds")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.5 <= value <= 60:
        raise UserError(f"timeouts.reconcile_window_seconds must be a number of seconds in 0.5..60, got {value!r}")
    return float(value)
