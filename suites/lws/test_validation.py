"""The LWS API contract: defaulting and validation (LWS leaderworkerset_types.go,
pkg/webhooks/leaderworkerset_webhook.go@v0.9.0).

Creates go through server-side dry-run (`dryRun=All`): the request passes the mutating webhook, the
CRD schema and the validating webhook exactly like a real create, but nothing is stored, so each
case costs one round trip. Update rules need a stored object, so those tests create a real LWS
with replicas 0 (no pods) and dry-run the update against it.

Every rejection is checked for who rejected it (the `vleaderworkerset.kb.io` webhook, HTTP 403, or
the API server's schema validation, HTTP 422), the field path and the documented message; every
rule family also has accepted cases next to the rejected ones, so a webhook that rejected
everything would fail too. A 5xx answer is no rejection (`lws_conformance.k8s.admission`): a
webhook answering an internal error fails the rule, an unreachable webhook is an `error`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    LWS_GROUP,
    LWS_PLURAL,
    LWS_VERSION,
    Claims,
    Scenario,
    admission,
    parse_version,
    workloads,
)
from lws_conformance.testing import Answer as Outcome

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
WEBHOOK_DENIED = 'admission webhook "vleaderworkerset.kb.io" denied the request: '
RUC = "spec.rolloutStrategy.rollingUpdateConfiguration"
SGS = "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize"  # sic: capital S, as the webhook writes it
SUBGROUP_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"
# Up to v0.7.0 the webhook spelled this "must be grater than or equal to 0"; fixed in v0.8.0.
NONNEG = "must be greater than or equal to 0"
NONNEG_BEFORE_V080 = "must be grater than or equal to 0"
DELETE = object()  # in a patch: remove the key (None sends an explicit JSON null)


# -- helpers ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reject:
    """An expected rejection: by the validating webhook (403) or by the CRD/API schema (422)."""

    by: str
    field: str
    message: str


def minimal(name: str = "v") -> Obj:
    """An LWS with only a workerTemplate: everything else is left to defaulting."""
    obj: Obj = workloads.lws(name, leader=False)
    obj["spec"].pop("replicas")
    obj["spec"]["leaderWorkerTemplate"].pop("size")
    return obj


def merge(dst: Obj, patch: Obj) -> Obj:
    """Deep-merge `patch` into `dst` in place (DELETE removes a key, None sets an explicit null)."""
    for key, value in patch.items():
        if value is DELETE:
            dst.pop(key, None)
        elif isinstance(value, dict) and isinstance(dst.get(key), dict):
            merge(dst[key], value)
        else:
            dst[key] = copy.deepcopy(value)
    return dst


def build(spec: Obj, name: str = "v", annotations: dict[str, str] | None = None) -> Obj:
    obj = merge(minimal(name), {"spec": spec})
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def dig(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return DELETE
        cur = cur[part]
    return cur


def _outcome(call: Any) -> Outcome:
    """The API server's answer (any error status; a 409 conflict is raised for dry_update)."""
    return admission.answer(call)


def dry_create(scenario: Scenario, obj: Obj) -> Outcome:
    return _outcome(
        lambda: scenario.custom.create_namespaced_custom_object(
            LWS_GROUP, LWS_VERSION, scenario.namespace, LWS_PLURAL, obj, dry_run="All"
        )
    )


def dry_update(scenario: Scenario, name: str, patch: Obj, attempts: int = 5) -> Outcome:
    """Read the stored LWS, apply `patch` to it and send it back as a dry-run PUT. A 409 means
    the controller wrote the object in between (optimistic concurrency): read again and retry."""
    for _ in range(attempts):
        current = scenario.lws(name)
        merge(current, patch)
        try:
            return _outcome(
                lambda current=current: scenario.custom.replace_namespaced_custom_object(
                    LWS_GROUP, LWS_VERSION, scenario.namespace, LWS_PLURAL, name, current, dry_run="All"
                )
            )
        except ApiException as exc:
            if exc.status != 409:
                raise
    raise AssertionError(f"LWS {name}: dry-run update kept conflicting (409) after {attempts} attempts")


