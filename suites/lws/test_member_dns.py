"""What only a real kubelet shows: every group member is reachable by its host name.

LWS's API promises each pod a host name under the group's headless Service ("The host names look
like: Replica 0: my-lws-0.my-lws, my-lws-0-1.my-lws" for the Shared policy, "my-lws-0.my-lws-0,
my-lws-0-1.my-lws-0" for UniquePerReplica): multi-host frameworks address their peers so (TPU
slices list them in TPU_WORKER_HOSTNAMES). Each member runs, in its own container, `hostname` and
a name lookup of every other member's `<pod name>.<subdomain>`, the name built from the API's
pattern (not read from the pod), resolved by the container's own resolver with the pod's search
domains, and compared with the member's current pod IP. Needs containers that run (kind, or a
vendor's cluster): on the local cluster kwok runs none, so these tests read not-run there.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, images, run_in_pod, workloads

from . import lws_helpers as L

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
PFX = "leaderworkerset.sigs.k8s.io/"
# busybox ping resolves through the libc-style resolver with the pod's search domains and prints
# "PING <name> (<ip>): ..." once the name resolved ("ping: bad address '<name>'" when not).
LOOKUP = 'echo "hostname=$(hostname)"; for n in "$@"; do echo "== $n"; ping -c 1 -W 1 "$n" 2>&1 | head -n 1; done'


def _lws(name: str, policy: str | None) -> Obj:
    obj = workloads.lws(name, replicas=2, size=3)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for spec in (lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]):
        container = spec["containers"][0]
        container.update(image=images.ref("agnhost"), args=["pause"])
        container.pop("command", None)
        spec["terminationGracePeriodSeconds"] = 1
    if policy:
        obj["spec"]["networkConfig"] = {"subdomainPolicy": policy}
    return obj


def _group(pod: Obj) -> str:
    return str(pod["metadata"]["labels"][PFX + "group-index"])


def promised_names(lws_name: str, policy: str | None, pods: list[Obj]) -> dict[str, str]:
    """Pod name -> the DNS name the API comment promises it: `<pod>.<lws>` under Shared,
    `<pod>.<lws>-<group>` (the group's own Service, named after its leader) under UniquePerReplica."""
    out = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        sub = f"{lws_name}-{_group(pod)}" if policy == "UniquePerReplica" else lws_name
        out[name] = f"{name}.{sub}"
    return out


def _published(sc: Scenario, pods: list[Obj]) -> list[str]:
    """Wait until every pod's IP is in an EndpointSlice under its pod name as hostname (CoreDNS
    serves `<hostname>.<service>` records from them); a failure (empty: published) rather than an
    exception, so the lookups still run and the claim reports both."""
    want = {(p["metadata"]["name"], p["status"]["podIP"]) for p in pods}

    def published(slices: list[Obj]) -> bool:
        return want <= {(e.get("hostname"), a) for e in L.endpoints(slices) for a in e.get("addresses") or []}

    late = L.endpoints_unpublished(sc, published, "every pod IP published under its pod name as hostname")
    return [f"not every pod is in an EndpointSlice under its own hostname: {late}"] if late else []


def parse_lookups(stdout: str) -> tuple[str | None, dict[str, set[str]]]:
    """(the container's `hostname`, DNS name -> the IPs it resolved to) from LOOKUP's output."""
    host = re.search(r"^hostname=(.*)$", stdout, re.M)
    resolved: dict[str, set[str]] = {}
    for block in re.split(r"^== ", stdout, flags=re.M)[1:]:
        name, _, rest = block.partition("\n")
        resolved[name.strip()] = set(re.findall(r"^PING \S+ \(([0-9.]+)\)", rest, re.M))
    return (host.group(1).strip() if host else None), resolved


def _lookups(sc: Scenario, pods: list[Obj], names: dict[str, str]) -> list[str]:
    """From inside every pod: its own host name, then every other member of its group by its
    promised name. The failures, one line each (empty: all held)."""
    ip = {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}
    failures = []
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        me = pod["metadata"]["name"]
        peers = sorted(p["metadata"]["name"] for p in pods if _group(p) == _group(pod) and p["metadata"]["name"] != me)
        container = pod["spec"]["containers"][0]["name"]
        argv = ["/bin/sh", "-c", LOOKUP, "lookup", *(names[p] for p in peers)]
        ran = run_in_pod(sc.api, sc.namespace, me, container, argv, timeout=60)
        host, resolved = parse_lookups(ran.stdout)
        if host != me:
            failures.append(f"{me}: its host name is {host!r}, not its pod name")
        for peer in peers:
            got = resolved.get(names[peer])
            if got is None:
                failures.append(f"{me}: no lookup of {names[peer]} ran ({ran.stdout.strip()[-200:]!r})")
            elif ip[peer] not in got:
                failures.append(f"{me}: {names[peer]} resolves to {sorted(got)}, not {peer}'s IP {ip[peer]}")
    return failures


def _check(sc: Scenario, claim: Claims, rid: str, name: str, policy: str | None) -> None:
    sc.require_real_kubelet()
    lws = sc.create(_lws(name, policy))
    pods = L.steady(sc, lws)
    with claim(rid):
        names = promised_names(name, policy, pods)
        failures = _published(sc, pods) + _lookups(sc, pods, names)
        assert not failures, "\n".join(failures)


@pytest.mark.requirement("LWS-DNS-001")
def test_every_member_resolves_by_host_name_under_shared_subdomain(scenario: Scenario, claim: Claims) -> None:
    """The default (Shared) policy: `<pod>.<lws>` for every member, from every other member."""
    _check(scenario, claim, "LWS-DNS-001", "dns", None)


@pytest.mark.requirement("LWS-DNS-002")
def test_every_member_resolves_by_host_name_under_unique_per_replica(scenario: Scenario, claim: Claims) -> None:
    """UniquePerReplica: `<pod>.<lws>-<group>`, the group's own headless Service."""
    _check(scenario, claim, "LWS-DNS-002", "dns-u", "UniquePerReplica")
