"""The in-cluster runner on the real apiserver (RBAC and admission enforced):

- `lwsc gen`'s ServiceAccount, with a token from the TokenRequest API, may do exactly what the
  non-destructive suites need (SubjectAccessReview for every rule; secrets, node writes, RBAC
  objects, impersonation and exec refused), and a focused `lwsc run --kubeconfig` with that token
  passes, including pod-status patches, the scale subresource and DisaggregatedSets;
- the admission policy holds it to what its runs create: it cannot delete a namespace, patch a
  pod's status, delete or relabel a ClusterQueue / ResourceFlavor that the run did not create
  (real 403s from the policy), while it can in and on objects labelled with a run;
- the Job's life as `lwsc launch`, `job-status`, `retrieve` see it: not finished is exit 5 (also
  after `--wait` times out) and a second launch meanwhile is refused; `lwsc publish` (the Job's
  last step, played here with the Job's own ServiceAccount, since kwok's nodes run no container)
  stores the archive in ConfigMaps, a waiting `retrieve --wait` then returns the run's code with
  the archive byte for byte, and the results outlive the Job; a multi-part archive is accepted.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance import cli_incluster, incluster
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.objects import RUN_LABEL
from lws_conformance.providers.base import ClusterHandle

pytestmark = pytest.mark.cluster
FORBIDDEN = [  # (group, resource, verb, namespaced)
    ("", "secrets", "list", False),
    ("", "secrets", "get", True),
    ("", "nodes", "delete", False),
    ("", "nodes", "patch", False),
    ("", "nodes/status", "patch", False),
    ("", "pods/exec", "create", True),
    ("", "serviceaccounts/token", "create", True),
    ("rbac.authorization.k8s.io", "clusterroles", "create", False),
    ("rbac.authorization.k8s.io", "clusterroles", "escalate", False),
    ("rbac.authorization.k8s.io", "clusterrolebindings", "create", False),
    ("", "users", "impersonate", False),
    ("", "serviceaccounts", "impersonate", True),
    ("apps", "deployments", "delete", True),
    ("", "configmaps", "create", True),  # only in its own namespace (the results)
    ("admissionregistration.k8s.io", "validatingadmissionpolicies", "delete", False),
]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
LWSC = [sys.executable, "-m", "lws_conformance.cli"]


@dataclass
class Runner:
    kubeconfig: Path
    namespace: str
    suffix: str


def _token_kubeconfig(k8s: client.ApiClient, admin_kubeconfig: Path, namespace: str, out: Path) -> Path:
    """A kubeconfig of the admin's cluster holding a TokenRequest token of `lwsc gen`'s ServiceAccount."""
    spec = client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    token = client.CoreV1Api(k8s).create_namespaced_service_account_token(
        incluster.NAME, namespace, client.AuthenticationV1TokenRequest(spec=spec)
    )
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = dict(admin["clusters"][0])
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "sa", "user": {"token": token.status.token}}],
        "contexts": [{"name": "sa", "context": {"cluster": cluster["name"], "user": "sa"}}],
        "current-context": "sa",
    }
    out.touch(mode=0o600)
    out.write_text(yaml.safe_dump(doc))
    return out


@pytest.fixture
def runner(k8s: client.ApiClient, lwsc_cluster: ClusterHandle, run_id: str, tmp_path: Path) -> Iterator[Runner]:
    """`lwsc gen`'s Namespace, ServiceAccount, ClusterRole + binding, Role + binding and admission
    policy + binding (cluster-scoped ones named per test), and a token kubeconfig of the SA."""
    suffix = f"{run_id}-{secrets.token_hex(2)}"  # per test: a namespace being deleted cannot be reused
    ns, name = f"lwsc-rbac-{suffix}", f"{incluster.NAME}-{suffix}"
    docs = {d["kind"]: d for d in incluster.manifests("unused", ns)}
    role, binding = docs["ClusterRole"], docs["ClusterRoleBinding"]
    role["metadata"]["name"] = binding["metadata"]["name"] = binding["roleRef"]["name"] = name
    policy, policy_binding = incluster.admission_policy(ns, name)
    core, rbac = client.CoreV1Api(k8s), client.RbacAuthorizationV1Api(k8s)
    admission = client.AdmissionregistrationV1Api(k8s)
    core.create_namespace(docs["Namespace"])
    try:
        core.create_namespaced_service_account(ns, docs["ServiceAccount"])
        rbac.create_cluster_role(role)
        rbac.create_cluster_role_binding(binding)
        rbac.create_namespaced_role(ns, docs["Role"])
        rbac.create_namespaced_role_binding(ns, docs["RoleBinding"])
        admission.create_validating_admission_policy(policy)
        admission.create_validating_admission_policy_binding(policy_binding)
        _wait_authorized(k8s, incluster.service_account_user(ns))
        yield Runner(_token_kubeconfig(k8s, Path(lwsc_cluster.kubeconfig), ns, tmp_path / "sa.kubeconfig"), ns, suffix)
    finally:
        for delete in (
            lambda: admission.delete_validating_admission_policy_binding(name),
            lambda: admission.delete_validating_admission_policy(name),
            lambda: rbac.delete_cluster_role_binding(name),
            lambda: rbac.delete_cluster_role(name),
        ):
            with contextlib.suppress(ApiException):
                delete()
        core.delete_namespace(ns)


def _wait_authorized(k8s: client.ApiClient, user: str, timeout: float = 15) -> None:
    """The apiserver's RBAC authorizer learns a new binding from its own informer, a moment after
    the create returns (a CI run once saw the first `list nodes` refused with 403). Its decisions
    are not watchable, so ask it (SubjectAccessReview) until it allows what the binding grants."""
    deadline, tick = time.monotonic() + timeout, threading.Event()
    while not _review(k8s, user, "", "nodes", "list", None):
        assert time.monotonic() < deadline, f"RBAC for {user} not in effect after {timeout:.0f}s"
        tick.wait(0.1)


def _review(k8s: client.ApiClient, user: str, group: str, resource: str, verb: str, ns: str | None) -> bool:
    res, _, sub = resource.partition("/")
    attrs = client.V1ResourceAttributes(group=group, resource=res, subresource=sub or None, verb=verb, namespace=ns)
    spec = client.V1SubjectAccessReviewSpec(user=user, resource_attributes=attrs)
    review = client.AuthorizationV1Api(k8s).create_subject_access_review(client.V1SubjectAccessReview(spec=spec))
    return bool(review.status.allowed)


def test_generated_role_allows_exactly_what_the_suites_need(k8s: client.ApiClient, runner: Runner) -> None:
    sa = api_client(runner.kubeconfig)
    try:
        review = client.AuthenticationV1Api(sa).create_self_subject_review(client.V1SelfSubjectReview())
        user = review.status.user_info.username
        assert user == incluster.service_account_user(runner.namespace), user
        client.CoreV1Api(sa).list_node()  # allowed: a real call under RBAC
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(sa).list_secret_for_all_namespaces()
        assert denied.value.status == 403
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(sa).delete_node("lwsc-no-such-node")  # authorization comes before existence
        assert denied.value.status == 403
    finally:
        sa.close()
    for group, resources, verbs in incluster.RULES:
        for resource in resources:
            for verb in verbs:
                assert _review(k8s, user, group, resource, verb, "default"), (group, resource, verb)
    for group, resources, verbs in incluster.OWN_RULES:
        for resource in resources:
            for verb in verbs:
                assert _review(k8s, user, group, resource, verb, runner.namespace), (resource, verb)
    for group, resource, verb, namespaced in FORBIDDEN:
        assert not _review(k8s, user, group, resource, verb, "default" if namespaced else None), (resource, verb)


CAN_I = Path(__file__).resolve().parent.parent / "data" / "incluster-can-i.yaml"


def _can_i(kubeconfig: Path, user: str, namespace: str) -> list[str]:
    """`kubectl auth can-i --list --as=USER -n NAMESPACE`, one normalised row per rule (sorted)."""
    kubectl = os.environ.get("LWSC_KUBECTL") or shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl not on PATH (or set LWSC_KUBECTL)")
    argv = [kubectl, "--kubeconfig", str(kubeconfig), "auth", "can-i", "--list", f"--as={user}", "-n", namespace]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split()[:2] == ["Resources", "Non-Resource"], header
    return sorted(" ".join(row.split()) for row in rows if row.strip())


def test_can_i_list_is_the_checked_in_list(lwsc_cluster: ClusterHandle, runner: Runner) -> None:
    """What the ServiceAccount may do, as `kubectl auth can-i --list` prints it, is exactly
    tests/data/incluster-can-i.yaml: in a vendor's namespace and, with the results Role, in its own
    (the cluster's default discovery rules included, so a new grant anywhere shows up here)."""
    expected = yaml.safe_load(CAN_I.read_text())
    user, admin = incluster.service_account_user(runner.namespace), Path(lwsc_cluster.kubeconfig)
    elsewhere, own = _can_i(admin, user, "default"), _can_i(admin, user, runner.namespace)
    assert elsewhere == sorted(expected["any_namespace"]), "\n".join(elsewhere)
    assert own == sorted(expected["own_namespace"]), "\n".join(own)


def _denied(call: Any, why: str) -> None:
    """`call()` is refused with 403 by the admission policy (its message names the rule)."""
    with pytest.raises(ApiException) as refused:
        call()
    assert refused.value.status == 403 and why in str(refused.value.body), refused.value.body


def _wait_enforced(sa: client.ApiClient, vendor_ns: str, timeout: float = 30) -> None:
    """A new policy takes effect when the apiserver's informer sees it; probe with a dry-run
    delete of a namespace the runner did not create until the policy refuses it."""
    deadline, tick = time.monotonic() + timeout, threading.Event()
    while True:
        try:
            client.CoreV1Api(sa).delete_namespace(vendor_ns, dry_run="All")
        except ApiException as exc:
            if exc.status == 403 and "labelled" in str(exc.body):
                return
            raise
        assert time.monotonic() < deadline, f"admission policy not in effect after {timeout:.0f}s"
        tick.wait(0.2)


def _flavor(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": "/".join(KUEUE), "kind": "ResourceFlavor", "metadata": meta, "spec": {}}


def _pod(name: str) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], "nodeSelector": {"lwsc/none": "x"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def vendor(k8s: client.ApiClient, runner: Runner) -> Iterator[dict[str, str]]:
    """What a vendor already has and the runner must not touch: a namespace with a pod, a
    ResourceFlavor and a ClusterQueue, none labelled with a run (created by the admin)."""
    core, custom = client.CoreV1Api(k8s), client.CustomObjectsApi(k8s)
    names = {"ns": f"vendor-{runner.suffix}", "rf": f"vendor-rf-{runner.suffix}", "cq": f"vendor-cq-{runner.suffix}"}
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=names["ns"])))
    try:
        core.create_namespaced_pod(names["ns"], _pod("workload"))  # type: ignore[arg-type]  # dicts accepted
        custom.create_cluster_custom_object(*KUEUE, "resourceflavors", _flavor(names["rf"]))
        cq = {
            "apiVersion": "/".join(KUEUE),
            "kind": "ClusterQueue",
            "metadata": {"name": names["cq"]},
            "spec": {"namespaceSelector": {}, "resourceGroups": []},
        }
        custom.create_cluster_custom_object(*KUEUE, "clusterqueues", cq)
        yield names
    finally:
        for plural, key in (("clusterqueues", "cq"), ("resourceflavors", "rf")):
            with contextlib.suppress(ApiException):
                custom.delete_cluster_custom_object(*KUEUE, plural, names[key])
        core.delete_namespace(names["ns"])