def assert_rejected(out: Outcome, want: Reject, lws_version: str) -> None:
    message = want.message
    if message == NONNEG and parse_version(lws_version) < (0, 8, 0):
        message = NONNEG_BEFORE_V080
    problem = admission.refusal_problem(out)
    assert problem is None, f"{problem}; expected {want}"
    if want.by == "webhook":
        assert out.status == 403 and out.message.startswith(WEBHOOK_DENIED), (
            f"expected a denial by the LWS validating webhook, got {out.status}: {out.message}"
        )
    else:
        assert out.status == 422 and " is invalid: " in out.message, (
            f"expected a schema rejection (422), got {out.status}: {out.message}"
        )
    pattern = re.escape(want.field) + r": (Invalid|Unsupported) value: .*?" + re.escape(message)
    assert re.search(pattern, out.message), f"expected `{want.field}: ... {message}` in: {out.message}"


def assert_accepted(out: Outcome, keeps: dict[str, Any]) -> Obj:
    assert out.obj is not None, f"rejected ({out.status}), but the API must accept it: {out.message}"
    for path, value in keeps.items():
        assert dig(out.obj, path) == value, f"{path}: {dig(out.obj, path)!r}, expected {value!r}"
    return out.obj


def judge(claim: Claims, rid: str, out: Outcome, expect: Reject | dict[str, Any], lws_version: str) -> None:
    """Requirement `rid` is the rule: the object is accepted, or refused as invalid (a 403 webhook
    denial or a 422 Invalid, not a 5xx) for a reason naming the rule's field; how the refusal is
    made (layer, field path, message) is LWS-VALID-013, judged only when there was a refusal."""
    with claim(rid):
        if isinstance(expect, Reject):
            problem = admission.refusal_problem(out, (expect.field.rsplit(".", 1)[-1],))
            assert problem is None, f"{problem}; expected {expect}"
        else:
            assert_accepted(out, expect)
    if isinstance(expect, Reject) and out.refused:
        with claim("LWS-VALID-013"):
            assert_rejected(out, expect, lws_version)


def check(scenario: Scenario, obj: Obj, expect: Reject | dict[str, Any]) -> None:
    out = dry_create(scenario, obj)
    if isinstance(expect, Reject):
        assert_rejected(out, expect, scenario.cluster.versions["lws"])
    else:
        assert_accepted(out, expect)


def ruc(**values: Any) -> Obj:
    return {"rolloutStrategy": {"rollingUpdateConfiguration": values}}


def sub_groups(size: int, sub_group_size: Any, policy_type: str | None = None) -> Obj:
    policy: Obj = {"subGroupSize": sub_group_size}
    if policy_type:
        policy["subGroupPolicyType"] = policy_type
    return {"leaderWorkerTemplate": {"size": size, "subGroupPolicy": policy}}


# -- defaulting -------------------------------------------------------------------------------
@pytest.mark.requirement("LWS-DEFAULT-001")
@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(DELETE, "RecreateGroupOnPodRestart", id="omitted"),
        pytest.param("Default", "None", id="Default-rewritten-to-None"),
        pytest.param("None", "None", id="None-kept"),
        pytest.param("RecreateGroupOnPodRestart", "RecreateGroupOnPodRestart", id="RGOPR-kept"),
    ],
)
def test_restart_policy_defaulting(scenario: Scenario, given: Any, expected: str) -> None:
    """An omitted restartPolicy becomes RecreateGroupOnPodRestart; the deprecated Default becomes None."""
    obj = build({"leaderWorkerTemplate": {"restartPolicy": given}})
    check(scenario, obj, {"spec.leaderWorkerTemplate.restartPolicy": expected})


@pytest.mark.requirement("LWS-DEFAULT-001")
def test_restart_policy_default_is_rewritten_on_update(scenario: Scenario) -> None:
    """The defaulting webhook also runs on UPDATE: switching to Default stores None."""
    scenario.create(build({"replicas": 0, "leaderWorkerTemplate": {"restartPolicy": "RecreateGroupOnPodRestart"}}))
    out = dry_update(scenario, "v", {"spec": {"leaderWorkerTemplate": {"restartPolicy": "Default"}}})
    assert_accepted(out, {"spec.leaderWorkerTemplate.restartPolicy": "None"})


