"""What only a real kubelet shows: the LWS variables as the processes see them.

LWS puts LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX in the pod spec ("Environment
variable added to all containers in the LeaderWorkerSet"); what a framework reads is the
environment its process was started with. Every container here (two per pod, leader and worker
templates) and every init container writes its own `env` at start to a shared emptyDir; the pod
is Ready only once each main container's file exists (an exec readiness probe), and one exec then
reads every file. TPU variables are injected only into containers that request google.com/tpu:
those pods run on the kind cluster's chaos node, the one node that advertises TPUs. Needs
containers that run (kind, or a vendor's cluster): on the local cluster kwok runs none, so these
tests read not-run there.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from lws_conformance.testing import (
    CHAOS_TOLERATION,
    Claims,
    Scenario,
    images,
    run_in_pod,
    steady_state_violations,
    workloads,
)
from lws_conformance.testing import predicates as P

from .lws_helpers import TPU, TPU_VARS, expected_tpu_env

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
PFX = "leaderworkerset.sigs.k8s.io/"
SHARED = "/shared"
VARS = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")
SMALL = {"requests": {"cpu": "10m", "memory": "16Mi"}}
READ = f'for f in {SHARED}/*.env; do echo "== $f"; cat "$f"; done'


def _container(name: str, init: bool) -> Obj:
    dump = f"env > {SHARED}/{name}.env"
    c: Obj = {
        "name": name,
        "image": images.ref("agnhost"),
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", dump if init else f"{dump}; exec /agnhost pause"],
        "resources": SMALL,
        "volumeMounts": [{"name": "shared", "mountPath": SHARED}],
    }
    if not init:
        c["readinessProbe"] = {"exec": {"command": ["cat", f"{SHARED}/{name}.env"]}, "periodSeconds": 1}
    return c


def _lws(name: str, size: int) -> Obj:
    obj = workloads.lws(name, replicas=2, size=size)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for role, key in (("leader", "leaderTemplate"), ("worker", "workerTemplate")):
        lwt[key]["spec"] = {
            "initContainers": [_container(f"{role}-init", init=True)],
            "containers": [_container(role, init=False), _container(f"{role}-side", init=False)],
            "volumes": [{"name": "shared", "emptyDir": {}}],
            "terminationGracePeriodSeconds": 1,
        }
    return obj


def parse_env_files(stdout: str) -> dict[str, dict[str, str]]:
    """READ's output -> container name -> the environment its process recorded."""
    out: dict[str, dict[str, str]] = {}
    for block in re.split(r"^== ", stdout, flags=re.M)[1:]:
        path, _, rest = block.partition("\n")
        name = path.strip().rsplit("/", 1)[-1].removesuffix(".env")
        env = {}
        for line in rest.splitlines():
            key, sep, value = line.partition("=")
            if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                env[key] = value
        out[name] = env
    return out


def expected_env(lws_name: str, namespace: str, size: int, pod: Obj) -> dict[str, str]:
    labels = pod["metadata"]["labels"]
    group = labels[PFX + "group-index"]
    return {
        "LWS_LEADER_ADDRESS": f"{lws_name}-{group}.{lws_name}.{namespace}",
        "LWS_GROUP_SIZE": str(size),
        "LWS_WORKER_INDEX": labels[PFX + "worker-index"],
    }


def env_failures(pod_name: str, files: dict[str, dict[str, str]], names: list[str], want: dict[str, str]) -> list[str]:
    failures = []
    for c in names:
        env = files.get(c)
        if env is None:
            failures.append(f"{pod_name}/{c}: wrote no environment ({sorted(files)} found)")
            continue
        got = {k: env.get(k) for k in VARS}
        if got != want:
            failures.append(f"{pod_name}/{c}: its process saw {got}, want {want}")
    return failures


