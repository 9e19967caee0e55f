"""The one wait primitive: list, watch from that resourceVersion, re-list on 410, one deadline.

Every "until X" in the harness goes through `wait_for`. It never sleeps: between events it blocks
on the watch. When the deadline passes it raises `WaitTimeout` saying which objects, which
condition, what was last seen, and whatever `diagnose()` adds (recent events, controller logs).

Lists and watch events are read as the raw JSON the server sent, like the recorder's: the client's
typed models cost ~1.0-1.4 ms of CPU per pod per list or event (deserialised, then turned back
into a dict), the JSON ~0.06 ms. The predicates see the same dicts either way (API field names,
no null fields) but for timestamps, which stay the server's RFC 3339 strings.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import allure
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from ..errors import WaitTimeout
from .client import retry_after, to_dict

Obj = dict[str, Any]
Predicate = Callable[[list[Obj]], Any]


def _key(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def summarize(obj: Obj) -> str:
    """One short line per object for timeout messages: name, phase, key conditions."""
    meta = obj.get("metadata", {})
    status = obj.get("status") or {}
    bits = [f"{obj.get('kind', '')}/{meta.get('name')}"]
    if status.get("phase"):
        bits.append(f"phase={status['phase']}")
    conds = [f"{c.get('type')}={c.get('status')}" for c in status.get("conditions") or []]
    if conds:
        bits.append(",".join(conds))
    if meta.get("deletionTimestamp"):
        bits.append("deleting")
    return " ".join(bits)


SCALE_ENV = "LWSC_TIMEOUT_SCALE"


def raw_body(api: client.ApiClient, resp: Any) -> Obj:
    """A list call's answer as a dict: the JSON of a raw response (`_preload_content=False`), a
    dict as it is (custom objects, stand-ins), a typed model through `to_dict`."""
    if isinstance(resp, dict):
        return resp
    data = getattr(resp, "data", None)
    if isinstance(data, bytes | str):
        body: Obj = json.loads(data)
        return body
    return to_dict(api, resp)


def _raw_watch_fn(list_fn: Callable[..., Any]) -> Callable[..., Any]:
    """`list_fn` for `watch.Watch.stream` without its return type: the watch then hands out each
    event's object as the JSON dict it parsed, not a typed model (the client finds the model from
    the function's signature and docstring). ERROR events still raise as before."""

    def raw(**kw):  # type: ignore[no-untyped-def]  # no return annotation or docstring: read as raw
        return list_fn(**kw)

    return raw


def scale() -> float:
    """The profile's `timeouts.scale`, handed to every test process through the environment."""
    try:
        return max(0.1, float(os.environ.get(SCALE_ENV, "1")))
    except ValueError:
        return 1.0


def wait_for(
    api: client.ApiClient,
    list_fn: Callable[..., Any],
    predicate: Predicate,
    *,
    what: str,
    condition: str,
    timeout: float,
    diagnose: Callable[[], str] | None = None,
    **list_kwargs: Any,
) -> Any:
    """Block until `predicate(objects)` returns something truthy; return that value.

    `list_fn` is a list call of the Python client (e.g. `CoreV1Api(api).list_namespaced_pod`),
    `list_kwargs` its arguments (namespace, label_selector, ...). `objects` are plain dicts.
    """
    with allure.step(f"wait up to {timeout:.0f}s for {what}: {condition}"):
        return _run(api, list_fn, predicate, what, condition, timeout, diagnose, True, list_kwargs)


def observe(
    api: client.ApiClient,
    list_fn: Callable[..., Any],
    violation: Predicate,
    *,
    duration: float,
    **list_kwargs: Any,
) -> Any:
    """Watch for `duration` seconds; return the first truthy `violation(objects)`, else None.

    For "X must never happen during the window": every event is checked, not a final sample.
    """
    with allure.step(f"observe for {duration:.0f}s that no violation occurs"):
        return _run(api, list_fn, violation, "", "", duration, None, False, list_kwargs)


def _run(
    api: client.ApiClient,
    list_fn: Callable[..., Any],
    predicate: Predicate,
    what: str,
    condition: str,
    timeout: float,
    diagnose: Callable[[], str] | None,
    raise_on_timeout: bool,
    list_kwargs: dict[str, Any],
) -> Any:
    timeout *= scale()
    deadline = time.monotonic() + timeout
    seen: dict[str, Obj] = {}
    while True:
        try:
            resp = list_fn(_preload_content=False, **list_kwargs)
        except ApiException as exc:
            pause = retry_after(exc)
            if pause is None or time.monotonic() + pause >= deadline:
                raise
            time.sleep(pause)  # a transient answer (429/5xx, Retry-After): list again
            continue
        body = raw_body(api, resp)
        kind = (body.get("kind") or "").removesuffix("List")
        seen = {}
        for item in body.get("items") or []:
            item.setdefault("kind", kind)
            seen[_key(item)] = item
        result = predicate(list(seen.values()))
        if result:
            return result
        rv = body.get("metadata", {}).get("resourceVersion")
        try:
            result = _watch(api, list_fn, predicate, seen, rv, deadline, list_kwargs)
        except ApiException as exc:
            if exc.status == 410:
                continue  # resourceVersion too old: re-list
            pause = retry_after(exc)
            if pause is None:
                raise
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))  # transient: re-list
            result = None
        except (ProtocolError, ReadTimeoutError):
            result = None  # connection dropped: re-list if time remains
        if result:
            return result
        if time.monotonic() >= deadline:
            if not raise_on_timeout:
                return None
            raise WaitTimeout(_timeout_message(what, condition, timeout, seen.values(), diagnose))


def _watch(
    api: client.ApiClient,
    list_fn: Callable[..., Any],
    predicate: Predicate,
    seen: dict[str, Obj],
    rv: str | None,
    deadline: float,
    list_kwargs: dict[str, Any],
) -> Any:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    w = watch.Watch()
    try:
        for event in w.stream(
            _raw_watch_fn(list_fn),
            resource_version=rv,
            timeout_seconds=max(1, int(remaining + 0.999)),
            allow_watch_bookmarks=True,
            _request_timeout=remaining + 5,
            **list_kwargs,
        ):
            etype = event["type"]
            if etype == "ERROR":
                raw = event.get("raw_object") or {}
                if raw.get("code") == 410:
                    raise ApiException(status=410, reason="Expired")
                continue
            if etype == "BOOKMARK":
                continue
            obj = to_dict(api, event.get("raw_object") or event["object"])
            if etype == "DELETED":
                seen.pop(_key(obj), None)
            else:
                obj.setdefault("kind", (seen.get(_key(obj)) or {}).get("kind", ""))
                seen[_key(obj)] = obj
            result = predicate(list(seen.values()))
            if result:
                return result
            if time.monotonic() >= deadline:
                return None
    finally:
        w.stop()
    return None


def _timeout_message(
    what: str, condition: str, timeout: float, objs: Iterable[Obj], diagnose: Callable[[], str] | None
) -> str:
    lines = [f"timed out after {timeout:.0f}s waiting for {what}: {condition}"]
    last = [summarize(o) for o in objs]
    lines.append("last seen: " + ("; ".join(last[:20]) if last else "no objects"))
    if diagnose:
        try:
            lines.append(diagnose())
        except Exception as exc:  # diagnostics must never hide the timeout itself
            lines.append(f"(diagnostics failed: {exc})")
    return "\n".join(lines)
