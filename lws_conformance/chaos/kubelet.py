"""What a kubelet reports, written by the harness where no kubelet runs (the local cluster's kwok nodes).

A scenario that needs a kubelet's own report — a container that exits and is restarted, an init
container that fails at start-up and is restarted while its pod is still Pending, a readiness probe
that starts failing or passes again — writes exactly the pod status a kubelet (Kubernetes v1.3x,
`pkg/kubelet/status`, `kuberuntime`) would write, on the pods/status subresource:

- `container_exited` / `container_restarted`: the container's state `terminated` (exit code,
  reason `Error`), the pod's Ready and ContainersReady False (`ContainersNotReady`); then
  `restartCount` + 1, the termination moved to `lastState` and the container running again;
- `init_failed` / `init_restarted`: the pod Pending, Initialized False
  (`ContainersNotInitialized`), the init container `terminated` with its exit code and the app
  containers waiting (`PodInitializing`); then the init container's `restartCount` + 1 with the
  termination in `lastState`;
- `readiness`: every container's `ready` and the Ready and ContainersReady conditions, the pod
  still Running and no container restarted.

Each is a JSON patch whose `test` ops (the pod's UID, the container's restartCount) make it fail
rather than clobber a concurrent change. kwok's pod-ready stage plays only on Pending pods, so
on kwok's nodes it leaves a Running pod's written status alone; a Pending pod (an init container
restarting) needs a node kwok does not manage: `ScriptedNode` is one, a Ready Node whose pods the
test reports itself (`started`), while a thread plays the rest of a kubelet's part: its Lease
renewed (so KCM keeps it Ready), every pod bound there reported started unless the test holds it,
and a pod being deleted removed (a delete with grace period 0, UID precondition) once its
graceful termination has begun and its preStop `sleep` hooks have run, as a kubelet does after
stopping its containers.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, ProtocolError, ReadTimeoutError

from ..k8s.client import retry_after, to_dict
from ..k8s.wait import wait_for

Obj = dict[str, Any]
JSON_PATCH = "application/json-patch+json"
UNBACKED = "lwsc.x-k8s.io/unbacked"  # NoSchedule taint of a node no kubelet (no kwok) runs
LEASE_SECONDS = 40  # the kubelet's default nodeLeaseDurationSeconds
RENEW_EVERY = 10.0  # seconds: the kubelet renews its Lease every quarter of its duration
WATCH_SECONDS = 5  # a watch of the node's pods is re-opened this often (the Lease is renewed between)
TRANSIENT_TRIES = 30  # transient API failures in a row the kubelet thread rides out (about 30 s)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cid(pod: Obj, container: str, attempt: int) -> str:
    digest = hashlib.sha256(f"{pod['metadata']['uid']}/{container}/{attempt}".encode()).hexdigest()
    return f"containerd://{digest}"


def _index(items: list[Obj], key: str, value: str) -> int:
    return next(i for i, c in enumerate(items) if c.get(key) == value)


def _cond_ops(pod: Obj, values: dict[str, tuple[str, str, str]], at: str) -> list[Obj]:
    """Replace (or add) the pod conditions `type -> (status, reason, message)`."""
    conds = (pod.get("status") or {}).get("conditions") or []
    ops: list[Obj] = []
    if not conds:
        ops.append({"op": "add", "path": "/status/conditions", "value": []})
    for ctype, (status, reason, message) in values.items():
        cond: Obj = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": at}
        if reason:
            cond.update(reason=reason, message=message)
        have = [i for i, c in enumerate(conds) if c.get("type") == ctype]
        if have and conds[have[0]].get("status") == status and not reason:
            continue
        if have:
            ops.append({"op": "replace", "path": f"/status/conditions/{have[0]}", "value": cond})
        else:
            ops.append({"op": "add", "path": "/status/conditions/-", "value": cond})
    return ops


def _guard(pod: Obj, field: str | None = None, idx: int | None = None) -> list[Obj]:
    ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": pod["metadata"]["uid"]}]
    if field is not None and idx is not None:
        count = int(pod["status"][field][idx].get("restartCount") or 0)
        ops.append({"op": "test", "path": f"/status/{field}/{idx}/restartCount", "value": count})
    return ops


def _names(pod: Obj, field: str) -> list[str]:
    return [c["name"] for c in (pod.get("spec") or {}).get(field) or []]


def _unready(pod: Obj, names: list[str]) -> tuple[str, str, str]:
    return ("False", "ContainersNotReady", f"containers with unready status: [{' '.join(names)}]")


def report(api: client.ApiClient, namespace: str, pod: str, patch: Callable[[Obj], list[Obj]]) -> Obj:
    """Write `patch(the pod as it is now)` on pod `pod`'s status subresource; returns the pod as
    written. A `test` op that no longer holds (the pod replaced or changed meanwhile) fails (422)."""
    core = client.CoreV1Api(api)
    current = to_dict(api, core.read_namespaced_pod(pod, namespace))
    return to_dict(api, core.patch_namespaced_pod_status(pod, namespace, patch(current), _content_type=JSON_PATCH))


# -- app containers ---------------------------------------------------------------------------------


def container_exited(pod: Obj, container: str, exit_code: int, at: str | None = None) -> list[Obj]:
    """A running container's process ended (exit code `exit_code`: 137 for a SIGKILL): its state
    `terminated` (reason Error), not ready, not started; the pod not Ready; phase still Running
    (restartPolicy Always restarts it)."""
    at = at or now()
    statuses = pod["status"]["containerStatuses"]
    idx = _index(statuses, "name", container)
    st = statuses[idx]
    started = ((st.get("state") or {}).get("running") or {}).get("startedAt") or at
    attempt = int(st.get("restartCount") or 0)
    terminated = {
        "exitCode": exit_code,
        "reason": "Error",
        "startedAt": started,
        "finishedAt": at,
        "containerID": st.get("containerID") or _cid(pod, container, attempt),
    }
    unready = _unready(pod, [container])
    return [
        *_guard(pod, "containerStatuses", idx),
        {"op": "test", "path": "/status/phase", "value": "Running"},
        {"op": "replace", "path": f"/status/containerStatuses/{idx}/state", "value": {"terminated": terminated}},
        {"op": "add", "path": f"/status/containerStatuses/{idx}/ready", "value": False},
        {"op": "add", "path": f"/status/containerStatuses/{idx}/started", "value": False},
        *_cond_ops(pod, {"ContainersReady": unready, "Ready": unready}, at),
    ]


def container_restarted(pod: Obj, container: str, ready: bool = True, at: str | None = None) -> list[Obj]:
    """The kubelet started the exited container again: `restartCount` + 1, its termination in
    `lastState`, state running; Ready again when `ready` (no readiness probe, or it passes)."""
    at = at or now()
    statuses = pod["status"]["containerStatuses"]
    idx = _index(statuses, "name", container)
    st = statuses[idx]
    terminated = (st.get("state") or {}).get("terminated")
    assert terminated, f"{pod['metadata']['name']}: container {container} has not exited: {st.get('state')}"
    count = int(st.get("restartCount") or 0) + 1
    values = {"ContainersReady": ("True", "", ""), "Ready": ("True", "", "")} if ready else {}
    return [
        *_guard(pod, "containerStatuses", idx),
        {"op": "replace", "path": f"/status/containerStatuses/{idx}/restartCount", "value": count},
        {"op": "add", "path": f"/status/containerStatuses/{idx}/lastState", "value": {"terminated": terminated}},
        {"op": "replace", "path": f"/status/containerStatuses/{idx}/state", "value": {"running": {"startedAt": at}}},
        {"op": "add", "path": f"/status/containerStatuses/{idx}/containerID", "value": _cid(pod, container, count)},
        {"op": "add", "path": f"/status/containerStatuses/{idx}/started", "value": True},
        {"op": "add", "path": f"/status/containerStatuses/{idx}/ready", "value": ready},
        *_cond_ops(pod, values, at),
    ]


def readiness(pod: Obj, ready: bool, at: str | None = None) -> list[Obj]:
    """A readiness probe started failing (or passes again) in every container: each container's
    `ready`, the pod's Ready and ContainersReady; phase Running, nothing restarted."""
    at = at or now()
    statuses = pod["status"].get("containerStatuses") or []
    assert pod["status"].get("phase") == "Running" and statuses, (
        f"{pod['metadata']['name']} is not a running pod: {pod['status']}"
    )
    value = ("True", "", "") if ready else _unready(pod, [c["name"] for c in statuses])
    return [
        *_guard(pod),
        {"op": "test", "path": "/status/phase", "value": "Running"},
        *({"op": "add", "path": f"/status/containerStatuses/{i}/ready", "value": ready} for i in range(len(statuses))),
        *_cond_ops(pod, {"ContainersReady": value, "Ready": value}, at),
    ]