FULL_ROLLOUT = {
    "spec.rolloutStrategy.type": "RollingUpdate",
    f"{RUC}.maxUnavailable": 1,
    f"{RUC}.maxSurge": 0,
    f"{RUC}.partition": 0,
}


@pytest.mark.requirement("LWS-DEFAULT-002")
@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param({}, FULL_ROLLOUT, id="omitted"),
        pytest.param({"rolloutStrategy": {"type": "RollingUpdate"}}, FULL_ROLLOUT, id="type-only"),
        pytest.param({"rolloutStrategy": {}}, FULL_ROLLOUT, id="empty-strategy"),
        pytest.param(ruc(maxSurge=2), {**FULL_ROLLOUT, f"{RUC}.maxSurge": 2}, id="partial-config"),
        pytest.param(
            {"replicas": 2, **ruc(maxUnavailable="50%")},
            {**FULL_ROLLOUT, f"{RUC}.maxUnavailable": "50%"},
            id="percent-kept",
        ),
    ],
)
def test_rollout_strategy_defaulting(scenario: Scenario, given: Obj, expected: dict[str, Any]) -> None:
    """Rollout defaults to RollingUpdate with maxUnavailable 1, maxSurge 0, partition 0; set fields stay."""
    check(scenario, build(given), expected)


@pytest.mark.requirement("LWS-DEFAULT-003")
@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(DELETE, "Shared", id="omitted"),
        pytest.param({}, "Shared", id="empty-networkConfig"),
        pytest.param({"subdomainPolicy": "UniquePerReplica"}, "UniquePerReplica", id="UniquePerReplica-kept"),
    ],
)
def test_network_config_defaults_to_shared(scenario: Scenario, given: Any, expected: str) -> None:
    """A missing networkConfig or subdomainPolicy becomes Shared (the webhook fills it before the
    schema's `required: [subdomainPolicy]` is checked, so `networkConfig: {}` is accepted)."""
    check(scenario, build({"networkConfig": given}), {"spec.networkConfig.subdomainPolicy": expected})


@pytest.mark.requirement("LWS-DEFAULT-003")
@pytest.mark.parametrize(
    "patch",
    [
        pytest.param({"subdomainPolicy": None}, id="explicit-null"),
        pytest.param(DELETE, id="networkConfig-removed"),
    ],
)
def test_null_subdomain_policy_on_update_becomes_shared(scenario: Scenario, patch: Any) -> None:
    """Clearing subdomainPolicy on an UniquePerReplica LWS is accepted and stored as Shared, so the
    webhook's "cannot set subdomainPolicy as null" rule is unreachable (webhook ValidateUpdate@v0.9.0)."""
    scenario.create(build({"replicas": 0, "networkConfig": {"subdomainPolicy": "UniquePerReplica"}}))
    out = dry_update(scenario, "v", {"spec": {"networkConfig": patch}})
    assert_accepted(out, {"spec.networkConfig.subdomainPolicy": "Shared"})


@pytest.mark.requirement("LWS-DEFAULT-004")
@pytest.mark.parametrize(
    ("spec", "path", "expected"),
    [
        pytest.param({}, "spec.replicas", 1, id="replicas"),
        pytest.param({}, "spec.leaderWorkerTemplate.size", 1, id="size"),
        pytest.param({}, "spec.startupPolicy", "LeaderCreated", id="startupPolicy"),
        pytest.param(
            sub_groups(4, 2),
            "spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType",
            "LeaderWorker",
            id="subGroupPolicyType",
        ),
    ],
)
def test_schema_defaults(scenario: Scenario, spec: Obj, path: str, expected: Any) -> None:
    """replicas, size, startupPolicy and subGroupPolicyType defaults come from the CRD schema."""
    check(scenario, build(spec), {path: expected})


