"""`lwsc gen` output (least privilege by construction, plain YAML), the Job's and the Sonobuoy
plugin's shell steps run for real with a stand-in `lwsc`, the results ConfigMaps, progress from the
log, the in-cluster kubeconfig, and the in-cluster commands' exit codes, without a cluster (the
RBAC and admission policy on a real apiserver, and the commands against it:
tests/e2e/test_incluster_rbac.py)."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from lws_conformance import cli, cli_incluster, incluster
from lws_conformance.errors import UserError

KINDS = [
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "Job",
]


def test_gen_prints_namespace_sa_rbac_policy_and_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gen", "--image", "registry.local/lwsc:1", "--", "--focus", "KUEUE or LWS-NAME"]) == 0
    out = capsys.readouterr()
    docs = {d["kind"]: d for d in yaml.safe_load_all(out.out)}
    assert list(docs) == KINDS
    job = docs["Job"]["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
    assert docs["ClusterRoleBinding"]["subjects"][0]["name"] == docs["RoleBinding"]["subjects"][0]["name"]
    command = job["containers"][0]["command"]
    assert job["containers"][0]["image"] == "registry.local/lwsc:1"
    assert command[:2] == ["sh", "-c"] and command[3:] == ["lwsc", "--focus", "KUEUE or LWS-NAME"]
    assert "sleep" not in command[2] and "lwsc publish" in command[2]
    assert incluster.rule_violations(docs["ClusterRole"]) == []
    assert docs["Role"]["metadata"]["namespace"] == incluster.NAMESPACE
    assert "note" not in out.err  # a named image: no build-it-yourself note


def test_gen_prints_plain_yaml_a_reviewer_can_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gen"]) == 0
    out = capsys.readouterr()
    assert not re.search(r"[&*]id\d+", out.out), "YAML anchors or aliases"
    assert "scripts/build-image" in out.err and incluster.NAME in out.out  # the default image is built, not pulled
    assert cli.main(["gen", "--sonobuoy"]) == 0
    assert not re.search(r"[&*]id\d+", capsys.readouterr().out)


def test_every_write_the_role_grants_is_held_to_what_the_runs_create() -> None:
    docs = {d["kind"]: d for d in incluster.manifests("x", "ns1")}
    policy, binding = docs["ValidatingAdmissionPolicy"], docs["ValidatingAdmissionPolicyBinding"]
    assert incluster.unscoped_writes(docs["ClusterRole"], policy) == []
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"
    (condition,) = policy["spec"]["matchConditions"]
    assert condition["expression"] == "request.userInfo.username == 'system:serviceaccount:ns1:lwsc-conformance'"
    checks = " ".join(v["expression"] for v in policy["spec"]["validations"])
    assert "variables.namespaceMarked" in checks and "variables.oldMarked" in checks
    marked = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert all(f"'{incluster.RUN_LABEL}' in" in marked[n] for n in ("newMarked", "oldMarked", "namespaceMarked"))
    # a write added to the role without the policy covering it is caught
    widened = {
        "rules": [
            *docs["ClusterRole"]["rules"],
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]},
        ]
    }
    assert incluster.unscoped_writes(widened, policy) == ["apps/deployments ['delete']"]
    role = docs["Role"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create"]}]


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
    with pytest.raises(UserError, match="not running in a pod"):
        cli_incluster.in_cluster_kubeconfig(None)
    with pytest.raises(UserError, match="not both"):
        cli_incluster.in_cluster_kubeconfig("x")


FAKE_LWSC = """#!/bin/sh
# Stand-in for lwsc: records its arguments; `run` makes a run directory and archive like a real one.
echo "$*" >> "$LOG"
[ "$1" = run ] && [ -n "${USAGE_ERROR:-}" ] && exit 2  # ends before writing any report
if [ "$1" = run ]; then
  reports=$4; mkdir -p "$reports/20260101-000000"
  echo '<testsuites/>' > "$reports/20260101-000000/junit_01.xml"; echo ok > "$reports/20260101-000000/summary.md"
  echo archive > "$reports/20260101-000000.tar.gz"; ln -sfn 20260101-000000 "$reports/latest"
  exit "${RUN_RC:-0}"
