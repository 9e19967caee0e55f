"""The in-cluster runner's commands (kept out of cli.py), as Sonobuoy and Hydrophone users expect:

- `lwsc gen`: the manifests (Namespace, ServiceAccount, RBAC, admission policy, Job) as plain YAML;
- `lwsc launch [--wait]`: applies them and, with --wait, follows the run to its results;
- `lwsc job-status`, `lwsc job-logs [-f]`: where the Job's run is, and its output;
- `lwsc retrieve [--wait]`: the results archive out of the ConfigMaps the run left, verified;
- `lwsc publish`: what the Job runs after the suites (the archive into ConfigMaps);
- `lwsc delete`: everything `gen`/`launch` installed (namespace with its results ConfigMaps,
  ClusterRole and binding, admission policy and binding) deleted, and waited for until gone;
- `lwsc run --in-cluster`: the pod's own ServiceAccount as the existing cluster's credentials.

Exit codes of job-status, retrieve and launch --wait: the run's own code once it finished (0, 1,
3, 4 as for `lwsc run`), 5 while it has not finished, 2 for usage mistakes, 3 when the run ended
without results or they do not verify.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from . import images, incluster, provenance
from .errors import InfraError, LwscError, UserError
from .k8s.client import api_client, to_dict
from .providers import existing
from .providers.components import state_root
from .report import archive
from .runconfig import RunConfig

Handler = Callable[[RunConfig], int]
RAW = argparse.RawDescriptionHelpFormatter
DEFAULT_IMAGE = f"localhost/lws-conformance:{provenance.version()}"
BUILD_IT = (
    "no harness image is published yet: build it yourself with `scripts/build-image` (offline, from "
    "constraints.txt), then load it into the cluster's nodes or push it to a registry they pull from"
)
NOT_FINISHED = 5
EXIT_CODES = (
    "exit codes: the run's own once it finished (0 passed, 1 a MUST failed, 3 harness or infrastructure broke, "
    "4 listed upstream bugs only); 5 not finished yet; 2 usage; 3 ended without results or they do not verify"
)


class NotFinished(LwscError):
    """The in-cluster run has not finished (yet): exit 5, distinct from usage mistakes (2)."""

    exit_code = NOT_FINISHED


def in_cluster_kubeconfig(kubeconfig: str | None) -> str:
    """`run --in-cluster`: a kubeconfig of the cluster the pod runs in, with the pod's ServiceAccount."""
    if kubeconfig:
        raise UserError("give either --in-cluster or --kubeconfig, not both")
    out = state_root() / "existing" / f"in-cluster-{time.strftime('%Y%m%d-%H%M%S')}.kubeconfig"
    try:
        return str(incluster.kubeconfig_from_pod(out))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _run_args(cfg: RunConfig) -> list[str]:
    return [a for a in cfg.options.run_args if a != "--"]


def cmd_gen(cfg: RunConfig) -> int:
    if cfg.options.image == DEFAULT_IMAGE:
        print(f"lwsc: note: image {DEFAULT_IMAGE}: {BUILD_IT}", file=sys.stderr)
    if cfg.options.sonobuoy:
        print(incluster.dump([incluster.sonobuoy_plugin(cfg.options.image, _run_args(cfg))]), end="")
    else:
        print(incluster.dump(incluster.manifests(cfg.options.image, cfg.options.namespace, _run_args(cfg))), end="")
    return 0


# -- the cluster -----------------------------------------------------------------------------------
def _target(cfg: RunConfig) -> existing.Target:
    """--kubeconfig, else $KUBECONFIG (every entry, merged as kubectl merges them), by
    `existing.resolve`; a wrong file or context is one line, not a traceback."""
    return existing.resolve(
        cfg.kubeconfig,
        cfg.context,
        env=cfg.kubeconfig_env,
        missing="give --kubeconfig PATH (or set KUBECONFIG) of the cluster the Job runs in",
    )


def _connect(cfg: RunConfig) -> client.ApiClient:
    t = _target(cfg)
    print(f"cluster: {t}, chosen by {t.chosen_by}", file=sys.stderr)
    existing.reachable(t)
    return api_client(t.config_file, t.context)