# -- init containers (a Pending pod: on a ScriptedNode) -----------------------------------------------


def init_failed(pod: Obj, container: str, exit_code: int = 1, at: str | None = None) -> list[Obj]:
    """Init container `container` of a pod bound to a ScriptedNode ran and exited `exit_code`:
    the pod Pending, Initialized False, the app containers waiting (PodInitializing). Written over
    whatever status the pod has (the first report of a pod, or after `init_restarted`)."""
    at = at or now()
    inits, apps = _names(pod, "initContainers"), _names(pod, "containers")
    status = pod.get("status") or {}
    old = {c["name"]: c for c in status.get("initContainerStatuses") or []}
    init_statuses = []
    for name in inits:
        count = int((old.get(name) or {}).get("restartCount") or 0)
        if name == container:
            st: Obj = {
                "name": name,
                "image": _image(pod, "initContainers", name),
                "imageID": "",
                "containerID": _cid(pod, name, count),
                "ready": False,
                "started": False,
                "restartCount": count,
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": "Error",
                        "startedAt": at,
                        "finishedAt": at,
                        "containerID": _cid(pod, name, count),
                    }
                },
            }
            if (old.get(name) or {}).get("lastState"):
                st["lastState"] = old[name]["lastState"]
        else:
            st = {
                "name": name,
                "image": _image(pod, "initContainers", name),
                "imageID": "",
                "ready": False,
                "restartCount": count,
                "started": False,
                "state": {"waiting": {"reason": "PodInitializing"}},
            }
        init_statuses.append(st)
    waiting = [
        {
            "name": n,
            "image": _image(pod, "containers", n),
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {"waiting": {"reason": "PodInitializing"}},
        }
        for n in apps
    ]
    body = {
        **{k: v for k, v in status.items() if k not in ("conditions", "initContainerStatuses", "containerStatuses")},
        "phase": "Pending",
        "startTime": status.get("startTime") or at,
        "initContainerStatuses": init_statuses,
        "containerStatuses": waiting,
        "conditions": _pending_conditions(pod, inits, apps, at),
    }
    return [*_guard(pod), {"op": "replace" if status else "add", "path": "/status", "value": body}]


