"""The CI jobs shipped for gating a pull request of LWS or Kueue, run here step by step:

- .github/workflows/gate-upstream.yaml: every `run:` step of both jobs is executed in order by
  bash in a workspace laid out as the checkout steps lay it out (the component's tree in
  `upstream/`, lws-conformance in `lws-conformance/`), with `${{ }}` expressions filled in (an
  unknown expression fails the test), `sudo` and `scripts/bootstrap` recorded instead of run,
  and scripts/gate-upstream in plan mode (GATE_PLAN=1, its commands printed, not run); the merge
  step merges real shard run directories;
- ci/prow/lws-conformance-presubmits.yaml: each job's container command, run the same way from its
  path_alias with lws-conformance at its extra_refs path;
- every lwsc command in the plans parses against lwsc's own argument parser, and each `lwsc run`
  of a plan runs for real with --dry-run (profile, --set sources.<component>=<the checkout>,
  selection: exit 0), every script path exists in the repository.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_conformance import cli, cli_conventions
from tests.test_shards import TESTS

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "gate-upstream.yaml"
PROW = ROOT / "ci" / "prow" / "lws-conformance-presubmits.yaml"
ACTIONS = {
    "actions/checkout@v4",
    "actions/setup-go@v5",
    "actions/setup-python@v5",
    "actions/upload-artifact@v4",
    "actions/download-artifact@v4",
}
SHIM = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
"""


def _harness_tree(into: Path) -> Path:
    """lws-conformance as a checkout step leaves it: this repository, with scripts/bootstrap
    recorded instead of run (it would reinstall the shared venv)."""
    into.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in ("scripts", ".git"):
            (into / entry.name).symlink_to(entry)
    (into / "scripts").mkdir()
    for script in (ROOT / "scripts").iterdir():
        (into / "scripts" / script.name).symlink_to(script)
    (into / "scripts" / "bootstrap").unlink()
    (into / "scripts" / "bootstrap").write_text(SHIM)
    (into / "scripts" / "bootstrap").chmod(0o755)
    if not (ROOT / ".venv").exists():  # tox: what bootstrap would make, the env running these tests
        (into / ".venv" / "bin").mkdir(parents=True)
        (into / ".venv" / "bin" / "lwsc").symlink_to(Path(sys.executable).parent / "lwsc")
    return into


def _component_tree(into: Path) -> Path:
    """A pull request's checkout: a git work tree at a release tag."""
    into.mkdir(parents=True)
    (into / "go.mod").write_text("module sigs.k8s.io/x\n")
    git = ["git", "-C", str(into), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "pr"], ["tag", "v0.9.0"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return into


def _shims(tmp: Path, *names: str) -> dict[str, str]:
    bin_dir = tmp / "shims"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        (bin_dir / name).write_text(SHIM)
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp / "calls.log")}


def _expand(text: str, values: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        assert expr in values, f"unexpected expression ${{{{ {expr} }}}} in a run step"
        return values[expr]

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def _plan(stderr: str) -> list[list[str]]:
    return [
        shlex.split(line.removeprefix("gate-upstream: "))
        for line in stderr.splitlines()
        if line.startswith("gate-upstream: ")
    ]


def _check_plan(plan: list[list[str]], harness: Path, component: str, source: Path, reports: Path) -> None:
    """The plan: bootstrap, lwsc build, lwsc run; each lwsc command parses; the run dry-runs."""
    assert [Path(c[0]).name for c in plan] == ["bootstrap", "lwsc", "lwsc"], plan
    for command in plan:
        assert Path(command[0]).is_relative_to(harness) and Path(command[0]).exists(), command[0]
    build, run = plan[1][1:], plan[2][1:]
    for argv in (build, run):
        args = cli_conventions.finish(cli.parser().parse_args(argv))  # SystemExit (exit 2) on a bad argument
        assert f"sources.{component}={source}" in args.set, args.set
    args = cli_conventions.finish(cli.parser().parse_args(run))
    assert args.command == "run" and args.accept_known_deviations and Path(args.reports) == reports
    dry = subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", *run, "--dry-run", "--focus", "LWS-NAME-001"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=reports.parent,
    )
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert "test_identity.py" in dry.stdout


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    for step in job["steps"]:
        assert "run" in step or step.get("uses") in ACTIONS, step
    return job["steps"]


@pytest.fixture
def shards(pytester: pytest.Pytester, plugin_pytester: pytest.Pytester, tmp_path: Path) -> list[Path]:
    """Two shards' run directories, as the shard jobs upload them."""
    pytester.makepyfile(test_s=TESTS.split('@pytest.mark.requirement("ROLL-SURGE-001")')[0])
    out = []
    for k in (1, 2):
        run = tmp_path / "artifacts" / f"reports-{k - 1}" / f"2026010{k}-120000"
        result = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "--lwsc-run-id=t1",
            f"--lwsc-report-dir={run}",
            f"--junitxml={run / 'junit_01.xml'}",
            f"--lwsc-shard={k}/2",
            "--lwsc-accept-known-deviations",
        )
        assert result.ret == 0, result.stdout.str()
        out.append(run)
    return out


