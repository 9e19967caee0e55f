"""In-place Kueue controller upgrade: an LWS with one group admitted and one held at the gate
(quota for one group) keeps exactly that state while only Kueue's binary, CRDs and webhook
configurations are replaced by the version under test; the new Kueue then admits the held group
through the pre-existing queues once quota allows (Kueue's own upgrade e2e:
test/e2e/upgrade/upgrade_validation_test.go).

Each start version (profile key `upgrade.kueue_from`, empty by default: the module proxy serves
one Kueue version only) gets a private cluster of its own running that Kueue, upgraded inside the
test to the profile's Kueue (`versions.kueue` or the `sources.kueue` tree), e.g.
`--set upgrade.kueue_from=[v0.17.0] --set sources.kueue=$KUEUE@v0.18.6`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

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

from . import kueue_helpers as K
from .kueue_helpers import gang_lws, gpu_quota

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("kueue-upgrade")]
# Kueue's core Workload reconciler logs this per Workload at --zap-log-level=2 (v0.17 .. v0.19); the
# new Kueue has taken over a Workload once it logged it (its scheduler runs from the same caches).
RECONCILED = ('"logger":"workload-reconciler"', '"msg":"Reconcile Workload"')


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    upgrades.parametrize_starts(metafunc, "kueue")


@pytest.fixture
def private_cluster(request: pytest.FixtureRequest, run_id: str, start: str | None) -> Iterator[LocalCluster]:
    """A local cluster of this test's own, running Kueue `start`."""
    skip_private_on_kind(request)
    with upgrades.start_cluster(request.config, run_id, "kueue", start) as cluster:
        yield cluster


@pytest.mark.requirement("KUEUE-UPGRADE-001")
@pytest.mark.requirement("KUEUE-UPGRADE-002")
def test_inplace_kueue_upgrade_keeps_admitted_and_held_groups(
    private_cluster: LocalCluster,
    private_scenario: Scenario,
    request: pytest.FixtureRequest,
    claim: Claims,
    unique: str,
) -> None:
    sc, name, replicas, size = private_scenario, "kup", 2, 2
    handle = private_cluster.handle()
    assert handle is not None
    target = upgrades.target(request.config, private_cluster.profile.base_port)
    K.plain_queue(sc, unique, gpu_quota(handle.topology, size))  # quota for one group
    sc.create(gang_lws(name, handle, replicas, size))
    (running,), (waiting,) = sc.wait_pods(
        K.split(replicas, size, ready=1), "one group whole and Ready, the other wholly held", selector=K.selector(name)
    )
    uid = K.lws_uid(sc, name)
    held = workloads.lws_workload_name(name, uid, waiting)
    K.wait_pending(sc, uid, held)

    with claim("KUEUE-UPGRADE-001"):
        with record(sc.api, sc.namespace, workloads=True) as tl:
            offset = private_cluster.log_offset("kueue")
            private_cluster.replace_controller(
                "kueue", target, lambda msg: print(f"[lwsc upgrade] {msg}", file=sys.stderr, flush=True)
            )
            for wl in (workloads.lws_workload_name(name, uid, running), held):
                private_cluster.wait_log("kueue", (*RECONCILED, f'"name":"{wl}"'), offset, 60)
            escaped = sc.observe_pods(K.leak(waiting), K.OBSERVE_SECONDS, selector=K.selector(name))
        assert escaped is None, escaped
        require_complete(tl)
        disturbed = history.kueue_upgrade_disturbances(tl.ordered(), name)
        assert not disturbed, f"the upgrade to Kueue {target.versions['kueue']} disturbed LWS {name}: " + "; ".join(
            disturbed[:8]
        )

    with claim("KUEUE-UPGRADE-002"):
        K.set_quota(sc, unique, gpu_quota(handle.topology, replicas * size))
        sc.wait_pods(
            K.all_ready(replicas, size),
            f"the held group admitted whole and Ready by Kueue {target.versions['kueue']} through the old queues",
            selector=K.selector(name),
        )
        K.wait_workloads(sc, uid, lambda ws: K.admitted(K.by_name(ws).get(held, {})) or None, f"{held} Admitted")
