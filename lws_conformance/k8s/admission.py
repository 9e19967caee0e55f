"""What the API server's answer to a write means for a validation rule (pure, no cluster).

A validation rule holds when the invalid object is refused *as invalid*: the API server's schema
validation answers 422 (reason Invalid), an admission webhook's denial is 403 (reason Forbidden,
"admission webhook "<name>" denied the request: ...", or 422 when the webhook returns an Invalid
status). Anything else is no verdict on the object:

- a 5xx answer (the webhook answering an internal error, the API server failing) says the server
  broke, not that the object is invalid: the same request may be stored on a retry. For the rule
  that is a failure, since the promise (the object is refused with a reason) did not hold;
- "failed calling webhook" (the API server could not reach the webhook: connection refused,
  timeout, TLS) means the rule was never evaluated: nothing can be concluded, so it is an
  `InfraError` (verdict `error`), not a pass and not a contract failure;
- other 4xx answers (400 BadRequest of a malformed request, 404, 409) are not refusals of the
  object's content either: failed, naming what came back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from ..errors import InfraError

Obj = dict[str, Any]
_DENIED = re.compile(r'^admission webhook "(?P<name>[^"]+)" denied the request: ')
UNREACHABLE = "failed calling webhook"


@dataclass(frozen=True)
class Answer:
    """The API server's answer to one write: the stored (or dry-run) object, or an error status."""

    obj: Obj | None
    status: int | None = None
    reason: str = ""
    message: str = ""

    @property
    def webhook(self) -> str | None:
        """The admission webhook whose denial this is ("admission webhook "X" denied the request")."""
        m = _DENIED.match(self.message)
        return m.group("name") if m else None

    @property
    def kind(self) -> str:
        """accepted | denied (403 by an admission webhook) | invalid (422 Invalid) | unreachable |
        server-error (5xx) | other (any other error answer)."""
        if self.obj is not None:
            return "accepted"
        if UNREACHABLE in self.message:
            return "unreachable"
        if self.status is not None and self.status >= 500:
            return "server-error"
        if self.status == 403 and self.webhook:
            return "denied"
        if self.status == 422 and self.reason in ("Invalid", ""):
            return "invalid"
        return "other"

    @property
    def refused(self) -> bool:
        """A validation verdict: the object was refused as invalid (not merely not stored)."""
        return self.kind in ("denied", "invalid")

    def describe(self) -> str:
        if self.obj is not None:
            return "accepted"
        return f"HTTP {self.status} {self.reason or '-'}: {self.message}"


def from_exception(exc: ApiException) -> Answer:
    """The Answer an ApiException carries (its Status body's reason and message)."""
    body: Any = None
    try:
        body = json.loads(exc.body) if exc.body else None
    except (TypeError, ValueError):
        body = None
    if isinstance(body, dict):
        return Answer(None, exc.status, str(body.get("reason") or ""), str(body.get("message") or ""))
    return Answer(None, exc.status, str(exc.reason or ""), str(exc.body or ""))


def answer(call: Callable[[], Any]) -> Answer:
    """Run one write; its object or its error status. Conflicts (409) and the harness's own RBAC
    errors are raised, not answered: they say nothing about the object."""
    try:
        return Answer(call())
    except ApiException as exc:
        if exc.status == 409:
            raise
        if rbac_denied(exc):
            raise
        return from_exception(exc)


def webhook_unreachable(exc: ApiException) -> bool:
    """The API server could not call an admission webhook (its server not listening, not
    answering in time): the rule was never evaluated, so no verdict on the object. While a
    controller runs, its webhook serving is part of its being up; a dead one is named by the
    health check of the cluster's components."""
    return UNREACHABLE in str(exc.body or "")


def rbac_denied(exc: ApiException) -> bool:
    """The caller's own credentials lack a permission (RBAC 403): infrastructure, no answer about
    the object. A webhook's denial is also a 403 but says "admission webhook" and is an answer."""
    body = str(exc.body or "")
    return exc.status == 403 and "is forbidden: User" in body and "admission webhook" not in body


def refusal_problem(out: Answer, names: tuple[str, ...] = ()) -> str | None:
    """Why `out` is not a refusal of the object as invalid for the reason `names` spell (each must
    appear in the message, case-insensitively); None when it is one. Raises `InfraError` when the
    API server could not call the webhook (the rule was never evaluated)."""
    kind = out.kind
    if kind == "unreachable":
        raise InfraError(f"the API server could not call the admission webhook, no verdict: {out.describe()}")
    if kind == "accepted":
        return "accepted, but the API must refuse it"
    if kind == "server-error":
        return f"not refused as invalid: the server answered an internal error ({out.describe()})"
    if kind == "other":
        return f"not refused as invalid (neither a 403 webhook denial nor a 422 Invalid): {out.describe()}"
    missing = [n for n in names if n.lower() not in out.message.lower()]
    if missing:
        return f"refused, but for another reason (the message does not name {missing}): {out.describe()}"
    return None


def assert_refused(out: Answer, names: tuple[str, ...] = ()) -> str:
    """Assert `out` refuses the object as invalid, naming each of `names`; returns the message."""
    problem = refusal_problem(out, names)
    assert problem is None, problem
    return out.message


def stored_despite_refusal(kind: str, name: str, listed: list[Obj]) -> str | None:
    """The failure when an object whose creation was refused is stored all the same (`listed`:
    the objects of its kind in its namespace, as the API server lists them after the refusal);
    None when it is not."""
    stored = [o for o in listed if (o.get("metadata") or {}).get("name") == name]
    if not stored:
        return None
    uid = stored[0]["metadata"].get("uid", "?")
    return f"{kind} {name} is stored (uid {uid}) although its creation was refused"