fi
[ "$1" = publish ] && exit "${PUBLISH_RC:-0}"
exit 0
"""


def _stand_in(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lwsc").write_text(FAKE_LWSC)
    (bin_dir / "lwsc").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(tmp_path / "calls.log")}


@pytest.mark.parametrize(("run_rc", "publish_rc", "pod_rc"), [(0, 0, 0), (4, 0, 4), (1, 0, 1), (4, 1, 3)])
def test_the_jobs_script_publishes_and_ends_with_the_runs_code(
    tmp_path: Path, run_rc: int, publish_rc: int, pod_rc: int
) -> None:
    """The Job's own command, run by sh: arguments reach `lwsc run` intact (a focus with spaces),
    `lwsc publish` gets the run's exit code, the pod ends with it (3 when publishing failed), and
    nothing waits afterwards."""
    command = incluster.job("img", "ns", ["--focus", "KUEUE or LWS-NAME"])["spec"]["template"]["spec"]["containers"][0]
    script = command["command"]
    reports = tmp_path / "results"
    script = [script[0], script[1], script[2].replace(incluster.RESULTS, str(reports)), *script[3:]]
    env = {**os.environ, **_stand_in(tmp_path), "RUN_RC": str(run_rc), "PUBLISH_RC": str(publish_rc)}
    proc = subprocess.run(script, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == pod_rc, proc.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == [
        f"run --in-cluster --reports {reports} --focus KUEUE or LWS-NAME",
        f"publish --reports {reports} --exit-code {run_rc}",
    ]


def _sonobuoy_step(tmp_path: Path, **env: str) -> Path:
    """The plugin's own command, run by sh with a stand-in `lwsc`: the tarball its `done` file names."""
    plugin = incluster.sonobuoy_plugin("img", ["--focus", "KUEUE-GANG"])
    results = tmp_path / "sonobuoy-results"
    results.mkdir()
    script = [
        *plugin["spec"]["command"][:2],
        plugin["spec"]["command"][2].replace("/tmp/lwsc", str(tmp_path / "r")),
        *plugin["spec"]["command"][3:],
    ]
    env = {**os.environ, **_stand_in(tmp_path), "SONOBUOY_RESULTS_DIR": str(results), **env}
    proc = subprocess.run(script, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    done = Path((results / "done").read_text())
    assert done == results / "lwsc-results.tar.gz" and done.is_file()
    return done


def _files(tarball: Path) -> dict[str, bytes]:
    out = {}
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            if member.isfile() and (f := tar.extractfile(member)):
                out[member.name.removeprefix("./")] = f.read()
    return out


def test_the_sonobuoy_plugin_hands_back_the_whole_results(tmp_path: Path) -> None:
    plugin = incluster.sonobuoy_plugin("img", ["--focus", "KUEUE-GANG"])
    assert plugin["sonobuoy-config"]["driver"] == "Job" and plugin["sonobuoy-config"]["result-format"] == "junit"
    done = _sonobuoy_step(tmp_path, RUN_RC="4")
    files = _files(done)
    run = "20260101-000000"
    assert {f"{run}/junit_01.xml", f"{run}/summary.md", f"{run}.tar.gz", "exit-code"} <= set(files)
    assert files["exit-code"] == b"4\n"
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == [f"run --in-cluster --reports {tmp_path / 'r'} --focus KUEUE-GANG"]


def test_the_sonobuoy_plugin_hands_back_the_exit_code_of_a_run_that_wrote_nothing(tmp_path: Path) -> None:
    """A run ending before any report (a usage error, exit 2) still leaves a tarball with its exit
    code: Sonobuoy's worker is never pointed at a missing file."""
    done = _sonobuoy_step(tmp_path, USAGE_ERROR="1")
    assert _files(done) == {"exit-code": b"2\n"}


def test_results_configmaps_reassemble_the_archive_and_refuse_a_broken_set() -> None:
    data = os.urandom(incluster.PART_BYTES * 2 + 1000)
    docs = incluster.results_configmaps("20261202-010203", data, {"exit-code": "4", "pod": "p"}, "ns")
    assert [d["metadata"]["name"] for d in docs] == [
        "lwsc-results-20261202-010203-0",
        "lwsc-results-20261202-010203-1",
        "lwsc-results-20261202-010203-2",
        "lwsc-results-20261202-010203",
    ]
    sizes = [len(base64.b64decode(d["binaryData"]["part"])) for d in docs[:-1]]
    assert sizes == [incluster.PART_BYTES, incluster.PART_BYTES, 1000] and max(sizes) < 1024 * 1024  # 1 MiB each
    index = docs[-1]["data"]
    assert index["parts"] == "3" and docs[-1]["metadata"]["labels"][incluster.INDEX_LABEL] == "true"
    parts = {d["metadata"]["name"]: base64.b64decode(d["binaryData"]["part"]) for d in docs[:-1]}
    assert incluster.assemble(index, parts) == data
    with pytest.raises(incluster.BrokenResults, match="missing: lwsc-results-20261202-010203-1"):
        incluster.assemble(index, {k: v for k, v in parts.items() if not k.endswith("-1")})
    parts["lwsc-results-20261202-010203-2"] = b"x" + parts["lwsc-results-20261202-010203-2"][1:]
    with pytest.raises(incluster.BrokenResults, match="do not match"):
        incluster.assemble(index, parts)
    (empty,) = incluster.results_configmaps("r1", None, {"exit-code": "2", "error": "no archive"}, "ns")
    assert empty["data"]["parts"] == "0" and "sha256" not in empty["data"]


def test_progress_is_read_from_pytests_output() -> None:
    log = "created: 2/2 workers\n2 workers [208 items]\n\n........................ [ 11%]\n.....x.. [ 15%]\n"
    assert incluster.progress(log) == "15% of 208 tests"
    assert incluster.progress("collected 3 items\n... [100%]") == "100% of 3 tests"
    assert incluster.progress("building the image") is None


def test_not_finished_is_its_own_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    running = cli_incluster.JobState("ns", "running", job="j", pod="p", phase="Running", progress="42% of 10 tests")
    assert running.code == cli_incluster.NOT_FINISHED == 5 and "42% of 10 tests" in running.line()
    assert cli_incluster.JobState("ns", "ended", pod="p", phase="Failed").code == 3
    finished = cli_incluster.JobState("ns", "finished", index={"exit-code": "4", "run-id": "r", "conclusion": "c"})
    assert finished.code == 4 and "exit 4" in finished.line()
    with pytest.raises(cli_incluster.NotFinished) as raised:
        cfg = cli.resolve(cli.parser().parse_args(["retrieve", "--namespace", "ns", "-o", str(tmp_path)]))
        cli_incluster._retrieve(None, cfg, running)  # type: ignore[arg-type]
    assert raised.value.exit_code == 5
    assert cli.main(["retrieve", "--kubeconfig", str(tmp_path / "none")]) == 2  # usage: 2, never 5
    assert cli.main(["retrieve", "--wait", "--timeout", "soon", "--kubeconfig", "x"]) == 2
    assert "--timeout 'soon'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["launch", "job-status", "job-logs", "retrieve", "publish", "product-merge"])
def test_in_cluster_and_submission_commands_show_examples(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.parser().parse_args([command, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and f"lwsc {command}" in out
    if command in ("launch", "job-status", "retrieve"):
        assert "5 not finished yet" in " ".join(out.split())
