"""Error kinds, each mapped to one exit code so CI and humans can tell them apart.

A `UserError` is a mistake the user can fix (bad profile, busy port, missing Go): the CLI prints
its one-line message and exits 2, never a traceback. An `InfraError` means the harness or the
system underneath broke (a component died, a build failed): exit 3.
"""

from __future__ import annotations


class LwscError(Exception):
    """Base class: carries the one-line message shown to the user."""

    exit_code = 3


class UserError(LwscError):
    """Bad input the user can fix; the message names the fix."""

    exit_code = 2


class InfraError(LwscError):
    """The harness or the infrastructure under it broke."""

    exit_code = 3


class RecordingIncomplete(InfraError):
    """The harness's own watch missed part of what happened (a gap it re-listed over, or a final
    sync that did not finish): the invariants a recording would have proven cannot be judged. Not
    an AssertionError, so no claim records it as a failure of LWS or Kueue: the test's
    requirements read error (exit 3)."""


class WaitTimeout(AssertionError):
    """A wait's deadline passed. An AssertionError, so pytest reports the condition not met."""


class Failures(AssertionError):
    """Several distinct failures of one check, each judged on its own: a requirement is a known
    deviation only when every one of them shows a listed deviation's symptom. Raise it (inside a
    `claim`, or as a test's failure) instead of joining the messages into one assertion."""

    def __init__(self, messages: list[str] | tuple[str, ...]) -> None:
        if not messages:
            raise ValueError("Failures needs at least one message")
        self.messages = tuple(str(m) for m in messages)
        super().__init__("\n\n".join(self.messages))
