"""DisaggregatedSet admission: CRD schema rules, the vdisaggregatedset.kb.io webhook, defaulting.

Creates go through server-side dry-run (`dryRun=All`): schema, CEL rules and the validating webhook
run exactly as for a real create and nothing is stored. Every rejected case is checked for who
rejected it (the webhook: HTTP 403 with its name; the API server's schema: HTTP 422) and its
message, and each rule has accepted neighbours, so a server rejecting everything fails too. A 5xx
answer is no rejection and an unreachable webhook an `error` (`lws_conformance.k8s.admission`).
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario

from . import ds_helpers as D
from .ds_helpers import accepted, admission_outcome, dry_create, rejected

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
WEBHOOK = 'admission webhook "vdisaggregatedset.kb.io" denied the request: '
PARTITION_MSG = (
    "partition is not supported by DisaggregatedSet; rolling updates are managed across roles by the "
    "DisaggregatedSet controller"
)
MIXED_MSG = "replicas must be zero for all roles or non-zero for all roles"
# v0.10.0 (External scaling, PR #922): the rule spares External roles and says so
MIXED_MSG_SINCE_V0_10 = "replicas must be zero for all non-External roles or non-zero for all non-External roles"


def two(**kw: Any) -> list[Obj]:
    return [D.role("prefill", **kw), D.role("decode", **kw)]


@pytest.mark.requirement("LWS-DSVALID-001")
def test_role_count_names_and_uniqueness(scenario: Scenario) -> None:
    sc = scenario
    rejected(sc, D.dset("one", [D.role("prefill")]), 422, "spec.roles", "should have at least 2 items")
    rejected(
        sc, D.dset("eleven", [D.role(f"r{i}") for i in range(11)]), 422, "spec.roles", "must have at most 10 items"
    )
    accepted(sc, D.dset("two", two()))
    accepted(sc, D.dset("ten", [D.role(f"r{i}") for i in range(10)]))
    rejected(sc, D.dset("upper", [D.role("Prefill"), D.role("decode")]), 422, "spec.roles[0].name", "should match")
    rejected(sc, D.dset("dash", [D.role("prefill-"), D.role("decode")]), 422, "spec.roles[0].name", "should match")
    rejected(
        sc, D.dset("long", [D.role("p" * 64), D.role("decode")]), 422, "spec.roles[0].name", "may not be more than 63"
    )
    # 63 characters pass the role-name rule; only LWS-DSVALID-005's generated-name rule (LWS main
    # after PR #966) may refuse such a set, and that rule is LWS-DSVALID-005's to check.
    out, got, message = dry_create(sc, D.dset("max", [D.role("p" * 63), D.role("decode")]))
    if out is None:
        assert D.checks_generated_names(sc) and D.GENERATED_NAME_MESSAGE in message, (
            f"a 63-character role name was refused ({got}): {message}"
        )
    rejected(sc, D.dset("dup", [D.role("prefill"), D.role("prefill")]), 422, "spec.roles[1]", "Duplicate value")


@pytest.mark.requirement("LWS-DSVALID-005")
def test_generated_names_fit_a_dns_label(scenario: Scenario) -> None:
    """<set>-<slice>-<8-char revision>-<role>-prv <= 63: with one slice set + role <= 47 characters,
    with 11 slices (index 10, two digits) <= 46; every role is checked, not only the first."""
    sc = scenario
    accepted(sc, D.dset("a" * 40, [D.role("b" * 7), D.role("b")]))  # 40+1+1+1+8+1+7+4 = 63
    rejected(
        sc,
        D.dset("a" * 40, [D.role("b" * 8), D.role("b")]),
        D.GENERATED_NAME_STATUS,
        "spec.roles[0].name",
        D.GENERATED_NAME_MESSAGE,
        "(64 chars)",
    )
    rejected(
        sc,
        D.dset("x" * 40, [D.role("b"), D.role("c" * 8)]),
        D.GENERATED_NAME_STATUS,
        "spec.roles[1].name",
        D.GENERATED_NAME_MESSAGE,
    )
    rejected(
        sc,
        D.dset("max", [D.role("p" * 63), D.role("decode")]),
        D.GENERATED_NAME_STATUS,
        "spec.roles[0].name",
        D.GENERATED_NAME_MESSAGE,
        "(82 chars)",
    )  # the role-name rule allows it
    sliced = {"slices": 11}
    accepted(sc, D.dset("s" * 39, [D.role("b" * 7), D.role("b")], **sliced))  # 39+1+2+1+8+1+7+4 = 63
    rejected(
        sc,
        D.dset("s" * 40, [D.role("b" * 7), D.role("b")], **sliced),
        D.GENERATED_NAME_STATUS,
        "spec.roles[0].name",
        D.GENERATED_NAME_MESSAGE,
        "(64 chars)",
    )


@pytest.mark.requirement("LWS-DSVALID-002")
def test_replicas_all_zero_or_all_non_zero(scenario: Scenario) -> None:
    sc = scenario
    mixed = MIXED_MSG_SINCE_V0_10 if D.sliced(sc) else MIXED_MSG
    rejected(sc, D.dset("mixed", [D.role("prefill", 0), D.role("decode", 2)]), 422, mixed)
    rejected(sc, D.dset("mixed2", [D.role("prefill", 3), D.role("decode", 0), D.role("x", 1)]), 422, mixed)
    accepted(sc, D.dset("zeros", [D.role("prefill", 0), D.role("decode", 0)]))
    accepted(sc, D.dset("ones", [D.role("prefill", 3), D.role("decode", 1)]))
    accepted(sc, D.dset("unset", [D.role("prefill", None), D.role("decode", 2)]))  # replicas defaults to 1


@pytest.mark.requirement("LWS-DSVALID-003")
@pytest.mark.requirement("LWS-DSVALID-004")
def test_rollout_type_and_partition_rejected(scenario: Scenario, claim: Claims) -> None:
    sc = scenario
    part_field = "spec.roles[1].spec.rolloutStrategy.rollingUpdateConfiguration.partition"

    def with_partition(p: int) -> Obj:
        roles = two()
        roles[1]["spec"]["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"partition": p}}
        return D.dset(f"part{p}", roles)

    with claim("LWS-DSVALID-003"):
        typed = two()
        typed[0]["spec"]["rolloutStrategy"] = {"type": "Recreate"}
        rejected(sc, D.dset("type", typed), 422, "spec.roles[0].spec.rolloutStrategy.type", "Unsupported value")
        rejected(sc, with_partition(1), 403)
        # on update: a stored set (all roles at 0 replicas: no pods) updated to a partition
        sc.create(D.dset("stored", [D.role("prefill", 0), D.role("decode", 0)]))
        stored = D.get(sc, "stored")
        stored["spec"]["roles"][1]["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"partition": 2}}
        _, status, message = admission_outcome(
            lambda: sc.custom.replace_namespaced_custom_object(
                D.GROUP, D.VERSION, sc.namespace, D.PLURAL, "stored", stored, dry_run="All"
            )
        )
        assert status == 403 and PARTITION_MSG in message, f"update to partition 2: {status} {message}"
    with claim("LWS-DSVALID-004"):
        msg = rejected(sc, with_partition(3), 403, WEBHOOK, part_field, "Forbidden", PARTITION_MSG)
        assert msg.startswith(WEBHOOK), msg
        out = accepted(sc, with_partition(0))
        got = out["spec"]["roles"][1]["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["partition"]
        assert got == 0, f"partition {got}"


@pytest.mark.requirement("LWS-DSVALID-006")
def test_zero_surge_and_unavailable_refused(scenario: Scenario) -> None:
    """v0.10.0's webhook refuses a role that can neither surge nor go unavailable (v0.9.0 accepts
    it, and then never gets the role's LWS: LWS's own webhook refuses it)."""
    sc = scenario
    path = "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable"
    for label, surge, unavail in (("int", 0, 0), ("pct", "0%", "0%")):
        roles = [D.rollout(D.role("prefill", 2), surge, unavail), D.role("decode", 1)]
        rejected(sc, D.dset(f"zero-{label}", roles), 403, WEBHOOK, path, "must not be 0 when `maxSurge` is 0")
    accepted(sc, D.dset("surge", [D.rollout(D.role("prefill", 2), 1, 0), D.role("decode", 1)]))
    accepted(sc, D.dset("unavail", [D.rollout(D.role("prefill", 2), 0, 1), D.role("decode", 1)]))
    accepted(sc, D.dset("empty", [D.rollout(D.role("prefill", 0), 0, 0), D.role("decode", 0)]))


@pytest.mark.requirement("LWS-DSDEFAULT-001")
def test_role_spec_defaulting(scenario: Scenario) -> None:
    roles = [D.role("prefill", None), D.role("decode", None)]
    del roles[0]["spec"]["leaderWorkerTemplate"]["size"]
    roles[1]["spec"]["rolloutStrategy"] = {}
    out = accepted(scenario, D.dset("defaults", roles))
    got = {r["name"]: r["spec"] for r in out["spec"]["roles"]}
    for name, spec in got.items():
        assert spec.get("replicas") == 1, f"{name}: replicas {spec.get('replicas')}"
        assert spec.get("startupPolicy") == "LeaderCreated", f"{name}: startupPolicy {spec.get('startupPolicy')}"
    assert got["prefill"]["leaderWorkerTemplate"].get("size") == 1, got["prefill"]["leaderWorkerTemplate"]
    assert got["decode"]["rolloutStrategy"].get("type") == "RollingUpdate", got["decode"]["rolloutStrategy"]