@pytest.mark.requirement("LWS-ENV-003")
@pytest.mark.requirement("LWS-ENV-004")
def test_every_process_sees_the_lws_variables(scenario: Scenario, claim: Claims) -> None:
    """Two groups of 3; in each pod an init container and two containers record their own env."""
    sc, name, size = scenario, "penv", 3
    sc.require_real_kubelet()
    lws = sc.create(_lws(name, size))
    pods = sc.wait_pods(
        lambda ps: P.live(ps) if not steady_state_violations(lws, ps) else None,
        f"LWS {name}: every group Ready (every container wrote its env)",
        timeout=180,
        selector=f"{PFX}name={name}",
    )
    main: list[str] = []
    init: list[str] = []
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        pod_name = pod["metadata"]["name"]
        spec = pod["spec"]
        ran = run_in_pod(
            sc.api, sc.namespace, pod_name, spec["containers"][0]["name"], ["/bin/sh", "-c", READ], timeout=30
        )
        files = parse_env_files(ran.stdout)
        want = expected_env(name, sc.namespace, size, pod)
        main += env_failures(pod_name, files, [c["name"] for c in spec["containers"]], want)
        init += env_failures(pod_name, files, [c["name"] for c in spec.get("initContainers") or []], want)
    with claim("LWS-ENV-003"):
        assert not main, "\n".join(main)
    with claim("LWS-ENV-004"):
        assert not init, "\n".join(init)


@pytest.mark.exclusive("kind-chaos-node")
@pytest.mark.requirement("LWS-TPU-004")
@pytest.mark.requirement("LWS-TPU-005")
def test_tpu_processes_see_their_slice(scenario: Scenario, claim: Claims) -> None:
    """One group of 3 on the kind cluster's chaos node, the one node advertising google.com/tpu
    (tainted, so only tests that tolerate it land there; `exclusive`: never while it is paused):
    every pod's main container requests 4 TPUs and records its own env; the TPU variables its
    process saw must follow the documented formula (`lws_helpers.expected_tpu_env`), and its side
    container, which requests none, must see none of them."""
    sc, name, size = scenario, "ptpu", 3
    node = sc.require_kind(chaos_node=True)
    obj = workloads.lws(name, replicas=1, size=size)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for role, key in (("leader", "leaderTemplate"), ("worker", "workerTemplate")):
        main = _container(role, init=False)
        main["resources"] = {"requests": {**SMALL["requests"], TPU: "4"}, "limits": {TPU: "4"}}
        lwt[key]["spec"] = {
            "containers": [main, _container(f"{role}-side", init=False)],
            "volumes": [{"name": "shared", "emptyDir": {}}],
            "terminationGracePeriodSeconds": 1,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [dict(CHAOS_TOLERATION)],
        }
    lws = sc.create(obj)
    pods = sc.wait_pods(
        lambda ps: P.live(ps) if not steady_state_violations(lws, ps) else None,
        f"LWS {name}: its group Ready on {node} (every container wrote its env)",
        timeout=180,
        selector=f"{PFX}name={name}",
    )
    # the documented formula's slices, each host named <pod>.<subdomain>: the LWS's headless
    # Service (subdomainPolicy Shared, the default), through which the names resolve
    want = {p: (P.tpu_hosts(w[0], name), w[1], w[2]) for p, w in expected_tpu_env(name, size, True, None).items() if w}
    wrong, leaks = [], []
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        pod_name, role = pod["metadata"]["name"], pod["spec"]["containers"][0]["name"]
        ran = run_in_pod(sc.api, sc.namespace, pod_name, role, ["/bin/sh", "-c", READ], timeout=30)
        files = parse_env_files(ran.stdout)
        env, side = files.get(role, {}), files.get(f"{role}-side", {})
        if not all(k in env for k in TPU_VARS):
            wrong.append(f"{pod_name}/{role}: its process saw no {[k for k in TPU_VARS if k not in env]}")
            continue
        got = P.tpu_slice_seen(env)
        if got != want.get(pod_name):
            wrong.append(f"{pod_name}/{role}: (slice hosts, TPU_WORKER_ID, TPU_NAME) seen {got}, want {want[pod_name]}")
        if leaked := sorted(k for k in TPU_VARS if k in side):
            leaks.append(f"{pod_name}/{role}-side requests no TPU but its process saw {leaked}")
    with claim("LWS-TPU-004"):
        assert not wrong, "\n".join(wrong)
    with claim("LWS-TPU-005"):
        assert not leaks, "\n".join(leaks)
