from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lws_conformance.errors import UserError
from lws_conformance.profile import RESOLVED_FILE, load_profile, read_resolved


def test_default_profile_topology() -> None:
    p = load_profile()
    assert (p.topology.blocks, p.topology.racks_per_block, p.topology.nodes_per_rack) == (2, 2, 2)
    assert p.topology.nodes == 8 and p.topology.racks == 4 and p.topology.gpus_per_rack == 16
    assert p.versions["kubernetes"] == "v1.36.3"


def test_set_overrides_one_key() -> None:
    p = load_profile(overrides=["versions.lws=v0.8.0", "topology.blocks=3"])
    assert p.versions["lws"] == "v0.8.0" and p.topology.nodes == 12


def test_extends_layers_profiles() -> None:
    p = load_profile("large")
    assert p.topology.racks_per_block == 4 and p.topology.block_label == load_profile().topology.block_label


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["topology.rack=4"], "unknown profile key 'topology.rack'"),
        (["versions.lws=latest"], "is not a version"),
        (["topology.blocks=0"], "positive integer"),
        (["network.base_port=80"], "base_port"),
        (["binaries.etcd=/does/not/exist"], "does not exist"),
        (["nonsense"], "key.path=value"),
    ],
)
def test_bad_input_is_a_user_error(overrides: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        load_profile(overrides=overrides)


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(UserError, match="use one of: default, kind, large"):
        load_profile("nope")


def test_profile_from_path(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text("extends: default\ntopology: {gpus_per_node: 4}\n")
    assert load_profile(str(f)).topology.gpus_per_rack == 8


def test_timeouts_scale_is_read_and_checked() -> None:
    assert load_profile().timeout_scale == 1.0
    assert load_profile(overrides=["timeouts.scale=2.5"]).timeout_scale == 2.5
    with pytest.raises(UserError, match="timeouts.scale"):
        load_profile(overrides=["timeouts.scale=0"])


def test_manage_jobs_without_queue_name_is_a_boolean_that_reaches_kueues_config(tmp_path: Path) -> None:
    from lws_conformance.install.controllers import kueue_config

    assert load_profile().raw["kueue"]["manage_jobs_without_queue_name"] is False
    on = load_profile(overrides=["kueue.manage_jobs_without_queue_name=true"])
    assert on.raw["kueue"]["manage_jobs_without_queue_name"] is True
    with pytest.raises(UserError, match="must be true or false"):
        load_profile(overrides=["kueue.manage_jobs_without_queue_name=maybe"])
    assert kueue_config(1, 2, 3, tmp_path, manage_unlabelled=True)["manageJobsWithoutQueueName"] is True
    assert kueue_config(1, 2, 3, tmp_path)["manageJobsWithoutQueueName"] is False
    assert on.kueue_manage_unlabelled is True and load_profile().kueue_manage_unlabelled is False


def test_wait_for_pods_ready_is_off_by_default_and_reaches_kueues_config_when_set(tmp_path: Path) -> None:
    from lws_conformance.install.controllers import kueue_config

    assert load_profile().kueue_pods_ready is None
    assert "waitForPodsReady" not in kueue_config(1, 2, 3, tmp_path, pods_ready=None)
    timed = load_profile(overrides=["kueue.pods_ready_timeout_seconds=10"]).kueue_pods_ready
    assert timed == (10, None)
    assert kueue_config(1, 2, 3, tmp_path, pods_ready=timed)["waitForPodsReady"] == {"timeout": "10s"}
    both = load_profile(
        "default", ["kueue.pods_ready_timeout_seconds=10", "kueue.pods_ready_backoff_base_seconds=2"]
    ).kueue_pods_ready
    assert kueue_config(1, 2, 3, tmp_path, pods_ready=both)["waitForPodsReady"] == {
        "timeout": "10s",
        "requeuingStrategy": {"backoffBaseSeconds": 2},
    }
    for bad in ("0", "true", "ten", "86401"):
        with pytest.raises(UserError, match="kueue.pods_ready_timeout_seconds must be null or an integer"):
            load_profile(overrides=[f"kueue.pods_ready_timeout_seconds={bad}"])
    with pytest.raises(UserError, match="pods_ready_backoff_base_seconds needs kueue.pods_ready_timeout_seconds"):
        load_profile(overrides=["kueue.pods_ready_backoff_base_seconds=2"])


def test_kueue_feature_gates_are_names_with_booleans_that_reach_kueues_config(tmp_path: Path) -> None:
    from lws_conformance.install.controllers import kueue_config

    assert load_profile().kueue_feature_gates == {}
    on = load_profile(overrides=["kueue.feature_gates.ShortWorkloadNames=true"]).kueue_feature_gates
    assert on == {"ShortWorkloadNames": True}
    gates = kueue_config(1, 2, 3, tmp_path, feature_gates=on)["featureGates"]
    assert gates == {"VisibilityOnDemand": False, "ShortWorkloadNames": True}
    assert kueue_config(1, 2, 3, tmp_path)["featureGates"] == {"VisibilityOnDemand": False}
    for bad in ("kueue.feature_gates.ShortWorkloadNames=maybe", "kueue.feature_gates.short-names=true"):
        with pytest.raises(UserError, match="kueue.feature_gates.* must be a gate name .* set to true or false"):
            load_profile(overrides=[bad])
    with pytest.raises(UserError, match="'kueue.feature_gates' must be a mapping"):
        load_profile(overrides=["kueue.feature_gates=ShortWorkloadNames"])


def test_private_clusters_run_their_own_node_grace() -> None:
    p = load_profile()
    assert (p.node_grace_seconds, p.private().node_grace_seconds) == (40, 20)
    q = load_profile(overrides=["timeouts.private_node_grace_seconds=30"]).private()
    assert q.node_grace_seconds == 30 and q.private() == q
    for key in ("node_grace_seconds", "private_node_grace_seconds"):
        with pytest.raises(UserError, match=f"timeouts.{key} must be an integer in 8..600"):
            load_profile(overrides=[f"timeouts.{key}=4"])


def test_derived_profiles_apply_their_settings_on_the_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`with_overrides` (private clusters, upgrades, MultiKueue workers, matrix cells) is the run's
    profile with more --set: the same profile `load_profile` makes from both lists, validated the
    same way, without resolving again what the settings leave alone."""
    run = load_profile(overrides=["timeouts.scale=2", "kueue.manage_jobs_without_queue_name=false"])
    derived = run.with_overrides(["kueue.manage_jobs_without_queue_name=true", "network.base_port=17100"])
    assert derived == load_profile(
        "default", ["timeouts.scale=2", "kueue.manage_jobs_without_queue_name=true", "network.base_port=17100"]
    )
    assert derived.timeout_scale == 2.0 and derived.kueue_manage_unlabelled and derived.base_port == 17100
    assert run.with_overrides([]) is run and not run.kueue_manage_unlabelled  # the run's own is left alone
    with pytest.raises(UserError, match="unknown profile key 'topology.rack'"):
        run.with_overrides(["topology.rack=4"])
    with pytest.raises(UserError, match="network.base_port"):
        run.with_overrides(["network.base_port=80"])
    import lws_conformance.profile as profile_module

    declared = {**run.raw, "sources": {**run.raw["sources"], "lws": "/the/declared@ref"}}
    sourced = dataclasses.replace(run, sources={**run.sources, "lws": "/resolved/tree"}, raw=declared)
    monkeypatch.setattr(profile_module, "resolve_source", lambda *a: pytest.fail("resolved again"))
    assert sourced.with_overrides(["network.base_port=17200"]).sources["lws"] == "/resolved/tree"


def test_the_resolved_file_is_the_same_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `lwsc` hands pytest (`profile.resolved.yaml`) reads back as the profile it resolved,
    upgrade starts and go_replace targets included, with nothing resolved again."""
    import lws_conformance.profile as profile_module

    run = load_profile("large", ["timeouts.scale=3", "upgrade.lws_from=[v0.8.0]"])
    path = run.write_resolved(tmp_path / RESOLVED_FILE)
    monkeypatch.setattr(profile_module, "resolve_source", lambda *a: pytest.fail("resolved again"))
    monkeypatch.setattr(profile_module, "_go_replace", lambda *a: pytest.fail("resolved again"))
    back = read_resolved(path)
    assert back == run and back.upgrade_starts("lws")[0].versions["lws"] == "v0.8.0"
    path.write_text("- not a profile\n")
    with pytest.raises(UserError, match="is not a resolved profile"):
        read_resolved(path)
