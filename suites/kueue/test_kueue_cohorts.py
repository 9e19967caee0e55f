"""LWS groups in a cohort: borrowing unused quota, and the borrowing and lending limits that bound
it (Kueue's ClusterQueue concept page and API comments at v0.17.0; pkg/cache, pkg/scheduler).

Why this matters: a cohort lets a team's LWS groups run on quota another team does not use; the
limits are what keep a team's guaranteed quota its own. A group admitted beyond a limit takes
accelerators the limit reserved for someone else; a group admitted partly (some pods in the
borrowed room, the rest waiting) holds them and does no work.

Each scenario leaves room for the wrong outcome: the lender has more unused quota than the limit
lets the borrower take, so a Kueue that ignored the limit would admit the second group.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, ClusterHandle, Scenario, workloads

from . import kueue_helpers as K
from . import resource_helpers as R

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
SIZE = 3  # leader + 2 workers, 1 GPU each
NOMINAL = 2  # the borrower's own GPUs: less than one group
LIMIT = 2  # borrowingLimit of the borrower / lendingLimit of the lender: nominal + limit = 4 GPUs
LENDER = 8  # the lender's GPUs, all unused: room for two groups


@pytest.mark.requirement("KUEUE-COHORT-001")
@pytest.mark.requirement("KUEUE-COHORT-002")
def test_borrowed_quota_admits_whole_groups_up_to_the_limits(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Two cohorts, each a lender with 8 unused GPUs and a borrower with 2: one with the
    borrower's borrowingLimit 2, one with the lender's lendingLimit 2. In each, a group of 3 (one
    more than the borrower's own quota) is admitted whole by borrowing; a second group of 3, which
    would need 6 > 2 + 2, stays wholly held although the lender has 5 GPUs unused."""
    gpu = lwsc_cluster.topology.gpu_resource
    rf = scenario.create(workloads.resource_flavor(f"{unique}-rf"))["metadata"]["name"]
    cases = {
        "KUEUE-COHORT-001": ("bl", {"borrowing": {gpu: str(LIMIT)}}, {}),
        "KUEUE-COHORT-002": ("ll", {}, {"lending": {gpu: str(LIMIT)}}),
    }
    for tag, borrower_limits, lender_limits in cases.values():
        cohort = f"{unique}-{tag}"
        lender = [R.flavor_quota(rf, R.quota(lwsc_cluster, LENDER), **lender_limits)]
        scenario.create(R.cluster_queue(f"{cohort}-lend", lender, cohort=cohort))
        borrower = [R.flavor_quota(rf, R.quota(lwsc_cluster, NOMINAL), **borrower_limits)]
        R.queue(scenario, R.cluster_queue(f"{cohort}-cq", borrower, cohort=cohort), f"lq-{tag}")
        scenario.create(R.lws(f"{tag}-1", lwsc_cluster, SIZE, f"lq-{tag}"))

    for req, (tag, _, _) in cases.items():
        limit = "borrowingLimit" if req == "KUEUE-COHORT-001" else "lender's lendingLimit"
        with claim(req):
            scenario.wait_pods(
                K.all_ready(1, SIZE),
                f"{tag}-1 ({SIZE} GPUs, {NOMINAL} nominal + {limit} {LIMIT}) admitted whole by borrowing and Ready",
                selector=K.selector(f"{tag}-1"),
            )
            R.group_workload(scenario, f"{tag}-1", 0)
    for _, (tag, _, _) in cases.items():
        scenario.create(R.lws(f"{tag}-2", lwsc_cluster, SIZE, f"lq-{tag}"))
    for req, (tag, _, _) in cases.items():
        name = f"{tag}-2"
        with claim(req):
            scenario.wait_pods(K.split(1, SIZE, ready=0), f"{name} wholly held", selector=K.selector(name))
            uid = K.lws_uid(scenario, name)
            pending = K.wait_pending(scenario, uid, workloads.lws_workload_name(name, uid, 0))
            assert not (pending.get("status") or {}).get("admission"), (
                f"{pending['metadata']['name']} (would use {2 * SIZE} GPUs, the limit allows {NOMINAL + LIMIT}) "
                f"carries an admission"
            )
    for req, (tag, _, _) in cases.items():
        with claim(req):
            escaped = scenario.observe_pods(K.leak(0), K.OBSERVE_SECONDS, selector=K.selector(f"{tag}-2"))
            assert escaped is None, f"beyond the limit ({2 * SIZE} GPUs > {NOMINAL} + {LIMIT}): {escaped}"
            still = K.groups_of(scenario.pods(K.selector(f"{tag}-1"))).get(0, [])
            assert K.whole_ready(still, SIZE), f"the group admitted by borrowing ({tag}-1) did not stay whole and Ready"
