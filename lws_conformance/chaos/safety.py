"""What a fault may touch, and how to undo it: the guard rails every action goes through.

Why: chaos on a shared cluster must never hit someone else's pods, the cluster's own nodes or
the shared control plane. So a fault only targets
- pods in a namespace carrying the run label `lwsc.x-k8s.io/run` (made by the harness), and only
  through a non-empty label selector (chaostoolkit-kubernetes' `terminate_pods` without one takes
  every pod in the namespace; here that is refused);
- nodes labelled `lwsc.x-k8s.io/managed=true` (the harness's fake nodes);
- processes of a local cluster whose state directory the harness owns, and never the shared one:
  only clusters named `private-*` (the per-worker `private_cluster`) or the one cluster named
  explicitly by the `lwsc_disposable_cluster` configuration key;
- on a kind cluster `lwsc --profile kind up` made (its kubeconfig in the harness's state, its
  handle there): the node containers of that cluster only, a paused node only the chaos node
  (`lwsc.x-k8s.io/chaos=true`, tainted, no other test's pods), and the controllers' own pods.

Each applied fault registers its undo in the ledger; `restore_all()` plays what is still pending.
chaostoolkit swallows KeyboardInterrupt and skips rollbacks on an interrupted run, so the ledger
is what guarantees that a Ctrl-C leaves no controller stopped and no node failed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..errors import UserError
from ..k8s.objects import RUN_LABEL
from ..profile import RESOLVED_FILE
from ..providers import existing, kind
from ..providers.base import ClusterHandle
from ..providers.components import ORDER, state_root
from ..providers.local import LocalCluster, recorded
from ..providers.nodes import MANAGED_LABEL

Obj = dict[str, Any]
PROCESS_TARGETS = frozenset(ORDER)
PRIVATE_PREFIX = "private-"


class ChaosRefused(UserError):
    """A fault was asked to touch something the harness did not create (or touch everything)."""


KUBECONFIG_ENV = "LWSC_KUBECONFIG"


def kubeconfig_given(configuration: dict[str, Any] | None) -> str | None:
    """The experiment's cluster by the harness's one rule (`existing.chosen`): the
    `configuration.kubeconfig` key, else $LWSC_KUBECONFIG (what `lwsc chaos-target` prints); None
    when neither is set (never ~/.kube/config)."""
    picked = existing.chosen(
        (configuration or {}).get("kubeconfig"),
        env=os.environ.get(KUBECONFIG_ENV),
        env_name=KUBECONFIG_ENV,
        given_by="configuration.kubeconfig",
    )
    return os.pathsep.join(str(p) for p in picked[0]) if picked else None


@dataclass(frozen=True)
class Fault:
    """A fault as data: what it does, to which targets (selector), how many, for how long."""

    action: str
    selector: str
    quantity: int | None  # None = every matching target
    duration: float | None = None  # None = one-shot (pod kill) or until restored


def require_selector(selector: str | None, what: str) -> str:
    """Refuse a missing or empty selector: a selector-less kill would take everything."""
    sel = (selector or "").strip()
    if not sel or all(term.strip().startswith("!") for term in sel.split(",")):
        raise ChaosRefused(f"refusing a {what} fault without a label selector (it would select every {what})")
    return sel


def parse_quantity(quantity: int | str | None) -> int | None:
    """An int >= 1, or "all" (None). Zero or negative quantities are refused, not ignored."""
    if quantity is None or (isinstance(quantity, str) and quantity.strip().lower() == "all"):
        return None
    try:
        n = int(quantity)
    except (TypeError, ValueError):
        raise ChaosRefused(f"quantity must be a positive integer or 'all', got {quantity!r}") from None
    if n < 1:
        raise ChaosRefused(f"quantity must be a positive integer or 'all', got {quantity!r}")
    return n


def pick(objs: Sequence[Obj], quantity: int | None) -> list[Obj]:
    """The first `quantity` objects by name (deterministic, so a run can be reproduced)."""
    ordered = sorted(objs, key=lambda o: o["metadata"]["name"])
    return ordered if quantity is None else ordered[:quantity]


def check_namespace(core: client.CoreV1Api, namespace: str | None) -> str:
    """Refuse a namespace the harness did not create (no run label), or none at all."""
    if not namespace:
        raise ChaosRefused("refusing a pod fault without a namespace")
    try:
        ns = core.read_namespace(namespace)
    except ApiException as exc:
        if exc.status == 404:
            raise ChaosRefused(f"namespace {namespace} does not exist") from None
        raise
    labels = (ns.metadata.labels if ns.metadata else None) or {}
    if not labels.get(RUN_LABEL):
        raise ChaosRefused(f"namespace {namespace} has no {RUN_LABEL} label: not created by the harness")
    return namespace


def check_nodes(nodes: Sequence[Obj]) -> None:
    """Refuse the whole fault if any selected node is not a harness fake node."""
    foreign = [n["metadata"]["name"] for n in nodes if (n["metadata"].get("labels") or {}).get(MANAGED_LABEL) != "true"]
    if foreign:
        raise ChaosRefused(f"nodes {foreign} lack {MANAGED_LABEL}=true: not created by the harness")


def local_cluster(kubeconfig: str | Path, disposable: str | None = None) -> LocalCluster:
    """The local cluster a kubeconfig belongs to, if process faults are allowed on it.

    The kubeconfig must be `<state root>/<name>/kubeconfig` of a harness cluster with pid
    records; the name must be `private-*` or equal `disposable` (an explicit opt-in)."""
    cluster = local_cluster_of(kubeconfig)
    if cluster is None:
        raise ChaosRefused(f"{kubeconfig} is not a local lwsc cluster: process faults need the local provider")
    name = cluster.name
    if not (name.startswith(PRIVATE_PREFIX) or (disposable and name == disposable)):
        raise ChaosRefused(
            f"refusing a process fault on cluster '{name}': only private-* clusters, or the one named by "
            "the lwsc_disposable_cluster configuration key, may have their processes stopped"
        )
    return cluster


def local_cluster_of(kubeconfig: str | Path) -> LocalCluster | None:
    """The local lwsc cluster `kubeconfig` belongs to (`<state root>/<name>/kubeconfig` with pid
    records), with the profile it was brought up with, or None: for reading its processes' state,
    which any cluster allows."""
    path = Path(kubeconfig).resolve()
    cluster_dir = path.parent
    if path.name != "kubeconfig" or cluster_dir.parent != state_root().resolve() or not (cluster_dir / "pids").is_dir():
        return None
    cluster = recorded(cluster_dir)
    if cluster is None:
        raise ChaosRefused(
            f"cluster '{cluster_dir.name}' records no profile ({cluster_dir / RESOLVED_FILE}): it was brought up by "
            f"an older lws-conformance; bring it up again (`lwsc down --name {cluster_dir.name}`, then `lwsc up`)"
        )
    return cluster


def kind_cluster(kubeconfig: str | Path) -> ClusterHandle:
    """The handle of the kind cluster a kubeconfig belongs to, if `lwsc --profile kind up` made
    it: the kubeconfig is `<state root>/kind-<name>/kubeconfig` next to the handle it wrote."""
    path = Path(kubeconfig).resolve()
    handle_file = path.parent / "handle.json"
    if path.name != "kubeconfig" or path.parent.parent != state_root().resolve() or not handle_file.is_file():
        raise ChaosRefused(f"{kubeconfig} is not a kind cluster lwsc brought up: node container faults need one")
    handle = ClusterHandle.from_json(handle_file.read_text())
    name = handle.endpoints.get("kind-cluster")
    if handle.provider != "kind" or not name or path.parent != kind.state_dir(name).resolve():
        raise ChaosRefused(f"{kubeconfig} is not a kind cluster lwsc brought up: node container faults need one")
    return handle


def check_kind_container(handle: ClusterHandle, node: str) -> None:
    """Refuse a container that is not one of this kind cluster's nodes (kind's cluster label)."""
    label = '{{index .Config.Labels "io.x-k8s.kind.cluster"}}'
    out = kind.node_docker(handle, "inspect", "--format", label, node, timeout=20)
    cluster = handle.endpoints["kind-cluster"]
    if out.returncode != 0 or out.stdout.strip() != cluster:
        said = out.stdout.strip() or (out.stderr.strip().splitlines() or ["no such container"])[-1]
        raise ChaosRefused(f"container {node} is not a node of kind cluster {cluster} ({said})")


def check_chaos_node(node: Obj) -> None:
    """Refuse to pause a node other than the kind cluster's chaos node: a paused node freezes every
    pod on it, and only the chaos node is tainted against other tests' pods."""
    check_nodes([node])
    if (node["metadata"].get("labels") or {}).get(kind.CHAOS_LABEL) != "true":
        name = node["metadata"]["name"]
        raise ChaosRefused(f"node {name} lacks {kind.CHAOS_LABEL}=true: only the chaos node is paused")


