"""The pytest plugin: cluster handle, run id, per-test namespaces, object factory.

Cluster resolution, first match wins: `--lwsc-handle` (a running `lwsc up` cluster),
`--lwsc-kubeconfig` (a cluster the harness did not create), else the local cluster is brought up
on demand under a file lock (xdist workers share it) and brought down at the end by the process
that started it, unless `--lwsc-keep`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import allure
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from . import claims, images, provenance, resources, shards, verdicts
from .errors import LwscError, UserError
from .k8s.client import api_client
from .k8s.logs import lines_since
from .k8s.objects import RUN_LABEL, Objects, sweep_run
from .k8s.wait import SCALE_ENV
from .profile import Profile
from .providers import existing, health, sampler
from .providers.base import ClusterHandle
from .providers.components import state_root
from .providers.local import LocalCluster, claimed_cluster
from .report import evidence, render, run_timeline, summary
from .scenario import Scenario
from .session_profile import RESOLVED_OPTION, WORKER_KEY, run_profile
from .toolchain import cache as bincache
from .toolchain import missing as binaries_missing
from .toolchain.gobuild import NO_BUILD_ENV

OWNER_FILE = "started-by-run"
# Registered by the plugin itself, so the suites run the same from any project or an installed wheel.
MARKERS = (
    "requirement(id): the catalogue requirement this test proves",
    "cluster: needs a running cluster (the local one is brought up on demand)",
    "xdist_group(name): run these tests on one xdist worker (--dist=loadgroup; inert on pytest 9.2, pytest-xdist#1386)",
    "alone: disturbs the whole shared cluster; on kind and existing clusters (and on the MultiKueue clusters) "
    "no other test runs meanwhile",
    "exclusive(name): tests with the same name never run at the same time, on any worker (a lock held "
    "from setup to teardown)",
    "private_cluster(*settings): KEY=VALUE profile settings of this test's private cluster (e.g. "
    "kueue.manage_jobs_without_queue_name=true), on top of the run's",
    "destructive: breaks things or needs the whole capacity; on a cluster the harness did not create it runs only "
    "with --lwsc-allow-destructive",
    "upgrade_start(component, version): the case starts `component` at `version` on a private cluster (built by "
    "`lwsc build` and by `lwsc run` before pytest starts)",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("lwsc", "lws-conformance")
    g.addoption("--lwsc-handle", help="handle.json of a running `lwsc up` cluster")
    g.addoption("--lwsc-kubeconfig", help="kubeconfig of an existing cluster (not created by the harness)")
    g.addoption("--lwsc-context", help="kubeconfig context of the existing cluster (default: its current context)")
    g.addoption(
        "--lwsc-allow-destructive",
        action="store_true",
        help="run `destructive` tests (chaos, whole-capacity) on a cluster the harness did not create",
    )
    g.addoption("--lwsc-profile", default=os.environ.get("LWSC_PROFILE", "default"), help="profile name or path")
    g.addoption("--lwsc-set", action="append", default=[], help="profile override key=value")
    g.addoption(
        RESOLVED_OPTION,
        metavar="FILE",
        help="the run's profile as `lwsc` resolved it (profile.resolved.yaml); --lwsc-profile/--lwsc-set are not read",
    )
    g.addoption("--lwsc-run-id", help="run id (namespaces and reports are named from it)")
    g.addoption("--lwsc-keep", action="store_true", help="leave an on-demand local cluster up")
    g.addoption(
        "--lwsc-build",
        action="store_true",
        help="let an on-demand local cluster build missing binaries from Go source (else: run `lwsc build` first)",
    )
    g.addoption("--lwsc-report-dir", help="write summary.json / summary.md (per-requirement verdicts) here")
    g.addoption(
        "--lwsc-requirements-out",
        help="after collection, write {test node id: [requirement ids]} as JSON to this file",
    )
    g.addoption(
        "--lwsc-selection-out",
        help="after collection (and --lwsc-shard), write the selected tests, their requirement ids and the "
        "private clusters and upgrade start versions they need as JSON to this file (`lwsc run` builds from it)",
    )
    g.addoption(
        "--lwsc-mode",
        default="standard",
        choices=("standard", "certify"),
        help="recorded in summary.json (lwsc run --certify)",
    )
    g.addoption("--lwsc-shard", help="K/N: run only this shard of the selected tests (lws_conformance.shards)")
    g.addoption(
        "--lwsc-order",
        default="longest-first",
        choices=("longest-first", "collected"),
        help="the order tests are handed to workers: those on the worker's private cluster first, each group "
        "longest recorded duration first (default); or as collected",
    )
    g.addoption("--lwsc-strict", action="store_true", help="gate: a listed deviation that no longer reproduces fails")
    g.addoption(
        "--lwsc-accept-known-deviations",
        action="store_true",
        help="gate: MUST failures that are listed deviations of the installed versions do not fail the run",
    )


_NO_BUILD_SET = pytest.StashKey[bool]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# Names of the variables below that this plugin set from a profile, not the user: a pytest run
# started from inside another (tests/e2e runs `lwsc --profile kind run`) takes them from its own
# profile instead of inheriting the outer run's (the outer default profile's timeouts.scale 1.0
# would replace kind's 2.0).
DERIVED_ENV = "LWSC_ENV_FROM_PROFILE"


def _profile_environment(config: pytest.Config) -> None:
    """Hand the profile's timeouts.scale and images.registry to every test process (xdist workers
    inherit the environment); a value the user exported wins."""
    derived = set(filter(None, os.environ.get(DERIVED_ENV, "").split(",")))
    for name in derived:
        os.environ.pop(name, None)
    try:
        profile = run_profile(config)
    except LwscError:
        return  # a bad profile is reported by the cluster fixture, where it matters
    values = {
        SCALE_ENV: str(profile.timeout_scale),  # every deadline and watched window
        images.REGISTRY_ENV: str((profile.raw.get("images") or {}).get("registry") or ""),  # test images' mirror
    }
    for name, value in values.items():
        if name not in os.environ:
            os.environ[name] = value
            derived.add(name)
    os.environ[DERIVED_ENV] = ",".join(sorted(derived))


def _runs_suites(config: pytest.Config) -> bool:
    """Are the project's suites what this pytest runs (not the harness's own tests)?"""
    suites = resources.suites().resolve()
    paths = [Path(str(a).split("::")[0]).resolve() for a in config.args] or [Path(config.rootpath)]
    return any(p == suites or suites in p.parents for p in paths)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if not config.getoption("--lwsc-build") and _runs_suites(config) and NO_BUILD_ENV not in os.environ:
        # nothing builds inside a test: a binary not built is an error at once, naming its build
        os.environ[NO_BUILD_ENV] = "1"
        config.stash[_NO_BUILD_SET] = True
    if not config.pluginmanager.has_plugin("lwsc-claims"):
        config.pluginmanager.register(claims, "lwsc-claims")
    if not _is_worker(config):
        _profile_environment(config)
    if not _is_worker(config) and config.getoption("--lwsc-handle"):
        with contextlib.suppress(OSError, ValueError, KeyError):  # an unreadable handle fails in the fixture
            substitutes = ClusterHandle.from_json(Path(config.getoption("--lwsc-handle")).read_text()).images
            os.environ[images.SUBSTITUTES_ENV] = json.dumps(substitutes)
    if config.getoption("--lwsc-shard"):
        config.pluginmanager.register(_Sharding(config.getoption("--lwsc-shard")), "lwsc-sharding")
    if _is_worker(config):
        config._lwsc_run_id = config.workerinput["lwsc_run_id"]  # type: ignore[attr-defined]
    else:
        config._lwsc_run_id = config.getoption("--lwsc-run-id") or (  # type: ignore[attr-defined]
            time.strftime("%m%d%H%M%S") + secrets.token_hex(2)
        )
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_XdistHooks(), "lwsc-xdist")


class _Sharding:
    """--lwsc-shard K/N: keep shard K of what -k selected (after the keyword deselection)."""

    def __init__(self, spec: str) -> None:
        self.k, self.n = shards.parse(spec)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        _SELECTION.update(shards.selection([i.nodeid for i in items]))  # what every shard was cut from
        keep = set(shards.assign([i.nodeid for i in items], self.n, shards.durations())[self.k - 1])
        dropped = [i for i in items if i.nodeid not in keep]
        items[:] = [i for i in items if i.nodeid in keep]
        config.hook.pytest_deselected(items=dropped)


class _XdistHooks:
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["lwsc_run_id"] = node.config._lwsc_run_id
        with contextlib.suppress(LwscError):  # a bad profile: each worker's fixture reports it
            node.workerinput[WORKER_KEY] = run_profile(node.config).resolved()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if _COLLECTED.get("ids") is None:  # every worker collects the same tests (xdist checks)
            _COLLECTED["ids"] = list(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        _SELECTION.update(output.get("lwsc_selection") or {})
        _REQUIREMENTS.update(output.get("lwsc_requirements") or {})


def pytest_unconfigure(config: pytest.Config) -> None:
    """In the controller: sweep what this run left, and stop a cluster this run started."""
    if config.stash.get(_NO_BUILD_SET, False):
        os.environ.pop(NO_BUILD_ENV, None)
    if _is_worker(config) or config.getoption("--lwsc-handle") or config.getoption("--lwsc-kubeconfig"):
        return
    run_id: str = config._lwsc_run_id  # type: ignore[attr-defined]
    try:
        cluster = LocalCluster(run_profile(config))
    except LwscError:
        return
    owner = cluster.dir / OWNER_FILE
    if owner.is_file() and owner.read_text() == run_id:
        if config.getoption("--lwsc-keep"):
            owner.unlink()
        else:
            cluster.down()
    elif cluster.kubeconfig.is_file() and cluster.running():
        api = api_client(cluster.kubeconfig)
        try:
            sweep_run(api, run_id)
        finally:
            api.close()


@pytest.fixture(scope="session")
def run_id(request: pytest.FixtureRequest) -> str:
    rid: str = request.config._lwsc_run_id  # type: ignore[attr-defined]
    return rid


@pytest.fixture(scope="session")
def lwsc_cluster(
    request: pytest.FixtureRequest, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> ClusterHandle:
    """The cluster under test (see the module docstring for how it is chosen). An existing
    cluster is adopted read-only: its versions are read from it (`providers.preflight`)."""
    opt = request.config.getoption
    try:
        profile = run_profile(request.config)
        if opt("--lwsc-handle"):
            return ClusterHandle.from_json(Path(opt("--lwsc-handle")).read_text())
        if opt("--lwsc-kubeconfig"):  # the harness's one rule; never $KUBECONFIG here (not asked for)
            t = existing.resolve(opt("--lwsc-kubeconfig"), opt("--lwsc-context"), given_by="--lwsc-kubeconfig")
            kubeconfig = t.kubeconfig
            if not t.as_is:  # --lwsc-context: suites get a copy with that context pinned
                kubeconfig = existing.pin(t, tmp_path_factory.mktemp("lwsc-existing") / "kubeconfig")
            adopted, report = existing.adopt(kubeconfig, profile)
            if report.failed:
                first = next(c for c in report.checks if c.status == "fail")
                raise UserError(f"preflight: {first.name}: {first.detail} (run `lwsc preflight` for the full report)")
            return adopted
        cluster = LocalCluster(profile)
        todo = [] if opt("--lwsc-build") or cluster.running() else binaries_missing(profile)
        if todo:
            raise UserError(
                f"the local cluster needs binaries not built yet ({', '.join(todo)}); run `lwsc build` "
                "first, pass --lwsc-build to build them now, or give --lwsc-handle / --lwsc-kubeconfig"
            )
        state_root().mkdir(parents=True, exist_ok=True)
        with bincache.locked(f"cluster-{cluster.name}"):
            if not cluster.running():
                cluster.up(lambda msg: print(f"[lwsc] {msg}", file=sys.stderr, flush=True))
                (cluster.dir / OWNER_FILE).write_text(run_id)
            handle = cluster.handle()
        assert handle is not None
        return handle
    except LwscError as exc:
        pytest.exit(f"lwsc: {exc}", returncode=exc.exit_code)


@pytest.fixture(autouse=True)
def _destructive_gate(request: pytest.FixtureRequest) -> None:
    """`@pytest.mark.destructive` tests run only where breaking things is allowed."""
    if request.node.get_closest_marker("destructive") is None:
        return
    handle: ClusterHandle = request.getfixturevalue("lwsc_cluster")
    reason = existing.destructive_skip_reason(handle, request.config.getoption("--lwsc-allow-destructive"))
    if reason:
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def _exclusive(request: pytest.FixtureRequest, run_id: str) -> Iterator[None]:
    """`@pytest.mark.exclusive(name)`: one test of `name` at a time across this run's workers.
    Not `xdist_group`: on pytest 9.2 pytest-xdist 3.8's loadgroup silently groups nothing (it
    rewrites `item._nodeid`, which pytest no longer reads; pytest-dev/pytest-xdist#1386), so the
    scale tests, each filling every rack, ran side by side. Autouse, so it is set up before and
    torn down after the test's own fixtures (the scale suite's `drained` waits its pods out).

    `@pytest.mark.alone`: the test disturbs the whole shared cluster (it deletes a controller's
    pod), so on kind and existing clusters it runs while no other test of the run uses that cluster
    (`shared_cluster_turn`). The local provider's disturbing tests use private clusters instead.
    The MultiKueue clusters are shared by every test of the `multikueue` fixture on any provider,
    so there an `alone` test (it stops a worker's kube-apiserver) takes the same turn over them."""
    with ExitStack() as stack:
        mark = request.node.get_closest_marker("exclusive")
        if mark is not None:
            stack.enter_context(bincache.locked(f"exclusive-{run_id}-{mark.args[0]}"))
        if "scenario" in request.fixturenames and request.getfixturevalue("lwsc_cluster").provider != "local":
            alone = request.node.get_closest_marker("alone") is not None
            stack.enter_context(shared_cluster_turn(run_id, alone))
        if "multikueue" in request.fixturenames:
            alone = request.node.get_closest_marker("alone") is not None
            stack.enter_context(shared_cluster_turn(f"{run_id}-multikueue", alone))
        yield


@contextmanager
def shared_cluster_turn(run_id: str, alone: bool) -> Iterator[None]:
    """Every test on the shared cluster holds its lock shared; an `alone` test holds it
    exclusively. The gate keeps new tests from starting while an `alone` test waits for the
    running ones to finish (without it, overlapping shared holders could starve it)."""
    gate, turn = f"shared-cluster-gate-{run_id}", f"shared-cluster-{run_id}"
    if alone:
        with bincache.locked(gate), bincache.locked(turn):
            yield
        return
    with bincache.locked(gate):
        pass
    with bincache.locked(turn, shared=True):
        yield


@pytest.fixture(scope="session")
def k8s(lwsc_cluster: ClusterHandle) -> Iterator[client.ApiClient]:
    api = api_client(lwsc_cluster.kubeconfig)
    yield api
    api.close()


def _create_namespace(api: client.ApiClient, run_id: str, nodeid: str) -> str:
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    name = f"lwsc-{run_id}-{digest}"
    client.CoreV1Api(api).create_namespace(
        client.V1Namespace(
            metadata=client.V1ObjectMeta(name=name, labels={RUN_LABEL: run_id, "lwsc.x-k8s.io/test": digest})
        )
    )
    return name


def _delete_namespace(api: client.ApiClient, name: str) -> None:
    try:
        client.CoreV1Api(api).delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def namespace(request: pytest.FixtureRequest, k8s: client.ApiClient, run_id: str) -> Iterator[str]:
    """A fresh namespace for this test, named from the run id; deleted afterwards."""
    name = _create_namespace(k8s, run_id, request.node.nodeid)
    yield name
    _delete_namespace(k8s, name)


@pytest.fixture
def objects(k8s: client.ApiClient, run_id: str, namespace: str) -> Iterator[Objects]:
    """Create LWS / Kueue objects for this test; cluster-scoped ones are deleted afterwards."""
    objs = Objects(k8s, run_id, namespace)
    yield objs
    objs.delete_created()


@pytest.fixture
def unique(request: pytest.FixtureRequest, run_id: str) -> str:
    """A short name unique to this test and run, for cluster-scoped objects."""
    return "t" + hashlib.sha1(f"{run_id}/{request.node.nodeid}".encode()).hexdigest()[:10]


@pytest.fixture(autouse=True)
def _requirement_gate(request: pytest.FixtureRequest) -> None:
    """Gate the test's requirements on the installed versions (`claims.gate`)."""
    if claims.requirement_ids(request.node):
        handle: ClusterHandle = request.getfixturevalue("lwsc_cluster")
        claims.gate(request.node, handle.versions)


@pytest.fixture
def scenario(
    k8s: client.ApiClient, lwsc_cluster: ClusterHandle, namespace: str, objects: Objects, request: pytest.FixtureRequest
) -> Scenario:
    """The test's namespace, objects and self-explaining waits (see `lws_conformance.scenario`)."""
    sc = Scenario(k8s, lwsc_cluster, namespace, objects, simulating=lambda: claims.mark_simulated(request.node))
    request.node.stash[claims.INFRA_BROKEN] = _infra_check(lwsc_cluster, sc)
    return sc


def _infra_check(handle: ClusterHandle, sc: Scenario) -> Callable[[float, float], str | None]:
    """The test's `claims.INFRA_BROKEN`: a dead component, or CPU starvation in the failed phase's
    window, or another test's objects in the way (`Scenario.interfered`); this worker's sampler
    watches the cluster from here on."""
    sampler.of_process().watch(handle)
    return lambda start, stop: health.broken(handle, start, stop) or sc.interfered()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect per-requirement verdicts in the controller (xdist forwards workers' reports here);
    over a test's phases the worst verdict of each requirement stands (a teardown error
    counts against a test whose call passed)."""
    _record_phase(report)
    _REPORTED.add(report.nodeid)
    ran_on, found = claims.read_verdicts(report.user_properties)
    if not found:
        if report.failed:  # e.g. "worker crashed", or a test naming no requirement: nothing judged it
            last = next((ln.strip() for ln in reversed(report.longreprtext.splitlines()) if ln.strip()), "")
            _UNJUDGED.setdefault(report.nodeid, f"{report.when} failed: {last[:300]}")
        return
    res = _RESULTS.setdefault(report.nodeid, summary.TestResult(report.nodeid, 0.0, ran_on=ran_on))
    res.duration += report.duration
    res.ran_on = res.ran_on or ran_on
    for rid, outcome in found.items():
        res.merge(rid, outcome)


_RESULTS: dict[str, summary.TestResult] = {}
# In the controller: what the run collected, which tests reported at all, and which failed with
# no verdict; the selection a shard was cut from (`shards.selection`). Written to results.json so
# that a run (or a merge of shards) that did not judge every collected test is inconclusive.
_COLLECTED: dict[str, list[str] | None] = {"ids": None}
_REPORTED: set[str] = set()
_UNJUDGED: dict[str, str] = {}
_SELECTION: dict[str, Any] = {}
_REQUIREMENTS: dict[str, list[str]] = {}  # node id -> the requirements it proves, from any collection
_TIMELINE: dict[str, run_timeline.Entry] = {}  # in the controller: every test's phases, by node id
_BRINGUPS: list[list[float]] = []  # in a worker: private-cluster bring-ups not yet reported
BRINGUP_PROPERTY = "lwsc-private-bringup"


def _record_phase(report: pytest.TestReport) -> None:
    """The run timeline: which worker ran the test, when each phase started and stopped."""
    if not hasattr(report, "start"):
        return
    node = getattr(report, "node", None)  # xdist's worker of a forwarded report
    worker = str(node.gateway.id) if node is not None else "main"
    entry = _TIMELINE.setdefault(report.nodeid, run_timeline.Entry(report.nodeid, worker))
    entry.phases[report.when] = [report.start, report.stop]
    if report.location and not entry.location:
        entry.location = f"{report.location[0]}:{(report.location[1] or 0) + 1}"
    for key, value in report.user_properties:
        if key == BRINGUP_PROPERTY and (interval := json.loads(str(value))) not in entry.bringups:
            entry.bringups.append(interval)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    """In the controller: results.json, per-requirement summary and Allure metadata."""
    _WORKER_PRIVATE.release()  # in a worker (or a run without workers): its private cluster
    if _is_worker(session.config):
        output = session.config.workeroutput  # type: ignore[attr-defined]
        output.update(lwsc_selection=dict(_SELECTION), lwsc_requirements=dict(_REQUIREMENTS))
    out = session.config.getoption("--lwsc-report-dir")
    if not out or _is_worker(session.config):
        return
    handle_path = session.config.getoption("--lwsc-handle")
    handle = ClusterHandle.from_json(Path(handle_path).read_text()) if handle_path else None
    meta = {
        "run_id": session.config._lwsc_run_id,  # type: ignore[attr-defined]
        "versions": handle.versions if handle else {},
        "provider": handle.provider if handle else "unknown",
        "cluster": _cluster_named(handle),
        "profile": session.config.getoption("--lwsc-profile"),
        "mode": session.config.getoption("--lwsc-mode"),
        "shard": session.config.getoption("--lwsc-shard") or "",
        **_completeness(int(exitstatus)),
        "gate": {
            "strict": session.config.getoption("--lwsc-strict"),
            "accept_known_deviations": session.config.getoption("--lwsc-accept-known-deviations"),
        },
        "harness": provenance.harness(),
        "started": _STARTED.get("at", ""),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    for nodeid, why in meta["unjudged"].items():  # its requirements cannot read passed, nor not-run
        for rid in _REQUIREMENTS.get(nodeid, []):
            res = _RESULTS.setdefault(nodeid, summary.TestResult(nodeid, 0.0))
            res.merge(rid, verdicts.Outcome("error", f"the test ended without a verdict: {why}"))
    run_dir = Path(out)
    render.save_results(run_dir, list(_RESULTS.values()), meta, list(_TIMELINE.values()))
    allure_dir = session.config.getoption("--alluredir", None)
    if allure_dir:
        evidence.write_allure_metadata(Path(allure_dir), meta["versions"], meta["provider"], meta["profile"])


def _completeness(exitstatus: int) -> dict[str, Any]:
    """What results.json records to show the run judged every test it collected
    (`report.completeness`): pytest's exit status, the collected tests, the selection a shard was
    cut from, and every collected test that ended without a verdict."""
    collected = _COLLECTED.get("ids")
    unjudged = dict(_UNJUDGED)
    if collected is None:
        unjudged.setdefault("(collection)", "the run recorded no collected tests (no worker finished collecting)")
    lost = "never reported: it did not run (a lost worker?)"
    unjudged.update({i: lost for i in collected or [] if i not in _REPORTED})
    ids = collected or []
    return {
        "pytest_exit": exitstatus,
        "collected": ids,
        "selection": dict(_SELECTION) or shards.selection(ids),
        "unjudged": unjudged,
    }


def _cluster_named(handle: ClusterHandle | None) -> str:
    """The API server and context the run's kubeconfig names (the report's `cluster`)."""
    if handle is None:
        return "unknown"
    try:
        t = existing.target(handle.kubeconfig, None)
    except LwscError:
        return "unknown"
    return f"{t.server} (context {t.context})"


def pytest_sessionstart(session: pytest.Session) -> None:
    _STARTED["at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    _COLLECTED["ids"] = None  # a session of its own (pytester runs several in one process)
    for state in (_REPORTED, _UNJUDGED, _SELECTION, _REQUIREMENTS):
        state.clear()


_STARTED: dict[str, str] = {}


@contextmanager
def _private(config: pytest.Config, name: str, own: Sequence[str] = ()) -> Iterator[LocalCluster]:
    """A private local cluster named `name` (`private-<run>-…`, so `down_private` finds what an
    interrupted run left), with the run's profile plus the `own` KEY=VALUE settings."""

    def profile_at(port: int) -> Profile:
        return run_profile(config).with_overrides([*own, f"network.base_port={port}"]).private()

    def progress(msg: str) -> None:
        print(f"[lwsc private] {msg}", file=sys.stderr, flush=True)

    # a failed bring-up errors the tests that need it; the worker and the other tests carry on
    started = time.time()
    with claimed_cluster(profile_at, name, progress) as cluster:
        _BRINGUPS.append([started, time.time()])
        yield cluster


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "gw0")


