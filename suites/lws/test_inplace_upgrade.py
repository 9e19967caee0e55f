"""In-place LWS controller upgrade (KEP-238, lws#797/#798): groups created under an older LWS
keep running untouched when only the controller binary, its CRDs and webhook configurations are
replaced by the version under test; an ordinary template update rolls them afterwards.

Each start version (profile key `upgrade.lws_from`, built by `lwsc build`) gets a private cluster
of its own, brought up with that LWS and upgraded inside the test to the profile's LWS
(`versions.lws`, or the `sources.lws` tree: a regression in a checkout shows here).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    LocalCluster,
    Scenario,
    history,
    record,
    require_complete,
    skip_private_on_kind,
    upgrades,
    workloads,
)
from lws_conformance.testing import predicates as P

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("lws-upgrade")]
# The leader StatefulSet patch that starts a roll is written inside the reconcile whose
# "Leader Reconcile completed" line we wait for, and the StatefulSet controller deletes the first
# pod of a rolled group within ~1 s here (rollout suite timelines); 5 s covers that 5 times.
AFTER_RECONCILE_SECONDS = 5.0
RECONCILED = "Leader Reconcile completed"  # LWS's log line at --zap-log-level=2 (v0.8.0 .. v0.10.0)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    upgrades.parametrize_starts(metafunc, "lws")


@pytest.fixture
def private_cluster(request: pytest.FixtureRequest, run_id: str, start: str | None) -> Iterator[LocalCluster]:
    """A local cluster of this test's own, running LWS `start`."""
    skip_private_on_kind(request)
    with upgrades.start_cluster(request.config, run_id, "lws", start) as cluster:
        yield cluster


def _lws(name: str, replicas: int, size: int) -> dict[str, Any]:
    """A plain LWS with a shared-memory volume in both templates (the shape of lws#281)."""
    obj = workloads.lws(name, replicas=replicas, size=size)
    for key in ("leaderTemplate", "workerTemplate"):
        spec = obj["spec"]["leaderWorkerTemplate"][key]["spec"]
        spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
        for c in spec["containers"]:
            c["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return obj


@pytest.mark.requirement("LWS-UPGRADE-001")
@pytest.mark.requirement("LWS-UPGRADE-002")
def test_inplace_controller_upgrade_rolls_no_group(
    private_cluster: LocalCluster, private_scenario: Scenario, request: pytest.FixtureRequest, claim: Claims
) -> None:
    sc, name, replicas, size = private_scenario, "up", 2, 2
    target = upgrades.target(request.config, private_cluster.profile.base_port)
    sc.create(_lws(name, replicas, size))
    sc.wait_lws(name, sc.settled(replicas), f"settled under LWS {private_cluster.profile.versions['lws']}", timeout=120)
    selector = f"{P.NAME_LABEL}={name}"
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in sc.pods(selector)}

    with claim("LWS-UPGRADE-001"):
        with record(sc.api, sc.namespace, workloads=False) as tl:
            offset = private_cluster.log_offset("lws")
            private_cluster.replace_controller(
                "lws", target, lambda msg: print(f"[lwsc upgrade] {msg}", file=sys.stderr, flush=True)
            )
            private_cluster.wait_log("lws", (RECONCILED, f'"name": "{name}"', sc.namespace), offset, 60)

            def replaced(pods: list[dict[str, Any]]) -> str | None:
                now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
                return None if now == before else f"pods now {now}, before {before}"

            sc.observe_pods(replaced, AFTER_RECONCILE_SECONDS, selector=selector)
        require_complete(tl)
        disturbed = history.upgrade_disturbances(tl.ordered(), name)
        assert not disturbed, f"the upgrade to LWS {target.versions['lws']} disturbed LWS {name}: " + "; ".join(
            disturbed[:8]
        )

    with claim("LWS-UPGRADE-002"):
        revision = {p["metadata"]["labels"][P.REVISION_LABEL] for p in sc.pods(selector)}
        sc.patch_lws(
            name,
            {
                "spec": {
                    "leaderWorkerTemplate": {
                        "workerTemplate": {"metadata": {"annotations": {"lwsc.x-k8s.io/after-upgrade": "1"}}}
                    }
                }
            },
        )
        sc.wait_lws(
            name,
            P.lws_settled(replicas, replicas, versions=target.versions),
            f"every group rolled to the new revision under LWS {target.versions['lws']}",
            timeout=180,
        )
        pods = sc.pods(selector)
        now = {p["metadata"]["labels"][P.REVISION_LABEL] for p in pods}
        assert len(now) == 1 and now != revision, f"pods' revisions {now} after the update (before: {revision})"
        assert len(pods) == replicas * size and all(P.pod_ready(p) for p in pods), [
            (p["metadata"]["name"], P.pod_ready(p)) for p in pods
        ]
        assert P.condition(sc.lws(name), "UpdateInProgress") != "True"