# -- validation on create and update ----------------------------------------------------------
@pytest.mark.requirement("LWS-VALID-001")
@pytest.mark.parametrize(
    ("name", "expect"),
    [
        pytest.param("2cube", Reject("webhook", "metadata.name", "a DNS-1035 label must consist of"), id="digit-first"),
        pytest.param("a.b", Reject("webhook", "metadata.name", "a DNS-1035 label must consist of"), id="dot"),
        pytest.param("a" * 64, Reject("webhook", "metadata.name", "must be no more than 63 characters"), id="64-chars"),
        pytest.param("cube-2", {"metadata.name": "cube-2"}, id="valid"),
        pytest.param("a" * 63, {"metadata.name": "a" * 63}, id="63-chars"),
    ],
)
def test_name_must_be_a_dns1035_label(scenario: Scenario, name: str, expect: Reject | dict[str, Any]) -> None:
    """The LWS name becomes the headless Service name, so it must be a DNS-1035 label."""
    check(scenario, build({}, name=name), expect)


@pytest.mark.requirement("LWS-VALID-002")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        # The apiserver's scale-subresource check (specReplicasPath) rejects this before the webhook
        # runs, so the webhook's "replicas must be equal or greater than 0" is never returned.
        pytest.param(
            {"replicas": -1},
            Reject("schema", "spec.replicas", "should be a non-negative integer"),
            id="replicas-negative",
        ),
        pytest.param(
            {"leaderWorkerTemplate": {"size": 0}},
            Reject("webhook", "spec.leaderWorkerTemplate.size", "size must be equal or greater than 1"),
            id="size-0",
        ),
        pytest.param(
            {"leaderWorkerTemplate": {"size": -3}},
            Reject("webhook", "spec.leaderWorkerTemplate.size", "size must be equal or greater than 1"),
            id="size-negative",
        ),
        # 1000000 x 2148 > MaxInt32 with replicas inside v0.10.0's CRD bound (Maximum=1000000): the
        # product rule itself answers on every release (2147483647 x 2 hit that bound first, 422).
        pytest.param(
            {"replicas": 1000000, "leaderWorkerTemplate": {"size": 2148}},
            Reject(
                "webhook", "spec.replicas", "the product of replicas and worker replicas must not exceed 2147483647"
            ),
            id="replicas-times-size-overflows",
        ),
        pytest.param({"replicas": 0}, {"spec.replicas": 0}, id="replicas-0"),
        pytest.param({"leaderWorkerTemplate": {"size": 1}}, {"spec.leaderWorkerTemplate.size": 1}, id="size-1"),
    ],
)
def test_replicas_and_size_bounds(scenario: Scenario, spec: Obj, expect: Reject | dict[str, Any]) -> None:
    """replicas >= 0, size >= 1 and replicas x size <= MaxInt32."""
    check(scenario, build(spec), expect)


@pytest.mark.requirement("LWS-VALID-003")
def test_replicas_upper_bound(scenario: Scenario) -> None:
    """replicas > 1000000 is rejected (v0.10.0: CRD maximum and webhook check), naming spec.replicas.

    Which layer answers first (schema 422 or webhook 403) is not pinned by the docs, so both are
    accepted here; the field and the bound must appear either way. 1000000 itself is allowed.
    """
    out = dry_create(scenario, build({"replicas": 1000001}))
    assert out.obj is None, "replicas 1000001 was accepted"
    assert out.status in (403, 422), f"{out.status}: {out.message}"
    assert "spec.replicas" in out.message and "1000000" in out.message, out.message
    assert_accepted(dry_create(scenario, build({"replicas": 1000000})), {"spec.replicas": 1000000})


