"""Shared pieces of the DisaggregatedSet suite: the object builder, child lookups and waits.

Not a test module. A DisaggregatedSet (LWS >= v0.9.0) serves each role with one LWS per revision,
named <set>-<revision>-<role> (KEP-766; from v0.10.0 <set>-<slice>-<revision>-<role>, slice 0 by
default: `child_name`) and labelled disaggregatedset.x-k8s.io/{name,role,revision}; its headless
Services are named after the child LWS, <child>-prv.
"""

from __future__ import annotations

import copy
from typing import Any

from lws_conformance.testing import Scenario, admission, images, reached

Obj = dict[str, Any]
GROUP, VERSION, PLURAL = "disaggregatedset.x-k8s.io", "v1", "disaggregatedsets"

API = f"{GROUP}/{VERSION}"

PREFIX = "disaggregatedset.x-k8s.io/"
SET, ROLE, REVISION, SLICE = PREFIX + "name", PREFIX + "role", PREFIX + "revision", PREFIX + "slice"
# "Must never happen" window: the controller creates Services ~1 s after the roles turn ready
# (measured on the local cluster, 2 shared cores); 5 s covers several reconciles, scaled.

OBSERVE_SECONDS = 5.0


# v0.10.0 docs (site/content/en/docs/examples/disaggregatedset.md, PR #951): "The DisaggregatedSet
# controller names each child LeaderWorkerSet using a slice index ... <DisaggregatedSet-name>-<slice>-
# <revision-hash>-<role-name> ... Controllers at v0.9.0 or older predate slices and omit the <slice>
# segment."

SLICED_NAMES_SINCE = "v0.10.0"


def _lws_reached(sc: Scenario, mark: str, unknown: bool) -> bool:
    """Does the LWS under test contain what `mark` introduced (`unknown` when its version is not known)?"""
    have = (sc.cluster.versions or {}).get("lws")
    return unknown if have is None else reached(have, mark)


def sliced(sc: Scenario) -> bool:
    """Does the LWS under test name DisaggregatedSet children with a slice index (v0.10.0+)?"""
    return _lws_reached(sc, SLICED_NAMES_SINCE, unknown=True)


# LWS PR #966 (main e9d2c6f, the 6th commit after v0.10.0): the webhook refuses a set whose
# generated Service name <set>-<slice>-<revision>-<role>-prv would exceed 63 characters.

GENERATED_NAMES_SINCE = "v0.10.0+main.6"

GENERATED_NAME_STATUS = 403  # the webhook's refusal (the schema's are 422)

GENERATED_NAME_MESSAGE = "would exceed the DNS-1035 limit of 63 characters"


def checks_generated_names(sc: Scenario) -> bool:
    """Does the LWS under test refuse sets whose generated names would not fit (LWS-DSVALID-005)?"""
    return _lws_reached(sc, GENERATED_NAMES_SINCE, unknown=False)


def child_name(sc: Scenario, set_name: str, revision: str, role: str, slice_index: int = 0) -> str:
    """The child LWS of `role` at `revision`, as this LWS version names it."""
    return f"{set_name}-{slice_index}-{revision}-{role}" if sliced(sc) else f"{set_name}-{revision}-{role}"


def container(name: str, image: str | None = None) -> Obj:
    requests = {"cpu": "100m", "memory": "64Mi"}
    return {"name": name, "image": image or images.ref("workload"), "resources": {"requests": requests}}


def role(name: str, replicas: int | None = 1, size: int = 1, *, image: str | None = None, **extra: Any) -> Obj:
    """One role: an LWS spec with a worker template (and a leader template when size > 1)."""
    lwt: Obj = {"size": size, "workerTemplate": {"spec": {"containers": [container("w", image)]}}}
    if size > 1:
        lwt["leaderTemplate"] = {"spec": {"containers": [container("l", image)]}}
    spec: Obj = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    out: Obj = {"name": name, "spec": spec}
    for key, value in extra.items():
        out[key] = copy.deepcopy(value)
    return out


def rollout(r: Obj, max_surge: int | str, max_unavailable: int | str) -> Obj:
    r["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
    }
    return r


def dset(name: str, roles: list[Obj], **spec: Any) -> Obj:
    return {"apiVersion": API, "kind": "DisaggregatedSet", "metadata": {"name": name}, "spec": {"roles": roles, **spec}}


def get(sc: Scenario, name: str) -> Obj:
    return sc.objects.get("DisaggregatedSet", API, name)


def patch(sc: Scenario, name: str, body: Any) -> Obj:
    return sc.objects.patch("DisaggregatedSet", API, name, body)


def json_patch(sc: Scenario, name: str, ops: list[Obj]) -> None:
    patch(sc, name, ops)


