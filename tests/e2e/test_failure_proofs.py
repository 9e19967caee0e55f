"""Proof that the suites go red when LWS or Kueue misbehave.

Each proof breaks one thing a documented behaviour depends on — a webhook removed, or a mutant
LWS built from patched source through the harness's own `sources.lws` — on
a private local cluster (never the shared one), then runs the real suite tests by node id through
pytest, with the suites' own timeouts, and requires the named requirement to be `failed` for the
expected reason. A control run of the same node ids on the intact private cluster passes first,
so the red comes from the break, not from an unusable cluster. A stopped controller, by
contrast, must read `error` (the infrastructure broke), which is proven here too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from lws_conformance.k8s.client import api_client
from lws_conformance.profile import Profile, load_profile
from lws_conformance.providers import process
from lws_conformance.providers.local import LocalCluster, claimed_cluster
from lws_conformance.toolchain import ensure_binaries
from lws_conformance.toolchain.gobuild import module_dir

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("failure-proofs")]
ROOT = Path(__file__).resolve().parents[2]
MUTANTS = ROOT / "benchmarks" / "mutants"

GANG = "suites/kueue/test_kueue_gang.py::test_group_without_quota_stays_wholly_gated"
NAMES = "suites/lws/test_identity.py::test_objects_are_named_from_the_lws_and_group_ordinals"
ENV = "suites/lws/test_identity.py::test_lws_env_vars_lead_every_container_and_replace_user_values"
UPGRADE = "suites/lws/test_inplace_upgrade.py::test_inplace_controller_upgrade_rolls_no_group"
VALID = [
    "suites/kueue/test_kueue_validation.py::test_mismatched_podset_group_annotations_are_rejected",
    "suites/kueue/test_kueue_validation.py::test_queue_name_change_on_running_lws_is_rejected",
]


@dataclass(frozen=True)
class Verdict:
    verdict: str
    detail: str


def run_suite(
    cluster: LocalCluster, nodeids: list[str], out: Path, run_id: str, sets: tuple[str, ...] = ()
) -> dict[str, Verdict]:
    """Run suite tests by node id against `cluster` (profile `--lwsc-set`s: `sets`); requirement
    id -> its verdict."""
    handle = cluster.handle()
    assert handle is not None, f"{cluster.name} is not up"
    if sets:  # what the settings need (a mutant's build) is built here: the suites' pytest builds nothing
        ensure_binaries(load_profile(overrides=list(sets)), lambda _msg: None)
    handle_file = out / "handle.json"
    out.mkdir(parents=True, exist_ok=True)
    handle_file.write_text(handle.to_json())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *nodeids,
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-q",
            f"--lwsc-handle={handle_file}",
            f"--lwsc-run-id={run_id}",
            f"--lwsc-report-dir={out}",
            *(f"--lwsc-set={kv}" for kv in sets),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    summary = out / "summary.json"
    assert summary.is_file(), f"no summary.json from the suite run:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    rows = json.loads(summary.read_text())["requirements"]
    return {r["id"]: Verdict(r["verdict"], r["detail"]) for r in rows if r["verdict"] != "not-run"}


def assert_red(found: dict[str, Verdict], requirement: str, reason: str) -> None:
    got = found.get(requirement)
    assert got is not None, f"{requirement} did not run: {found}"
    assert got.verdict == "failed", f"{requirement} is {got.verdict}, expected failed: {got.detail[:1500]}"
    assert re.search(reason, got.detail), f"{requirement} failed, not for /{reason}/:\n{got.detail[:2000]}"


def _without_webhook(api: client.ApiClient, config: str, hook: str) -> Callable[[], None]:
    """Remove one webhook from a MutatingWebhookConfiguration; return the undo."""
    adm = client.AdmissionregistrationV1Api(api)
    original = adm.read_mutating_webhook_configuration(config)
    assert any(w.name == hook for w in original.webhooks or []), f"{config} has no {hook}"
    remaining = [w for w in original.webhooks or [] if w.name != hook]
    adm.patch_mutating_webhook_configuration(
        config,
        [{"op": "replace", "path": "/webhooks", "value": [api.sanitize_for_serialization(w) for w in remaining]}],
    )

    def undo() -> None:
        assert original.metadata and original.metadata.name
        current = adm.read_mutating_webhook_configuration(original.metadata.name)
        original.metadata.resource_version = current.metadata.resource_version if current.metadata else None
        adm.replace_mutating_webhook_configuration(original.metadata.name, original)

    return undo


def test_control_the_proof_tests_pass_on_the_intact_private_cluster(
    private_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    found = run_suite(private_cluster, [GANG, NAMES, ENV], tmp_path / "control", f"{run_id}c")
    assert {"KUEUE-GANG-002", "LWS-NAME-001", "LWS-ENV-001"} <= set(found), found
    assert {k: v.verdict for k, v in found.items() if v.verdict != "passed"} == {}, found


def test_gang_requirement_goes_red_without_kueues_pod_webhook(
    private_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    """Without Kueue's pod webhook no pod is gated: the group without quota runs."""
    handle = private_cluster.handle()
    assert handle is not None
    api = api_client(handle.kubeconfig)
    undo = _without_webhook(api, "kueue-mutating-webhook-configuration", "mpod.kb.io")
    try:
        found = run_suite(private_cluster, [GANG], tmp_path / "gang", f"{run_id}g")
    finally:
        undo()
        api.close()
    assert_red(found, "KUEUE-GANG-002", r"wholly (gated|held)")


