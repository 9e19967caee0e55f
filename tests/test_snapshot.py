"""Provisioned-state snapshots: every input is in the key, a damaged snapshot is never used."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.install import pki
from lws_conformance.profile import load_profile
from lws_conformance.providers import snapshot
from lws_conformance.toolchain import cache

CRD: dict[str, Any] = {
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "workloads.kueue.x-k8s.io"},
    "spec": {
        "group": "kueue.x-k8s.io",
        "conversion": {
            "strategy": "Webhook",
            "webhook": {"clientConfig": {"url": "https://127.0.0.1:16020/convert", "caBundle": "Q0E="}},
        },
    },
}


@pytest.fixture
def bins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    out = {}
    for name in ("etcd", "kube-apiserver", "lws", "kueue"):
        d = tmp_path / "bin" / name
        d.mkdir(parents=True)
        (d / name).write_text(f"{name} v1\n")
        cache.seal(d, [name])
        out[name] = d / name
    return out


def _key(profile_overrides: list[str], bins: dict[str, Path], crds: list[dict[str, Any]]) -> str:
    return snapshot.key(snapshot.inputs(load_profile(overrides=profile_overrides), bins, crds))


def test_every_input_changes_the_key(bins: dict[str, Path], tmp_path: Path) -> None:
    base = _key([], bins, [CRD])
    assert _key([], bins, [CRD]) == base  # deterministic
    # the cluster's own ports and CA are not inputs: the same snapshot serves every port
    other_port = copy.deepcopy(CRD)
    other_port["spec"]["conversion"]["webhook"]["clientConfig"] = {"url": "https://127.0.0.1:20020/convert"}
    assert _key(["network.base_port=20000"], bins, [other_port]) == base
    # a different LWS source tree is a different binary
    rebuilt = tmp_path / "bin2" / "lws"
    rebuilt.parent.mkdir()
    rebuilt.write_text("lws v1, patched\n")
    cache.seal(rebuilt.parent, ["lws"])
    assert _key([], {**bins, "lws": rebuilt}, [CRD]) != base
    changed_crd = copy.deepcopy(CRD)
    changed_crd["spec"]["group"] = "kueue.example.com"
    assert _key([], bins, [changed_crd]) != base
    for override in (
        "topology.racks_per_block=3",
        "kueue.flavor_name=other",
        "timeouts.node_grace_seconds=30",
        "versions.kueue=v0.18.0",
        "kueue.topology_name=t2",
    ):
        assert _key([override], bins, [CRD]) != base, override
    # a controller flag is no stored state: the same snapshot
    assert _key(["kueue.manage_jobs_without_queue_name=true", "timeouts.scale=3"], bins, [CRD]) == base


def test_the_provisioning_code_is_an_input(bins: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base = _key([], bins, [CRD])
    monkeypatch.setattr(snapshot, "_PROVISIONING_CODE", ("boot.py", "nodes.py"))
    assert _key([], bins, [CRD]) != base


def _stopped_cluster(where: Path) -> Path:
    (where / "etcd" / "member" / "wal").mkdir(parents=True)
    (where / "etcd" / "member" / "wal" / "0.wal").write_bytes(b"wal" + bytes(3 << 20))  # preallocated zeros
    (where / "etcd" / "member" / "db").write_bytes(b"bolt")
    pki.generate(where / "pki")
    (where / "pki" / "webhook").mkdir()
    (where / "pki" / "webhook" / "tls.key").write_text("per cluster")
    return where


def test_save_find_restore_and_damage(bins: dict[str, Path], tmp_path: Path) -> None:
    cluster = _stopped_cluster(tmp_path / "c1")
    assert snapshot.find("k1") is None
    snapshot.save("k1", cluster, {"inputs": 1}, [CRD])
    snap = snapshot.find("k1")
    assert snap is not None and not (snap / "pki" / "webhook").exists()
    wal = snap / "etcd" / "member" / "wal" / "0.wal"
    assert wal.read_bytes() == b"wal" + bytes(3 << 20)
    assert wal.stat().st_blocks * 512 < 2 << 20  # the zeros are holes
    target = tmp_path / "c2"
    snapshot.restore(snap, target)
    assert (target / "etcd" / "member" / "db").read_bytes() == b"bolt"
    assert pki.Pki.at(target / "pki").ca_crt.read_bytes() == pki.Pki.at(cluster / "pki").ca_crt.read_bytes()
    # a changed byte: removed, never used
    (snap / "etcd" / "member" / "db").write_bytes(b"bolT")
    assert snapshot.find("k1") is None and not snap.exists()


def test_a_half_written_manifest_or_an_expiring_pki_is_not_used(bins: dict[str, Path], tmp_path: Path) -> None:
    snapshot.save("k2", _stopped_cluster(tmp_path / "c"), {}, [CRD])
    snap = snapshot.root() / "k2"
    (snap / snapshot.MANIFEST).write_text("{")
    assert snapshot.find("k2") is None and not snap.exists()
    snapshot.save("k3", _stopped_cluster(tmp_path / "d"), {}, [CRD])
    pki.generate(snapshot.root() / "k3" / "pki", days=10)
    doc = json.loads((snapshot.root() / "k3" / snapshot.MANIFEST).read_text())
    doc["files"] = snapshot._files(snapshot.root() / "k3", snapshot.STORED)  # consistent, but expiring
    (snapshot.root() / "k3" / snapshot.MANIFEST).write_text(json.dumps(doc))
    assert snapshot.find("k3") is None


def test_only_conversion_webhooks_on_other_ports_are_patched(bins: dict[str, Path], tmp_path: Path) -> None:
    plain = {"kind": "CustomResourceDefinition", "metadata": {"name": "topologies.kueue.x-k8s.io"}, "spec": {}}
    snapshot.save("k4", _stopped_cluster(tmp_path / "c"), {}, [CRD, plain])
    snap = snapshot.root() / "k4"
    assert snapshot.stale_conversions(snap, [CRD, plain]) == []
    moved = copy.deepcopy(CRD)
    moved["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = "https://127.0.0.1:20020/convert"
    assert snapshot.stale_conversions(snap, [moved, plain]) == [moved]


def test_least_recently_used_snapshots_are_pruned(bins: dict[str, Path], tmp_path: Path) -> None:
    for i in range(3):
        snapshot.save(f"p{i}", _stopped_cluster(tmp_path / f"c{i}"), {}, [])
    snapshot.restore(snapshot.root() / "p0", tmp_path / "use")  # p0 used last
    snapshot._prune(keep=2)
    assert sorted(d.name for d in snapshot.root().iterdir()) == ["p0", "p2"]


def _stored(url: str, ca: str = "Q0E=", api_version: str = "apiextensions.k8s.io/v1beta1") -> dict[str, Any]:
    """A CRD as the API server keeps it in etcd (JSON, v1beta1 form)."""
    conversion = {"strategy": "Webhook", "webhookClientConfig": {"url": url, "caBundle": ca}}
    return {"kind": "CustomResourceDefinition", "apiVersion": api_version, "spec": {"conversion": conversion}}


@pytest.mark.parametrize(
    ("stored", "rewritten"),
    [
        (_stored("https://127.0.0.1:26020/convert"), True),  # another port: the URL is rewritten
        (_stored("https://127.0.0.1:26020/convert", ca="b3RoZXI="), False),  # another CA: left to the API
        (_stored("https://127.0.0.1:26020/convert", api_version="apiextensions.k8s.io/v1"), False),
        (None, False),  # not stored: left to the API server
    ],
)
def test_stored_conversions_are_pointed_in_etcd_only_where_just_the_url_differs(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any] | None, rewritten: bool
) -> None:
    key = "/registry/apiextensions.k8s.io/customresourcedefinitions/workloads.kueue.x-k8s.io"
    store = {key: copy.deepcopy(stored)} if stored else {}
    puts: list[str] = []
    monkeypatch.setattr(snapshot.etcd_store, "get_json", lambda _url, k: copy.deepcopy(store.get(k)))
    monkeypatch.setattr(snapshot.etcd_store, "put_json", lambda _url, k, v: (puts.append(k), store.__setitem__(k, v)))
    left = snapshot.point_stored_conversions("http://127.0.0.1:16000", [CRD])
    assert (left == []) is rewritten
    assert puts == ([key] if rewritten else [])
    if rewritten:
        config = store[key]["spec"]["conversion"]["webhookClientConfig"]
        assert config == {"url": "https://127.0.0.1:16020/convert", "caBundle": "Q0E="}
