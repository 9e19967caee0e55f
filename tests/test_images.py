"""Test images are listed and overridable for air-gapped registries (profile key images.registry)."""

from __future__ import annotations

import json

import pytest

from lws_conformance import cli, images, workloads
from lws_conformance.profile import load_profile


def test_registry_override_rewrites_every_image_of_a_workload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(images.REGISTRY_ENV, "mirror.local/k8s/")
    workloads._template.cache_clear()
    try:
        obj = workloads.lws("x", replicas=1, size=2)
    finally:
        workloads._template.cache_clear()
    found = [
        c["image"]
        for t in ("leaderTemplate", "workerTemplate")
        for c in obj["spec"]["leaderWorkerTemplate"][t]["spec"]["containers"]
    ]
    assert found and all(i == "mirror.local/k8s/nginx-slim:0.27" for i in found)
    assert images.mirrored("docker.io/library/busybox", "m.local") == "docker.io/library/busybox"  # only k8s's
    assert images.ref("workload", "") == "registry.k8s.io/nginx-slim:0.27"


def test_images_lists_them_with_the_profile_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_profile(overrides=["images.registry=m.local"]).raw["images"]["registry"] == "m.local"
    assert cli.main(["images", "--set", "images.registry=m.local", "--output", "json"]) == 0
    listed = {r["name"]: r["image"] for r in json.loads(capsys.readouterr().out)}
    assert listed["workload"] == "m.local/nginx-slim:0.27" and listed["workload-update"] == "m.local/nginx-slim:0.26"
    assert "harness" in listed