def test_the_github_workflow_runs_step_by_step(tmp_path: Path, shards: list[Path]) -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    inputs = doc[True]["workflow_call"]["inputs"]  # YAML 1.1 reads the key `on` as true
    ws, temp = tmp_path / "ws", tmp_path / "runner-temp"
    harness, upstream = _harness_tree(ws / "lws-conformance"), _component_tree(ws / "upstream")
    temp.mkdir()
    values = {
        "inputs.component": "lws",
        "inputs.provider": inputs["provider"]["default"],
        "matrix.shard": json.loads(inputs["shards"]["default"])[0],
        "runner.temp": str(temp),
    }
    env = {
        **os.environ,
        **_shims(tmp_path, "sudo"),
        "GITHUB_WORKSPACE": str(ws),
        "RUNNER_TEMP": str(temp),
        "GATE_PLAN": "1",
    }
    plans = []
    for step in _steps(doc["jobs"]["shard"]):
        if "run" in step:
            step_env = {k: _expand(str(v), values) for k, v in (step.get("env") or {}).items()}
            proc = subprocess.run(
                ["bash", "-e", "-c", _expand(step["run"], values)],
                cwd=ws,
                env={**env, **step_env},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, (step["name"], proc.stderr)
            plans += _plan(proc.stderr)
    _check_plan(plans, harness, "lws", upstream, temp / "reports")
    assert "sudo install -d -o" in (tmp_path / "calls.log").read_text()
    # the merge job: shards downloaded as `shards/reports-<index>/<run-id>/`
    (ws / "shards").symlink_to(shards[0].parent.parent)
    for result in ("success", "cancelled"):
        codes = _merge_job(doc, ws, env, {**values, "needs.shard.result": result})
        assert codes[-1] == (0 if result == "success" else 3) and all(c == 0 for c in codes[:-1]), (result, codes)
    merged = json.loads((ws / "merged" / "conformance" / "summary.json").read_text())
    assert len(merged["merged_from"]) == 2 and merged["conclusion"]["code"] == 0
    assert "bootstrap" in (tmp_path / "calls.log").read_text()


def _merge_job(doc: dict[str, Any], ws: Path, env: dict[str, str], values: dict[str, str]) -> list[int]:
    """The merge job's `run:` steps in order (each runs, as `if: always()` jobs do): their exit codes."""
    shutil.rmtree(ws / "merged", ignore_errors=True)
    codes = []
    for step in _steps(doc["jobs"]["merge"]):
        if "run" in step:
            step_env = {k: _expand(str(v), values) for k, v in (step.get("env") or {}).items()}
            proc = subprocess.run(
                ["bash", "-e", "-c", _expand(step["run"], values)],
                cwd=ws,
                env={**env, **step_env},
                capture_output=True,
                text=True,
                timeout=300,
            )
            codes.append(proc.returncode)
    return codes


@pytest.mark.parametrize("job", ["pull-lws-conformance", "pull-lws-conformance-kind", "pull-kueue-lws-conformance"])
def test_the_prow_presubmits_run_their_command(tmp_path: Path, job: str) -> None:
    doc = yaml.safe_load(PROW.read_text())["presubmits"]
    repo, spec = next((r, j) for r, jobs in doc.items() for j in jobs if j["name"] == job)
    component = repo.split("/")[1]
    assert spec["decorate"] and spec["path_alias"] == f"sigs.k8s.io/{component}"
    (extra,) = spec["extra_refs"]
    assert (extra["org"], extra["repo"]) == ("HARNESS_ORG", "lws-conformance"), "the harness's home is not guessed"
    gopath = tmp_path / "go" / "src"
    harness = _harness_tree(gopath / extra["path_alias"])
    checkout = _component_tree(gopath / spec["path_alias"])
    (container,) = spec["spec"]["containers"]
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    env = {
        **os.environ,
        **_shims(tmp_path, "apt-get"),
        "ARTIFACTS": str(artifacts),
        "GATE_PLAN": "1",
        **{e["name"]: e["value"] for e in container.get("env", [])},
    }
    proc = subprocess.run(
        [*container["command"], *container["args"]], cwd=checkout, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    _check_plan(_plan(proc.stderr), harness, component, checkout, artifacts)
    kind = env.get("PROVIDER") == "kind"
    assert ("--profile" in _plan(proc.stderr)[2]) == kind and container.get("securityContext", {}).get(
        "privileged", False
    ) == kind
    assert "apt-get install" in (tmp_path / "calls.log").read_text()
