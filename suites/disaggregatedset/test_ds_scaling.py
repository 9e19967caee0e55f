"""External scaling of a DisaggregatedSet role (LWS >= v0.10.0, KEP-849): the scaler object.

A role with `scaling.mode: External` gets a DisaggregatedSetRoleScaler named <set>-<role>, created
and owned by the DisaggregatedSet controller; an autoscaler writes its spec.replicas through the
/scale subresource and the controller drives the role's LWS from it and writes back the status
HPA reads (disaggregatedsetrolescaler_types.go@v0.10.0, keps/849-DisaggregatedSet-HPA). The tests
act as the autoscaler does: GET /scale before any write, then PATCH /scale, the call `kubectl
scale` and HPA make. Admission (the webhook's External rules) goes through server-side dry-run.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario
from lws_conformance.testing import predicates as P

from . import ds_helpers as D
from .ds_helpers import accepted, rejected

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
KIND, PLURAL = "DisaggregatedSetRoleScaler", "disaggregatedsetrolescalers"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
EXTERNAL = {"mode": "External"}


def _external(name: str, replicas: int | None = None, size: int = 2) -> Obj:
    return D.role(name, replicas, size, scaling=EXTERNAL)


def _scalers(sc: Scenario) -> list[Obj]:
    return sc.list_objects("DisaggregatedSetRoleScaler")


def _wait_scalers(sc: Scenario, check: Any, condition: str, timeout: float = 60) -> Any:
    return sc.wait_objects(
        "DisaggregatedSetRoleScaler", check, condition, timeout, what=f"DisaggregatedSetRoleScalers in {sc.namespace}"
    )


def _scaler(sc: Scenario, name: str, check: Any = None, condition: str = "exists", timeout: float = 60) -> Obj:
    """Wait until the scaler `name` exists (and `check(scaler)` holds); the scaler."""

    def found(objs: list[Obj]) -> Obj | None:
        mine = [o for o in objs if o["metadata"]["name"] == name]
        return mine[0] if mine and (check is None or check(mine[0])) else None

    out: Obj = _wait_scalers(sc, found, f"{KIND} {name} {condition}", timeout)
    return out


def _written(groups: int) -> Any:
    """Has the controller written the scaler's status for its current spec, with `groups` groups
    (observedGeneration current, Ready True, replicas `groups`)?"""

    def check(scaler: Obj) -> bool:
        st = scaler.get("status") or {}
        return st.get("observedGeneration") == scaler["metadata"]["generation"] and (
            P.condition(scaler, "Ready") == "True" and st.get("replicas") == groups)  # fmt: skip

    return check


def _scale(sc: Scenario, name: str) -> Obj:
    return dict(sc.custom.get_namespaced_custom_object_scale(D.GROUP, D.VERSION, sc.namespace, PLURAL, name))


def _selector(set_name: str, role: str) -> str:
    return f"{D.SET}={set_name},{D.ROLE}={role},{WORKER_INDEX}=0"


def _check_status(scaler: Obj, set_name: str, role: str, groups: int) -> None:
    st = scaler.get("status") or {}
    assert st.get("replicas") == groups, f"{scaler['metadata']['name']} status.replicas {st.get('replicas')}, " \
        f"the role has {groups} group(s)"  # fmt: skip
    assert st.get("selector") == _selector(set_name, role), f"status.selector {st.get('selector')!r}"
    assert st.get("observedGeneration") == scaler["metadata"]["generation"], (st, scaler["metadata"]["generation"])
    assert P.condition(scaler, "Ready") == "True", f"Ready condition: {st.get('conditions')}"


@pytest.mark.requirement("LWS-DSEXT-001")
@pytest.mark.requirement("LWS-DSEXT-002")
@pytest.mark.requirement("LWS-DSEXT-003")
@pytest.mark.requirement("LWS-DSEXT-004")
def test_an_external_role_gets_a_scaler_that_drives_its_lws(scenario: Scenario, claim: Claims) -> None:
    """prefill External (groups of 2, an inline spec.replicas of 2 that must be ignored), decode
    Static with 1 replica. The scaler hpa-prefill appears, owned by the set, seeded at 1, /scale
    readable; a write of 3 through /scale gives prefill 3 groups and leaves decode at 1; its
    status follows (groups, leader selector, generation, Ready)."""
    sc = scenario
    ds = sc.create(D.dset("hpa", [_external("prefill", replicas=2), D.role("decode", 1)]))
    first = _scaler(sc, "hpa-prefill")
    with claim("LWS-DSEXT-001"):
        meta = first["metadata"]
        assert (meta.get("labels") or {}).get(D.SET) == "hpa", meta.get("labels")
        assert (meta.get("labels") or {}).get(D.ROLE) == "prefill", meta.get("labels")
        owners = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
        # the owner's apiVersion too: the garbage collector finds the owner through it
        assert [(r["apiVersion"], r["kind"], r["name"], r["uid"]) for r in owners] == [
            (ds["apiVersion"], "DisaggregatedSet", "hpa", ds["metadata"]["uid"])
        ], f"controller owner references: {owners}"
        assert owners[0].get("blockOwnerDeletion") is True, owners[0]
    with claim("LWS-DSEXT-002"):
        assert first["spec"].get("replicas") == 1, f"a fresh scaler seeded with spec {first['spec']}, expected 1"
        scale = _scale(sc, "hpa-prefill")  # what HPA reads before its first write
        assert scale.get("kind") == "Scale" and (scale.get("spec") or {}).get("replicas") == 1, scale
    roles = D.wait_roles(sc, "hpa", {"prefill": 1, "decode": 1}, "prefill at the seeded 1 group, decode at 1")
    with claim("LWS-DSEXT-001"):
        assert [s["metadata"]["name"] for s in _scalers(sc)] == ["hpa-prefill"], "a Static role got a scaler"
    with claim("LWS-DSEXT-003"):
        assert roles["prefill"]["spec"]["replicas"] == 1, "the role's inline spec.replicas 2 was not ignored"
    with claim("LWS-DSEXT-004"):
        written = _scaler(sc, "hpa-prefill", _written(1), "status written for its spec with the role's 1 group")
        _check_status(written, "hpa", "prefill", 1)

    sc.custom.patch_namespaced_custom_object_scale(D.GROUP, D.VERSION, sc.namespace, PLURAL, "hpa-prefill",
                                                   {"spec": {"replicas": 3}})  # fmt: skip
    with claim("LWS-DSEXT-003"):
        D.wait_roles(sc, "hpa", {"prefill": 3, "decode": 1}, "prefill at the 3 groups written to /scale, decode at 1")
    with claim("LWS-DSEXT-004"):
        after = _scaler(sc, "hpa-prefill", _written(3), "status written for the new spec with 3 groups")
        _check_status(after, "hpa", "prefill", 3)
        scale = _scale(sc, "hpa-prefill")
        assert (scale.get("status") or {}).get("replicas") == 3, f"/scale status {scale.get('status')}"
        assert (scale.get("status") or {}).get("selector") == _selector("hpa", "prefill"), scale.get("status")


@pytest.mark.requirement("LWS-DSEXT-005")
def test_a_static_role_switched_to_external_keeps_its_groups(scenario: Scenario) -> None:
    """prefill Static with 3 groups, then scaling.mode External: the scaler is seeded at 3 (not
    1), and the role's LWS never drops below 3 replicas."""
    sc = scenario
    sc.create(D.dset("flip", [D.role("prefill", 3, 2), D.role("decode", 1)]))
    D.wait_roles(sc, "flip", {"prefill": 3, "decode": 1}, "prefill at 3, decode at 1, Ready")
    D.json_patch(sc, "flip", [{"op": "add", "path": "/spec/roles/0/scaling", "value": EXTERNAL}])
    scaler = _scaler(sc, "flip-prefill")
    assert scaler["spec"].get("replicas") == 3, f"a role running 3 groups got a scaler seeded with {scaler['spec']}"

    def drained(objs: list[Obj]) -> str | None:
        prefill = [o for o in D.children(objs, "flip") if o["metadata"]["labels"].get(D.ROLE) == "prefill"]
        total = sum(o["spec"].get("replicas", 1) for o in prefill)
        return f"prefill LWSs at {total} replicas in all: {[o['metadata']['name'] for o in prefill]}" if total < 3 \
            else None  # fmt: skip

    leak = sc.observe_objects("LeaderWorkerSet", drained, D.window())
    assert leak is None, leak
    D.wait_roles(sc, "flip", {"prefill": 3, "decode": 1}, "prefill still at 3 after the switch, decode at 1")


