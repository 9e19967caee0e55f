"""An admitted group whose release the API server refuses for a while (Kueue v0.17.0
pkg/controller/jobframework/reconciler.go startJob, pkg/controller/jobs/pod Run).

Why this matters: Kueue releases an admitted LWS group by removing the `kueue.x-k8s.io/admission`
scheduling gate from each of its pods, one write per pod. Such a write can fail for reasons that
pass (an API server restarting, a webhook or admission policy briefly refusing, etcd timing out),
and nothing else changes afterwards: the pods stay as they were, the Workload stays Admitted. A
controller that drops the error instead of retrying leaves the group gated for good, holding its
quota and doing no work. The fault is an admission policy of the test's own, bound to the test's
namespace only, that refuses the gate's removal until the test deletes its binding.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import ClusterHandle, Scenario, policy, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = [pytest.mark.cluster, pytest.mark.destructive]  # refuses a controller's writes for a while
Obj = dict[str, Any]
ADMISSION = "admissionregistration.k8s.io/v1"
GATE = P.ADMISSION_GATE


def _refuse_ungating(unique: str, namespace: str) -> tuple[Obj, Obj]:
    """A ValidatingAdmissionPolicy refusing every pod update that removes Kueue's admission gate,
    and its binding to `namespace` alone."""
    had = f"has(oldObject.spec.schedulingGates) && oldObject.spec.schedulingGates.exists(g, g.name == '{GATE}')"
    has = f"has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(g, g.name == '{GATE}')"
    refusal = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": f"{unique}-hold-gate"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods"]}
                ]
            },
            "validations": [{"expression": f"!({had}) || ({has})", "message": f"lwsc {unique}: {GATE} held"}],
        },
    }
    binding = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"{unique}-hold-gate"},
        "spec": {
            "policyName": f"{unique}-hold-gate",
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
        },
    }
    return refusal, binding


@pytest.mark.requirement("KUEUE-FAULT-001")
def test_an_admitted_group_whose_ungating_was_refused_runs_once_the_refusal_ends(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """The group is created without quota, so every pod exists and is gated before Kueue admits
    it. A dry-run removal of one pod's gate, refused, proves the policy in force; then the quota
    arrives, Kueue admits the group and its ungating writes are refused. After a few Kueue cycles
    with every pod still gated, the refusal ends and nothing else changes: Kueue must retry its
    failed writes on its own, and the group runs whole."""
    size = 3
    t = lwsc_cluster.topology
    quota = {"cpu": "100", "memory": "100Gi", t.gpu_resource: str(size)}
    refusal, binding = _refuse_ungating(unique, scenario.namespace)
    scenario.create(refusal)
    scenario.create(binding)
    K.plain_queue(scenario, unique, {**quota, t.gpu_resource: "0"})
    scenario.create(workloads.lws("held", replicas=1, size=size, gpus=1, gpu_resource=t.gpu_resource, queue=K.QUEUE))
    uid = K.lws_uid(scenario, "held")
    name = workloads.lws_workload_name("held", uid, 0)
    K.wait_pending(scenario, uid, name)
    pods = scenario.wait_pods(
        lambda pods: pods if len(P.live(pods)) == size and all(map(P.gated, pods)) else None,
        f"all {size} pods of the group created, every one gated (no quota yet)",
        selector=K.selector("held"),
    )
    _refused_now(scenario, pods[0], unique)
    K.set_quota(scenario, unique, quota)
    K.wait_workloads(scenario, uid, lambda ws: [w for w in ws if K.admitted(w)], f"{name} Admitted")
    escaped = scenario.observe_pods(K.leak(0), K.OBSERVE_SECONDS, K.selector("held"))
    if escaped:
        raise RuntimeError(f"{escaped} while the policy {unique}-hold-gate refused its ungating")
    scenario.objects.delete(binding["kind"], ADMISSION, binding["metadata"]["name"])
    scenario.wait_pods(
        K.all_ready(1, size),
        f"the refusal ended ({unique}-hold-gate unbound): every pod of the admitted group ungated and Ready",
        selector=K.selector("held"),
    )


def _refused_now(scenario: Scenario, pod: Obj, unique: str) -> None:
    """Wait until the test's policy refuses a dry-run removal of `pod`'s admission gate: the API
    server loads a new policy asynchronously, and the fault must be in place before Kueue admits."""
    gates = [g for g in pod["spec"].get("schedulingGates") or [] if g.get("name") != GATE]
    remove = [{"op": "replace", "path": "/spec/schedulingGates", "value": gates}]
    name = pod["metadata"]["name"]
    policy.until_refused(
        lambda: scenario.core.patch_namespaced_pod(name, scenario.namespace, remove, dry_run="All"),
        f"lwsc {unique}",
        f"{unique}-hold-gate",
    )
