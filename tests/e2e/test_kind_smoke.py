"""The kind provider end to end: `lwsc --profile kind up | run | down` on a real Docker engine.

Up from the cached node image (built on first use), a focused run covering group naming, gang
admission through Kueue, a rolling update and a container restart seen by a real kubelet, then
down: no container, network or engine process of the harness is left. Needs a Docker engine or
Debian's dockerd (`scripts/bootstrap --kind`); CI sets LWSC_REQUIRE_KIND=1, so there a missing
engine fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lws_conformance.toolchain import engine as engines

pytestmark = [pytest.mark.cluster, pytest.mark.kind, pytest.mark.timeout(3600)]
NAME = "lwsc-kind-smoke"
# Naming, gang admission through Kueue, one rolling update, a worker's container restart and
# deletion under RecreateGroupOnPodRestart, a container killed through its node's runtime (the
# kind chaos path and its guard rails): six tests, ~2.5 min on kind.
FOCUS = (
    "test_objects_are_named_from_the_lws_and_group_ordinals or test_every_group_gets_its_own_workload_and_runs_whole"
    " or test_rolling_update_matrix[r3-default-none]"
    " or (test_recreate_group_on_pod_restart_rebuilds_the_whole_group and worker)"
    " or test_container_killed_through_the_runtime_recreates_its_group"
)
PASSED = {"LWS-NAME-001", "KUEUE-GANG-001", "ROLL-SURGE-001", "ROLL-AVAIL-001", "ROLL-DONE-001", "CHAOS-EXP-007"}


def _can_run() -> str | None:
    if shutil.which("dockerd") is None and not engines.answers(engines.Engine("", private=False)):
        return "no Docker engine answers and Debian's dockerd is not installed (scripts/bootstrap --kind)"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed (scripts/bootstrap --kind)"
    return None


def lwsc(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "--profile", "kind", "--name", NAME, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_kind_up_focused_run_and_down_leaves_nothing(tmp_path: Path) -> None:
    """One test, not a module fixture shared by several: xdist would run a module fixture once per
    worker, and two workers would bring up the same kind cluster at once."""
    reason = _can_run()
    if reason:
        if os.environ.get("LWSC_REQUIRE_KIND") == "1":
            pytest.fail(f"LWSC_REQUIRE_KIND=1 but {reason}")
        pytest.skip(reason)
    reports = tmp_path / "kind-reports"
    try:
        up = lwsc("up")
        assert up.returncode == 0, up.stderr[-4000:]
        run = lwsc("run", "--reports", str(reports), "--focus", FOCUS, "--workers", "1", timeout=1800)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    finally:
        down = lwsc("down", timeout=300)
    assert down.returncode == 0, down.stderr[-2000:]

    summary = json.loads(((reports / "latest").resolve() / "summary.json").read_text())
    verdicts = {r["id"]: r["verdict"] for r in summary["requirements"]}
    assert {r: verdicts.get(r) for r in PASSED} == dict.fromkeys(PASSED, "passed")
    assert verdicts.get("CHAOS-RESTART-001") in ("passed", "partial"), verdicts.get("CHAOS-RESTART-001")
    assert not [r for r, v in verdicts.items() if v in ("failed", "error", "warning")], verdicts
    assert summary["provider"] == "kind"

    # `down` left no container, bridge, FORWARD rule or engine of the harness
    private = engines.Engine(engines.private_host(), private=True)
    assert not engines.running(), "the private engine still runs after `lwsc down`"
    user = engines.Engine("", private=False)
    if engines.answers(user):
        left = user.run("ps", "-aq", "--filter", f"label=io.x-k8s.kind.cluster={NAME}").strip()
        assert not left, f"containers of {NAME} left on your engine: {left}"
    assert not engines.answers(private, 2.0)
    assert not Path("/sys/class/net/lwsc-kind0").exists(), "the kind network's bridge is still there"
    if shutil.which("iptables"):
        rules = subprocess.run(["iptables", "-w", "-S", "FORWARD"], capture_output=True, text=True).stdout
        assert engines.FORWARD_COMMENT not in rules, rules
