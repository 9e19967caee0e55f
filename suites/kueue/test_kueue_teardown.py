"""Teardown under Kueue's webhooks: an LWS whose owner is already gone can still finish deleting.

When foreground and background deletion mix in one ownership chain (a namespace teardown, a
parent deleted in the background), the garbage collector removes the foregroundDeletion finalizer
of a child whose owner is already gone. That removal is an update, so it passes Kueue's mutating
LeaderWorkerSet webhook, which walks the child's owners.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    LWS_API,
    Claims,
    Scenario,
    WaitTimeout,
    admission,
    scaled_seconds,
    workloads,
)

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
FOREGROUND = "foregroundDeletion"
# The garbage collector removes a finalizer within a second once it may; times timeouts.scale
GONE_SECONDS = 20.0


def _delete(scenario: Scenario, name: str, propagation: str | None = None) -> None:
    """Delete LWS `name`; one already gone (the garbage collector may be first) is no error."""
    try:
        K.delete_lws(scenario, name, propagation)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _release(scenario: Scenario, name: str) -> None:
    """Let LWS `name` go however the test ended: its owner reference and finalizers dropped in one
    update. Kueue v0.17's webhook then finds no owner to look up, so even where the bug holds the
    namespace can be deleted; nothing is checked here."""
    try:
        scenario.patch_lws(name, {"metadata": {"ownerReferences": None, "finalizers": None}})
    except ApiException as exc:
        if exc.status != 404:
            raise


def _named(name: str) -> str:
    """The field selector of the object named `name`."""
    return f"metadata.name={name}"


@pytest.mark.requirement("KUEUE-TEARDOWN-001")
def test_a_terminating_lws_whose_owner_is_gone_finishes_deleting(
    scenario: Scenario, unique: str, claim: Claims
) -> None:
    """LWS `child` is owned (controller reference) by the queued LWS `parent` and carries the
    foregroundDeletion finalizer, as the garbage collector leaves it in a foreground teardown.
    `parent` is deleted in the background and is gone; `child` is deleted and stays Terminating on
    its finalizer. Removing that finalizer, the garbage collector's own request, must be accepted,
    and `child` must then be gone."""
    K.plain_queue(scenario, unique, {"cpu": "10", "memory": "10Gi"})
    parent = scenario.create(workloads.lws("parent", replicas=1, size=1, queue=K.QUEUE))
    # Kueue's webhook reads owners from its informer cache; its Workload for parent says Kueue has
    # seen parent, so creating child is not refused for an owner Kueue does not know yet.
    uid = parent["metadata"]["uid"]
    name = workloads.lws_workload_name("parent", uid, 0)
    K.wait_workloads(scenario, uid, lambda wls: K.by_name(wls).get(name), f"{name} created for LWS parent")
    child = workloads.lws("child", replicas=1, size=1)
    child["metadata"]["finalizers"] = [FOREGROUND]
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": LWS_API,
            "kind": "LeaderWorkerSet",
            "name": "parent",
            "uid": uid,
            "controller": True,
        }
    ]
    scenario.create(child)
    try:
        _delete(scenario, "parent", "Background")
        ns = scenario.namespace
        scenario.wait_objects_gone(
            "LeaderWorkerSet",
            "LeaderWorkerSet parent deleted (background propagation)",
            what=f"objects in {ns}",
            field_selector=_named("parent"),
        )
        _delete(scenario, "child")

        def terminating_or_gone(objs: list[Obj]) -> Obj | str | None:
            if not objs:
                return "gone"
            return objs[0] if objs[0]["metadata"].get("deletionTimestamp") else None

        seen = scenario.wait_objects(
            "LeaderWorkerSet",
            terminating_or_gone,
            "Terminating (or already gone)",
            what=f"LeaderWorkerSet child in {ns}",
            field_selector=_named("child"),
        )
        finalizers = seen["metadata"].get("finalizers") or [] if isinstance(seen, dict) else []
        if FOREGROUND in finalizers:
            with claim("KUEUE-TEARDOWN-001"):
                remove = {"metadata": {"finalizers": [f for f in finalizers if f != FOREGROUND]}}
                out = admission.answer(lambda: scenario.patch_lws("child", remove))
                # 404 without a webhook's words: the garbage collector removed it first
                gone_first = out.webhook is None and out.status == 404
                assert out.kind == "accepted" or gone_first, (
                    f"removing the {FOREGROUND} finalizer of Terminating LWS child (its owner LWS parent already "
                    f"deleted) was refused: {out.describe()}"
                )
        with claim("KUEUE-TEARDOWN-001"):
            try:
                scenario.wait_objects_gone(
                    "LeaderWorkerSet",
                    "LeaderWorkerSet child deleted",
                    GONE_SECONDS,
                    what=f"objects in {ns}",
                    field_selector=_named("child"),
                )
            except WaitTimeout:
                left = scenario.list_objects("LeaderWorkerSet", field_selector=_named("child"))
                if left:
                    meta = left[0]["metadata"]
                    raise AssertionError(
                        f"LWS child still Terminating {scaled_seconds(GONE_SECONDS):.0f}s after its deletion, "
                        f"finalizers {meta.get('finalizers') or []}"
                    ) from None
    finally:
        _release(scenario, "child")
