"""A chaostoolkit control: undo every fault still in effect when an experiment ends, then verify
that every harness node and every local-cluster process is exactly as before the experiment.

Why: on Ctrl-C (or SIGTERM) chaostoolkit swallows the interrupt, marks the journal
"interrupted" and, with the default rollback strategy, plays no rollbacks, so a controller
stopped by the method would stay stopped. Controls' `after_experiment_control` still runs, so
experiments declare `controls: [{name: lwsc-restore, provider: {type: python, module:
lws_conformance.chaos.control}}]` and `chaos run` is as safe as the pytest runner.

And a rollback that "succeeded" may still leave the cluster changed (a node re-created with
kwok's default capacity). So `before_experiment_control` snapshots the nodes and
processes (`capture.snapshot`; what counts: `state`), and the after-control compares: any
difference is logged, put in the journal as `lwsc_state_diff`, and turns the journal's status
to "failed" (so `chaos run` exits 1 and `runner.problems` reports it). Processes may take a
moment to answer their health check after a restart, so the comparison is retried up to
SETTLE_SECONDS before it counts.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from . import capture, safety, state

logger = logging.getLogger("chaostoolkit")
SETTLE_SECONDS = 30.0
_BEFORE: dict[str, Any] = {}


def _kubeconfig(configuration: dict[str, Any] | None) -> str | None:
    return safety.kubeconfig_given(configuration)


def before_experiment_control(context: Any, configuration: dict[str, Any] | None = None, **kwargs: Any) -> None:
    _BEFORE.clear()
    kc = _kubeconfig(configuration)
    if kc:
        _BEFORE.update(kubeconfig=kc, snapshot=capture.snapshot(kc))


def after_experiment_control(context: Any, state: Any = None, **kwargs: Any) -> None:
    left = safety.pending()
    if left:
        logger.warning("lwsc: undoing faults still in effect: %s", "; ".join(left))
        for err in safety.restore_all():
            logger.error("lwsc: could not undo %s", err)
    if not _BEFORE:
        return
    differs = settled_diff(_BEFORE["kubeconfig"], _BEFORE["snapshot"])
    _BEFORE.clear()
    if not differs:
        logger.info("lwsc: every node and process is as before the experiment")
        return
    logger.error("lwsc: the cluster differs from before the experiment: %s", "; ".join(differs))
    if isinstance(state, dict):
        state["lwsc_state_diff"] = differs
        state["status"] = "failed"


def settled_diff(kubeconfig: str, before: dict[str, Any], settle: float | None = None) -> list[str]:
    """`state.snapshot_diff(before, now)`, re-taken until empty or `settle` (default
    SETTLE_SECONDS) seconds passed, scaled by LWSC_TIMEOUT_SCALE."""
    wait = SETTLE_SECONDS if settle is None else settle
    deadline = time.monotonic() + wait * float(os.environ.get("LWSC_TIMEOUT_SCALE") or 1)
    while True:
        differs = state.snapshot_diff(before, capture.snapshot(kubeconfig))
        if not differs or time.monotonic() >= deadline:
            return differs
        time.sleep(1.0)