@dataclass
class JobState:
    """Where the in-cluster run stands: `state` is finished, running, pending, ended (without
    results) or absent; `index` is the results index ConfigMap's data once it finished."""

    namespace: str
    state: str
    job: str | None = None
    pod: str | None = None
    phase: str | None = None
    reason: str | None = None
    progress: str | None = None
    index: dict[str, str] | None = None

    @property
    def code(self) -> int:
        if self.state == "finished" and self.index is not None:
            return int(self.index.get("exit-code") or 3) if not self.index.get("error") else 3
        return 3 if self.state == "ended" else NOT_FINISHED

    def line(self) -> str:
        where = f"job {self.namespace}/{incluster.NAME}"
        if self.state == "finished" and self.index is not None:
            ix = self.index
            if ix.get("error"):
                return f"{where}: finished without results (exit {ix.get('exit-code')}): {ix['error']}"
            return (
                f"{where}: finished: run {ix.get('run-id')} exit {ix.get('exit-code')}: {ix.get('conclusion') or '?'}; "
                f"results in ConfigMap {self.namespace}/{incluster.results_name(ix.get('run-id', ''))} "
                "(`lwsc retrieve`)"
            )
        pod = f"pod {self.pod} {self.phase}" if self.pod else "no pod yet"
        extra = ", ".join(x for x in (self.reason, self.progress) if x)
        detail = f"{pod}, {extra}" if extra else pod
        if self.state == "ended":
            return f"{where}: ended without publishing results ({detail}); see `lwsc job-logs`"
        return f"{where}: {self.state} ({detail})"


def _items(api: client.ApiClient, listing: Any) -> list[dict[str, Any]]:
    """A list answer's items as plain dicts (API field names), oldest first."""
    return sorted((to_dict(api, i) for i in listing.items), key=_created)


def _indexes(api: client.ApiClient, namespace: str) -> list[tuple[str, dict[str, str]]]:
    """(creationTimestamp, data) of every results index ConfigMap, oldest first."""
    listing = client.CoreV1Api(api).list_namespaced_config_map(
        namespace, label_selector=f"{incluster.INDEX_LABEL}=true"
    )
    return [(_created(cm), {str(k): str(v) for k, v in (cm.get("data") or {}).items()}) for cm in _items(api, listing)]


def _created(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("creationTimestamp") or "")


def _pod_reason(pod: dict[str, Any]) -> str | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = status.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = str(state["waiting"]["reason"])
            pull = reason in ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName")
            return f"{reason}: {BUILD_IT}" if pull else reason
        if state.get("terminated"):
            return f"container exited {state['terminated'].get('exitCode')}"
    return None


def _log_progress(core: client.CoreV1Api, namespace: str, pod: str) -> str | None:
    try:
        head = core.read_namespaced_pod_log(pod, namespace, container="lwsc", limit_bytes=65536)
        tail = core.read_namespaced_pod_log(pod, namespace, container="lwsc", tail_lines=50)
    except ApiException:
        return None  # no log yet, or none at all (a node without a kubelet)
    return incluster.progress(f"{head}\n{tail}")