NOT_ON_KIND = (
    "not-run on kind: the test needs a private local cluster (a controller process stopped, a "
    "node's heartbeat cut, the API server or a webhook taken away), whose evidence would not be "
    "the kind cluster's"
)


def skip_private_on_kind(request: pytest.FixtureRequest) -> None:
    """On kind the run is about the kind cluster: a private local cluster's result would read as
    kind's, so those tests do not run there (not-run, with this reason)."""
    handle: ClusterHandle = request.getfixturevalue("lwsc_cluster")
    if handle.provider == "kind":
        pytest.skip(NOT_ON_KIND)


class _WorkerPrivate:
    """This worker's private cluster: brought up by the first test that needs it, brought down
    when a test that does not starts, and at the end of the session. Tests are handed out with
    those that need it first (`pytest_collection_modifyitems`), so it serves a worker's run of
    such tests and then stops costing CPU for the rest of the run."""

    def __init__(self) -> None:
        self.stack: ExitStack | None = None
        self.cluster: LocalCluster | None = None

    def get(self, config: pytest.Config, name: str) -> LocalCluster:
        if self.cluster is None:
            stack = ExitStack()
            self.cluster = stack.enter_context(_private(config, name))
            self.stack = stack
        return self.cluster

    def release(self) -> None:
        stack, self.stack, self.cluster = self.stack, None, None
        if stack is not None:
            stack.close()