def check_component(cluster: LocalCluster, component: str) -> None:
    if component not in PROCESS_TARGETS:
        raise ChaosRefused(f"unknown component {component!r}; one of {sorted(PROCESS_TARGETS)}")
    if not any(r.name == component for r in cluster.records()):
        raise ChaosRefused(f"cluster '{cluster.name}' has no pid record for {component}: the harness did not start it")


# -- the ledger of applied faults ----------------------------------------------------------


@dataclass
class _Entry:
    description: str
    undo: Callable[[], Any]


_LEDGER: dict[str, _Entry] = {}
_LOCK = threading.Lock()


def applied(key: str, description: str, undo: Callable[[], Any]) -> None:
    """Record a fault that is now in effect, with the call that removes it."""
    with _LOCK:
        _LEDGER[key] = _Entry(description, undo)


def restored(key: str) -> None:
    with _LOCK:
        _LEDGER.pop(key, None)


def pending() -> list[str]:
    with _LOCK:
        return [e.description for e in _LEDGER.values()]


def restore_all() -> list[str]:
    """Undo every fault still in effect (newest first) and return the errors: one failed undo
    never stops the others. A KeyboardInterrupt during an undo retries that undo, and is
    re-raised only once everything has been restored."""
    errors: list[str] = []
    interrupted = False
    while True:
        with _LOCK:
            if not _LEDGER:
                break
            key, entry = _LEDGER.popitem()
        try:
            entry.undo()
        except KeyboardInterrupt:
            interrupted = True
            try:
                entry.undo()
            except Exception as exc:  # keep going: the other faults still need undoing
                errors.append(f"{entry.description}: {exc}")
        except Exception as exc:
            errors.append(f"{entry.description}: {exc}")
    if interrupted:
        raise KeyboardInterrupt
    return errors
