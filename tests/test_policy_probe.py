"""`k8s.policy.until_refused`: a fault injected through an admission policy is proven in place
by a dry-run probe the policy refuses, repeated while the API server has not loaded it yet."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.errors import InfraError
from lws_conformance.k8s import policy


def _refusal(message: str) -> ApiException:
    exc = ApiException(status=422, reason="Unprocessable Entity")
    exc.body = json.dumps({"kind": "Status", "reason": "Invalid", "message": message})
    return exc


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy, "PROBE_PAUSE", 0.001)


def test_accepted_probes_are_repeated_until_the_policy_refuses() -> None:
    refused = _refusal('pods "p" is forbidden: denied request: lwsc t1: held')
    answers: list[Any] = [{"kind": "Pod"}, {"kind": "Pod"}, refused]

    def probe() -> Any:
        nxt = answers.pop(0)
        if isinstance(nxt, Exception):
            raise nxt
        return nxt

    out = policy.until_refused(probe, "lwsc t1", "t1-hold-gate")
    assert out.refused and "lwsc t1" in out.message and not answers


def test_another_refusal_is_not_the_policy_and_a_deadline_ends_it() -> None:
    """Refused for another reason (another policy or webhook): not this policy's fault, kept
    probing until the deadline, then an InfraError naming the policy and the last answer."""

    def probe() -> Any:
        raise _refusal('admission webhook "other" denied the request: something else')

    with pytest.raises(InfraError, match=r"t2-hold-gate not in force .*something else"):
        policy.until_refused(probe, "lwsc t2", "t2-hold-gate", timeout=0.05)
