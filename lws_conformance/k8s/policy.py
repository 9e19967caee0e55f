"""Knowing that an admission policy a test created is in force.

The API server loads a new ValidatingAdmissionPolicy and its binding asynchronously: it reloads
its compiled policies about once a second (measured on the local cluster, Kubernetes v1.36: a
dry-run write refused 0.8-1.0 s after the policy and binding were created), and nothing it stores
or watches says when a policy took effect. A test that injects a fault through a policy therefore
proves the fault is in place by a probe: a dry-run write the policy must refuse, repeated until it
is refused or a deadline passes. The probe stores nothing (dry run), so repeating it changes
nothing in the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import InfraError
from . import admission
from .wait import scale

PROBE_PAUSE = 0.2  # seconds between probes: a fifth of the API server's reload period


def until_refused(probe: Callable[[], Any], marker: str, policy: str, timeout: float = 10) -> admission.Answer:
    """Repeat the dry-run write `probe` until the API server refuses it with a message containing
    `marker` (the policy's own message); return that refusal. InfraError naming `policy` and the
    last answer when it is still not refused after `timeout` seconds (times `timeouts.scale`)."""
    deadline = time.monotonic() + timeout * scale()
    tries = 0
    while True:
        out = admission.answer(probe)
        tries += 1
        if out.refused and marker in out.message:
            return out
        if time.monotonic() + PROBE_PAUSE > deadline:
            raise InfraError(
                f"admission policy {policy} not in force {timeout * scale():.0f} s after its creation ({tries} "
                f"dry-run probes; the last answer: {out.describe()}): the fault it injects cannot be made"
            )
        time.sleep(PROBE_PAUSE)
