"""lws_conformance.k8s.admission: which API answers count as a validation refusal (no cluster)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.errors import InfraError
from lws_conformance.k8s import admission
from lws_conformance.k8s.admission import Answer

SGS = "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize"
DENIED = 'admission webhook "vleaderworkerset.kb.io" denied the request: '
# what kube-apiserver v1.36 answers, as the Status body's reason and message
WEBHOOK_DENIAL = Answer(None, 403, "Forbidden", f"{DENIED}{SGS}: Invalid value: 4: field is immutable")
SCHEMA = Answer(
    None,
    422,
    "Invalid",
    'LeaderWorkerSet.leaderworkerset.x-k8s.io "v" is invalid: spec.replicas: Invalid value: -1: '
    "spec.replicas in body should be greater than or equal to 0",
)
WEBHOOK_INVALID = Answer(None, 422, "Invalid", f'{DENIED}LeaderWorkerSet "v" is invalid: {SGS}: Invalid value: 4')
# the webhook answers an internal error (apierrors.NewInternalError): still "denied the request"
WEBHOOK_500 = Answer(
    None, 500, "InternalError", f"{DENIED}Internal error occurred: {SGS}: Invalid value: 4: field is immutable"
)
UNREACHABLE = Answer(
    None,
    500,
    "InternalError",
    'Internal error occurred: failed calling webhook "vleaderworkerset.kb.io": failed to call webhook: Post '
    '"https://127.0.0.1:19243/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset?timeout=10s": dial tcp '
    "127.0.0.1:19243: connect: connection refused",
)
UNAVAILABLE = Answer(None, 503, "ServiceUnavailable", "the server is currently unable to handle the request")
BAD_REQUEST = Answer(None, 400, "BadRequest", "the body of the request was in an unknown format")


@pytest.mark.parametrize(
    ("out", "kind", "refused"),
    [
        (Answer({"kind": "LeaderWorkerSet"}), "accepted", False),
        (WEBHOOK_DENIAL, "denied", True),
        (SCHEMA, "invalid", True),
        (WEBHOOK_INVALID, "invalid", True),
        (WEBHOOK_500, "server-error", False),
        (UNAVAILABLE, "server-error", False),
        (UNREACHABLE, "unreachable", False),
        (BAD_REQUEST, "other", False),
        (Answer(None, 403, "Forbidden", "forbidden without a webhook"), "other", False),
        (Answer(None, 422, "Conflict", "not an Invalid status"), "other", False),
    ],
)
def test_kind_and_refused(out: Answer, kind: str, refused: bool) -> None:
    assert out.kind == kind
    assert out.refused is refused


def test_webhook_name_is_read_from_the_denial() -> None:
    assert WEBHOOK_DENIAL.webhook == "vleaderworkerset.kb.io"
    assert WEBHOOK_500.webhook == "vleaderworkerset.kb.io"  # a 5xx can carry the prefix: not a denial still
    assert SCHEMA.webhook is None


def test_a_denial_naming_the_field_is_a_refusal() -> None:
    assert admission.refusal_problem(WEBHOOK_DENIAL, ("subGroupSize",)) is None
    assert admission.assert_refused(WEBHOOK_DENIAL, ("subgroupsize", "immutable")) == WEBHOOK_DENIAL.message
    assert admission.refusal_problem(SCHEMA, ("spec.replicas",)) is None


def test_a_denial_for_another_reason_is_not_the_rule() -> None:
    problem = admission.refusal_problem(WEBHOOK_DENIAL, ("subGroupSize", "cannot remove"))
    assert problem is not None and "another reason" in problem and "cannot remove" in problem


@pytest.mark.parametrize("out", [WEBHOOK_500, UNAVAILABLE])
def test_a_server_error_is_no_refusal(out: Answer) -> None:
    """Even when the message names the field and says "denied the request" (WEBHOOK_500)."""
    problem = admission.refusal_problem(out, ("subGroupSize",))
    assert problem is not None and "internal error" in problem and f"HTTP {out.status}" in problem
    with pytest.raises(AssertionError, match="not refused as invalid"):
        admission.assert_refused(out)


def test_an_unreachable_webhook_is_no_verdict() -> None:
    with pytest.raises(InfraError, match="could not call the admission webhook"):
        admission.refusal_problem(UNREACHABLE, ("subGroupSize",))


def test_accepted_and_other_answers_are_no_refusal() -> None:
    assert admission.refusal_problem(Answer({}), ()) == "accepted, but the API must refuse it"
    problem = admission.refusal_problem(BAD_REQUEST)
    assert problem is not None and "HTTP 400 BadRequest" in problem


def _exc(status: int, body: Any, reason: str = "") -> ApiException:
    exc = ApiException(status=status, reason=reason)
    exc.body = json.dumps(body) if isinstance(body, dict) else body
    return exc


def _raising(exc: ApiException) -> Any:
    def call() -> None:
        raise exc

    return call


def test_answer_reads_the_status_body() -> None:
    body = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403, "message": DENIED + "x"}
    out = admission.answer(_raising(_exc(403, body)))
    assert (out.obj, out.status, out.reason, out.message) == (None, 403, "Forbidden", DENIED + "x")
    raw = admission.from_exception(_exc(502, "<html>bad gateway</html>", "Bad Gateway"))
    assert (raw.status, raw.reason, raw.message, raw.kind) == (
        502,
        "Bad Gateway",
        "<html>bad gateway</html>",
        "server-error",
    )
    assert admission.answer(lambda: {"kind": "LeaderWorkerSet"}).kind == "accepted"


@pytest.mark.parametrize(
    "exc",
    [
        _exc(409, {"reason": "Conflict", "message": "the object has been modified"}),
        _exc(403, {"reason": "Forbidden", "message": 'leaderworkersets "v" is forbidden: User "x" cannot update'}),
    ],
    ids=["conflict", "rbac"],
)
def test_conflicts_and_the_harness_own_rbac_errors_are_raised(exc: ApiException) -> None:
    with pytest.raises(ApiException):
        admission.answer(_raising(exc))
