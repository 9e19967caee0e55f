"""Naming and identity: the objects an LWS creates, their names, labels, owners, Services and env.

Upstream: LWS pkg/controllers, pod_webhook.go Default, pod_utils.go AddLWSVariables@v0.9.0.
Everything here is what users and tooling key on
(DNS names, label selectors, env vars read by the workload), so each check compares against the
exact documented value, derived from the LWS name, namespace and group/worker ordinals.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, images, observe, workloads
from lws_conformance.testing import predicates as P

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
PFX = "leaderworkerset.sigs.k8s.io/"
NAME, GROUP_INDEX, WORKER_INDEX = PFX + "name", PFX + "group-index", PFX + "worker-index"
GROUP_KEY, REVISION = PFX + "group-key", PFX + "template-revision-hash"
SIZE, LEADER_NAME, REPLICAS = PFX + "size", PFX + "leader-name", PFX + "replicas"
SUBDOMAIN_POLICY = PFX + "subdomainPolicy"
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")


# -- helpers ----------------------------------------------------------------------------------
def _labels(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _by_name(objs: list[Obj]) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objs if not o["metadata"].get("deletionTimestamp")}


def _controller(obj: Obj) -> Obj:
    """The single controller ownerReference of `obj` (there must be exactly one)."""
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
    assert len(refs) == 1, f"{obj['kind']}/{obj['metadata']['name']}: controller refs {refs}"
    return refs[0]


def group_key(namespace: str, leader: str) -> str:
    """The documented group-key label value: sha1hex("<ns>/<L-i>") (pod_webhook.go genGroupUniqueKey@v0.9.0)."""
    return hashlib.sha1(f"{namespace}/{leader}".encode()).hexdigest()


def _env(container: Obj) -> list[tuple[str, str | None]]:
    return [(e["name"], e.get("value")) for e in container.get("env") or []]


def _all_containers(pod: Obj) -> list[Obj]:
    spec = pod["spec"]
    return [*(spec.get("initContainers") or []), *spec["containers"]]


def _bring_up(scenario: Scenario, obj: Obj) -> tuple[dict[str, Obj], dict[str, Obj]]:
    """Create `obj` and wait until exactly its pods are Ready and every worker StatefulSet exists.

    Returns (pods by name, StatefulSets by name) as observed once both are complete.
    """
    name = obj["metadata"]["name"]
    replicas = obj["spec"]["replicas"]
    size = obj["spec"]["leaderWorkerTemplate"]["size"]
    scenario.create(obj)
    expected = P.expected_pod_names(name, replicas, size)
    pods = scenario.wait_pods(
        lambda ps: ps if P.names(ps) == expected and all(P.pod_ready(p) for p in P.live(ps)) else None,
        f"exactly {sorted(expected)} Running and Ready",
        selector=f"{NAME}={name}",
    )
    sts_names = {name} | ({f"{name}-{i}" for i in range(replicas)} if size > 1 else set())
    sts = scenario.wait_statefulsets(
        lambda ss: ss if set(_by_name(ss)) == sts_names else None,
        f"exactly the StatefulSets {sorted(sts_names)}",
    )
    return _by_name(pods), _by_name(sts)


def _lws(name: str, *, replicas: int, size: int, leader: bool = True) -> Obj:
    obj: Obj = workloads.lws(name, replicas=replicas, size=size, leader=leader)
    return obj


# -- naming -----------------------------------------------------------------------------------
@pytest.mark.requirement("LWS-NAME-001")
@pytest.mark.requirement("LWS-NAME-004")
def test_objects_are_named_from_the_lws_and_group_ordinals(scenario: Scenario, claim: Claims) -> None:
    """Leader pods L-i and worker pods L-i-j with hostname = name and subdomain L (LWS-NAME-001,
    the API's promise), made by leader StatefulSet L and worker StatefulSets L-i starting at
    ordinal 1 (LWS-NAME-004, how v0.9.0 does it). These names are the DNS names workloads dial,
    so they are checked exactly."""
    name, replicas, size = "nm", 2, 3
    pods, sts = _bring_up(scenario, _lws(name, replicas=replicas, size=size))

    with claim("LWS-NAME-001"):
        for i in range(replicas):
            leader = f"{name}-{i}"
            assert pods[leader]["spec"].get("hostname") == leader
            assert pods[leader]["spec"].get("subdomain") == name
            for j in range(1, size):
                worker = pods[f"{leader}-{j}"]
                assert worker["spec"].get("hostname") == f"{leader}-{j}"
                assert worker["spec"].get("subdomain") == name
    with claim("LWS-NAME-004"):
        leader_sts = sts[name]["spec"]
        assert leader_sts["serviceName"] == name
        assert leader_sts["replicas"] == replicas
        assert leader_sts["podManagementPolicy"] == "Parallel"
        assert leader_sts["selector"]["matchLabels"] == {NAME: name, WORKER_INDEX: "0"}
        for i in range(replicas):
            spec = sts[f"{name}-{i}"]["spec"]
            assert spec["replicas"] == size - 1, f"worker StatefulSet {name}-{i} replicas"
            assert (spec.get("ordinals") or {}).get("start") == 1, f"worker StatefulSet {name}-{i} must start at 1"
            assert spec["serviceName"] == name
            assert spec["podManagementPolicy"] == "Parallel"


@pytest.mark.requirement("LWS-NAME-002")
def test_size_one_creates_no_worker_statefulset(scenario: Scenario) -> None:
    """With size 1 a group is just its leader: no worker StatefulSet may ever be created (pod_controller.go@v0.9.0).

    The LWS is first seen Available, then the StatefulSets are watched for a few seconds, because
    a late worker StatefulSet would be a violation that a single sample could miss.
    """
    name = "one"
    pods, sts = _bring_up(scenario, _lws(name, replicas=2, size=1))
    assert set(pods) == {f"{name}-0", f"{name}-1"}
    assert set(sts) == {name}
    scenario.wait_lws(name, lambda o: P.condition(o, "Available") == "True", "condition Available=True")

    def extra_statefulset(ss: list[Obj]) -> str | None:
        extra = sorted(set(_by_name(ss)) - {name})
        return f"unexpected StatefulSets {extra}" if extra else None

    found = observe(
        scenario.api,
        scenario.apps.list_namespaced_stateful_set,
        extra_statefulset,
        duration=3,
        namespace=scenario.namespace,
    )
    assert found is None, found


@pytest.mark.requirement("LWS-NAME-003")
def test_leader_uses_worker_template_without_leader_template(scenario: Scenario) -> None:
    """Without leaderTemplate the leader StatefulSet and leader pods are built from workerTemplate."""
    name = "nolt"
    obj = _lws(name, replicas=1, size=2, leader=False)
    worker_containers = [c["name"] for c in obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]]
    pods, sts = _bring_up(scenario, obj)
    leader_template = sts[name]["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in leader_template] == worker_containers
    assert [c["name"] for c in pods[f"{name}-0"]["spec"]["containers"]] == worker_containers
    assert _labels(pods[f"{name}-0"]).get(WORKER_INDEX) == "0"


# -- labels and annotations -------------------------------------------------------------------
@pytest.mark.requirement("LWS-LABEL-003")
@pytest.mark.requirement("LWS-LABEL-001")
@pytest.mark.parametrize(("replicas", "size"), [(2, 3), (11, 2), (1, 12)], ids=["r2-s3", "r11-s2", "r1-s12"])
def test_labels_and_annotations_follow_the_inventory(
    scenario: Scenario, claim: Claims, replicas: int, size: int
) -> None:
    """Every label and annotation key of leaderworkerset_types.go@v0.9.0 that a Shared LWS without
    subgroups carries, with its value.

    Selectors, Services, HPA and Kueue all key on these, so the values are checked exactly.
    LWS-LABEL-003 holds what the labels reference documents (which key on which object, and what
    its value means); LWS-LABEL-001 what only the code fixes: group-key = sha1("<ns>/<L-i>"), the
    group labels on each worker StatefulSet's selector and template, the leader StatefulSet's
    template. Each object is checked on its own, so every wrong object is reported. The group and
    worker indices are read from pod-name ordinals, so two cases have one of two digits: group 10
    (11 groups) and workers 10 and 11 (a group of 12).
    """
    name = "lbl"
    ns = scenario.namespace
    pods, sts = _bring_up(scenario, _lws(name, replicas=replicas, size=size))
    svc = scenario.wait_services(lambda ss: _by_name(ss).get(name), f"headless Service {name}")

    leader_sts = sts[name]
    rev = _labels(leader_sts).get(REVISION)
    with claim("LWS-LABEL-003"):
        assert rev, f"leader StatefulSet {name} has no {REVISION} label"
    with claim("LWS-LABEL-003"):
        assert _labels(leader_sts).get(NAME) == name, f"leader StatefulSet {name}: {NAME} {_labels(leader_sts)}"
    with claim("LWS-LABEL-003"):
        got = _annotations(leader_sts).get(REPLICAS)
        assert got == str(replicas), f"leader StatefulSet {name}: {REPLICAS} {got!r}, want {replicas}"
    with claim("LWS-LABEL-003"):
        assert _labels(svc).get(NAME) == name, f"Service {name}: {NAME} label {_labels(svc)}"
    with claim("LWS-LABEL-001"):
        tmpl = leader_sts["spec"]["template"]["metadata"]
        assert {k: tmpl["labels"].get(k) for k in (NAME, WORKER_INDEX, REVISION)} == {
            NAME: name,
            WORKER_INDEX: "0",
            REVISION: rev,
        }, f"leader StatefulSet {name}: template labels {tmpl['labels']}"
        assert tmpl["annotations"].get(SIZE) == str(size), f"leader StatefulSet {name}: template {tmpl}"

    keys: dict[str, int] = {}
    for i in range(replicas):
        leader = f"{name}-{i}"
        documented = {NAME: name, GROUP_INDEX: str(i), REVISION: rev}
        group = [leader, *(f"{leader}-{j}" for j in range(1, size))]
        for j, pod_name in enumerate(group):
            pod = pods[pod_name]
            with claim("LWS-LABEL-003"):
                got = {k: _labels(pod).get(k) for k in (*documented, WORKER_INDEX)}
                assert got == {**documented, WORKER_INDEX: str(j)}, f"labels of pod {pod_name}: {got}"
            with claim("LWS-LABEL-003"):
                want = {SIZE: str(size), LEADER_NAME: leader if j else None}
                got = {k: _annotations(pod).get(k) for k in want}
                assert got == want, f"annotations of pod {pod_name}: {got}, want {want}"
        with claim("LWS-LABEL-003"):
            pod_keys = {p: _labels(pods[p]).get(GROUP_KEY) for p in group}
            assert len(set(pod_keys.values())) == 1 and None not in pod_keys.values(), (
                f"group {i}: its pods do not share one {GROUP_KEY}: {pod_keys}"
            )
            key = pod_keys[leader]
            assert key not in keys, f"groups {keys.get(key)} and {i} share the {GROUP_KEY} {key}"
            keys[key] = i
        with claim("LWS-LABEL-001"):
            assert _labels(pods[leader]).get(GROUP_KEY) == group_key(ns, leader), (
                f"pod {leader}: {GROUP_KEY} {_labels(pods[leader]).get(GROUP_KEY)}, want sha1({ns}/{leader})"
            )
        with claim("LWS-LABEL-001"):
            assert SUBDOMAIN_POLICY not in _annotations(pods[leader]), "subdomainPolicy is for UniquePerReplica only"

        if size == 1:
            continue
        wsts = sts[leader]
        with claim("LWS-LABEL-003"):
            want = {**documented, GROUP_KEY: _labels(pods[leader]).get(GROUP_KEY)}
            got = {k: _labels(wsts).get(k) for k in want}
            assert got == want, f"worker StatefulSet {leader}: labels {got}, want {want}"
        with claim("LWS-LABEL-001"):
            key = group_key(ns, leader)
            group_labels = {NAME: name, GROUP_INDEX: str(i), GROUP_KEY: key, REVISION: rev}
            selector = wsts["spec"]["selector"]["matchLabels"]
            assert selector == {NAME: name, GROUP_INDEX: str(i), GROUP_KEY: key}, f"StatefulSet {leader}: {selector}"
            wtmpl = wsts["spec"]["template"]["metadata"]
            assert {k: wtmpl["labels"].get(k) for k in group_labels} == group_labels, f"{leader}: {wtmpl}"
            want = {SIZE: str(size), LEADER_NAME: leader}
            assert {k: wtmpl["annotations"].get(k) for k in want} == want, f"StatefulSet {leader} template: {wtmpl}"


@pytest.mark.requirement("LWS-OWNER-001")
def test_owner_references_chain_lws_to_leader_pod_to_worker_statefulset(scenario: Scenario) -> None:
    """LWS owns the leader StatefulSet and shared Service; each leader pod owns its worker StatefulSet.

    This chain is what makes deleting a leader pod garbage-collect its whole group, so owners are
    matched by UID (controller=true, blockOwnerDeletion=true), not just by name.
    """
    name, replicas, size = "own", 2, 2
    pods, sts = _bring_up(scenario, _lws(name, replicas=replicas, size=size))
    lws = scenario.lws(name)
    svc = scenario.wait_services(lambda ss: _by_name(ss).get(name), f"headless Service {name}")

    for obj in (sts[name], svc):
        ref = _controller(obj)
        assert (ref["kind"], ref["name"], ref["uid"]) == ("LeaderWorkerSet", name, lws["metadata"]["uid"])
        assert ref.get("blockOwnerDeletion") is True
    for i in range(replicas):
        leader = f"{name}-{i}"
        ref = _controller(sts[leader])
        assert (ref["kind"], ref["name"], ref["uid"]) == ("Pod", leader, pods[leader]["metadata"]["uid"])
        assert ref.get("blockOwnerDeletion") is True
        lref = _controller(pods[leader])
        assert (lref["kind"], lref["name"], lref["uid"]) == ("StatefulSet", name, sts[name]["metadata"]["uid"])
        for j in range(1, size):
            wref = _controller(pods[f"{leader}-{j}"])
            assert (wref["kind"], wref["name"], wref["uid"]) == ("StatefulSet", leader, sts[leader]["metadata"]["uid"])


# -- Services ---------------------------------------------------------------------------------
@pytest.mark.requirement("LWS-SVC-001")
def test_shared_headless_service_covers_every_pod(scenario: Scenario) -> None:
    """Shared (default): one headless Service L selecting {name: L}, publishing not-ready addresses."""
    name = "shr"
    _bring_up(scenario, _lws(name, replicas=2, size=2))
    assert scenario.lws(name)["spec"]["networkConfig"]["subdomainPolicy"] == "Shared"
    svcs = scenario.wait_services(lambda ss: _by_name(ss) if name in _by_name(ss) else None, f"Service {name}")
    assert set(svcs) == {name}, f"Shared mode must create exactly Service {name}, found {sorted(svcs)}"
    svc = svcs[name]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"].get("publishNotReadyAddresses") is True
    assert svc["spec"]["selector"] == {NAME: name}
    assert _labels(svc).get(NAME) == name


@pytest.mark.requirement("LWS-SVC-002")
def test_unique_per_replica_gives_each_group_its_own_service_and_subdomain(scenario: Scenario) -> None:
    """UniquePerReplica: Service L-i per leader (owned by it), and every pod of group i uses subdomain L-i.

    LWS_LEADER_ADDRESS follows the subdomain, so it becomes L-i.L-i.<ns>.
    """
    name, replicas, size = "upr", 2, 2
    ns = scenario.namespace
    obj = _lws(name, replicas=replicas, size=size)
    obj["spec"]["networkConfig"] = {"subdomainPolicy": "UniquePerReplica"}
    pods, sts = _bring_up(scenario, obj)
    wanted = {f"{name}-{i}" for i in range(replicas)}
    svcs = scenario.wait_services(
        lambda ss: _by_name(ss) if set(_by_name(ss)) >= wanted else None, f"Services {sorted(wanted)}"
    )
    assert set(svcs) == wanted, f"UniquePerReplica must create only per-group Services, found {sorted(svcs)}"

    for i in range(replicas):
        leader = f"{name}-{i}"
        svc = svcs[leader]
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"].get("publishNotReadyAddresses") is True
        assert svc["spec"]["selector"] == {NAME: name, GROUP_INDEX: str(i)}
        assert _labels(svc).get(NAME) == name
        ref = _controller(svc)
        assert (ref["kind"], ref["name"], ref["uid"]) == ("Pod", leader, pods[leader]["metadata"]["uid"])

        assert _annotations(pods[leader]).get(SUBDOMAIN_POLICY) == "UniquePerReplica"
        assert sts[leader]["spec"]["serviceName"] == leader
        for pod_name in [leader, *(f"{leader}-{j}" for j in range(1, size))]:
            pod = pods[pod_name]
            assert pod["spec"].get("subdomain") == leader, f"{pod_name} subdomain"
            env = dict(_env(pod["spec"]["containers"][0]))
            assert env.get("LWS_LEADER_ADDRESS") == f"{leader}.{leader}.{ns}", pod_name


# -- env --------------------------------------------------------------------------------------
@pytest.mark.requirement("LWS-ENV-001")
@pytest.mark.requirement("LWS-ENV-002")
def test_lws_env_vars_lead_every_container_and_replace_user_values(scenario: Scenario, claim: Claims) -> None:
    """Every container sees LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX with the
    group's values (LWS-ENV-001, the API's promise; names the user set in that container aside).
    How v0.9.0 does it (LWS-ENV-002): the three come first, in that order, in every container and
    init container; a user-set variable of the same name is replaced, others kept after them."""
    name, replicas, size = "env", 2, 3
    ns = scenario.namespace
    obj = _lws(name, replicas=replicas, size=size)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    image = lwt["workerTemplate"]["spec"]["containers"][0]["image"]
    leader_spec, worker_spec = lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]
    # Init containers must end for the pod to start on a real kubelet: a shell that exits at once.
    init = {"image": images.ref("agnhost"), "command": ["/bin/sh", "-c", "true"]}
    leader_spec["initContainers"] = [{"name": "linit", **init, "env": [{"name": "LWS_GROUP_SIZE", "value": "99"}]}]
    leader_spec["containers"][0]["env"] = [
        {"name": "USER_A", "value": "a"},
        {"name": "LWS_LEADER_ADDRESS", "value": "bogus"},
        {"name": "USER_B", "value": "b"},
    ]
    leader_spec["containers"].append({"name": "side", "image": image})
    worker_spec["initContainers"] = [{"name": "winit", **init}]
    worker_spec["containers"][0]["env"] = [
        {"name": "LWS_WORKER_INDEX", "value": "x"},
        {"name": "USER_C", "value": "c"},
    ]
    user_env = {
        "leader": [("USER_A", "a"), ("USER_B", "b")],
        "worker": [("USER_C", "c")],
    }
    pods, _ = _bring_up(scenario, obj)

    for i in range(replicas):
        leader = f"{name}-{i}"
        for j in range(size):
            pod_name = leader if j == 0 else f"{leader}-{j}"
            pod = pods[pod_name]
            want = [
                ("LWS_LEADER_ADDRESS", f"{leader}.{name}.{ns}"),
                ("LWS_GROUP_SIZE", str(size)),
                ("LWS_WORKER_INDEX", str(j)),
            ]
            with claim("LWS-ENV-001"):
                for c in pod["spec"]["containers"]:
                    user_set = {e["name"] for e in _template_env(lwt, j, c["name"])}
                    seen = dict(_env(c))  # the value a process sees: the last entry of a name
                    wrong = {k: seen.get(k) for k, v in want if k not in user_set and seen.get(k) != v}
                    assert not wrong, f"{pod_name}/{c['name']}: {wrong}, expected {dict(want)}"
            with claim("LWS-ENV-002"):
                containers = _all_containers(pod)
                assert len(containers) == (3 if j == 0 else 2), f"{pod_name} containers"
                for c in containers:
                    env = _env(c)
                    where = f"{pod_name}/{c['name']}"
                    assert env[:3] == want, f"{where}: env starts with {env[:3]}"
                    assert env[3:] == user_env.get(c["name"], []), f"{where}: user env after the LWS vars is {env[3:]}"


def _template_env(lwt: Obj, worker_index: int, container: str) -> list[Obj]:
    """The env the user wrote for `container` in the leader (index 0) or worker template."""
    spec = lwt["leaderTemplate" if worker_index == 0 else "workerTemplate"]["spec"]
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        if c["name"] == container:
            return list(c.get("env") or [])
    return []