@pytest.mark.requirement("LWS-VALID-004")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        pytest.param(
            ruc(maxUnavailable=-1),
            Reject("webhook", f"{RUC}.maxUnavailable", NONNEG),
            id="maxUnavailable-negative",
        ),
        pytest.param(ruc(maxSurge=-1), Reject("webhook", f"{RUC}.maxSurge", NONNEG), id="maxSurge-negative"),
        pytest.param(
            ruc(maxUnavailable="abc%"),
            Reject("webhook", f"{RUC}.maxUnavailable", PERCENT_MSG),
            id="maxUnavailable-bad-percent",
        ),
        pytest.param(
            ruc(maxSurge="5.5%"), Reject("webhook", f"{RUC}.maxSurge", PERCENT_MSG), id="maxSurge-bad-percent"
        ),
        pytest.param(
            ruc(maxUnavailable="101%"),
            Reject("webhook", f"{RUC}.maxUnavailable", "must not be greater than 100%"),
            id="maxUnavailable-101%",
        ),
        pytest.param(
            ruc(maxSurge="101%"),
            Reject("webhook", f"{RUC}.maxSurge", "must not be greater than 100%"),
            id="maxSurge-101%",
        ),
        pytest.param(
            {"replicas": 2, **ruc(maxUnavailable=10, maxSurge=10)},
            {f"{RUC}.maxUnavailable": 10, f"{RUC}.maxSurge": 10},
            id="larger-than-replicas-allowed",
        ),
        pytest.param(
            ruc(maxUnavailable="100%", maxSurge="100%"),
            {f"{RUC}.maxUnavailable": "100%", f"{RUC}.maxSurge": "100%"},
            id="100%-allowed",
        ),
    ],
)
def test_max_unavailable_and_max_surge_bounds(scenario: Scenario, spec: Obj, expect: Reject | dict[str, Any]) -> None:
    """maxUnavailable/maxSurge: non-negative integers or well-formed percents of at most 100%."""
    check(scenario, build(spec), expect)


ZERO_BOTH = "must not be 0 when `maxSurge` is 0"


@pytest.mark.requirement("LWS-VALID-005")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        pytest.param(
            ruc(maxUnavailable=0, maxSurge=0), Reject("webhook", f"{RUC}.maxUnavailable", ZERO_BOTH), id="0-and-0"
        ),
        pytest.param(
            {"replicas": 3, **ruc(maxUnavailable="25%", maxSurge=0)},
            Reject("webhook", f"{RUC}.maxUnavailable", ZERO_BOTH),
            id="25%-of-3-rounds-down-to-0",
        ),
        pytest.param(
            {"replicas": 4, **ruc(maxUnavailable="0%", maxSurge="0%")},
            Reject("webhook", f"{RUC}.maxUnavailable", ZERO_BOTH),
            id="0%-and-0%",
        ),
        pytest.param(
            {"replicas": 4, **ruc(maxUnavailable="25%", maxSurge=0)},
            {f"{RUC}.maxUnavailable": "25%"},
            id="25%-of-4-is-1",
        ),
        pytest.param(
            {"replicas": 3, **ruc(maxUnavailable=0, maxSurge="1%")}, {f"{RUC}.maxSurge": "1%"}, id="surge-rounds-up"
        ),
        pytest.param(
            {"replicas": 0, **ruc(maxUnavailable=0, maxSurge=0)}, {f"{RUC}.maxUnavailable": 0}, id="replicas-0-allowed"
        ),
    ],
)
def test_max_unavailable_and_max_surge_not_both_zero(
    scenario: Scenario, spec: Obj, expect: Reject | dict[str, Any]
) -> None:
    """maxUnavailable (scaled, rounded down) and maxSurge (scaled, rounded up) may not both be 0,
    unless replicas is 0; the error is reported on maxUnavailable."""
    check(scenario, build(spec), expect)


@pytest.mark.requirement("LWS-VALID-006")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        pytest.param(ruc(partition=-1), Reject("webhook", f"{RUC}.partition", NONNEG), id="negative"),
        pytest.param({"replicas": 2, **ruc(partition=5)}, {f"{RUC}.partition": 5}, id="above-replicas-allowed"),
    ],
)
def test_partition_must_not_be_negative(scenario: Scenario, spec: Obj, expect: Reject | dict[str, Any]) -> None:
    """partition >= 0; a partition above replicas is allowed (it simply holds every group back)."""
    check(scenario, build(spec), expect)


@pytest.mark.requirement("LWS-VALID-007")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        pytest.param(
            sub_groups(4, -1), Reject("webhook", SGS, "subGroupSize must be equal or greater than 1"), id="negative"
        ),
        pytest.param(
            sub_groups(6, 4),
            Reject("webhook", SGS, "size or size - 1 must be divisible by subGroupSize"),
            id="not-divisible",
        ),
        pytest.param(
            sub_groups(2, 3), Reject("webhook", SGS, "subGroupSize cannot be larger than size"), id="larger-than-size"
        ),
        pytest.param(
            sub_groups(4, 2), {"spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize": 2}, id="size-divisible"
        ),
        pytest.param(
            sub_groups(5, 2), {"spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize": 2}, id="size-1-divisible"
        ),
        pytest.param(
            sub_groups(3, 3), {"spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize": 3}, id="equal-to-size"
        ),
    ],
)
def test_sub_group_size_rules(scenario: Scenario, spec: Obj, expect: Reject | dict[str, Any]) -> None:
    """subGroupSize >= 1, no larger than size, and size or size-1 divisible by it."""
    check(scenario, build(spec), expect)


