"""The recorded timeline: an append-only, thread-safe list of compact watch events, saved as JSON.

Why compact snapshots: the invariants only need identity (name, uid, the LWS labels), readiness,
deletion and a few spec/status fields. Keeping whole objects would make a 100-group rollout's
timeline tens of megabytes and slow every replay; keeping too little would make a violation
impossible to explain. `snapshot()` is the one place that decides what is kept.

Ordering: events are stored in arrival order (each kind has its own watch thread, so arrival
order across kinds is not the order things happened). `ordered()` sorts by resourceVersion, which
on etcd-backed API servers is the global etcd revision; Kubernetes documents resourceVersion as
opaque, so when any event carries a non-integer one, arrival order is used instead.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
LWS_PREFIX = "leaderworkerset.sigs.k8s.io/"
NAME = LWS_PREFIX + "name"
GROUP_INDEX = LWS_PREFIX + "group-index"
WORKER_INDEX = LWS_PREFIX + "worker-index"
REVISION = LWS_PREFIX + "template-revision-hash"
SIZE = LWS_PREFIX + "size"
REPLICAS = LWS_PREFIX + "replicas"
LEADER_NAME = LWS_PREFIX + "leader-name"
DS_PREFIX = "disaggregatedset.x-k8s.io/"
DS_NAME, DS_ROLE, DS_REVISION = DS_PREFIX + "name", DS_PREFIX + "role", DS_PREFIX + "revision"
DS_INITIAL = DS_PREFIX + "initial-replicas"
# Pod conditions a controller sets (True, with its reason) on a pod it is about to terminate:
# Kubernetes' DisruptionTarget and Kueue's TerminationTarget.
TERMINATION_CONDITIONS = ("DisruptionTarget", "TerminationTarget")
KEPT_LABELS = (NAME, GROUP_INDEX, WORKER_INDEX, REVISION, "kueue.x-k8s.io/queue-name", DS_NAME, DS_ROLE, DS_REVISION)
KEPT_ANNOTATIONS = (SIZE, REPLICAS, LEADER_NAME, DS_INITIAL)
KINDS = ("LeaderWorkerSet", "StatefulSet", "Pod", "ControllerRevision", "Workload", "DisaggregatedSet", "Service")
SCHEMA = 1


@dataclass(frozen=True, slots=True)
class Event:
    """One observed change. `t` is seconds since the timeline started (monotonic clock)."""

    seq: int
    t: float
    wall: float
    kind: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    source: str = "watch"  # watch | list (initial list) | relist (state diff after a 410/reconnect)

    @property
    def name(self) -> str:
        return str(self.obj.get("name", ""))

    @property
    def rv(self) -> str:
        return str(self.obj.get("rv", ""))

    def ref(self) -> str:
        return f"{self.kind}/{self.name}"

    def to_json(self) -> Obj:
        return {
            "seq": self.seq,
            "t": round(self.t, 6),
            "wall": self.wall,
            "kind": self.kind,
            "type": self.type,
            "source": self.source,
            "obj": self.obj,
        }

    @staticmethod
    def from_json(d: Obj) -> Event:
        return Event(d["seq"], d["t"], d.get("wall", 0.0), d["kind"], d["type"], d["obj"], d.get("source", "watch"))


def _int_or(v: Any) -> int | None:
    return v if isinstance(v, int) else None


def _conditions(status: Obj) -> dict[str, str]:
    return {str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []}


def template_digest(spec: Obj) -> str:
    """A short digest of what makes an LWS revision (revision_utils.go getPatch@v0.9.0): the whole
    leaderWorkerTemplate (size included) and networkConfig. Equal digests = no rollout expected."""
    raw = json.dumps(
        {"lwt": spec.get("leaderWorkerTemplate"), "net": spec.get("networkConfig")}, sort_keys=True
    ).encode()
    return hashlib.sha1(raw).hexdigest()[:10]


def snapshot(kind: str, obj: Obj) -> Obj:
    """The compact, JSON-ready view of `obj` kept in the timeline (see the module docstring)."""
    snap = _meta_view(obj.get("metadata") or {})
    view = _KIND_VIEWS.get(kind)
    if view:
        snap.update(view(obj, obj.get("spec") or {}, obj.get("status") or {}))
    return snap


def _meta_view(meta: Obj) -> Obj:
    """What every kind keeps: identity, the kept labels and annotations, deletion, generation and
    controller owner."""
    snap: Obj = {"name": meta.get("name"), "uid": meta.get("uid"), "rv": meta.get("resourceVersion")}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    kept = {k: labels[k] for k in KEPT_LABELS if k in labels}
    if kept:
        snap["labels"] = kept
    ann = {k: annotations[k] for k in KEPT_ANNOTATIONS if k in annotations}
    if ann:
        snap["annotations"] = ann
    if meta.get("deletionTimestamp"):
        snap["deleting"] = True
    if meta.get("generation") is not None:
        snap["generation"] = meta["generation"]
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            snap["owner"] = f"{ref.get('kind')}/{ref.get('name')}/{ref.get('uid')}"
    return snap


def _pod_view(obj: Obj, spec: Obj, status: Obj) -> Obj:
    view: Obj = {
        "phase": status.get("phase"),
        "ready": status.get("phase") == "Running" and _conditions(status).get("Ready") == "True",
    }
    if spec.get("nodeName"):
        view["node"] = spec["nodeName"]
    if spec.get("schedulingGates"):
        view["gated"] = True
    for cond in status.get("conditions") or []:
        if cond.get("type") in TERMINATION_CONDITIONS and cond.get("status") == "True":
            view["terminating_for"] = f"{cond['type']}/{cond.get('reason', '')}"
    return view


_STS_STATUS = (
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "updatedReplicas",
    "currentRevision",
    "updateRevision",
    "observedGeneration",
)


def _sts_view(obj: Obj, spec: Obj, status: Obj) -> Obj:
    ru = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    view: Obj = {"spec": {"replicas": spec.get("replicas"), "partition": ru.get("partition", 0)}}
    if ru.get("maxUnavailable") is not None:
        view["spec"]["maxUnavailable"] = ru["maxUnavailable"]
    view["status"] = {k: status[k] for k in _STS_STATUS if k in status}
    return view


def _lws_view(obj: Obj, spec: Obj, status: Obj) -> Obj:
    ru = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    return {
        "spec": {
            "replicas": spec.get("replicas", 1),
            "size": lwt.get("size", 1),
            "partition": ru.get("partition", 0),
            "maxUnavailable": ru.get("maxUnavailable", 1),
            "maxSurge": ru.get("maxSurge", 0),
            "template": template_digest(spec),
        },
        "status": {
            "replicas": status.get("replicas", 0),
            "readyReplicas": status.get("readyReplicas", 0),
            "updatedReplicas": status.get("updatedReplicas", 0),
            "observedGeneration": status.get("observedGeneration"),
            "conditions": _conditions(status),
        },
    }


_KIND_VIEWS: dict[str, Callable[[Obj, Obj, Obj], Obj]] = {
    "Pod": _pod_view,
    "StatefulSet": _sts_view,
    "LeaderWorkerSet": _lws_view,
    "ControllerRevision": lambda obj, spec, status: {"revision": _int_or(obj.get("revision"))},
    "Workload": lambda obj, spec, status: {"status": {"conditions": _conditions(status)}},
    "DisaggregatedSet": lambda obj, spec, status: {
        "roles": [_ds_role(r) for r in spec.get("roles") or []],
        "status": {"roles": status.get("roleStatuses") or [], "conditions": _conditions(status)},
    },
}


def _ds_role(role: Obj) -> Obj:
    """One DisaggregatedSet role: its replicas, rollout limits (as written) and template digest."""
    spec = role.get("spec") or {}
    ru = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")
    out: Obj = {"name": role.get("name"), "replicas": spec.get("replicas", 1), "template": template_digest(spec)}
    if ru is not None:
        out["maxSurge"], out["maxUnavailable"] = ru.get("maxSurge", 0), ru.get("maxUnavailable", 1)
    return out


@dataclass
class Timeline:
    """What `record()` yields: events appended by the recorder threads, read by the checks.

    `gaps` lists every moment the recorder had to re-list (a 410) and found writes it had not
    seen: events between the last one seen and the re-list may be missing there, so checks over
    such a timeline are reported as incomplete rather than trusted. `quiet_relists` are re-lists
    that found everything as the recorder last saw it (nothing missed). `complete` is False until the recorder's final
    sync proved its state equal to a fresh list of every kind.
    """

    namespace: str
    events: list[Event] = field(default_factory=list)
    gaps: list[Obj] = field(default_factory=list)
    quiet_relists: list[Obj] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    complete: bool = False
    sync_error: str = ""
    started_mono: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def append(self, kind: str, etype: str, snap: Obj, source: str = "watch") -> Event:
        with self._lock:
            ev = Event(len(self.events), time.monotonic() - self.started_mono, time.time(), kind, etype, snap, source)
            self.events.append(ev)
        return ev

    def snapshot_events(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def ordered(self) -> list[Event]:
        """Events in the order they happened (resourceVersion order; see the module docstring)."""
        evs = self.snapshot_events()
        return order(evs)

    # -- persistence -------------------------------------------------------------------------
    def to_json(self) -> Obj:
        return {
            "schema": SCHEMA,
            "namespace": self.namespace,
            "started_wall": self.started_wall,
            "kinds": self.kinds,
            "complete": self.complete,
            "sync_error": self.sync_error,
            "gaps": self.gaps,
            "quiet_relists": self.quiet_relists,
            "events": [e.to_json() for e in self.snapshot_events()],
        }

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), separators=(",", ":")))
        return path

    @staticmethod
    def load(path: Path) -> Timeline:
        d = json.loads(path.read_text())
        tl = Timeline(
            namespace=d.get("namespace", ""),
            events=[Event.from_json(e) for e in d.get("events", [])],
            gaps=list(d.get("gaps", [])),
            quiet_relists=list(d.get("quiet_relists", [])),
            kinds=list(d.get("kinds", [])),
            complete=bool(d.get("complete", False)),
            sync_error=d.get("sync_error", ""),
            started_wall=d.get("started_wall", 0.0),
        )
        return tl


def order(events: list[Event]) -> list[Event]:
    """Sort by integer resourceVersion (ties and non-integers keep arrival order)."""
    try:
        keyed = [(int(e.rv), e.seq, e) for e in events]
    except ValueError:
        return sorted(events, key=lambda e: e.seq)
    return [e for _, _, e in sorted(keyed, key=lambda k: (k[0], k[1]))]
