"""TPU environment variables (docs reference "Environment Variables"; KEP 115 "TPU Environment
Variable Injection"; the TPU half of lws#917).

Why: a multi-host TPU slice only starts when every host's TPU_WORKER_HOSTNAMES lists exactly the
hosts of its slice, in order, and TPU_WORKER_ID is the host's position in it; with subgroups one
LWS group holds several slices, so both must be computed per subgroup.

LWS injects these at pod admission (pod webhook) into the container that requests google.com/tpu,
so the check needs no TPU node: the pods are created and read while they stay Pending (no node
advertises TPUs; the cluster's nodes are untouched). Covered: with and without subgroups, with
and without the leader requesting TPUs, and a group of one pod.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, workloads
from lws_conformance.testing import predicates as P

from .lws_helpers import TPU, TPU_VARS, expected_tpu_env

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


def _tpu_lws(name: str, size: int, leader_tpu: bool, sub: int | None, workers_tpu: bool = True) -> Obj:
    obj = workloads.lws(name, replicas=1, size=size, gpus=4 if workers_tpu else 0, gpu_resource=TPU)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    if not leader_tpu and workers_tpu:
        res = lwt["leaderTemplate"]["spec"]["containers"][0]["resources"]
        for k in ("requests", "limits"):
            res[k].pop(TPU, None)
    if sub:
        lwt["subGroupPolicy"] = {"subGroupSize": sub}
    return obj


def _found(pod: Obj) -> tuple[list[str], int, str] | None:
    """(slice hosts, TPU_WORKER_ID, TPU_NAME) of the pod's TPU container; None when the pod requests
    no TPU and none of its containers carries a TPU variable."""
    c = next((c for c in pod["spec"]["containers"] if TPU in ((c.get("resources") or {}).get("limits") or {})), None)
    if c is None:
        stray = sorted({e["name"] for c in pod["spec"]["containers"] for e in c.get("env") or []} & set(TPU_VARS))
        return ([], -1, f"no TPU requested, yet {stray}") if stray else None
    env = {e["name"]: e.get("value") for e in c.get("env") or []}
    if not all(k in env for k in TPU_VARS):
        return ([], -1, f"missing {[k for k in TPU_VARS if k not in env]}")
    hosts = [h.split(".", 1)[0] for h in str(env["TPU_WORKER_HOSTNAMES"]).split(",")]
    return hosts, int(env["TPU_WORKER_ID"]), str(env["TPU_NAME"])


CASES = [  # (id, size, leader requests TPUs, subGroupSize, workers request TPUs, requirement)
    ("size1-leader", 1, True, None, True, "LWS-TPU-001"),
    ("size3-leader", 3, True, None, True, "LWS-TPU-001"),
    ("size3-workers-only", 3, False, None, True, "LWS-TPU-001"),
    ("size3-no-tpu", 3, False, None, False, "LWS-TPU-001"),
    ("size4-sub2-leader", 4, True, 2, True, "LWS-TPU-002"),
    ("size5-sub2-workers-only", 5, False, 2, True, "LWS-TPU-002"),
]


@pytest.mark.parametrize(
    ("size", "leader_tpu", "sub", "workers_tpu", "rid"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.requirement("LWS-TPU-001")
@pytest.mark.requirement("LWS-TPU-002")
@pytest.mark.requirement("LWS-TPU-003")
def test_tpu_env_per_documented_formula(
    scenario: Scenario, claim: Claims, size: int, leader_tpu: bool, sub: int | None, workers_tpu: bool, rid: str
) -> None:
    sc, name = scenario, "tp"
    sc.create(_tpu_lws(name, size, leader_tpu, sub, workers_tpu))
    pods = sc.wait_pods(
        lambda ps: ps if P.names(ps) == P.expected_pod_names(name, 1, size) else None,
        f"the {size} pods of group 0 created (Pending: no node advertises {TPU})",
    )
    by_name = {p["metadata"]["name"]: p for p in pods}
    want = expected_tpu_env(name, size, leader_tpu, sub, workers_tpu)
    with claim(rid):
        got = {n: _found(p) for n, p in by_name.items()}
        wrong = {n: (got[n], want[n]) for n in want if got.get(n) != want[n]}
        assert not wrong, f"(slice hosts, TPU_WORKER_ID, TPU_NAME) per pod, (got, want): {wrong}"
    with claim("LWS-TPU-003"):
        bad = {}
        for n, p in by_name.items():
            c = next(
                (c for c in p["spec"]["containers"] if TPU in ((c.get("resources") or {}).get("limits") or {})), None
            )
            env = {e["name"]: e.get("value") for e in (c or {}).get("env") or []}
            hosts = [h for h in str(env.get("TPU_WORKER_HOSTNAMES", "")).split(",") if h]
            if any(h.split(".", 1)[1:] != [p["spec"].get("subdomain")] for h in hosts):
                bad[n] = (hosts, p["spec"].get("subdomain"))
        assert not bad, f"TPU_WORKER_HOSTNAMES entries not <pod>.<subdomain>: {bad}"


def _two_tpu_containers(lws: Obj) -> None:
    """Leader and worker pods of two containers, each requesting TPUs (no TPU_PROCESS_PORT given)."""
    for key in ("leaderTemplate", "workerTemplate"):
        spec = lws["spec"]["leaderWorkerTemplate"][key]["spec"]
        first = spec["containers"][0]
        resources = {k: dict(v) for k, v in first["resources"].items()}
        second = {**first, "name": f"{first['name']}-2", "resources": resources}
        spec["containers"] = [first, second]


@pytest.mark.requirement("LWS-TPU-006")
def test_tpu_env_with_two_tpu_containers_per_pod(scenario: Scenario) -> None:
    """2 pods of 2 TPU containers each (upstream e2e "Adds env vars to multiple containers when
    using TPU"): every container lists each pod once per TPU container in TPU_WORKER_HOSTNAMES and
    TPU_PROCESS_ADDRESSES (host:port, ports 8476 + container index), gets TPU_WORKER_ID = pod index
    x 2 + container index, its own TPU_PROCESS_PORT, and TPU_NAME the leader."""
    sc, name, size = scenario, "tp2", 2
    obj = _tpu_lws(name, size, leader_tpu=True, sub=None)
    _two_tpu_containers(obj)
    sc.create(obj)
    pods = sc.wait_pods(
        lambda ps: ps if P.names(ps) == P.expected_pod_names(name, 1, size) else None,
        f"the {size} pods of group 0 created (Pending: no node advertises {TPU})",
    )
    leader = f"{name}-0"
    hosts = [h for h in (leader, f"{leader}-1") for _ in range(2)]
    ports = ["8476", "8477"] * 2
    wrong = {}
    for p in pods:
        index = int(p["metadata"]["labels"][P.WORKER_INDEX])
        sub = p["spec"].get("subdomain")
        for i, c in enumerate(p["spec"]["containers"]):
            env = {e["name"]: e.get("value") for e in c.get("env") or []}
            want = {
                "TPU_WORKER_HOSTNAMES": ",".join(f"{h}.{sub}" for h in hosts),
                "TPU_PROCESS_ADDRESSES": ",".join(f"{h}.{sub}:{port}" for h, port in zip(hosts, ports, strict=True)),
                "TPU_WORKER_ID": str(index * 2 + i),
                "TPU_PROCESS_PORT": str(8476 + i),
                "TPU_NAME": leader,
            }
            got = {k: env.get(k) for k in want}
            if got != want:
                diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
                wrong[f"{p['metadata']['name']}/{c['name']}"] = diff
    assert not wrong, f"TPU variables per container, (got, want): {wrong}"