def job_state(api: client.ApiClient, namespace: str, run_id: str | None = None) -> JobState:
    """The run of the Job in `namespace`: finished once a results index newer than the Job exists
    (each `launch` replaces the Job, so older indexes are earlier runs'); else where its pod is."""
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    indexes = _indexes(api, namespace)
    if run_id:
        chosen = [ix for _, ix in indexes if ix.get("run-id") == run_id]
        if not chosen:
            raise UserError(f"no results of run {run_id} in namespace {namespace}")
        return JobState(namespace, "finished", index=chosen[-1])
    try:
        job = to_dict(api, batch.read_namespaced_job(incluster.NAME, namespace))
    except ApiException as exc:
        if exc.status != 404:
            raise
        if indexes:  # the Job was deleted; its results outlive it
            return JobState(namespace, "finished", index=indexes[-1][1])
        return JobState(namespace, "absent")
    state = JobState(namespace, "pending", job=incluster.NAME)
    mine = [ix for created, ix in indexes if created >= _created(job)]  # RFC 3339 UTC: ordered as text
    match = ((job.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    selector = ",".join(f"{k}={v}" for k, v in match.items())
    pods = _items(api, core.list_namespaced_pod(namespace, label_selector=selector))
    if pods:
        state.pod, state.phase = str(pods[-1]["metadata"]["name"]), (pods[-1].get("status") or {}).get("phase")
    if mine:
        state.state, state.index = "finished", mine[-1]
        return state
    if not pods:
        return state
    state.reason = _pod_reason(pods[-1])
    if state.phase in ("Succeeded", "Failed"):
        state.state = "ended"
    elif state.phase == "Running":
        state.state, state.progress = "running", _log_progress(core, namespace, state.pod or "")
    return state


def _absent(namespace: str) -> UserError:
    return UserError(
        f"no Job {namespace}/{incluster.NAME} and no results there; start one with `lwsc launch` "
        "(or `lwsc gen | kubectl apply -f -`)"
    )


def _wait(api: client.ApiClient, namespace: str, timeout: float, interval: float) -> JobState:
    """Poll until the run finished or ended (or the timeout), saying each change of state or
    progress on stderr."""
    deadline, said, tick = time.monotonic() + timeout, "", threading.Event()
    while True:
        state = job_state(api, namespace)
        if state.state == "absent":
            raise _absent(namespace)
        line = state.line()
        if line != said:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)
            said = line
        if state.state in ("finished", "ended") or time.monotonic() >= deadline:
            return state
        tick.wait(max(0.1, min(interval, deadline - time.monotonic())))


def _seconds(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    if not m:
        raise UserError(f"--timeout {text!r}: give seconds or a duration such as 90m or 4h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def cmd_job_status(cfg: RunConfig) -> int:
    api = _connect(cfg)
    try:
        state = job_state(api, cfg.options.namespace, cfg.options.run_id)
    finally:
        api.close()
    if state.state == "absent":
        raise _absent(cfg.options.namespace)
    if cfg.options.output == "json":
        print(json.dumps({**asdict(state), "exit_code": state.code, "line": state.line()}, indent=2))
    else:
        print(state.line())
    return state.code


def cmd_job_logs(cfg: RunConfig) -> int:
    api = _connect(cfg)
    namespace = cfg.options.namespace
    state = JobState(namespace, "absent")
    try:
        state = job_state(api, namespace)
        if not state.pod:
            raise UserError(
                f"no pod of Job {namespace}/{incluster.NAME}; its log is e2e.log in the results "
                "archive (`lwsc retrieve`)"
            )
        core = client.CoreV1Api(api)
        kwargs: dict[str, Any] = {"container": "lwsc", "follow": cfg.options.follow, "_preload_content": False}
        if cfg.options.tail is not None:
            kwargs["tail_lines"] = cfg.options.tail
        resp: Any = core.read_namespaced_pod_log(state.pod, cfg.options.namespace, **kwargs)
        for chunk in resp.stream(4096):
            sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()
    except ApiException as exc:
        raise InfraError(f"cannot read the log of pod {cfg.options.namespace}/{state.pod}: {exc.reason}") from None
    finally:
        api.close()
    return 0


def _fetch(api: client.ApiClient, namespace: str, index: dict[str, str]) -> bytes:
    core = client.CoreV1Api(api)
    label = incluster.results_name(index.get("run-id", "")).removeprefix("lwsc-results-")
    listing = core.list_namespaced_config_map(namespace, label_selector=f"{incluster.RESULTS_LABEL}={label}")
    parts = {
        str(cm["metadata"]["name"]): base64.b64decode((cm.get("binaryData") or {}).get("part", ""))
        for cm in _items(api, listing)
    }
    try:
        return incluster.assemble(index, parts)
    except incluster.BrokenResults as exc:
        raise InfraError(str(exc)) from None


def _retrieve(api: client.ApiClient, cfg: RunConfig, state: JobState) -> int:
    if state.state == "absent":
        raise _absent(cfg.options.namespace)
    if state.state == "ended":
        raise InfraError(state.line())
    if state.state != "finished" or state.index is None:
        raise NotFinished(f"{state.line()}: not finished; `lwsc retrieve --wait`, or retry later")
    if state.index.get("error"):
        tail = state.index.get("log-tail", "").strip().splitlines()[-3:]
        raise InfraError(state.line() + (f"; last log lines: {' | '.join(tail)}" if tail else ""))
    data = _fetch(api, cfg.options.namespace, state.index)
    out = Path(cfg.options.output).expanduser() / f"{state.index['run-id']}.tar.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    try:
        result = archive.verify(out)
    except archive.BadArchive as exc:
        raise InfraError(f"{out}: {exc}") from None
    print(out)
    print(result.text(), file=sys.stderr)
    print(f"run {state.index['run-id']}: {state.index.get('conclusion') or '?'}", file=sys.stderr)
    return state.code if result.ok else 3


def cmd_retrieve(cfg: RunConfig) -> int:
    """The results archive of the Job's run out of its ConfigMaps (`--wait`: once it finished), verified."""
    timeout = _seconds(cfg.options.timeout)
    api = _connect(cfg)
    try:
        if cfg.options.wait and not cfg.options.run_id:
            state = _wait(api, cfg.options.namespace, timeout, cfg.options.interval)
        else:
            state = job_state(api, cfg.options.namespace, cfg.options.run_id)
        return _retrieve(api, cfg, state)
    finally:
        api.close()


def cmd_launch(cfg: RunConfig) -> int:
    """Apply what `lwsc gen` prints (a finished Job of an earlier run is replaced); with --wait,
    follow the run and retrieve its results."""
    timeout = _seconds(cfg.options.timeout)  # checked before the cluster is asked anything
    api = _connect(cfg)
    try:
        if cfg.options.image == DEFAULT_IMAGE:
            print(f"lwsc: note: image {DEFAULT_IMAGE}: {BUILD_IT}", file=sys.stderr)
        for doc in incluster.manifests(cfg.options.image, cfg.options.namespace, _run_args(cfg)):
            _apply(api, doc)
            print(f"applied {doc['kind']}/{doc['metadata']['name']}", file=sys.stderr)
        if not cfg.options.wait:
            print(
                f"started; follow it with `lwsc job-status`, `lwsc job-logs -f`, `lwsc retrieve --wait` "
                f"(namespace {cfg.options.namespace})",
                file=sys.stderr,
            )
            return 0
        return _retrieve(api, cfg, _wait(api, cfg.options.namespace, timeout, cfg.options.interval))
    finally:
        api.close()


def _apply(api: client.ApiClient, doc: dict[str, Any]) -> None:
    dyn = DynamicClient(api)
    resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    meta = doc["metadata"]
    if doc["kind"] == "Job":  # its pod template is immutable: a finished Job is replaced, a running one refused
        batch = client.BatchV1Api(api)
        try:
            old = batch.read_namespaced_job(meta["name"], meta["namespace"])
        except ApiException as exc:
            if exc.status != 404:
                raise
        else:
            done = (
                [
                    c.type
                    for c in (old.status.conditions or [])
                    if c.status == "True" and c.type in ("Complete", "Failed")
                ]
                if old.status
                else []
            )
            if not done:
                raise UserError(
                    f"a run is in progress in Job {meta['namespace']}/{meta['name']}; `lwsc job-status`, "
                    "or delete the Job to start over"
                )
            batch.delete_namespaced_job(meta["name"], meta["namespace"], propagation_policy="Background")
            _gone(lambda: batch.read_namespaced_job(meta["name"], meta["namespace"]))
    resource.server_side_apply(
        body=doc, name=meta["name"], namespace=meta.get("namespace"), field_manager="lwsc", force_conflicts=True
    )


def _gone(read: Callable[[], object], timeout: float = 60) -> None:
    deadline, tick = time.monotonic() + timeout, threading.Event()
    while time.monotonic() < deadline:
        try:
            read()
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        tick.wait(0.5)
    raise InfraError(f"the finished Job was not deleted within {timeout:.0f}s")


# -- delete ----------------------------------------------------------------------------------------
def _installed(api: client.ApiClient, namespace: str) -> list[tuple[Any, dict[str, Any]]]:
    """(resource, object) of what `gen`/`launch` installed that is there now: the cluster-scoped
    objects and the namespace (its ServiceAccount, Role, Job, pods and results ConfigMaps go with
    it), admission policy first. UserError, before anything is deleted, when one of them exists
    without the runner's label (not installed by lwsc)."""
    dyn = DynamicClient(api)
    wanted = [d for d in reversed(incluster.manifests(DEFAULT_IMAGE, namespace)) if "namespace" not in d["metadata"]]
    found: list[tuple[Any, dict[str, Any]]] = []
    for doc in wanted:
        try:
            resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
            obj = resource.get(name=doc["metadata"]["name"]).to_dict()
        except ResourceNotFoundError:  # an API this cluster does not serve: nothing of it installed
            continue
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise InfraError(f"cannot read {doc['kind']}/{doc['metadata']['name']}: {exc.reason}") from None
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if labels.get("app.kubernetes.io/name") != incluster.NAME:
            raise UserError(
                f"{doc['kind']}/{doc['metadata']['name']} was not installed by `lwsc gen`/`launch` (no "
                f"label app.kubernetes.io/name={incluster.NAME}); check --namespace, nothing was deleted"
            )
        other = {s.get("namespace") for s in obj.get("subjects") or []} - {namespace}
        if doc["kind"] == "ClusterRoleBinding" and other:
            raise UserError(
                f"the runner is installed for namespace {', '.join(sorted(map(str, other)))}, not "
                f"{namespace}; give --namespace {sorted(map(str, other))[0]} (nothing was deleted)"
            )
        found.append((resource, obj))
    return found


def cmd_delete(cfg: RunConfig) -> int:
    """Delete what `gen`/`launch` installed and wait until every piece is gone (exit 3 if not by --timeout)."""
    timeout = _seconds(cfg.options.timeout)
    api = _connect(cfg)
    try:
        found = _installed(api, cfg.options.namespace)
        if not found:
            print(f"nothing of the in-cluster runner (namespace {cfg.options.namespace}) is installed", file=sys.stderr)
            return 0
        started = time.monotonic()
        for resource, obj in found:
            try:
                resource.delete(name=obj["metadata"]["name"], body={"propagationPolicy": "Background"})
            except ApiException as exc:
                if exc.status != 404:
                    raise InfraError(f"cannot delete {obj['kind']}/{obj['metadata']['name']}: {exc.reason}") from None
            print(f"deleting {obj['kind']}/{obj['metadata']['name']}", file=sys.stderr)
        left = _wait_gone(found, started + timeout)
        if left:
            raise InfraError(
                f"still there after {timeout:.0f}s: {'; '.join(left)} (`kubectl get` them; "
                "`lwsc delete --timeout` waits longer)"
            )
        print(
            f"deleted and gone in {time.monotonic() - started:.1f}s: "
            f"{', '.join(f'{o["kind"]}/{o["metadata"]["name"]}' for _r, o in found)}"
        )
        listing = client.CoreV1Api(api).list_namespace(label_selector=incluster.RUN_LABEL)
        runs = [str(n["metadata"]["name"]) for n in _items(api, listing)]
        if runs:
            print(
                f"{len(runs)} namespace(s) of harness runs remain ({', '.join(runs[:5])}"
                f"{', ...' if len(runs) > 5 else ''}); `lwsc cleanup --all` deletes them",
                file=sys.stderr,
            )
    finally:
        api.close()
    return 0


def _wait_gone(found: list[tuple[Any, dict[str, Any]]], deadline: float) -> list[str]:
    """Until every object reads 404 or the deadline: what is still there (kind/name, its phase)."""
    tick = threading.Event()
    while True:
        left = []
        for resource, obj in found:
            try:
                now = resource.get(name=obj["metadata"]["name"]).to_dict()
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise
            phase = (now.get("status") or {}).get("phase")
            left.append(f"{obj['kind']}/{obj['metadata']['name']}" + (f" ({phase})" if phase else ""))
        if not left or time.monotonic() >= deadline:
            return left
        tick.wait(0.5)


# -- inside the Job --------------------------------------------------------------------------------
def publish_index(reports: Path, exit_code: int) -> tuple[str, bytes | None, dict[str, str]]:
    """(run id, archive bytes or None, index data) of the newest run under `reports`."""
    latest = reports / "latest"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    harness = provenance.harness()
    index = {
        "exit-code": str(exit_code),
        "pod": os.environ.get("HOSTNAME", ""),
        "finished": stamp,
        "harness": f"{harness['version']} (commit {harness['commit']})",
    }
    run_dir = latest.resolve() if latest.is_symlink() or latest.is_dir() else None
    run_id = run_dir.name if run_dir else f"{index['pod'] or 'run'}-{time.strftime('%Y%m%d-%H%M%S')}"
    summary = run_dir / "summary.json" if run_dir else None
    if summary and summary.is_file():
        index["conclusion"] = str(json.loads(summary.read_text()).get("conclusion", {}).get("line", ""))
    tarball = reports / f"{run_id}.tar.gz"
    if tarball.is_file():
        return run_id, tarball.read_bytes(), index
    index["error"] = "the run left no results archive"
    log = run_dir / "e2e.log" if run_dir else None
    if log and log.is_file():
        index["log-tail"] = log.read_text(errors="replace")[-3000:]
    return run_id, None, index


def cmd_publish(cfg: RunConfig) -> int:
    """Store the newest run's archive as ConfigMaps of the pod's namespace (the Job's last step)."""
    reports = cfg.reports or Path(incluster.RESULTS)
    namespace = cfg.options.namespace or incluster.pod_namespace() or incluster.NAMESPACE
    context: str | None
    if cfg.kubeconfig:
        t = _target(cfg)
        kubeconfig, context = t.config_file, t.context
    else:
        context = cfg.context
        try:
            kubeconfig = str(incluster.kubeconfig_from_pod(state_root() / "existing" / "publish.kubeconfig"))
        except ValueError as exc:
            raise UserError(str(exc)) from None
    run_id, data, index = publish_index(reports, cfg.options.exit_code)
    api = api_client(kubeconfig, context)
    core = client.CoreV1Api(api)
    docs = incluster.results_configmaps(run_id, data, index, namespace)
    try:
        for doc in docs:
            try:
                core.create_namespaced_config_map(namespace, doc)  # type: ignore[arg-type]  # dicts accepted
            except ApiException as exc:
                if exc.status != 409:  # published before (a re-run of this step): the same content
                    name = doc["metadata"]["name"]
                    raise InfraError(f"cannot store results ConfigMap {name}: {exc.reason}") from None
    finally:
        api.close()
    size = f"{len(data)} bytes in {len(docs) - 1} part(s)" if data is not None else "no archive"
    print(f"published run {run_id} ({size}) to ConfigMap {namespace}/{docs[-1]['metadata']['name']}")
    return 0


def cmd_images(cfg: RunConfig) -> int:
    """The images the suites' pods name (with the profile's images.registry applied) and the harness image."""
    registry = str((cfg.profile.raw.get("images") or {}).get("registry") or "")
    rows = [(name, images.ref(name, registry), use) for name, (_ref, use) in images.IMAGES.items()]
    rows.append(("harness", DEFAULT_IMAGE, "the in-cluster runner: built with scripts/build-image (not published)"))
    if cfg.options.output == "json":
        print(json.dumps([{"name": n, "image": i, "used_by": u} for n, i, u in rows], indent=2))
    else:
        for name, image, use in rows:
            print(f"{name:<16} {image:<48} {use}")
    return 0


def _cluster_args(p: argparse.ArgumentParser, what: str = "the cluster the Job runs in") -> None:
    p.add_argument("--kubeconfig", help=f"kubeconfig of {what} (default: $KUBECONFIG)")
    p.add_argument("--context", help="kubeconfig context (default: its current context)")


def _wait_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", action="store_true", help="wait for the run to finish, saying its progress on stderr")
    p.add_argument("--timeout", default="6h", help="with --wait: give up (exit 5) after this long (default 6h)")
    p.add_argument("--interval", type=float, default=10.0, help="with --wait: seconds between checks (default 10)")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> dict[str, Handler]:
    ns_help = f"the Job's namespace (default {incluster.NAMESPACE})"
    image_help = f"harness image (default {DEFAULT_IMAGE}: build it with scripts/build-image; not published)"
    gen = sub.add_parser(
        "gen",
        help="print Namespace, ServiceAccount, least-privilege RBAC and admission policy, and the Job running "
        "the suites",
        formatter_class=RAW,
        epilog="examples:\n  scripts/build-image && lwsc gen | kubectl apply -f -\n"
        "  lwsc gen --image registry.local/lwsc:0.1.0 -- --focus KUEUE\n"
        "  lwsc gen --sonobuoy > lwsc-plugin.yaml && sonobuoy run --plugin lwsc-plugin.yaml --wait",
    )
    gen.add_argument("--image", default=DEFAULT_IMAGE, help=image_help)
    gen.add_argument("--namespace", default=incluster.NAMESPACE, help=ns_help)
    gen.add_argument("--sonobuoy", action="store_true", help="print a Sonobuoy plugin definition instead")
    gen.add_argument("run_args", nargs="*", help="extra `lwsc run` arguments for the Job (after --)")

    launch = sub.add_parser(
        "launch",
        help="apply `lwsc gen`'s manifests (replacing a finished run's Job); --wait follows the run and retrieves it",
        formatter_class=RAW,
        epilog="examples:\n  lwsc launch --image registry.local/lwsc:0.1.0 --wait -o ./results\n"
        "  lwsc launch --kubeconfig ~/.kube/config -- --focus KUEUE-GANG\n" + EXIT_CODES,
    )
    launch.add_argument("--image", default=DEFAULT_IMAGE, help=image_help)
    launch.add_argument("--namespace", default=incluster.NAMESPACE, help=ns_help)
    launch.add_argument("-o", "--output", default=".", help="with --wait: directory for the archive (default .)")
    _cluster_args(launch)
    _wait_args(launch)
    launch.add_argument("run_args", nargs="*", help="extra `lwsc run` arguments for the Job (after --)")

    status = sub.add_parser(
        "job-status",
        help="where the in-cluster run is: pending, running (with progress), finished (exit code, conclusion)",
        formatter_class=RAW,
        epilog="examples:\n  lwsc job-status --kubeconfig ~/.kube/config\n  lwsc job-status --output json\n"
        + EXIT_CODES,
    )
    _cluster_args(status)
    status.add_argument("--namespace", default=incluster.NAMESPACE, help=ns_help)
    status.add_argument("--run-id", help="a finished run's results (default: the Job's current run)")
    status.add_argument("--output", choices=("text", "json"), default="text", help="output format (default text)")

    logs = sub.add_parser(
        "job-logs",
        help="print the in-cluster run's output (the pod's log); -f follows it",
        formatter_class=RAW,
        epilog="examples:\n  lwsc job-logs -f\n  lwsc job-logs --tail 50",
    )
    _cluster_args(logs)
    logs.add_argument("--namespace", default=incluster.NAMESPACE, help=ns_help)
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run ends")
    logs.add_argument("--tail", type=int, help="only the last N lines")

    ret = sub.add_parser(
        "retrieve",
        help="copy the in-cluster run's results archive out of its ConfigMaps and verify it",
        formatter_class=RAW,
        epilog="examples:\n  lwsc retrieve --kubeconfig ~/.kube/config -o ./results\n"
        "  lwsc retrieve --wait --timeout 4h\n" + EXIT_CODES,
    )
    _cluster_args(ret)
    ret.add_argument("--namespace", default=incluster.NAMESPACE, help=ns_help)
    ret.add_argument("--run-id", help="a finished run's results (default: the Job's current run)")
    ret.add_argument("-o", "--output", default=".", help="directory to write the archive to (default .)")
    _wait_args(ret)

    pub = sub.add_parser(
        "publish",
        help="(the Job's last step) store the newest run's results archive as ConfigMaps of the pod's namespace",
        formatter_class=RAW,
        epilog="examples:\n  lwsc publish --reports /results --exit-code 0",
    )
    pub.add_argument("--reports", default=incluster.RESULTS, help=f"the run's reports directory ({incluster.RESULTS})")
    pub.add_argument("--exit-code", type=int, required=True, help="the exit code of the `lwsc run` before it")
    pub.add_argument("--namespace", help="where to store them (default: the pod's own namespace)")
    _cluster_args(pub, "the cluster (default: the pod's ServiceAccount)")

    dele = sub.add_parser(
        "delete",
        help="delete everything `lwsc gen`/`launch` installed (namespace with its results, ClusterRole and "
        "binding, admission policy) and wait until it is gone",
        formatter_class=RAW,
        epilog="examples:\n  lwsc delete --kubeconfig ~/.kube/config\n"
        "  lwsc delete --namespace lwsc-vendor --timeout 10m",
    )
    _cluster_args(dele)
    dele.add_argument("--namespace", default=incluster.NAMESPACE, help=ns_help)
    dele.add_argument("--timeout", default="5m", help="give up (exit 3) when not gone after this long (default 5m)")

    img = sub.add_parser(
        "images",
        help="list the container images the suites use (mirror them for air-gapped registries)",
        formatter_class=RAW,
        epilog="examples:\n  lwsc images\n  lwsc images --set images.registry=mirror.example.com/k8s --output json",
    )
    img.add_argument("--output", choices=("text", "json"), default="text", help="output format (default text)")
    return {
        "gen": cmd_gen,
        "launch": cmd_launch,
        "job-status": cmd_job_status,
        "job-logs": cmd_job_logs,
        "retrieve": cmd_retrieve,
        "publish": cmd_publish,
        "images": cmd_images,
        "delete": cmd_delete,
    }