@pytest.mark.requirement("LWS-DSEXT-006")
@pytest.mark.requirement("LWS-DSEXT-007")
@pytest.mark.requirement("LWS-DSEXT-008")
def test_the_scaler_follows_the_role_mode_and_the_set(scenario: Scenario, claim: Claims) -> None:
    """A deleted scaler comes back (a new object); prefill switched back to Static loses its
    scaler; deleting the set removes the scaler of its External role (garbage collection)."""
    sc = scenario
    sc.create(D.dset("life", [_external("prefill"), D.role("decode", 1)]))
    first = _scaler(sc, "life-prefill")
    D.wait_roles(sc, "life", {"prefill": 1, "decode": 1}, "both roles at 1, Ready")
    with claim("LWS-DSEXT-006"):
        sc.custom.delete_namespaced_custom_object(D.GROUP, D.VERSION, sc.namespace, PLURAL, "life-prefill")
        again = _scaler(sc, "life-prefill", lambda s: s["metadata"]["uid"] != first["metadata"]["uid"],
                        "recreated after its deletion (a new uid)")  # fmt: skip
        assert again["spec"].get("replicas") == 1, f"the recreated scaler seeded with {again['spec']}"
    with claim("LWS-DSEXT-007"):
        D.json_patch(sc, "life", [{"op": "replace", "path": "/spec/roles/0/scaling/mode", "value": "Static"}])
        _wait_scalers(sc, lambda objs: not objs or None, "no scaler once prefill is Static")
        D.json_patch(sc, "life", [{"op": "replace", "path": "/spec/roles/0/scaling/mode", "value": "External"}])
        _scaler(sc, "life-prefill", condition="created again once prefill is External again")
    with claim("LWS-DSEXT-008"):
        sc.custom.delete_namespaced_custom_object(D.GROUP, D.VERSION, sc.namespace, D.PLURAL, "life",
                                                  propagation_policy="Background")  # fmt: skip
        _wait_scalers(sc, lambda objs: not objs or None, "the set's scaler garbage-collected after the set's deletion")


