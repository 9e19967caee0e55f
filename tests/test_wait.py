"""The one wait primitive, driven by a scripted list/watch (no cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.errors import WaitTimeout
from lws_conformance.k8s import wait


def obj(name: str, phase: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "status": {"phase": phase}}


class Script:
    """Lists return `lists` in turn; each watch yields the next batch of events (or raises)."""

    def __init__(self, lists: list[list[dict[str, Any]]], watches: list[Any]) -> None:
        self.lists, self.watches = lists, watches
        self.list_calls = 0
        self.watch_rvs: list[str | None] = []

    def list_fn(self, **_kw: Any) -> dict[str, Any]:
        items = self.lists[min(self.list_calls, len(self.lists) - 1)]
        self.list_calls += 1
        return {"kind": "PodList", "metadata": {"resourceVersion": str(self.list_calls)}, "items": items}

    def watch_class(self) -> type:
        script = self

        class FakeWatch:
            def stream(self, _fn: Any, resource_version: str | None = None, **_kw: Any) -> Iterator[dict[str, Any]]:
                script.watch_rvs.append(resource_version)
                batch = script.watches.pop(0) if script.watches else []
                if isinstance(batch, Exception):
                    raise batch
                yield from batch

            def stop(self) -> None:
                pass

        return FakeWatch


def running(objs: list[dict[str, Any]]) -> bool:
    return bool(objs) and all(o["status"]["phase"] == "Running" for o in objs)


def test_returns_from_the_list_without_watching(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script([[obj("a", "Running")]], [])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    assert wait.wait_for(None, s.list_fn, running, what="pods", condition="Running", timeout=5)  # type: ignore[arg-type]
    assert s.watch_rvs == []


def test_watches_from_the_listed_resource_version(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script([[obj("a", "Pending")]], [[{"type": "MODIFIED", "object": obj("a", "Running")}]])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    assert wait.wait_for(None, s.list_fn, running, what="pods", condition="Running", timeout=5)  # type: ignore[arg-type]
    assert s.watch_rvs == ["1"]


def test_relists_on_410_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script([[obj("a", "Pending")], [obj("a", "Running")]], [ApiException(status=410)])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    assert wait.wait_for(None, s.list_fn, running, what="pods", condition="Running", timeout=5)  # type: ignore[arg-type]
    assert s.list_calls == 2


def test_deleted_objects_leave_the_view(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script([[obj("a", "Pending"), obj("b", "Running")]], [[{"type": "DELETED", "object": obj("a", "Pending")}]])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    assert wait.wait_for(None, s.list_fn, running, what="pods", condition="Running", timeout=5)  # type: ignore[arg-type]


def test_timeout_says_what_which_condition_and_last_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script([[obj("a", "Pending")]], [])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    with pytest.raises(WaitTimeout) as exc:
        wait.wait_for(
            None,
            s.list_fn,
            running,
            what="pods of x",
            condition="all Running",  # type: ignore[arg-type]
            timeout=0.2,
            diagnose=lambda: "recent events: none",
        )
    text = str(exc.value)
    assert "pods of x" in text and "all Running" in text and "Pod/a phase=Pending" in text and "recent events" in text


def test_observe_reports_a_violation_seen_mid_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # The violation appears and disappears within the window: a final sample would miss it.
    events = [{"type": "MODIFIED", "object": obj("a", "Running")}, {"type": "MODIFIED", "object": obj("a", "Pending")}]
    s = Script([[obj("a", "Pending")]], [events])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    found = wait.observe(None, s.list_fn, lambda objs: running(objs) and "ran", duration=0.5)  # type: ignore[arg-type]
    assert found == "ran"


def test_observe_returns_none_when_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Script([[obj("a", "Pending")]], [])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    assert wait.observe(None, s.list_fn, running, duration=0.2) is None  # type: ignore[arg-type]


def test_timeouts_scale_stretches_deadlines_and_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """timeouts.scale (LWSC_TIMEOUT_SCALE) multiplies every deadline and watched window."""
    s = Script([[obj("a", "Pending")]] * 3, [])
    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    monkeypatch.setenv(wait.SCALE_ENV, "3")
    with pytest.raises(WaitTimeout, match="timed out after 1s"):  # 0.3 s asked, 0.9 s waited
        wait.wait_for(None, s.list_fn, running, what="x", condition="y", timeout=0.3)  # type: ignore[arg-type]
    monkeypatch.setenv(wait.SCALE_ENV, "not-a-number")
    assert wait.scale() == 1.0


class RawResponse:
    """What a list call answers with `_preload_content=False`: the server's bytes."""

    def __init__(self, body: dict[str, Any]) -> None:
        import json

        self.data = json.dumps(body).encode()


def test_lists_are_read_as_raw_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """The list is asked for the server's bytes (no typed models) and parsed as JSON."""
    s = Script([[obj("a", "Running")]], [])
    asked: list[dict[str, Any]] = []

    def list_fn(**kw: Any) -> RawResponse:
        asked.append(kw)
        return RawResponse(s.list_fn())

    monkeypatch.setattr(wait.watch, "Watch", s.watch_class())
    got = wait.wait_for(None, list_fn, lambda objs: objs, what="pods", condition="any", timeout=5, namespace="ns")  # type: ignore[arg-type]
    assert asked == [{"_preload_content": False, "namespace": "ns"}]
    assert got == [obj("a", "Running")]


def test_the_watch_hands_out_raw_events() -> None:
    """The watch gets the list function without its return type, so the client parses each event's
    JSON and builds no model (it finds the model from the function's signature and docstring)."""
    from kubernetes import client

    core = client.CoreV1Api(client.ApiClient())
    assert wait.watch.Watch().get_return_type(core.list_namespaced_pod) is client.V1Pod
    assert not wait.watch.Watch().get_return_type(wait._raw_watch_fn(core.list_namespaced_pod))
    event = wait.watch.Watch().unmarshal_event('{"type": "ADDED", "object": {"kind": "Pod"}}', "")
    assert event["object"] == event["raw_object"] == {"kind": "Pod"}


def test_raw_body_takes_dicts_raw_responses_and_typed_models() -> None:
    from kubernetes import client

    api = client.ApiClient()
    assert wait.raw_body(api, {"items": []}) == {"items": []}
    assert wait.raw_body(api, RawResponse({"items": [{"a": 1}]})) == {"items": [{"a": 1}]}
    typed = client.V1PodList(items=[client.V1Pod(metadata=client.V1ObjectMeta(name="p"))])
    assert wait.raw_body(api, typed) == {"items": [{"metadata": {"name": "p"}}]}


def test_scenario_lists_read_raw_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenario's list helpers ask for raw responses too, and name each item's kind."""
    from kubernetes import client

    from lws_conformance.scenario import Scenario

    asked: list[tuple[str, dict[str, Any]]] = []

    def list_pods(_self: Any, namespace: str, **kw: Any) -> RawResponse:
        asked.append((namespace, kw))
        return RawResponse({"items": [{"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"}}]})

    monkeypatch.setattr(client.CoreV1Api, "list_namespaced_pod", list_pods)
    sc = Scenario(client.ApiClient(), None, "ns", None)  # type: ignore[arg-type]
    assert sc.pods("a=b") == [{"kind": "Pod", "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"}}]
    assert asked == [("ns", {"_preload_content": False, "label_selector": "a=b"})]