def init_restarted(pod: Obj, container: str, at: str | None = None) -> list[Obj]:
    """The kubelet started the failed init container again: its `restartCount` + 1, the failure in
    `lastState`, state running; the pod still Pending and not initialized."""
    at = at or now()
    statuses = pod["status"]["initContainerStatuses"]
    idx = _index(statuses, "name", container)
    st = statuses[idx]
    terminated = (st.get("state") or {}).get("terminated")
    assert terminated and terminated.get("exitCode"), (
        f"{pod['metadata']['name']}: init container {container} has not failed: {st.get('state')}"
    )
    count = int(st.get("restartCount") or 0) + 1
    running = {"running": {"startedAt": at}}
    return [
        *_guard(pod, "initContainerStatuses", idx),
        {"op": "test", "path": "/status/phase", "value": "Pending"},
        {"op": "replace", "path": f"/status/initContainerStatuses/{idx}/restartCount", "value": count},
        {"op": "add", "path": f"/status/initContainerStatuses/{idx}/lastState", "value": {"terminated": terminated}},
        {"op": "replace", "path": f"/status/initContainerStatuses/{idx}/state", "value": running},
        {"op": "add", "path": f"/status/initContainerStatuses/{idx}/containerID", "value": _cid(pod, container, count)},
        {"op": "add", "path": f"/status/initContainerStatuses/{idx}/started", "value": True},
    ]


