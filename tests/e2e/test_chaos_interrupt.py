"""Harness self-test: Ctrl-C in the middle of a chaos experiment leaves no fault applied.

chaostoolkit swallows KeyboardInterrupt and skips rollbacks on an interrupted run; the runner
(`lws_conformance.chaos.runner`) must still undo what the method applied — here restart the LWS
controller it stopped — then re-raise the interrupt. A property of the harness, not of LWS or
Kueue, so it is a test of ours, not a catalogued requirement. Runs on the worker's private cluster.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from lws_conformance.chaos import runner, safety
from lws_conformance.providers import process
from lws_conformance.providers.local import LocalCluster
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster


def ctrl_c() -> None:
    """An action that is the user pressing Ctrl-C (SIGINT to this process)."""
    signal.raise_signal(signal.SIGINT)


@pytest.mark.usefixtures("sigint_is_ctrl_c")
def test_ctrl_c_during_an_experiment_leaves_no_controller_stopped(
    private_scenario: Scenario, private_cluster: LocalCluster, tmp_path: Path
) -> None:
    """chaostoolkit swallows KeyboardInterrupt and skips rollbacks on an interrupted run; the
    runner must still restart the controller the method stopped, then re-raise the interrupt."""
    sc = private_scenario
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}
    exp = runner.load(runner.EXPERIMENTS / "lws-controller-restart.yaml", cfg)
    exp["method"] = [
        exp["method"][0],  # kill-lws-controller (no duration: stays down until undone)
        {
            "type": "action",
            "name": "ctrl-c",
            "provider": {"type": "python", "module": __name__, "func": "ctrl_c"},
        },
    ]
    del exp["steady-state-hypothesis"]
    with pytest.raises(KeyboardInterrupt):
        runner.run(exp, cfg, tmp_path / "j.json")
    lws = [r for r in private_cluster.records() if r.name == "lws"]
    assert lws and process.alive(lws[0]), "the LWS controller was left stopped after Ctrl-C"
    assert not safety.pending()
    journal = (tmp_path / "j.json").read_text()
    assert '"status": "interrupted"' in journal
