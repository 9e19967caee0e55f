"""Record every watch event of one namespace's LWS objects into a `Timeline` (the I/O half).

One thread per kind (LeaderWorkerSet, StatefulSet, Pod, ControllerRevision and, when the CRD
exists, Kueue Workload) runs the same loop as `k8s.wait`: list, watch from the list's
resourceVersion with bookmarks, re-list on 410 Gone. Differences, and why:
- no deadline: it runs until the test's `with record(...)` block ends;
- a watch that ends normally (server timeout) or breaks is resumed from the last resourceVersion
  seen instead of re-listing, like a client-go reflector, so no event is skipped; only a 410
  forces a re-list, and then the difference between the recorder's state and the list is
  appended as `source="relist"` events and noted in `timeline.gaps` (a write may have been
  missed there). A re-list that finds every object at the resourceVersion the recorder last saw
  and none gone missed nothing of what it lists (as when an upgrade replaces a CRD and the API
  server restarts its storage, ending every watch of that kind with a 410): it is noted in
  `timeline.quiet_relists`, not a gap;
- objects are handled as the raw JSON the server sent (no model deserialisation, which costs
  ~1 ms per pod and would make the recorder fall behind a 100-group rollout).

On exit the recorder proves it missed nothing: it lists every kind once more and waits (on a
condition variable, bounded) until its own state holds every listed object at that object's
resourceVersion or newer and nothing the list says is gone. Only then is `timeline.complete` True.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..errors import InfraError
from ..k8s.client import retry_after
from .timeline import Obj, Timeline, snapshot

LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
WORKLOAD = ("kueue.x-k8s.io", "v1beta2", "workloads")
DISAGG = ("disaggregatedset.x-k8s.io", "v1", "disaggregatedsets")
WATCH_SECONDS = 240  # server-side watch timeout; the watch is then resumed from the last rv


@dataclass(frozen=True)
class Source:
    """One kind to record: a list call of the Python client (or a stand-in with the same
    keyword interface: `watch`, `resource_version`, `_preload_content`, ...) and its arguments."""

    kind: str
    list_fn: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)


def sources(
    api: client.ApiClient, namespace: str, *, workloads: bool | None = None, disaggregated: bool = False
) -> list[Source]:
    """The kinds a rollout test needs. `workloads=None` records Kueue Workloads iff the CRD exists;
    `disaggregated` adds DisaggregatedSets (LWS >= v0.9.0) and Services (the sets' per-revision
    Services)."""
    core, apps, custom = client.CoreV1Api(api), client.AppsV1Api(api), client.CustomObjectsApi(api)
    out = [
        Source(
            "LeaderWorkerSet",
            custom.list_namespaced_custom_object,
            {"group": LWS[0], "version": LWS[1], "namespace": namespace, "plural": LWS[2]},
        ),
        Source("StatefulSet", apps.list_namespaced_stateful_set, {"namespace": namespace}),
        Source("Pod", core.list_namespaced_pod, {"namespace": namespace}),
        Source("ControllerRevision", apps.list_namespaced_controller_revision, {"namespace": namespace}),
    ]
    wl = Source(
        "Workload",
        custom.list_namespaced_custom_object,
        {"group": WORKLOAD[0], "version": WORKLOAD[1], "namespace": namespace, "plural": WORKLOAD[2]},
    )
    if workloads is None:
        try:
            _raw_list(wl)
            workloads = True
        except ApiException as exc:
            if exc.status != 404:
                raise
            workloads = False
    if workloads:
        out.append(wl)
    if disaggregated:
        kw = {"group": DISAGG[0], "version": DISAGG[1], "namespace": namespace, "plural": DISAGG[2]}
        out.append(Source("DisaggregatedSet", custom.list_namespaced_custom_object, kw))
        out.append(Source("Service", core.list_namespaced_service, {"namespace": namespace}))
    return out


def _raw_list(src: Source) -> Obj:
    resp = src.list_fn(_preload_content=False, **src.kwargs)
    body: Obj = json.loads(resp.data)
    return body


def _rv_int(rv: Any) -> int | None:
    try:
        return int(rv)
    except (TypeError, ValueError):
        return None


class _Kind:
    """Per-kind state, touched only under the recorder's lock: name -> last snapshot, name ->
    resourceVersion of its deletion (for the final sync), the watch in flight (to stop it)."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.objs: dict[str, Obj] = {}
        self.deleted: dict[str, str] = {}
        self.rv: str | None = None
        self.listed = threading.Event()
        self.watch: watch.Watch | None = None
        self.error: BaseException | None = None
        self.events = 0


