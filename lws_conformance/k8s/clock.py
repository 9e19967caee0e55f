"""The API server's clock, at the resolution of object timestamps (one second).

Controllers that order objects by `metadata.creationTimestamp` (RFC 3339, whole seconds) cannot
tell apart two objects created within one second. A scenario that needs a later object to sort
strictly after an earlier one waits here until the server's clock has left the earlier one's
second. The server's clock is read from the `Date` header of one request, so the local clock and
any skew between the two do not matter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from kubernetes import client

SECOND = 1.0  # the resolution of creationTimestamp and of the Date header


def parse_stamp(stamp: str) -> datetime:
    """An RFC 3339 timestamp as the API server writes it ("2026-12-03T11:43:30Z")."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)


def server_second(api: client.ApiClient) -> datetime:
    """The API server's clock now, truncated to the second (its `Date` response header)."""
    method, url, headers, _body, _post = api.param_serialize("GET", "/version", auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers)
    resp.read()
    date = resp.getheader("Date")
    if not date:
        raise RuntimeError(f"the API server's /version answer (HTTP {resp.status}) has no Date header")
    return parsedate_to_datetime(date).astimezone(UTC)


def wait_past(
    api: client.ApiClient,
    stamp: str,
    *,
    now: Callable[[], datetime] | None = None,
    pause: Callable[[float], None] = time.sleep,
) -> datetime:
    """Return (the server's second) once the API server's clock is past the whole second of
    `stamp`, so that an object created from then on has a strictly later creationTimestamp.

    One read of the server's clock says whether that second is over. If it is not, the server is
    somewhere inside it, and one second later it is over: a single pause of one second, not a
    poll. The clock is read again to prove it (a server clock that went backwards is an error)."""
    read = now or (lambda: server_second(api))
    limit = parse_stamp(stamp)
    seen = read()
    if seen > limit:
        return seen
    pause(SECOND)
    seen = read()
    if seen <= limit:
        raise RuntimeError(
            f"the API server's clock reads {seen.isoformat()} one second after reading a time within "
            f"{limit.isoformat()}: its clock did not advance"
        )
    return seen


def next_local_second(pause: Callable[[float], None] = time.sleep, now: Callable[[], float] = time.time) -> None:
    """Return at the start of the next second of this machine's clock: a scenario that must fit
    inside one second of the API server's clock starts here with all of it ahead, when the server
    runs on this machine (the local and kind clusters). Elsewhere it is a harmless shift."""
    pause(SECOND - now() % SECOND)
