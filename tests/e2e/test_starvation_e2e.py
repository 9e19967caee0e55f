"""Proof that a cluster under test that gets no CPU is never blamed on LWS: a requirement whose
wait times out while a component of the cluster is frozen reads `error` naming the starvation,
not `failed`.

The kube-scheduler of a private local cluster is frozen with SIGSTOP (state `T`, as a frozen
cgroup or a stopped process leaves it) by this test, not by a fault hook (the hooks mark what they
stop in its pid record, which the detector leaves alone). LWS-NAME-001's pods then stay Pending
past its 60 s wait, which would read as a MUST failure. SIGSTOP, not SCHED_IDLE: SCHED_IDLE
starves a process only while the rest of the machine keeps every CPU busy, so on an idle runner
the proof could not fail; a stopped process starves deterministically. The canary and lag
limits come from benchmarks/starvation.py, and the rule on each signal is unit-tested
(tests/test_starvation.py). That a genuine failure stays `failed` is proven by
test_failure_proofs.py's mutant and webhook proofs, on the same plugin.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from lws_conformance.providers.local import LocalCluster

from .test_failure_proofs import NAMES, run_suite

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("failure-proofs")]


def test_a_frozen_scheduler_is_an_error_naming_the_starvation_not_a_verdict(
    private_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    scheduler = next(r for r in private_cluster.records() if r.name == "kube-scheduler")
    os.kill(scheduler.pid, signal.SIGSTOP)
    try:
        found = run_suite(private_cluster, [NAMES], tmp_path / "frozen", f"{run_id}f")
    finally:
        os.kill(scheduler.pid, signal.SIGCONT)
    got = found.get("LWS-NAME-001")
    assert got is not None and got.verdict == "error", f"LWS-NAME-001: {got}"
    assert "the cluster under test was starved of CPU (not an LWS/Kueue verdict)" in got.detail, got.detail[:2000]
    assert re.search(r"kube-scheduler waited [\d.]+ s for a CPU and stood frozen \(state T", got.detail), got.detail
    assert "timed out after" in got.detail, f"the wait's own message is kept: {got.detail[:2000]}"