@pytest.mark.requirement("LWS-DSEXT-009")
def test_a_scaler_the_user_made_is_neither_adopted_nor_overwritten(scenario: Scenario) -> None:
    """A scaler created by hand at the controller's name own-prefill (spec.replicas 2), then the set
    own with prefill External: a Warning event on the set names own-prefill, and for a while after
    it the scaler still has no owner, its spec.replicas 2 and no status from the controller."""
    sc = scenario
    sc.create({"apiVersion": D.API, "kind": KIND, "metadata": {"name": "own-prefill"}, "spec": {"replicas": 2}})
    ds = sc.create(D.dset("own", [_external("prefill"), D.role("decode", 1)]))

    def conflict(events: list[Obj]) -> Obj | None:
        return next((e for e in events if e.get("type") == "Warning"
                     and (e.get("involvedObject") or {}).get("uid")
                     == ds["metadata"]["uid"] and "own-prefill" in (e.get("message") or "")), None)  # fmt: skip

    sc.wait_in_namespace(sc.core.list_namespaced_event, "Events", conflict,
                         "a Warning event on DisaggregatedSet own naming own-prefill")  # fmt: skip

    def taken(objs: list[Obj]) -> str | None:
        s = next((o for o in objs if o["metadata"]["name"] == "own-prefill"), None)
        if s is None:
            return "own-prefill was deleted"
        if s["metadata"].get("ownerReferences") or s["spec"].get("replicas") != 2 or s.get("status"):
            return f"own-prefill adopted or overwritten: {s['metadata'].get('ownerReferences')}, " \
                f"spec {s['spec']}, status {s.get('status')}"  # fmt: skip
        return None

    leak = sc.observe_objects("DisaggregatedSetRoleScaler", taken, D.window())
    assert leak is None, leak


@pytest.mark.requirement("LWS-DSVALID-007")
def test_external_scaling_admission(scenario: Scenario, claim: Claims) -> None:
    """Webhook rules of External roles: slices > 1 refused (with slices 1 accepted); a scaler name
    over 253 characters refused; an inline spec.replicas > 1 accepted with a warning naming the
    scaler; an External role is spared the all-or-nothing replicas rule."""
    sc = scenario
    with claim("LWS-DSVALID-007"):
        rejected(sc, D.dset("sl", [_external("prefill"), D.role("decode", 1)], slices=2), 403, "spec.slices",
                 "spec.slices > 1 is not supported while any role has scaling.mode: External")  # fmt: skip
        accepted(sc, D.dset("sl", [_external("prefill"), D.role("decode", 1)], slices=1))
        accepted(sc, D.dset("sl", [D.role("prefill", 1), D.role("decode", 1)], slices=2))
    with claim("LWS-DSVALID-007"):
        long = "n" * (253 - len("-prefill") + 1)
        rejected(sc, D.dset(long, [_external("prefill"), D.role("decode", 1)]), 403, "spec.roles[0].name",
                 "exceeding 253 characters")  # fmt: skip
    with claim("LWS-DSVALID-007"):
        obj = D.dset("warn", [_external("prefill", replicas=3), D.role("decode", 1)])
        _out, _status, headers = sc.custom.create_namespaced_custom_object_with_http_info(
            D.GROUP, D.VERSION, sc.namespace, D.PLURAL, obj, dry_run="All")  # fmt: skip
        warning = str((headers or {}).get("Warning") or "")
        assert "spec.replicas is ignored" in warning and "warn-prefill" in warning, f"Warning header: {warning!r}"
    with claim("LWS-DSVALID-007"):
        accepted(sc, D.dset("mix", [_external("prefill", replicas=0), D.role("decode", 2)]))
        rejected(sc, D.dset("mix", [D.role("prefill", 0), D.role("decode", 2)]), 422,
                 "replicas must be zero for all non-External roles")  # fmt: skip
