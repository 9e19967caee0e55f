"""A Kueue-managed LWS keeps the scheduling shape of its templates (Kueue v0.17.0
pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go, ValidateUpdate and
validateImmutablePodTemplateSpec; the shape is jobframework.ValidateImmutablePodGroupPodSpec's).

Why: Kueue builds each group's Workload (its podSets, the quota it reserves) from the templates'
requests when the group is created, and never recomputes them. A change of requests, of init
containers' requests, or a leader template added or removed would run pods whose needs the admitted
quota does not cover, so the webhook refuses them while the LWS is managed; an image change keeps
the shape and passes. The refusal of a leader template added or removed must be a validation
answer: a webhook that crashes on the missing template answers a server error instead, and a
server error is no refusal (`lws_conformance.k8s.admission`).
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import LWS_API, Claims, Scenario, admission, images, workloads

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
LWT = "/spec/leaderWorkerTemplate"
LEADER_PATH = "spec.leaderWorkerTemplate.leaderTemplate"
# what is changed: (JSON patch path of a cpu request, the field path the refusal must name)
REQUEST_CHANGES = {
    "a worker container's requests": (
        f"{LWT}/workerTemplate/spec/containers/0/resources/requests/cpu",
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests",
    ),
    "a leader container's requests": (
        f"{LWT}/leaderTemplate/spec/containers/0/resources/requests/cpu",
        "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.requests",
    ),
    "a worker init container's requests": (
        f"{LWT}/workerTemplate/spec/initContainers/0/resources/requests/cpu",
        "spec.leaderWorkerTemplate.workerTemplate.spec.initContainers[0].resources.requests",
    ),
}


def _with_init_container(obj: Obj) -> Obj:
    """The worker template gets an init container with requests of its own (a shell that exits at
    once, so the pods also start on a real kubelet)."""
    spec = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec["initContainers"] = [
        {
            "name": "init",
            "image": images.ref("agnhost"),
            "command": ["/bin/sh", "-c", "true"],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        }
    ]
    return obj


def _templates(scenario: Scenario, name: str) -> Obj:
    lwt = scenario.lws(name)["spec"]["leaderWorkerTemplate"]
    return {k: lwt.get(k) for k in ("leaderTemplate", "workerTemplate")}


def _json_patch(scenario: Scenario, name: str, ops: list[Obj], dry_run: bool = False) -> Any:
    """Apply JSON patch `ops` to LWS `name` (with `dry_run` the webhooks answer as for a real update,
    nothing is stored)."""
    if dry_run:
        return scenario.objects.patch("LeaderWorkerSet", LWS_API, name, ops, dry_run=True)
    return scenario.patch_lws(name, ops)


def _refused(scenario: Scenario, name: str, patch: list[Obj], what: str, field: str) -> None:
    out = admission.answer(lambda: _json_patch(scenario, name, patch))
    problem = admission.refusal_problem(out, (field, "immutable"))
    assert problem is None, f"{what} of managed LWS {name}: {problem}"


@pytest.mark.requirement("KUEUE-VALID-005")
@pytest.mark.requirement("KUEUE-VALID-006")
def test_template_shape_of_a_managed_lws_is_immutable(scenario: Scenario, unique: str, claim: Claims) -> None:
    """Managed LWS `ts` (leader + worker with an init container): each request change refused
    naming its field, templates unchanged, an image change accepted; its leader template removed:
    refused. Managed worker-only LWS `wo`: a leader template added: refused. Unmanaged `tu`: a
    request change accepted."""
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi"})
    scenario.create(_with_init_container(workloads.lws("ts", replicas=1, size=2, queue=K.QUEUE)))
    scenario.create(workloads.lws("wo", replicas=1, size=2, queue=K.QUEUE, leader=False))
    before = _templates(scenario, "ts")

    for what, (path, field) in REQUEST_CHANGES.items():
        with claim("KUEUE-VALID-005"):
            _refused(scenario, "ts", [{"op": "replace", "path": path, "value": "200m"}], f"a change of {what}", field)
    with claim("KUEUE-VALID-006"):
        _refused(
            scenario,
            "ts",
            [{"op": "remove", "path": f"{LWT}/leaderTemplate"}],
            "the leader template removed",
            LEADER_PATH,
        )
    with claim("KUEUE-VALID-006"):
        leader = {"spec": {"containers": [{"name": "leader", **_worker_container(scenario, "wo")}]}}
        _refused(
            scenario,
            "wo",
            [{"op": "add", "path": f"{LWT}/leaderTemplate", "value": leader}],
            "a leader template added",
            LEADER_PATH,
        )
        assert "leaderTemplate" not in scenario.lws("wo")["spec"]["leaderWorkerTemplate"], (
            "worker-only LWS wo has a leader template after the refused update"
        )
    after = _templates(scenario, "ts")
    for rid in ("KUEUE-VALID-005", "KUEUE-VALID-006"):
        with claim(rid):
            assert after == before, f"managed LWS ts changed its templates through refused updates: {after} != {before}"

    with claim("KUEUE-VALID-005"):
        # A dry run: no rollout starts and no kubelet is asked for the other image.
        image_path = f"{LWT}/workerTemplate/spec/containers/0/image"
        image = [{"op": "replace", "path": image_path, "value": images.ref("agnhost")}]
        out = admission.answer(lambda: _json_patch(scenario, "ts", image, dry_run=True))
        assert out.kind == "accepted", f"an image change of managed LWS ts was not accepted: {out.describe()}"

    with claim("KUEUE-VALID-005"):
        scenario.create(workloads.lws("tu", replicas=1, size=2))
        path, _field = REQUEST_CHANGES["a worker container's requests"]
        out = admission.answer(lambda: _json_patch(scenario, "tu", [{"op": "replace", "path": path, "value": "200m"}]))
        assert out.kind == "accepted", f"a requests change of unmanaged LWS tu was refused: {out.describe()}"
        requests = _templates(scenario, "tu")["workerTemplate"]["spec"]["containers"][0]["resources"]["requests"]
        assert requests["cpu"] == "200m", f"LWS tu stored cpu {requests['cpu']!r} after the accepted change"


def _worker_container(scenario: Scenario, name: str) -> Obj:
    """The worker container of LWS `name`, its name aside (a leader template built from it)."""
    c = dict(scenario.lws(name)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0])
    c.pop("name", None)
    return c