class Recorder:
    """Start with `start()`, end with `stop()`; or use `record()`. See the module docstring."""

    def __init__(self, timeline: Timeline, srcs: list[Source]) -> None:
        self.timeline = timeline
        self._kinds = {s.kind: _Kind(s) for s in srcs}
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        timeline.kinds = [s.kind for s in srcs]

    # -- event handling: the one code path for listed and watched objects --------------------
    def handle(self, kind: str, etype: str, raw: Obj, source: str = "watch", snap: Obj | None = None) -> None:
        """Append one event and update the kind's state. Called by the watch loop for every
        ADDED/MODIFIED/DELETED event (and by the benchmark with synthetic ones)."""
        k = self._kinds[kind]
        if snap is None:
            snap = snapshot(kind, raw)
        name = str(snap["name"])
        with self._cond:
            self.timeline.append(kind, etype, snap, source)
            if etype == "DELETED":
                k.objs.pop(name, None)
                k.deleted[name] = str(snap.get("rv") or "")
            else:
                k.objs[name] = snap
                k.deleted.pop(name, None)
            if snap.get("rv"):
                k.rv = str(snap["rv"])
            k.events += 1
            self._cond.notify_all()

    def _apply_list(self, k: _Kind, body: Obj, source: str) -> int:
        """Turn a list into events: everything new or changed, and DELETED for what vanished.
        Returns how many events that made (0: the list holds exactly what the recorder had)."""
        items = {str((i.get("metadata") or {}).get("name")): i for i in body.get("items") or []}
        with self._cond:
            known = dict(k.objs)
        made = 0
        for name, item in items.items():
            rv = (item.get("metadata") or {}).get("resourceVersion")
            old = known.get(name)
            if old is None or old.get("rv") != rv:
                self.handle(k.src.kind, "ADDED" if old is None else "MODIFIED", item, source)
                made += 1
        list_rv = (body.get("metadata") or {}).get("resourceVersion")
        for name in set(known) - set(items):
            # the deletion itself was missed: keep the last known state, stamped with the list's rv
            self.handle(k.src.kind, "DELETED", {}, source, snap={**known[name], "rv": list_rv})
            made += 1
        with self._cond:
            k.rv = list_rv
        return made

    # -- the per-kind loop (list, watch from rv, re-list on 410) -----------------------------
    def _run(self, k: _Kind) -> None:
        src = k.src
        first = True
        try:
            while not self._stopping.is_set():
                try:
                    body = _raw_list(src)
                except ApiException as exc:
                    pause = retry_after(exc)
                    if pause is None:
                        raise
                    self._stopping.wait(pause)  # transient (429/5xx): list again
                    continue
                changed = self._apply_list(k, body, "list" if first else "relist")
                if not first:
                    at = {"kind": src.kind, "t": time.monotonic() - self.timeline.started_mono}
                    (self.timeline.gaps if changed else self.timeline.quiet_relists).append(at)
                first = False
                k.listed.set()
                if self._watch(k):
                    return  # stopping
        except BaseException as exc:  # reported by stop(); a dead recorder must fail the test
            if not self._stopping.is_set():
                k.error = exc
            k.listed.set()

    def _watch(self, k: _Kind) -> bool:
        """Watch until 410 (return False: re-list) or stop (return True)."""

        def raw(**kw: Any) -> Any:  # no return annotation/docstring: Watch yields raw dicts
            return k.src.list_fn(**kw)

        while not self._stopping.is_set():
            w = watch.Watch()
            with self._cond:
                k.watch = w
                rv = k.rv
            try:
                for event in w.stream(
                    raw,
                    resource_version=rv,
                    timeout_seconds=WATCH_SECONDS,
                    allow_watch_bookmarks=True,
                    **k.src.kwargs,
                ):
                    etype = event["type"]
                    obj = event.get("raw_object") or event.get("object") or {}
                    if etype == "ERROR":
                        if obj.get("code") == 410:
                            return False
                        raise InfraError(f"watch of {k.src.kind} failed: {obj}")
                    if etype == "BOOKMARK":
                        with self._cond:
                            k.rv = (obj.get("metadata") or {}).get("resourceVersion") or k.rv
                        continue
                    self.handle(k.src.kind, etype, obj)
            except ApiException as exc:
                if exc.status == 410:
                    return False
                pause = retry_after(exc)
                if pause is None and not self._stopping.is_set():
                    raise
                self._stopping.wait(pause or 0)  # transient (429/5xx): resume from the same rv
            except (HTTPError, OSError, ValueError):
                if self._stopping.is_set():
                    return True
                # connection dropped: resume from the last resourceVersion (410 -> re-list)
            finally:
                with self._cond:
                    k.watch = None
        return True

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 30) -> None:
        for k in self._kinds.values():
            t = threading.Thread(target=self._run, args=(k,), name=f"lwsc-record-{k.src.kind}", daemon=True)
            t.start()
            self._threads.append(t)
        deadline = time.monotonic() + timeout
        for k in self._kinds.values():
            if not k.listed.wait(max(0.0, deadline - time.monotonic())):
                self.stop(sync=False)
                raise InfraError(f"recorder: initial list of {k.src.kind} did not finish in {timeout:.0f}s")
            if k.error:
                self.stop(sync=False)
                raise InfraError(f"recorder: {k.src.kind}: {k.error}")

    def sync(self, timeout: float = 20) -> None:
        """Wait until the recorder's state matches a fresh list of every kind (see module doc)."""
        pending: list[tuple[_Kind, Obj]] = [(k, _raw_list(k.src)) for k in self._kinds.values()]
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                behind = [msg for k, body in pending if (msg := self._behind(k, body))]
                errors = [f"{k.src.kind}: {k.error}" for k in self._kinds.values() if k.error]
                if errors:
                    self.timeline.sync_error = "; ".join(errors)
                    return
                if not behind:
                    self.timeline.complete = True
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    self.timeline.sync_error = f"recorder behind the API after {timeout:.0f}s: {'; '.join(behind)}"
                    return
                self._cond.wait(left)

    @staticmethod
    def _behind(k: _Kind, body: Obj) -> str:
        """Why the recorder's state of `k` is older than the list `body` ("" if it is not)."""
        list_rv = _rv_int((body.get("metadata") or {}).get("resourceVersion"))
        listed = {str(i["metadata"]["name"]): i["metadata"].get("resourceVersion") for i in body.get("items") or []}
        for name, rv in listed.items():
            mine = k.objs.get(name)
            have = _rv_int(mine.get("rv")) if mine else _rv_int(k.deleted.get(name))
            want = _rv_int(rv)
            if have is None or want is None:
                if mine is None or mine.get("rv") != rv:
                    return f"{k.src.kind}/{name} not seen at rv {rv}"
            elif have < want:
                return f"{k.src.kind}/{name} seen at rv {have}, API has {want}"
        for name, mine in k.objs.items():
            if name not in listed:
                have = _rv_int(mine.get("rv"))
                if have is None or list_rv is None or have <= list_rv:
                    return f"{k.src.kind}/{name} deleted in the API, not seen as DELETED"
        return ""

    def stop(self, sync: bool = True, timeout: float = 20) -> None:
        try:
            if sync:
                self.sync(timeout)
        finally:
            self._stopping.set()
            with self._cond:
                watches = [k.watch for k in self._kinds.values() if k.watch is not None]
            for w in watches:
                w.stop()  # shuts the socket down, unblocking the reader
            for t in self._threads:
                t.join(timeout=10)

    def wait_events(self, n: int, timeout: float) -> bool:
        """Block until at least `n` events were handled in total (True) or `timeout` passes."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(k.events for k in self._kinds.values()) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def counts(self) -> dict[str, int]:
        with self._cond:
            return {kind: k.events for kind, k in self._kinds.items()}


@contextlib.contextmanager
def record(
    api: client.ApiClient,
    namespace: str,
    *,
    workloads: bool | None = None,
    sync_timeout: float = 20,
    disaggregated: bool = False,
) -> Iterator[Timeline]:
    """Record the namespace's LWS, StatefulSets, pods, revisions (and Workloads) while the block runs.

    Start it before creating the LWS: the invariants need to see groups come and go. On exit the
    timeline is synced (`timeline.complete`); the recorder threads are always stopped.
    """
    tl = Timeline(namespace)
    rec = Recorder(tl, sources(api, namespace, workloads=workloads, disaggregated=disaggregated))
    rec.start()
    ok = False
    try:
        yield tl
        ok = True
    finally:
        rec.stop(sync=ok, timeout=sync_timeout)


# -- a scripted API, for the benchmark and the harness's own tests ---------------------------


class _Sock:
    def __init__(self, closed: threading.Event) -> None:
        self._closed = closed

    def shutdown(self, how: int) -> None:  # what Watch.stop() calls to unblock a reader
        self._closed.set()


class _Conn:
    def __init__(self, closed: threading.Event) -> None:
        self.sock = _Sock(closed)


class _StreamResponse:
    """Quacks like the urllib3 response `Watch.stream` reads: chunks of JSON lines, then it
    blocks (like an idle watch) until the socket is shut down."""

    status = 200

    def __init__(self, payload: bytes, chunk: int) -> None:
        self._payload, self._chunk = payload, chunk
        self._closed = threading.Event()
        self.connection = _Conn(self._closed)

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        for i in range(0, len(self._payload), self._chunk):
            yield self._payload[i : i + self._chunk]
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()

    def release_conn(self) -> None:
        pass


class _ListResponse:
    def __init__(self, data: bytes) -> None:
        self.data = data


class ScriptedApi:
    """A list call that serves `initial` objects, then streams `events` (watch-event dicts with
    `type` and a raw `object`) on the first watch. Later lists return the state after all events,
    so the recorder's final sync can prove nothing was dropped. Used through `Source`, it runs
    the recorder's real code path: `Watch.stream` parsing JSON lines, `Recorder.handle`, sync."""

    def __init__(self, initial: list[Obj], events: list[Obj], *, list_rv: str = "1", chunk: int = 65536) -> None:
        self.initial, self.events, self.list_rv, self.chunk = initial, events, list_rv, chunk
        self.watches = 0
        final = {o["metadata"]["name"]: o for o in initial}
        last = list_rv
        for e in events:
            o = e["object"]
            last = o["metadata"].get("resourceVersion", last)
            if e["type"] in ("BOOKMARK", "ERROR"):
                continue
            if e["type"] == "DELETED":
                final.pop(o["metadata"]["name"], None)
            else:
                final[o["metadata"]["name"]] = o
        self.final, self.final_rv = list(final.values()), last
        # encoded up front: the API server's serialisation is not the recorder's cost
        self.payload = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)

    def __call__(self, **kw: Any) -> Any:
        if kw.get("watch"):
            self.watches += 1
            return _StreamResponse(self.payload if self.watches == 1 else b"", self.chunk)
        items, rv = (self.initial, self.list_rv) if self.watches == 0 else (self.final, self.final_rv)
        return _ListResponse(json.dumps({"metadata": {"resourceVersion": rv}, "items": items}).encode())
