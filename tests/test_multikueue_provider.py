"""Unit tests of the MultiKueue provider's pure parts: the profile key, worker naming, the inline
kubeconfig MultiKueue requires, and finding a running set's workers from multikueue.json."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from lws_conformance.errors import UserError
from lws_conformance.install import pki
from lws_conformance.profile import load_profile
from lws_conformance.providers import multikueue


def test_profile_key_defaults_off_and_multikueue_profile_has_two_workers() -> None:
    assert multikueue.workers_of(load_profile().raw) == 0
    assert multikueue.workers_of(load_profile("multikueue").raw) == 2
    assert multikueue.workers_of(load_profile(overrides=["multikueue.workers=1"]).raw) == 1


def test_unknown_multikueue_key_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"unknown profile key 'multikueue.worker'"):
        load_profile(overrides=["multikueue.worker=2"])


def test_inline_kubeconfig_has_data_not_paths(tmp_path: Path) -> None:
    """Kueue v0.17.0 validateKubeconfig refuses certificate-authority file paths and tokenFile."""
    p = pki.generate(tmp_path / "pki")
    doc = yaml.safe_load(multikueue.inline_kubeconfig(p, "https://127.0.0.1:19102"))
    cluster = doc["clusters"][0]["cluster"]
    user = doc["users"][0]["user"]
    assert cluster["server"] == "https://127.0.0.1:19102"
    assert "certificate-authority" not in cluster and "insecure-skip-tls-verify" not in cluster
    assert base64.b64decode(cluster["certificate-authority-data"]) == p.ca_crt.read_bytes()
    assert set(user) == {"client-certificate-data", "client-key-data"}
    assert doc["current-context"] == doc["contexts"][0]["name"]


def test_workers_come_from_multikueue_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path))
    mk = multikueue.MultiKueueClusters(load_profile("multikueue"), name="m", workers=2)
    assert mk.worker_clusters() == []
    mk.dir.mkdir(parents=True)
    workers = [{"name": f"m-mkw{i}", "cluster": f"m-mkw{i}", "base_port": 19000 + 100 * i} for i in (1, 2)]
    mk.info_file.write_text(json.dumps({"admission_check": "multikueue", "workers": workers}))
    found = mk.worker_clusters()
    assert [(w.name, w.profile.base_port) for w in found] == [("m-mkw1", 19100), ("m-mkw2", 19200)]
    assert not mk.running()  # nothing is actually up


def test_down_finds_stale_workers_without_multikueue_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path))
    for d in ("m-mkw1", "m-mkw2", "other-mkw1"):
        (tmp_path / d).mkdir()
    names = [w.name for w in multikueue.stale_workers("m", load_profile())]
    assert names == ["m-mkw1", "m-mkw2"]
    multikueue.MultiKueueClusters(load_profile(), name="m").down()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-mkw1"]