@pytest.mark.requirement("LWS-VALID-007")
@pytest.mark.parametrize(
    "policy",
    [pytest.param({"subGroupSize": 0}, id="subGroupSize-0"), pytest.param({}, id="subGroupSize-missing")],
)
def test_zero_or_missing_sub_group_size_is_denied(scenario: Scenario, policy: Obj) -> None:
    """subGroupSize 0 or absent must not be admitted. No upstream doc fixes the message:
    the webhook's check runs after a division by subGroupSize, so only the denial is pinned here."""
    out = dry_create(scenario, build({"leaderWorkerTemplate": {"size": 4, "subGroupPolicy": policy}}))
    assert out.obj is None, f"subGroupPolicy {policy} was admitted"
    assert out.message.startswith(WEBHOOK_DENIED), f"{out.status}: {out.message}"


@pytest.mark.requirement("LWS-VALID-008")
@pytest.mark.requirement("LWS-VALID-013")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        pytest.param(
            sub_groups(4, 2, "LeaderExcluded"),
            Reject("webhook", SGS, "size-1 must be divisible by subGroupSize when using LeaderExcluded"),
            id="size-1-not-divisible",
        ),
        pytest.param(
            sub_groups(5, 2, "LeaderExcluded"),
            {"spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType": "LeaderExcluded"},
            id="size-1-divisible",
        ),
        pytest.param(
            sub_groups(4, 2, "LeaderWorker"),
            {"spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType": "LeaderWorker"},
            id="same-shape-LeaderWorker-allowed",
        ),
    ],
)
def test_leader_excluded_needs_size_minus_one_divisible(
    scenario: Scenario, claim: Claims, spec: Obj, expect: Reject | dict[str, Any]
) -> None:
    """With LeaderExcluded the workers alone (size-1) must split evenly into subgroups."""
    judge(claim, "LWS-VALID-008", dry_create(scenario, build(spec)), expect, scenario.cluster.versions["lws"])


@pytest.mark.requirement("LWS-VALID-009")
@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        pytest.param(
            {},
            Reject(
                "webhook",
                f"metadata.annotations.{SUBGROUP_EXCLUSIVE}",
                "cannot have subgroup-exclusive-topology without subGroupSize set",
            ),
            id="without-subGroupPolicy",
        ),
        pytest.param(
            sub_groups(4, 2),
            {"metadata.annotations": {SUBGROUP_EXCLUSIVE: "kubernetes.io/hostname"}},
            id="with-subGroupPolicy",
        ),
    ],
)
def test_subgroup_exclusive_topology_needs_sub_group_size(
    scenario: Scenario, spec: Obj, expect: Reject | dict[str, Any]
) -> None:
    """The subgroup-exclusive-topology annotation only makes sense with subgroups."""
    obj = build(spec, annotations={SUBGROUP_EXCLUSIVE: "kubernetes.io/hostname"})
    check(scenario, obj, expect)


@pytest.mark.requirement("LWS-VALID-010")
@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param(
            {"leaderWorkerTemplate": {"restartPolicy": "Always"}},
            "spec.leaderWorkerTemplate.restartPolicy",
            id="restartPolicy",
        ),
        pytest.param({"startupPolicy": "WorkersFirst"}, "spec.startupPolicy", id="startupPolicy"),
        pytest.param({"rolloutStrategy": {"type": "Recreate"}}, "spec.rolloutStrategy.type", id="rolloutStrategy.type"),
        pytest.param(
            {"networkConfig": {"subdomainPolicy": "PerPod"}}, "spec.networkConfig.subdomainPolicy", id="subdomainPolicy"
        ),
        pytest.param(
            sub_groups(4, 2, "WorkersOnly"),
            "spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType",
            id="subGroupPolicyType",
        ),
    ],
)
def test_enum_fields_are_enforced_by_the_schema(scenario: Scenario, spec: Obj, field: str) -> None:
    """Values outside an enum are refused by the CRD schema ("Unsupported value"), not the webhook."""
    check(scenario, build(spec), Reject("schema", field, "supported values: "))