def set_image(sc: Scenario, name: str, role_name: str, image: str) -> None:
    """Change one role's template (a JSON patch, so the other roles stay as they are)."""
    roles = get(sc, name)["spec"]["roles"]
    i = next(k for k, r in enumerate(roles) if r["name"] == role_name)
    lwt = roles[i]["spec"]["leaderWorkerTemplate"]
    ops = [
        {
            "op": "replace",
            "path": f"/spec/roles/{i}/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image",
            "value": image,
        }
    ]
    if "leaderTemplate" in lwt:
        ops.append(
            {
                "op": "replace",
                "path": f"/spec/roles/{i}/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/image",
                "value": image,
            }
        )
    json_patch(sc, name, ops)


def children(objs: list[Obj], set_name: str) -> list[Obj]:
    return [o for o in objs if (o["metadata"].get("labels") or {}).get(SET) == set_name]


def ready(lws: Obj) -> bool:
    spec_replicas = lws["spec"].get("replicas", 1)
    return int((lws.get("status") or {}).get("readyReplicas", 0)) == spec_replicas


def wait_roles_check(mine: list[Obj], want: dict[str, int]) -> dict[str, Obj] | None:
    """role -> LWS if `mine` is exactly one LWS per role of `want`, all of one revision, each
    with the wanted replicas and ready; else None."""
    by_role = {o["metadata"]["labels"].get(ROLE): o for o in mine}
    if len(mine) != len(want) or set(by_role) != set(want):
        return None
    if len({o["metadata"]["labels"].get(REVISION) for o in mine}) != 1:
        return None
    ok = all(o["spec"].get("replicas", 1) == want[r] and ready(o) for r, o in by_role.items())
    return by_role if ok else None


def wait_lws(sc: Scenario, check: Any, condition: str, timeout: float = 90) -> Any:
    return sc.wait_objects("LeaderWorkerSet", check, condition, timeout, what=f"LWSs in {sc.namespace}")


def wait_replicas(sc: Scenario, set_name: str, want: dict[str, int], condition: str, timeout: float = 90) -> None:
    """Wait until each role of `want` has LWSs whose spec.replicas add up to the wanted replicas
    (whether or not they are ready yet)."""

    def carried(objs: list[Obj]) -> bool | None:
        have: dict[str, int] = {}
        for o in children(objs, set_name):
            r = o["metadata"]["labels"].get(ROLE)
            have[r] = have.get(r, 0) + int(o["spec"].get("replicas", 1))
        return have == want or None

    wait_lws(sc, carried, condition, timeout)


def wait_roles(
    sc: Scenario, set_name: str, want: dict[str, int], condition: str, timeout: float = 90
) -> dict[str, Obj]:
    """Wait until the set has exactly one ready LWS per role of `want` (see `wait_roles_check`)."""
    result: dict[str, Obj] = wait_lws(
        sc, lambda objs: wait_roles_check(children(objs, set_name), want), condition, timeout
    )
    return result


def services(objs: list[Obj], set_name: str, revision: str) -> list[Obj]:
    """The set's per-role Services (<set>-<revision>-<role>-prv) of one revision."""
    return [
        s
        for s in children(objs, set_name)
        if s["metadata"]["name"].endswith("-prv") and s["metadata"]["labels"].get(REVISION) == revision
    ]


def window() -> float:
    """A "must never happen" window in plain seconds (`observe` multiplies it by timeouts.scale)."""
    return OBSERVE_SECONDS


# -- admission (server-side dry-run creates) ---------------------------------------------------
def admission_outcome(call: Any) -> tuple[Obj | None, int | None, str]:
    """(object, None, "") when accepted; (None, status, message) when refused as invalid. Any other
    answer fails here (a 5xx is no refusal) or is an `error` (an unreachable webhook)."""
    out = admission.answer(call)
    if out.obj is not None:
        return out.obj, None, ""
    admission.assert_refused(out)
    return None, out.status, out.message


def dry_create(sc: Scenario, obj: Obj) -> tuple[Obj | None, int | None, str]:
    return admission_outcome(
        lambda: sc.custom.create_namespaced_custom_object(GROUP, VERSION, sc.namespace, PLURAL, obj, dry_run="All")
    )


def accepted(sc: Scenario, obj: Obj) -> Obj:
    out, status, message = dry_create(sc, obj)
    assert out is not None, f"{[r['name'] for r in obj['spec']['roles']]} rejected ({status}): {message}"
    return out


def rejected(sc: Scenario, obj: Obj, status: int, *parts: str) -> str:
    out, got, message = dry_create(sc, obj)
    assert out is None, f"accepted, expected a {status} naming {parts}"
    assert got == status, f"rejected with {got}, expected {status}: {message}"
    for part in parts:
        assert part in message, f"message {message!r} lacks {part!r}"
    return message