def _pending_conditions(pod: Obj, inits: list[str], apps: list[str], at: str) -> list[Obj]:
    scheduled = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
    not_init = f"containers with incomplete status: [{' '.join(inits)}]"
    unready = f"containers with unready status: [{' '.join(apps)}]"
    return [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": at},
        {
            "type": "Initialized",
            "status": "False",
            "reason": "ContainersNotInitialized",
            "message": not_init,
            "lastProbeTime": None,
            "lastTransitionTime": at,
        },
        {
            "type": "Ready",
            "status": "False",
            "reason": "ContainersNotReady",
            "message": unready,
            "lastProbeTime": None,
            "lastTransitionTime": at,
        },
        {
            "type": "ContainersReady",
            "status": "False",
            "reason": "ContainersNotReady",
            "message": unready,
            "lastProbeTime": None,
            "lastTransitionTime": at,
        },
        *scheduled,
    ]


def _image(pod: Obj, field: str, name: str) -> str:
    return str(next(c for c in pod["spec"].get(field) or [] if c["name"] == name).get("image", ""))


def started(pod: Obj, ready: bool, pod_ip: str, host_ip: str, at: str | None = None) -> list[Obj]:
    """What a kubelet writes once a pod bound to its node is running: init containers completed,
    every container running (and ready when `ready`: no readiness probe, or it passes), phase
    Running, the pod's and host's IPs."""
    at = at or now()
    status = pod.get("status") or {}
    inits = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": _cid(pod, c["name"], 0),
            "ready": True,
            "started": False,
            "restartCount": 0,
            "state": {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": at,
                    "finishedAt": at,
                    "containerID": _cid(pod, c["name"], 0),
                }
            },
        }
        for c in pod["spec"].get("initContainers") or []
    ]
    apps = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": _cid(pod, c["name"], 0),
            "ready": ready,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": at}},
        }
        for c in pod["spec"]["containers"]
    ]
    names = [c["name"] for c in pod["spec"]["containers"]]
    value = ("True", "", "") if ready else _unready(pod, names)
    conds = [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": at},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": at},
        *(
            {
                "type": t,
                "status": value[0],
                "lastProbeTime": None,
                "lastTransitionTime": at,
                **({"reason": value[1], "message": value[2]} if value[1] else {}),
            }
            for t in ("Ready", "ContainersReady")
        ),
        *(c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"),
    ]
    body = {
        **{k: v for k, v in status.items() if k not in ("conditions", "initContainerStatuses", "containerStatuses")},
        "phase": "Running",
        "conditions": conds,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": status.get("startTime") or at,
        "containerStatuses": apps,
        **({"initContainerStatuses": inits} if inits else {}),
    }
    return [*_guard(pod), {"op": "replace" if status else "add", "path": "/status", "value": body}]


# -- a node whose kubelet is the test ---------------------------------------------------------------