_WORKER_PRIVATE = _WorkerPrivate()


def uses_worker_private(item: pytest.Item) -> bool:
    """Does the test run on this worker's private cluster (not on one of its own)?"""
    names = getattr(item, "fixturenames", ())
    own = item.get_closest_marker("private_cluster") is not None
    return "private_cluster" in names or ("private_scenario" in names and not own)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not uses_worker_private(item):
        _WORKER_PRIVATE.release()


@pytest.fixture
def private_cluster(request: pytest.FixtureRequest, run_id: str) -> LocalCluster:
    """A local cluster of this xdist worker's own, for tests that break things (stop a
    controller, remove a webhook, fail a node): the shared cluster is never disrupted.
    Tests must restore what they break; consecutive tests share it (`_WorkerPrivate`)."""
    skip_private_on_kind(request)
    return _WORKER_PRIVATE.get(request.config, f"private-{run_id}-{_worker()}")


@pytest.fixture
def private_scenario(run_id: str, request: pytest.FixtureRequest) -> Iterator[Scenario]:
    """Like `scenario`, on the worker's private cluster; a test marked
    `private_cluster(KEY=VALUE, …)` gets one of its own with those settings instead."""
    skip_private_on_kind(request)
    mark = request.node.get_closest_marker("private_cluster")
    with ExitStack() as own:
        if mark:
            cluster = own.enter_context(_private(request.config, f"private-{run_id}-{_worker()}-own", mark.args))
        else:
            cluster = request.getfixturevalue("private_cluster")
        handle = cluster.handle()
        assert handle is not None
        api = api_client(handle.kubeconfig)
        name = _create_namespace(api, run_id, request.node.nodeid)
        objects = Objects(api, run_id, name)
        request.node.stash[claims.RAN_ON] = claims.PRIVATE
        sc = Scenario(api, handle, name, objects, simulating=lambda: claims.mark_simulated(request.node))
        # a component that died (not one the test stopped), or a starved cluster, makes its failures errors
        request.node.stash[claims.INFRA_BROKEN] = _infra_check(handle, sc)
        yield sc
        objects.delete_created()
        _delete_namespace(api, name)
        api.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Requirement ids become keywords, so `-k LWS-NAME` (and `lwsc run --focus`) selects them;
    `--lwsc-requirements-out` writes which test proves which requirements."""
    for item in items:
        for rid in claims.requirement_ids(item):
            item.extra_keyword_matches.add(rid)
    _REQUIREMENTS.update({i.nodeid: ids for i in items if (ids := claims.requirement_ids(i))})
    if config.getoption("--lwsc-order") == "longest-first":
        # the tests on the worker's private cluster first (it goes down after them), each group
        # longest first: the slowest promise starts at once instead of last
        order = shards.longest_first([i.nodeid for i in items], shards.durations())
        position = {nodeid: k for k, nodeid in enumerate(order)}
        items.sort(key=lambda i: (not uses_worker_private(i), position[i.nodeid]))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What this process collected (in a run without xdist workers: the run's tests); after every
    deselection (-k, --lwsc-shard) what was selected, for `lwsc run` (its dry run, and the builds
    it runs before pytest) and the catalogue's tests."""
    config, items = session.config, session.items
    if _is_worker(config):
        return
    if _COLLECTED.get("ids") is None:
        _COLLECTED["ids"] = [i.nodeid for i in items]
    if out := config.getoption("--lwsc-requirements-out"):
        Path(out).write_text(json.dumps({i.nodeid: claims.requirement_ids(i) for i in items}, indent=1))
    if out := config.getoption("--lwsc-selection-out"):
        Path(out).write_text(json.dumps(selection_needs(items), indent=1))


