"""What only a real kubelet shows: a worker reaches its leader through LWS_LEADER_ADDRESS.

Multi-host inference rests on it: a worker finds its leader by the address LWS puts in its
environment ("The address of the leader via the headless service"). Each worker container runs,
through its own shell, a name lookup of "$LWS_LEADER_ADDRESS" and `nc` to the leader's serving port:
the variable as the process sees it, resolved by the pod's own DNS configuration, over the pod
network. Needs containers that run (kind, or a vendor's cluster): on the local cluster kwok runs
none, so these tests read not-run there.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    Scenario,
    images,
    run_in_pod,
    steady_state_violations,
    workloads,
)
from lws_conformance.testing import predicates as P

from . import lws_helpers as L

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
PFX = "leaderworkerset.sigs.k8s.io/"
PORT = 8080
# The name is resolved by the process's own resolver (ping: libc with the pod's search domains;
# busybox's nslookup would not apply them), then a TCP connection is opened with nc.
PROBE = (
    'echo "address=$LWS_LEADER_ADDRESS"; ping -c 1 -W 1 "$LWS_LEADER_ADDRESS" 2>&1 | head -n 1; '
    'if nc -w 5 "$LWS_LEADER_ADDRESS" ' + str(PORT) + " </dev/null; then echo connected; else echo refused; fi"
)


def _lws(name: str, policy: str | None) -> Obj:
    """Leaders serve TCP on PORT (agnhost netexec, Ready when the port answers); workers idle."""
    obj = workloads.lws(name, replicas=2, size=3)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    agnhost = images.ref("agnhost")
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    leader.update(
        image=agnhost,
        args=["netexec", f"--http-port={PORT}"],
        ports=[{"containerPort": PORT}],
        readinessProbe={"tcpSocket": {"port": PORT}, "periodSeconds": 1},
    )
    leader.pop("command", None)
    worker = lwt["workerTemplate"]["spec"]["containers"][0]
    worker.update(image=agnhost, args=["pause"])
    worker.pop("command", None)
    worker.pop("ports", None)
    for spec in (lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]):
        spec["terminationGracePeriodSeconds"] = 1
    if policy:
        obj["spec"]["networkConfig"] = {"subdomainPolicy": policy}
    return obj


def _published(sc: Scenario, leaders: dict[int, str]) -> list[str]:
    """Wait until every leader IP is in an EndpointSlice of the namespace (CoreDNS answers from
    them); a failure (empty: published) rather than an exception, so the probe still runs and
    the claim reports both."""
    want = set(leaders.values())

    def published(slices: list[Obj]) -> bool:
        return want <= {a for e in L.endpoints(slices) for a in e.get("addresses") or []}

    late = L.endpoints_unpublished(sc, published, f"the leader IPs {sorted(want)} published")
    return [f"the leader IPs {sorted(want)} are in no EndpointSlice of a headless Service: {late}"] if late else []


def _probe(sc: Scenario, pods: list[Obj], leaders: dict[int, str]) -> list[str]:
    """Every worker's view: the failures, one line each (empty: every worker reached its leader)."""
    failures = []
    for pod in pods:
        labels = pod["metadata"]["labels"]
        if labels.get(PFX + "worker-index") == "0":
            continue
        group = int(labels[PFX + "group-index"])
        name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]["name"]
        ran = run_in_pod(sc.api, sc.namespace, name, container, ["/bin/sh", "-c", PROBE], timeout=30)
        address = re.search(r"^address=(.*)$", ran.stdout, re.M)
        ips = set(re.findall(r"^PING \S+ \(([0-9.]+)\)", ran.stdout, re.M))
        want = leaders[group]
        if not address or not address.group(1):
            failures.append(f"{name}: LWS_LEADER_ADDRESS is empty in the container ({ran.stdout!r})")
        elif want not in ips:
            failures.append(f"{name}: {address.group(1)} resolves to {sorted(ips)}, not its leader's IP {want}")
        elif "connected" not in ran.stdout.splitlines():
            failures.append(f"{name}: no TCP connection to {address.group(1)}:{PORT} ({ran.stdout.strip()[-200:]!r})")
    return failures


def _leaders(pods: list[Obj]) -> dict[int, str]:
    return {
        int(p["metadata"]["labels"][PFX + "group-index"]): p["status"]["podIP"]
        for p in pods
        if p["metadata"]["labels"].get(PFX + "worker-index") == "0"
    }


@pytest.mark.requirement("LWS-ADDR-001")
@pytest.mark.requirement("LWS-ADDR-003")
def test_every_worker_reaches_its_leader_by_lws_leader_address(scenario: Scenario, claim: Claims) -> None:
    """Shared subdomain (the default): every worker reaches its leader, and again once a group
    was recreated with new pod IPs."""
    sc = scenario
    sc.require_real_kubelet()
    name = "addr"
    lws = sc.create(_lws(name, None))
    pods = L.steady(sc, lws)
    leaders = _leaders(pods)
    with claim("LWS-ADDR-001"):
        failures = _published(sc, leaders) + _probe(sc, pods, leaders)
        assert not failures, "\n".join(failures)

    # The group recreated (its leader deleted under RecreateGroupOnPodRestart): new pods, new IPs.
    old = leaders[0]
    sc.core.delete_namespaced_pod(f"{name}-0", sc.namespace)

    def recreated(ps: list[Obj]) -> list[Obj] | None:
        live = P.live(ps)
        lead = [p for p in live if p["metadata"]["name"] == f"{name}-0"]
        fresh = lead and (lead[0].get("status") or {}).get("podIP") not in (None, old)
        return live if fresh and not steady_state_violations(lws, live) else None

    pods = list(
        sc.wait_pods(
            recreated,
            f"group 0 of {name} recreated with a new leader IP, every group Ready",
            timeout=180,
            selector=f"{PFX}name={name}",
        )
    )
    leaders = _leaders(pods)
    with claim("LWS-ADDR-003"):
        group0 = [p for p in pods if p["metadata"]["labels"][PFX + "group-index"] == "0"]
        failures = _published(sc, {0: leaders[0]}) + _probe(sc, group0, leaders)
        assert not failures, "\n".join(failures)


@pytest.mark.requirement("LWS-ADDR-002")
def test_every_worker_reaches_its_leader_under_unique_per_replica(scenario: Scenario, claim: Claims) -> None:
    """subdomainPolicy UniquePerReplica: the address names the group's own headless Service."""
    sc = scenario
    sc.require_real_kubelet()
    lws = sc.create(_lws("addr-u", "UniquePerReplica"))
    pods = L.steady(sc, lws)
    leaders = _leaders(pods)
    with claim("LWS-ADDR-002"):
        failures = _published(sc, leaders) + _probe(sc, pods, leaders)
        assert not failures, "\n".join(failures)