def test_kueue_lws_validation_goes_red_without_kueues_lws_validating_webhook(
    private_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    """Without Kueue's LeaderWorkerSet validating webhook, mismatched TAS annotations and a
    queue-name change are accepted (the suite passes on the intact cluster: see the run it makes)."""
    handle = private_cluster.handle()
    assert handle is not None
    control = run_suite(private_cluster, VALID, tmp_path / "valid-control", f"{run_id}vc")
    assert {k: v.verdict for k, v in control.items()} == dict.fromkeys(
        ("KUEUE-VALID-001", "KUEUE-VALID-002", "KUEUE-VALID-003"), "passed"
    ), control
    api = api_client(handle.kubeconfig)
    adm = client.AdmissionregistrationV1Api(api)
    name = "kueue-validating-webhook-configuration"
    original = adm.read_validating_webhook_configuration(name)
    remaining = [w for w in original.webhooks or [] if w.name != "vleaderworkerset.kb.io"]
    assert len(remaining) == len(original.webhooks or []) - 1, f"{name} has no vleaderworkerset.kb.io"
    body = [{"op": "replace", "path": "/webhooks", "value": [api.sanitize_for_serialization(w) for w in remaining]}]
    adm.patch_validating_webhook_configuration(name, body)
    try:
        found = run_suite(private_cluster, VALID, tmp_path / "valid", f"{run_id}v")
    finally:
        current = adm.read_validating_webhook_configuration(name)
        assert original.metadata and current.metadata
        original.metadata.resource_version = current.metadata.resource_version
        adm.replace_validating_webhook_configuration(name, original)
        api.close()
    # SHOULD requirements go to `warning` (never `failed`) when they do not hold: all three are
    # SHOULDs (the refusals ship as bug fixes; no doc, API comment or KEP promises them).
    for rid in ("KUEUE-VALID-001", "KUEUE-VALID-002", "KUEUE-VALID-003"):
        got = found.get(rid)
        assert got is not None and got.verdict == "warning", f"{rid}: {got}"
        assert "accepted" in got.detail, f"{rid} went red for another reason: {got.detail[:1500]}"


def test_a_stopped_lws_controller_is_an_error_naming_it_not_a_verdict(
    private_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    """A controller of the cluster under test that dies is the infrastructure breaking, not LWS
    breaking a promise: the requirement reads `error` with the controller's log tail (exit 3),
    never `failed`. (LWS-NAME-001's red is proven by mutant lws-23, benchmarks/mutants.) The
    process is killed as a crash would end it, not through the `stop_component` fault hook,
    which marks a component stopped on purpose (then not dead)."""
    for rec in private_cluster.records():
        if rec.name == "lws":
            process.stop(rec, grace=3.0)
    try:
        found = run_suite(private_cluster, [NAMES], tmp_path / "names", f"{run_id}n")
    finally:
        private_cluster.start_component("lws")
    got = found.get("LWS-NAME-001")
    assert got is not None and got.verdict == "error", f"LWS-NAME-001: {got}"
    assert re.search(r"lws \(pid \d+\) is not running, its log ends: ", got.detail), got.detail[:2000]


def mutant_tree(tmp_path_factory: pytest.TempPathFactory, patch_name: str) -> tuple[Path, str]:
    """A writable copy of the pinned LWS module source with benchmark mutant `patch_name` applied,
    and the pinned version (a copy is no git tree: its version must be said)."""
    pinned = load_profile().versions["lws"]
    src = tmp_path_factory.mktemp("mutant") / "lws"
    shutil.copytree(module_dir("lws", pinned, None), src)
    for p in src.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    subprocess.run(["patch", "-p1", "-s", "-i", str(MUTANTS / "lws" / patch_name)], cwd=src, check=True)
    return src, pinned


@pytest.fixture(scope="module")
def mutant_cluster(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A private cluster whose LWS is built from the pinned module source with benchmark mutant
    lws-01 applied (LWS_WORKER_INDEX set to the group index), through `sources.lws`."""
    src, pinned = mutant_tree(tmp_path_factory, "01-env-worker-index-is-group-index.patch")

    def profile_at(port: int) -> Profile:
        return load_profile(overrides=[f"network.base_port={port}", f"sources.lws={src}", f"versions.lws={pinned}"])

    def progress(msg: str) -> None:
        print(f"[lwsc mutant] {msg}", file=sys.stderr, flush=True)

    with claimed_cluster(profile_at, f"private-{run_id}-mut", progress) as cluster:
        yield cluster


def test_env_requirement_goes_red_against_a_mutant_lws(
    mutant_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    found = run_suite(mutant_cluster, [ENV], tmp_path / "env", f"{run_id}m")
    assert_red(found, "LWS-ENV-001", r"LWS_WORKER_INDEX")


def test_inplace_upgrade_from_the_previous_release_rolls_nothing(
    private_cluster: LocalCluster, tmp_path: Path, run_id: str
) -> None:
    """LWS-UPGRADE-001/002 in CI: the suite test starts groups under `upgrade.lws_from` (v0.8.0,
    built by `lwsc build`) on a private cluster of its own and upgrades it to the pinned LWS."""
    found = run_suite(private_cluster, [UPGRADE], tmp_path / "upgrade", f"{run_id}u")
    assert {k: v.verdict for k, v in found.items()} == {"LWS-UPGRADE-001": "passed", "LWS-UPGRADE-002": "passed"}, found


def test_inplace_upgrade_goes_red_when_the_new_controller_rolls_old_groups(
    private_cluster: LocalCluster, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, run_id: str
) -> None:
    """Mutant lws-35: the new controller adds a default label to the leader pod template, so the
    leader StatefulSets made by v0.8.0 roll on upgrade (the change KEP-238 warns about)."""
    src, pinned = mutant_tree(tmp_path_factory, "35-upgrade-new-default-leader-label.patch")
    found = run_suite(
        private_cluster,
        [UPGRADE],
        tmp_path / "upgrade-mutant",
        f"{run_id}v",
        sets=(f"sources.lws={src}", f"versions.lws={pinned}"),
    )
    assert_red(found, "LWS-UPGRADE-001", r"disturbed LWS up: .*(deleting|deleted|became)")