def selection_needs(items: Sequence[pytest.Item]) -> dict[str, Any]:
    """{"tests": {node id: [requirement ids]}, "private": [[KEY=VALUE settings] of each private
    cluster the tests bring up], "upgrade_starts": [[component, version]]}."""
    private: list[list[str]] = []
    starts: list[list[str]] = []
    for item in items:
        mark = item.get_closest_marker("private_cluster")
        own = mark is not None and "private_scenario" in getattr(item, "fixturenames", ())
        settings = [str(a) for a in mark.args] if mark is not None and own else None
        if settings is None and uses_worker_private(item):
            settings = []
        if settings is not None and settings not in private:
            private.append(settings)
        for start in item.iter_markers("upgrade_start"):
            pair = [str(a) for a in start.args]
            if pair not in starts:
                starts.append(pair)
    tests = {i.nodeid: claims.requirement_ids(i) for i in items}
    return {"tests": tests, "private": private, "upgrade_starts": starts}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On failure, attach what a reviewer needs: the namespace's objects and controller log tails.
    A setup that brought up a private cluster carries when it did (for the run timeline)."""
    report: pytest.TestReport = yield
    if call.when == "setup" and _BRINGUPS:
        report.user_properties.extend((BRINGUP_PROPERTY, json.dumps(b)) for b in _BRINGUPS)
        _BRINGUPS.clear()
    sc = getattr(item, "funcargs", {}).get("scenario") or getattr(item, "funcargs", {}).get("private_scenario")
    # Also for a failure turned into a known deviation or a SHOULD warning (`claims`): the row
    # then still carries the objects and controller logs a reviewer needs.
    if report.when == "call" and (report.failed or hasattr(report, "wasxfail")) and isinstance(sc, Scenario):
        try:
            attach_failure_evidence(sc)
        except Exception as exc:  # evidence must never mask the failure itself
            allure.attach(f"could not collect evidence: {exc}", "evidence error", allure.attachment_type.TEXT)
    return report


def attach_failure_evidence(sc: Scenario) -> None:
    def custom_items(group: str, version: str, plural: str) -> list[Any]:
        try:
            listing = sc.custom.list_namespaced_custom_object(group, version, sc.namespace, plural)
        except ApiException:
            return []  # e.g. Kueue not installed
        return list(listing.get("items", [])) if isinstance(listing, dict) else []

    listings = {
        "LeaderWorkerSets": custom_items("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
        "Workloads": custom_items("kueue.x-k8s.io", "v1beta2", "workloads"),
        "StatefulSets": sc.statefulsets(),
        "Pods": sc.pods(),
        "Events": sc.events(),
    }
    for title, items in listings.items():
        body = json.dumps(items, indent=1, default=str)
        allure.attach(body, f"{title} in {sc.namespace}", allure.attachment_type.JSON)
    for component in ("lws", "kueue"):
        path = sc.cluster.logs.get(component)
        if path and Path(path).is_file():  # what the controller wrote since the test began, not the whole log
            tail = lines_since(path, sc.log_offsets.get(component, 0))
            title = f"{component} controller log since the test began (last 200 lines)"
            allure.attach("\n".join(tail), title, allure.attachment_type.TEXT)
