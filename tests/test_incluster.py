"""`lwsc gen` output (least privilege by construction), the in-cluster kubeconfig and the Sonobuoy
plugin, without a cluster (the RBAC on a real apiserver: tests/e2e/test_incluster_rbac.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from lws_conformance import cli, cli_incluster, incluster
from lws_conformance.errors import UserError


def test_gen_prints_namespace_sa_role_binding_and_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gen", "--image", "registry.local/lwsc:1", "--", "--focus", "KUEUE"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"]
    job = docs[-1]["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == docs[1]["metadata"]["name"] == docs[3]["subjects"][0]["name"]
    assert job["containers"][0]["image"] == "registry.local/lwsc:1"
    assert "lwsc run --in-cluster --reports /results --focus KUEUE" in job["containers"][0]["command"][-1]
    assert incluster.rule_violations(docs[2]) == []


@pytest.mark.parametrize(
    ("rule", "found"),
    [
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}, "verb '*'"),
        ({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}, "wildcard resource"),
        ({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}, "secrets access"),
        ({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}, "escalate"),
        ({"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}, "impersonate"),
        ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["delete"]}, "with delete"),
    ],
)
def test_least_privilege_check_catches_broad_rules(rule: dict[str, list[str]], found: str) -> None:
    role = {"rules": [*incluster.cluster_role()["rules"], rule]}
    assert any(found in v for v in incluster.rule_violations(role))


def test_kubeconfig_from_pod_uses_the_service_account(tmp_path: Path) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("t0ken")
    (sa / "ca.crt").write_text("CA")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    out = incluster.kubeconfig_from_pod(tmp_path / "kc", sa, env)
    doc = yaml.safe_load(out.read_text())
    cluster = doc["clusters"][0]["cluster"]
    assert cluster == {"server": "https://10.96.0.1:443", "certificate-authority": str(sa / "ca.crt")}
    assert doc["users"][0]["user"] == {"tokenFile": str(sa / "token")} and out.stat().st_mode & 0o077 == 0
    v6 = incluster.kubeconfig_from_pod(tmp_path / "kc6", sa, {"KUBERNETES_SERVICE_HOST": "fd00::1"})
    assert yaml.safe_load(v6.read_text())["clusters"][0]["cluster"]["server"] == "https://[fd00::1]:443"
    with pytest.raises(ValueError, match="not running in a pod"):
        incluster.kubeconfig_from_pod(tmp_path / "kc", tmp_path / "none", {})


def test_run_in_cluster_outside_a_pod_is_a_user_error() -> None:
    args = argparse.Namespace(in_cluster=True, kubeconfig=None)
    with pytest.raises(UserError, match="not running in a pod"):
        cli_incluster.apply_in_cluster(args)
    with pytest.raises(UserError, match="not both"):
        cli_incluster.apply_in_cluster(argparse.Namespace(in_cluster=True, kubeconfig="x"))


def test_sonobuoy_plugin_reports_junit(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gen", "--sonobuoy"]) == 0
    plugin = yaml.safe_load(capsys.readouterr().out)
    assert plugin["sonobuoy-config"]["driver"] == "Job" and plugin["sonobuoy-config"]["result-format"] == "junit"
    script = plugin["spec"]["command"][-1]
    assert "lwsc run --in-cluster" in script and "${SONOBUOY_RESULTS_DIR}/done" in script