def test_the_runner_changes_only_what_its_runs_create(runner: Runner, vendor: dict[str, str]) -> None:
    sa = api_client(runner.kubeconfig)
    core, custom = client.CoreV1Api(sa), client.CustomObjectsApi(sa)
    try:
        _wait_enforced(sa, vendor["ns"])
        cluster_rule, ns_rule = "cluster-scoped objects labelled", "only in namespaces labelled"
        _denied(lambda: core.delete_namespace(vendor["ns"]), cluster_rule)
        _denied(
            lambda: core.patch_namespaced_pod_status("workload", vendor["ns"], {"status": {"conditions": []}}), ns_rule
        )
        _denied(lambda: core.delete_namespaced_pod("workload", vendor["ns"]), ns_rule)
        _denied(lambda: core.create_namespaced_pod(vendor["ns"], _pod("p")), ns_rule)  # type: ignore[arg-type]
        _denied(lambda: custom.delete_cluster_custom_object(*KUEUE, "resourceflavors", vendor["rf"]), cluster_rule)
        _denied(lambda: custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", vendor["cq"]), cluster_rule)
        relabel = {"metadata": {"labels": {RUN_LABEL: "mine-now"}}}  # adopting it first does not work either
        _denied(
            lambda: custom.patch_cluster_custom_object(*KUEUE, "clusterqueues", vendor["cq"], relabel), cluster_rule
        )
        _denied(
            lambda: custom.create_cluster_custom_object(*KUEUE, "resourceflavors", _flavor(f"u-{runner.suffix}")),
            cluster_rule,
        )
        unlabelled = client.V1Namespace(metadata=client.V1ObjectMeta(name=f"u-{runner.suffix}"))
        _denied(lambda: core.create_namespace(unlabelled), cluster_rule)
        # what a run creates, it may change and delete
        mine = f"lwsc-{runner.suffix}-own"
        labels = {RUN_LABEL: runner.suffix.replace("-", "")}
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=mine, labels=labels)))
        try:
            core.create_namespaced_pod(mine, _pod("p"))  # type: ignore[arg-type]
            cond = [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            core.patch_namespaced_pod_status("p", mine, {"status": {"conditions": cond}})
            core.delete_namespaced_pod("p", mine, grace_period_seconds=0)
            custom.create_cluster_custom_object(*KUEUE, "resourceflavors", _flavor(f"{mine}-rf", labels))
            custom.delete_cluster_custom_object(*KUEUE, "resourceflavors", f"{mine}-rf")
        finally:
            core.delete_namespace(mine)
    finally:
        sa.close()


FOCUS = "LWS-NAME or KUEUE-GANG-001 or LWS-STATUS-004 or LWS-SCALE-001 or LWS-DSVALID-001"


def test_focused_run_passes_with_the_service_account_token(runner: Runner, tmp_path: Path) -> None:
    """The existing-cluster path (preflight, suites, cleanup, archive) with only the SA's rights,
    the admission policy in force: pod-status patches, the scale subresource and DisaggregatedSets
    in the run's namespaces pass it."""
    proc = subprocess.run(
        [
            *LWSC,
            "run",
            "--kubeconfig",
            str(runner.kubeconfig),
            "--reports",
            str(tmp_path / "reports"),
            "--focus",
            FOCUS,
            "-n",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (archive,) = (tmp_path / "reports").glob("*.tar.gz")
    verify = subprocess.run([*LWSC, "verify", str(archive)], capture_output=True)
    assert verify.returncode == 0, verify.stdout


def _lwsc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {})}
    return subprocess.run([*LWSC, *args], capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.exclusive("incluster-job")  # `lwsc launch` applies the cluster-scoped objects under their real names
def test_the_jobs_results_outlive_it_and_not_finished_is_exit_5(
    k8s: client.ApiClient, lwsc_cluster: ClusterHandle, run_id: str, tmp_path: Path
) -> None:
    admin = str(lwsc_cluster.kubeconfig)
    ns = f"lwsc-job-{run_id}-{secrets.token_hex(2)}"
    where = ["--kubeconfig", admin, "--namespace", ns]
    core = client.CoreV1Api(k8s)
    # kwok would "run" the Job's pod to Succeeded at once without running anything; a quota of no
    # pods keeps the Job waiting for its pod instead, the way a real run is still going on
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    quota = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="no-pods"), spec=client.V1ResourceQuotaSpec(hard={"pods": "0"})
    )
    core.create_namespaced_resource_quota(ns, quota)
    try:
        launched = _lwsc("launch", *where, "--", "--focus", "LWS-NAME-001")
        assert launched.returncode == 0, launched.stderr
        assert "applied ValidatingAdmissionPolicy/lwsc-conformance" in launched.stderr
        status = _lwsc("job-status", *where)
        assert status.returncode == 5, status.stdout + status.stderr
        assert status.stdout.startswith(f"job {ns}/lwsc-conformance: pending (no pod yet)"), status.stdout
        early = _lwsc("retrieve", *where, "-o", str(tmp_path / "early"))
        assert early.returncode == 5 and "not finished" in early.stderr, early.stderr
        timed_out = _lwsc("retrieve", *where, "--wait", "--timeout", "2", "--interval", "0.5")
        assert timed_out.returncode == 5 and "pending (no pod yet)" in timed_out.stderr, timed_out.stderr
        again = _lwsc("launch", *where)
        assert again.returncode == 2 and "a run is in progress" in again.stderr, again.stderr

        waiting = subprocess.Popen(  # a user waiting for the results while the run goes on
            [*LWSC, "retrieve", *where, "--wait", "--interval", "1", "--timeout", "15m", "-o", str(tmp_path / "out")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # The pod's part, played with the Job's own ServiceAccount (kwok runs no container)
        sa = _token_kubeconfig(k8s, Path(admin), ns, tmp_path / "job-sa.kubeconfig")
        reports = tmp_path / "results"
        run = _lwsc("run", "--kubeconfig", str(sa), "--reports", str(reports), "--focus", "LWS-NAME-001", "-n", "1")
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        published = _lwsc(
            "publish",
            "--reports",
            str(reports),
            "--exit-code",
            str(run.returncode),
            "--kubeconfig",
            str(sa),
            "--namespace",
            ns,
        )
        assert published.returncode == 0, published.stderr
        out, err = waiting.communicate(timeout=300)
        assert waiting.returncode == 0, err
        (original,) = reports.glob("*.tar.gz")
        got = Path(out.strip().splitlines()[-1])
        assert got.name == original.name and got.read_bytes() == original.read_bytes()
        assert "ok: run" in err and "finished: run" in err

        finished = _lwsc("job-status", *where, "--output", "json")
        assert finished.returncode == 0 and '"state": "finished"' in finished.stdout, finished.stdout
        client.BatchV1Api(k8s).delete_namespaced_job(incluster.NAME, ns, propagation_policy="Background")
        gone = _lwsc("retrieve", *where, "-o", str(tmp_path / "after"))  # the Job and its pod are gone
        assert gone.returncode == 0, gone.stderr
        assert (tmp_path / "after" / original.name).read_bytes() == original.read_bytes()

        sa_api = api_client(sa)  # an archive over several ConfigMaps is accepted and read back whole
        try:
            data = os.urandom(incluster.PART_BYTES * 2 + 12345)
            docs = incluster.results_configmaps("multi-part", data, {"exit-code": "0", "pod": "x"}, ns)
            for doc in docs:
                client.CoreV1Api(sa_api).create_namespaced_config_map(ns, doc)  # type: ignore[arg-type]
        finally:
            sa_api.close()
        assert cli_incluster._fetch(k8s, ns, docs[-1]["data"]) == data
    finally:
        admission = client.AdmissionregistrationV1Api(k8s)
        rbac = client.RbacAuthorizationV1Api(k8s)
        for delete in (
            lambda: admission.delete_validating_admission_policy_binding(incluster.NAME),
            lambda: admission.delete_validating_admission_policy(incluster.NAME),
            lambda: rbac.delete_cluster_role_binding(incluster.NAME),
            lambda: rbac.delete_cluster_role(incluster.NAME),
            lambda: core.delete_namespace(ns),
        ):
            with contextlib.suppress(ApiException):
                delete()


def _gone(read: Any) -> bool:
    try:
        read()
    except ApiException as exc:
        return exc.status == 404
    return False


@pytest.mark.exclusive("incluster-job")  # `lwsc launch` applies the cluster-scoped objects under their real names
def test_delete_removes_everything_launch_installed(
    k8s: client.ApiClient, lwsc_cluster: ClusterHandle, run_id: str
) -> None:
    """`lwsc delete` leaves nothing of the runner: namespace (Job, pods, results ConfigMaps, Role),
    ClusterRole and binding, admission policy and binding, all read back as 404 when it returns;
    an unlabelled namespace of that name is refused with nothing deleted."""
    ns = f"lwsc-del-{run_id}-{secrets.token_hex(2)}"
    where = ["--kubeconfig", str(lwsc_cluster.kubeconfig), "--namespace", ns]
    core, rbac = client.CoreV1Api(k8s), client.RbacAuthorizationV1Api(k8s)
    admission = client.AdmissionregistrationV1Api(k8s)
    reads = {
        "Namespace": lambda: core.read_namespace(ns),
        "ClusterRole": lambda: rbac.read_cluster_role(incluster.NAME),
        "ClusterRoleBinding": lambda: rbac.read_cluster_role_binding(incluster.NAME),
        "ValidatingAdmissionPolicy": lambda: admission.read_validating_admission_policy(incluster.NAME),
        "ValidatingAdmissionPolicyBinding": lambda: admission.read_validating_admission_policy_binding(incluster.NAME),
    }
    try:
        launched = _lwsc("launch", *where, "--", "--focus", "LWS-NAME-001")
        assert launched.returncode == 0, launched.stderr
        for doc in incluster.results_configmaps("r1", b"archive", {"exit-code": "0", "pod": "x"}, ns):
            core.create_namespaced_config_map(ns, doc)  # type: ignore[arg-type]
        assert not any(_gone(r) for r in reads.values())
        deleted = _lwsc("delete", *where)
        assert deleted.returncode == 0, deleted.stderr
        assert deleted.stdout.startswith("deleted and gone in "), deleted.stdout
        assert [k for k, r in reads.items() if not _gone(r)] == []
        again = _lwsc("delete", *where)
        assert again.returncode == 0 and "nothing of the in-cluster runner" in again.stderr, again.stderr

        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))  # not the runner's
        refused = _lwsc("delete", *where)
        assert refused.returncode == 2 and "nothing was deleted" in refused.stderr, refused.stderr
        assert not _gone(reads["Namespace"])
    finally:
        for delete in (
            lambda: admission.delete_validating_admission_policy_binding(incluster.NAME),
            lambda: admission.delete_validating_admission_policy(incluster.NAME),
            lambda: rbac.delete_cluster_role_binding(incluster.NAME),
            lambda: rbac.delete_cluster_role(incluster.NAME),
            lambda: core.delete_namespace(ns),
        ):
            with contextlib.suppress(ApiException):
                delete()
