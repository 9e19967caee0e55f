"""The reused-cluster check (`providers.reuse`), on recorded objects: what a mismatch says, and
which drift is repaired rather than refused."""

from __future__ import annotations

import copy
from typing import Any

from lws_conformance.profile import load_profile
from lws_conformance.providers import reuse

Obj = dict[str, Any]
PROFILE = load_profile()


def live(expected: dict[str, Obj]) -> list[Obj]:
    """The profile's nodes as a healthy cluster shows them."""
    out = []
    for n in copy.deepcopy(list(expected.values())):
        n["status"]["allocatable"] = dict(n["status"]["capacity"])
        n["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        n["metadata"]["labels"]["beta.kubernetes.io/os"] = "linux"  # added by the API server: fine
        out.append(n)
    return out


def test_a_healthy_cluster_has_no_problem_and_no_drift() -> None:
    expected = reuse.expected_nodes(PROFILE)
    assert reuse.nodes_check(expected, live(expected)) == ([], {})


def test_quantities_compare_by_value_not_spelling() -> None:
    expected = reuse.expected_nodes(PROFILE)
    nodes = live(expected)
    nodes[0]["status"]["capacity"]["memory"] = "268435456Ki"  # = 256Gi
    assert reuse.nodes_check(expected, nodes) == ([], {})


def test_the_issue_20_node_is_drift_and_repairable() -> None:
    expected = reuse.expected_nodes(PROFILE)
    nodes = live(expected)
    name = nodes[0]["metadata"]["name"]
    for key in ("capacity", "allocatable"):
        nodes[0]["status"][key].update(cpu="1k", memory="1Ti", pods="1M")
    nodes[0]["status"]["nodeInfo"]["kubeletVersion"] = "kwok-0.8.0"
    problems, drift = reuse.nodes_check(expected, nodes)
    assert problems == []
    assert list(drift) == [name]
    assert [d.split(" ")[0] for d in drift[name]] == ["capacity", "allocatable", "nodeInfo"]
    assert "kwok-0.8.0" in drift[name][2]


def test_missing_extra_relabelled_tainted_and_not_ready_nodes_are_problems() -> None:
    expected = reuse.expected_nodes(PROFILE)
    nodes = live(expected)
    gone = nodes.pop()["metadata"]["name"]
    extra = copy.deepcopy(nodes[0])
    extra["metadata"]["name"] = "lwsc-leftover"
    nodes.append(extra)
    nodes[0]["metadata"]["labels"].pop("cloud.provider.com/topology-rack")
    nodes[1]["spec"]["taints"] = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]
    nodes[2]["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    nodes[3]["metadata"]["annotations"] = {}
    nodes[4]["spec"]["unschedulable"] = True
    problems, _ = reuse.nodes_check(expected, nodes)
    n = [x["metadata"]["name"] for x in nodes]
    rack = expected[n[0]]["metadata"]["labels"]["cloud.provider.com/topology-rack"]
    assert problems == [
        f"node {gone} missing",
        "node lwsc-leftover is not in the profile",
        *sorted(
            [
                f"node {n[0]}: labels {{'cloud.provider.com/topology-rack': None}} "
                f"(want {{'cloud.provider.com/topology-rack': '{rack}'}})",
                f"node {n[1]}: tainted ['node.kubernetes.io/unreachable']",
                f"node {n[2]}: Ready=Unknown",
                f"node {n[3]}: no kwok.x-k8s.io/node=fake annotation (kwok does not manage it)",
                f"node {n[4]}: cordoned (unschedulable)",
            ]
        ),
    ]


def test_crds_must_exist_and_be_established() -> None:
    crds = [
        {"metadata": {"name": "a.x"}, "status": {"conditions": [{"type": "Established", "status": "True"}]}},
        {"metadata": {"name": "b.x"}, "status": {"conditions": [{"type": "Established", "status": "False"}]}},
    ]
    assert reuse.crd_problems(["a.x", "b.x", "c.x"], crds) == [
        "CRD b.x missing or not Established",
        "CRD c.x missing or not Established",
    ]


def test_webhooks_must_exist_and_point_at_the_same_urls() -> None:
    def cfg(name: str, url: str) -> Obj:
        return {
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": "v.x", "clientConfig": {"url": url}}],
        }

    want = [cfg("lws", "https://127.0.0.1:17010/v"), cfg("kueue", "https://127.0.0.1:17020/v")]
    assert reuse.webhook_problems(want, want) == []
    problems = reuse.webhook_problems(want, [cfg("lws", "https://127.0.0.1:9999/v")])
    assert problems[0].startswith("ValidatingWebhookConfiguration lws differs")
    assert problems[1] == "ValidatingWebhookConfiguration kueue missing"


def test_processes_must_run_healthy_the_profile_version_with_the_saved_command_line() -> None:
    def proc(exe: str, argv: list[str], saved: list[str], alive: bool = True, ready: bool = True) -> Obj:
        return {"exe": exe, "alive": alive, "ready": ready, "argv": argv, "saved_argv": saved}

    lws = PROFILE.versions["lws"]
    ok = proc(f"/c/bin/lws/{lws}/lws", ["lws", "--config=a"], ["lws", "--config=a"])
    assert reuse.process_problems(PROFILE, {"lws": ok}) == []
    assert reuse.process_problems(
        PROFILE,
        {
            "lws": {**ok, "exe": "/c/bin/lws/v0.1.0/lws"},
            "kueue": proc("/k", [], [], ready=False),
            "kwok": proc("/c/bin/kwok/x/kwok", ["kwok", "-v"], ["kwok"]),
            "etcd": proc("/e", [], [], alive=False),
        },
    ) == [
        "etcd not running",
        "kueue not healthy",
        f"kwok runs /c/bin/kwok/x/kwok (want version {PROFILE.versions['kwok']})",
        "kwok runs with another command line than the cluster started it with",
        f"lws runs /c/bin/lws/v0.1.0/lws (want version {lws})",
    ]


def test_chaos_target_pins_its_only_group_to_the_node() -> None:
    from lws_conformance import chaos_target

    obj = chaos_target.manifest("chaos", "gpu-b1-r1-n1")
    lwt = obj["spec"]["leaderWorkerTemplate"]
    assert (obj["spec"]["replicas"], lwt["size"], lwt["restartPolicy"]) == (1, 2, "RecreateGroupOnPodRestart")
    for key in ("leaderTemplate", "workerTemplate"):
        assert lwt[key]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-b1-r1-n1"}
    unpinned = chaos_target.manifest("chaos", None)
    assert (unpinned["spec"]["replicas"], unpinned["spec"]["leaderWorkerTemplate"]["size"]) == (2, 3)