class ScriptedNode:
    """A Ready Node that kwok does not manage (no kwok annotation), tainted UNBACKED so only pods
    that tolerate it land there; the test plays its kubelet. While open, a thread renews its
    Lease, reports every pod bound there started (Ready when `ready(pod)`) unless `hold(pod)`, and
    removes a pod being deleted (grace period 0, UID precondition) once its graceful termination
    has begun and its preStop `sleep` hooks have run (at most its grace period). `terminations`
    records, per pod UID, the deletionGracePeriodSeconds it was first seen terminating with;
    `vanished` the pods removed by anyone else (force-deleted) before this kubelet removed them.
    Used as a context manager; on exit it deletes the pods left there and the Node."""

    def __init__(
        self,
        api: client.ApiClient,
        name: str,
        namespace: str,
        hostname_label: str,
        *,
        hold: Callable[[Obj], bool] = lambda _p: False,
        ready: Callable[[Obj], bool] = lambda _p: True,
    ) -> None:
        self.api, self.name, self.namespace, self.hostname_label = api, name, namespace, hostname_label
        self.core = client.CoreV1Api(api)
        self.coord = client.CoordinationV1Api(api)
        self.hold, self.ready = hold, ready
        high, low = divmod(int(hashlib.sha1(name.encode()).hexdigest()[:4], 16) % 65000 + 1, 256)
        self.host_ip = f"100.64.{high}.{low}"
        self.terminations: dict[str, Any] = {}  # uid -> deletionGracePeriodSeconds first seen
        self.vanished: dict[str, str] = {}  # uid -> pod name, removed by someone other than this kubelet
        self.errors: list[BaseException] = []
        self._started: set[str] = set()
        self._removed: set[str] = set()  # pods whose removal is under way (their preStop hooks)
        self._deleted: set[str] = set()  # pods this kubelet deleted
        self._known: dict[str, str] = {}  # uid -> name of every pod seen here
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._renewed = 0.0
        self._ips = 0
        self._timers: list[threading.Timer] = []

    # -- life cycle
    def __enter__(self) -> ScriptedNode:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {self.hostname_label: self.name}},
            "spec": {"taints": [{"key": UNBACKED, "value": "true", "effect": "NoSchedule"}]},
        }
        self.core.create_node(node)  # type: ignore[arg-type]  # the client accepts dicts
        try:
            capacity = {"cpu": "32", "memory": "256Gi", "pods": "110"}
            self.core.patch_node_status(
                self.name,
                {
                    "status": {
                        "capacity": capacity,
                        "allocatable": capacity,
                        "addresses": [{"type": "InternalIP", "address": self.host_ip}],
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "True",
                                "reason": "KubeletReady",
                                "message": "lwsc scripted kubelet",
                                "lastHeartbeatTime": now(),
                                "lastTransitionTime": now(),
                            }
                        ],
                    }
                },
            )
            self._renew()
            self._thread = threading.Thread(target=self._run, name=f"scripted-kubelet-{self.name}", daemon=True)
            self._thread.start()
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        if self._thread is not None:
            self._thread.join(timeout=WATCH_SECONDS + 30)
        self._teardown()

    def _teardown(self) -> None:
        for p in self._list():
            _ignore_gone(
                partial(self.core.delete_namespaced_pod, p["metadata"]["name"], self.namespace, grace_period_seconds=0)
            )
        _ignore_gone(lambda: self.coord.delete_namespaced_lease(self.name, "kube-node-lease"))
        _ignore_gone(lambda: self.core.delete_node(self.name))

    def drain(self, timeout: float = 60) -> None:
        """Wait until no pod is bound here (the caller deleted its workload; this kubelet removes
        each pod once it terminates), then raise what the kubelet thread met (also first: a dead
        kubelet removes nothing, and its failure, not the wait's, is what happened)."""
        self.check()
        wait_for(
            self.api,
            self.core.list_namespaced_pod,
            lambda objs: not objs,
            what=f"pods on node {self.name}",
            condition="none left (their workload deleted)",
            timeout=timeout,
            namespace=self.namespace,
            field_selector=f"spec.nodeName={self.name}",
        )
        self.check()

    def check(self) -> None:
        """Raise what the kubelet thread met (a harness failure, never LWS's)."""
        if self.errors:
            raise RuntimeError(f"the scripted kubelet of node {self.name} failed: {self.errors[0]!r}")

    # -- what the test reports
    def pod(self, name: str) -> Obj:
        return to_dict(self.api, self.core.read_namespaced_pod(name, self.namespace))

    def report(self, pod: str, patch: Callable[[Obj], list[Obj]]) -> Obj:
        """Write `patch(current pod)` on pod `pod`'s status; returns the pod as written."""
        with self._lock:
            current = self.pod(pod)
            assert current["spec"].get("nodeName") == self.name, f"{pod} is not bound to {self.name}"
            self._started.add(current["metadata"]["uid"])  # the test's report: the thread leaves it alone
            return report(self.api, self.namespace, pod, patch)

    def nudge(self) -> None:
        """Play the kubelet's part for every pod bound here now (after `hold` or `ready` changed)."""
        for p in self._list():
            self._handle(p)

    # -- the kubelet's own part
    def _list(self) -> list[Obj]:
        resp = self.core.list_namespaced_pod(self.namespace, field_selector=f"spec.nodeName={self.name}")
        return [to_dict(self.api, p) for p in resp.items]

    def _renew(self) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {
            "metadata": {"name": self.name},
            "spec": {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": stamp},
        }
        try:
            self.coord.patch_namespaced_lease(self.name, "kube-node-lease", body)
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.coord.create_namespaced_lease("kube-node-lease", body)  # type: ignore[arg-type]
        self._renewed = time.monotonic()

    def _run(self) -> None:
        transient = 0
        while not self._stop.is_set():
            try:
                if time.monotonic() - self._renewed >= RENEW_EVERY:
                    self._renew()
                resp = self.core.list_namespaced_pod(self.namespace, field_selector=f"spec.nodeName={self.name}")
                body = to_dict(self.api, resp)
                pods = body.get("items") or []
                seen = {p["metadata"]["uid"] for p in pods}
                self._gone({uid: n for uid, n in self._known.items() if uid not in seen})
                for p in pods:
                    self._handle(p)
                self._watch(str(body["metadata"]["resourceVersion"]))
                transient = 0
            except (ProtocolError, ReadTimeoutError, MaxRetryError, ApiException) as exc:
                # a loaded API server's transient answer or a dropped connection: list again, as a
                # kubelet does; anything else, or too many in a row, is the harness's failure
                pause = retry_after(exc) if isinstance(exc, ApiException) else 1.0
                transient += 1
                if pause is None or transient > TRANSIENT_TRIES:
                    self.errors.append(exc)
                    return
                self._stop.wait(pause)
            except BaseException as exc:  # surfaced by check(): the test is told its kubelet broke
                self.errors.append(exc)
                return

    def _watch(self, rv: str) -> None:
        w = watch.Watch()
        try:
            for ev in w.stream(
                self.core.list_namespaced_pod,
                self.namespace,
                field_selector=f"spec.nodeName={self.name}",
                resource_version=rv,
                timeout_seconds=WATCH_SECONDS,
                _request_timeout=WATCH_SECONDS + 10,
            ):
                if self._stop.is_set() or ev["type"] == "ERROR":
                    return
                obj = to_dict(self.api, ev["object"])
                if ev["type"] == "DELETED":
                    self._gone({obj["metadata"]["uid"]: obj["metadata"]["name"]})
                else:
                    self._handle(obj)
                if time.monotonic() - self._renewed >= RENEW_EVERY:
                    self._renew()
        except (ProtocolError, ReadTimeoutError):
            return  # the connection dropped: list again
        except ApiException as exc:
            if exc.status != 410:
                raise
        finally:
            w.stop()

    def _gone(self, pods: dict[str, str]) -> None:
        with self._lock:
            for uid, name in pods.items():
                self._known.pop(uid, None)
                if uid not in self._deleted:
                    self.vanished[uid] = name

    def _handle(self, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        with self._lock:
            self._known[uid] = meta["name"]
            if meta.get("deletionTimestamp"):
                self.terminations.setdefault(uid, meta.get("deletionGracePeriodSeconds"))
                if uid not in self._removed:
                    self._removed.add(uid)
                    # the preStop hooks run (a `sleep` hook: its seconds, within the grace period),
                    # the containers stop, and the kubelet removes the pod (grace 0, this UID)
                    remove = partial(self._remove, meta["name"], uid)
                    hook = min(pre_stop_seconds(pod), int(meta.get("deletionGracePeriodSeconds") or 0))
                    if hook > 0:
                        timer = threading.Timer(hook, remove)
                        timer.daemon = True
                        self._timers.append(timer)
                        timer.start()
                    else:
                        remove()
                return
            if uid in self._started or self.hold(pod):
                return
            self._started.add(uid)
            self._ips += 1
            high, low = divmod(self._ips, 256)
            ip = f"100.65.{high}.{low}"
            patch = started(pod, self.ready(pod), ip, self.host_ip)
            _ignore_gone(
                lambda: self.core.patch_namespaced_pod_status(
                    meta["name"], self.namespace, patch, _content_type=JSON_PATCH
                )
            )

    def _remove(self, pod: str, uid: str) -> None:
        self._deleted.add(uid)
        try:
            _ignore_gone(
                lambda: self.core.delete_namespaced_pod(
                    pod,
                    self.namespace,
                    grace_period_seconds=0,
                    body=client.V1DeleteOptions(grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid)),
                )
            )
        except BaseException as exc:  # surfaced by check()
            self.errors.append(exc)


def pre_stop_seconds(pod: Obj) -> int:
    """How long the pod's preStop hooks run: the longest `sleep` hook of its containers (exec and
    HTTP hooks run nothing here)."""
    hooks = [((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {} for c in pod["spec"]["containers"]]
    return max((int(h.get("seconds") or 0) for h in hooks), default=0)


def _ignore_gone(call: Callable[[], Any]) -> None:
    """Run an API call; a 404 (gone already), 409 or 422 (a precondition or `test` op that no
    longer holds: the object changed or was replaced) is no error for a kubelet."""
    try:
        call()
    except ApiException as exc:
        if exc.status not in (404, 409, 422):
            raise
