"""Run a chaostoolkit experiment in-process (chaoslib's Python API) and keep its journal.

Why in-process: the suite gets the journal as data (status, deviated, each activity's output,
e.g. measured recovery times) and the faults' ledger lives in this process, so whatever the
experiment leaves applied (failure, deviation, Ctrl-C) is undone here before the test reports.

chaoslib swallows KeyboardInterrupt and SystemExit (the journal says "interrupted"); `run`
restores every pending fault and then re-raises KeyboardInterrupt, so Ctrl-C still stops pytest.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from chaoslib.experiment import ensure_experiment_is_valid, run_experiment
from chaoslib.loader import load_experiment

from .. import resources
from . import safety

Journal = dict[str, Any]
EXPERIMENTS = resources.chaos()
# Rollbacks run whatever happened; the ledger then catches anything a rollback missed.
SETTINGS: dict[str, Any] = {"runtime": {"rollbacks": {"strategy": "always"}}}


def load(path: Path | str, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load and validate an experiment; `configuration` values replace its own first (chaoslib
    validates the configuration too, so an unset LWSC_* env var would otherwise be an error)."""
    experiment: dict[str, Any] = load_experiment(str(path))
    experiment.setdefault("configuration", {}).update(configuration or {})
    ensure_experiment_is_valid(experiment)
    return experiment


def run(experiment: Path | str | dict[str, Any], configuration: dict[str, Any], journal_path: Path) -> Journal:
    """Run `experiment` with `configuration` values overriding its own (env lookups included),
    write the journal to `journal_path` and return it."""
    if isinstance(experiment, dict):
        exp = copy.deepcopy(experiment)
        exp.setdefault("configuration", {}).update(configuration)
        ensure_experiment_is_valid(exp)
    else:
        exp = load(experiment, configuration)
    journal: Journal = {}
    undo_errors: list[str] = []
    try:
        journal = run_experiment(exp, settings=copy.deepcopy(SETTINGS))
    finally:
        undo_errors = safety.restore_all()
        journal_path.parent.mkdir(parents=True, exist_ok=True)
        if journal:
            journal["lwsc_undo_errors"] = undo_errors
            journal_path.write_text(json.dumps(journal, indent=2, default=str))
    if journal.get("status") == "interrupted":
        raise KeyboardInterrupt(f"experiment interrupted; faults restored; journal: {journal_path}")
    return journal


def problems(journal: Journal) -> list[str]:
    """Why a journal is not a pass: not completed, deviated, a failed activity or rollback, or a
    fault the ledger had to undo and could not. Empty list: the experiment passed."""
    out = []
    if journal.get("status") != "completed":
        out.append(f"status {journal.get('status')}")
    if journal.get("deviated"):
        after = (journal.get("steady_states") or {}).get("after") or {}
        failed = [p["activity"]["name"] for p in after.get("probes", []) if not p.get("tolerance_met")]
        out.append(f"deviated (after-hypothesis probes not met: {failed})")
    for section in ("run", "rollbacks"):
        for item in journal.get(section) or []:
            if item.get("status") != "succeeded":
                exc = "".join(item.get("exception") or [])[-400:]
                out.append(f"{section} activity {item['activity']['name']} {item.get('status')}: {exc}")
    for phase in ("before", "after"):
        state = (journal.get("steady_states") or {}).get(phase) or {}
        for p in state.get("probes", []):
            if not p.get("tolerance_met"):
                exc = "".join(p.get("exception") or [])[-400:]
                out.append(f"{phase} probe {p['activity']['name']} not met: {exc or p.get('output')}")
    out.extend(f"could not undo {e}" for e in journal.get("lwsc_undo_errors") or [])
    out.extend(f"cluster differs from before the experiment: {d}" for d in journal.get("lwsc_state_diff") or [])
    return out


# What the after-experiment comparison (`control`) checks that LWS and Kueue do not run: the
# harness's fake nodes and the control plane's processes. One of them changed after the experiment
# means a rollback or the machine failed (a process starved past its health check, a node object
# re-created differently), not LWS or Kueue: no verdict. The controllers' own processes stay
# verdicts (a controller that crashed on the fault broke a promise).
CONTROLLER_PROCESSES = frozenset({"lws", "kueue"})


def infrastructure_differences(journal: Journal) -> list[str]:
    """The journal's after-experiment differences in nodes and control-plane processes (not LWS's
    or Kueue's own process)."""
    out = []
    for d in journal.get("lwsc_state_diff") or []:
        word, _, rest = d.partition(" ")
        if word == "process" and rest.split(".", 1)[0].split(":", 1)[0] in CONTROLLER_PROCESSES:
            continue
        out.append(d)
    return out


# The harness's own fault tooling refusing or failing (`safety.ChaosRefused`, an `InfraError`: a
# `docker pause` the runtime could not do, a process that would not stop): the exception names in a
# failed action's traceback that mean the fault was never applied (or never undone).
HARNESS_FAULT_ERRORS = ("ChaosRefused", "InfraError")


def faults_not_applied(journal: Journal) -> list[str]:
    """The method's and rollbacks' actions that failed in the harness's fault tooling: the fault
    was not applied or not undone, so the experiment tested nothing (no verdict). An action that
    failed otherwise, and every probe, stay in `problems`."""
    out = []
    for section in ("run", "rollbacks"):
        for item in journal.get(section) or []:
            exc = "".join(item.get("exception") or [])
            failed = item["activity"].get("type") == "action" and item.get("status") != "succeeded"
            if failed and any(name in exc for name in HARNESS_FAULT_ERRORS):
                out.append(f"{section} action {item['activity']['name']}: {exc.strip().splitlines()[-1][-300:]}")
    return out


def outputs(journal: Journal) -> dict[str, Any]:
    """Activity name -> output, for the method's activities (e.g. recovery seconds)."""
    return {item["activity"]["name"]: item.get("output") for item in journal.get("run") or []}