# -- update-only rules ------------------------------------------------------------------------
@pytest.mark.requirement("LWS-VALID-011")
@pytest.mark.requirement("LWS-VALID-013")
@pytest.mark.parametrize(
    ("initial", "patch", "expect"),
    [
        pytest.param(
            sub_groups(4, 2),
            {"leaderWorkerTemplate": {"subGroupPolicy": {"subGroupSize": 4}}},
            Reject("webhook", SGS, "field is immutable"),
            id="change-subGroupSize",
        ),
        pytest.param(
            sub_groups(4, 2),
            {"leaderWorkerTemplate": {"subGroupPolicy": DELETE}},
            Reject("webhook", SGS, "cannot remove subGroupSize after enabled"),
            id="remove-subGroupPolicy",
        ),
        pytest.param(
            {"leaderWorkerTemplate": {"size": 4}},
            {"leaderWorkerTemplate": {"subGroupPolicy": {"subGroupSize": 2}}},
            Reject("webhook", SGS, "cannot enable subGroupSize after the lws is already created"),
            id="add-subGroupPolicy",
        ),
    ],
)
def test_sub_group_policy_is_fixed_after_creation(
    scenario: Scenario, claim: Claims, initial: Obj, patch: Obj, expect: Reject
) -> None:
    """subGroupSize cannot change, and subGroupPolicy can be neither added nor removed, after create."""
    scenario.create(build({"replicas": 0, **initial}))
    out = dry_update(scenario, "v", {"spec": patch})
    judge(claim, "LWS-VALID-011", out, expect, scenario.cluster.versions["lws"])


@pytest.mark.requirement("LWS-VALID-012")
@pytest.mark.parametrize(
    ("initial", "patch", "keeps"),
    [
        pytest.param(
            {"leaderWorkerTemplate": {"size": 2}},
            {"leaderWorkerTemplate": {"size": 3}},
            {"spec.leaderWorkerTemplate.size": 3},
            id="size",
        ),
        pytest.param({}, {"replicas": 3}, {"spec.replicas": 3}, id="replicas"),
        pytest.param(
            {},
            {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"labels": {"tier": "b"}}}}},
            {"spec.leaderWorkerTemplate.workerTemplate.metadata.labels": {"tier": "b"}},
            id="workerTemplate",
        ),
        pytest.param(
            {},
            {"leaderWorkerTemplate": {"restartPolicy": "None"}},
            {"spec.leaderWorkerTemplate.restartPolicy": "None"},
            id="restartPolicy",
        ),
        pytest.param(
            {},
            {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}},
            {"spec.networkConfig.subdomainPolicy": "UniquePerReplica"},
            id="Shared-to-UniquePerReplica",
        ),
        pytest.param(
            {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}},
            {"networkConfig": {"subdomainPolicy": "Shared"}},
            {"spec.networkConfig.subdomainPolicy": "Shared"},
            id="UniquePerReplica-to-Shared",
        ),
        pytest.param(
            {},
            ruc(maxUnavailable="50%", maxSurge=2, partition=1),
            {f"{RUC}.maxUnavailable": "50%", f"{RUC}.maxSurge": 2, f"{RUC}.partition": 1},
            id="rollout-parameters",
        ),
        pytest.param({}, {"startupPolicy": "LeaderReady"}, {"spec.startupPolicy": "LeaderReady"}, id="startupPolicy"),
    ],
)
def test_other_fields_are_mutable(scenario: Scenario, initial: Obj, patch: Obj, keeps: dict[str, Any]) -> None:
    """Everything except the subgroup policy may change after creation, size included (v0.7.0+)."""
    scenario.create(build({"replicas": 0, **initial}))
    assert_accepted(dry_update(scenario, "v", {"spec": patch}), keeps)
