from __future__ import annotations

from pathlib import Path

import pytest

from lws_conformance.errors import UserError
from lws_conformance.toolchain import cache
from lws_conformance.toolchain.recipes import RECIPES, kubernetes_staging_replaces, ldflags, wrapper_go_mod

GO_MOD = """module k8s.io/kubernetes
require (
\tk8s.io/api v0.0.0
\tk8s.io/kube-openapi v0.0.0-20260317180543-43fb72c5454a
)
replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
)
"""


def test_staging_replaces_come_from_the_go_mod() -> None:
    assert kubernetes_staging_replaces(GO_MOD, "v1.36.3") == {"k8s.io/api": "v0.36.3", "k8s.io/client-go": "v0.36.3"}


def test_kubernetes_binaries_are_version_stamped_in_both_packages() -> None:
    flags = ldflags(RECIPES["kubernetes"], "v1.36.3")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {pkg}.gitVersion=v1.36.3" in flags
        assert f"-X {pkg}.gitMinor=36" in flags


def test_kubernetes_version_must_be_a_release() -> None:
    with pytest.raises(ValueError):
        ldflags(RECIPES["kubernetes"], "v2.0")


def test_wrapper_for_a_local_source_replaces_the_module() -> None:
    text = wrapper_go_mod(RECIPES["lws"], "v0.9.0", {}, "/src/lws")
    assert "require sigs.k8s.io/lws v0.0.0" in text and "replace sigs.k8s.io/lws => /src/lws" in text


def test_wrapper_for_a_module_version() -> None:
    text = wrapper_go_mod(RECIPES["kueue"], "v0.17.0", {}, None)
    assert "require sigs.k8s.io/kueue v0.17.0" in text and "replace" not in text


def test_wrapper_replaces_dependencies_with_versions_and_directories() -> None:
    text = wrapper_go_mod(
        RECIPES["kueue"], "v0.0.0", {"sigs.k8s.io/lws": "/c/src/lws-1", "example.com/a": "v1.6.2"}, "/k"
    )
    assert (
        "replace sigs.k8s.io/lws => /c/src/lws-1\n" in text
        and "replace example.com/a => example.com/a v1.6.2\n" in text
    )


def test_a_component_cannot_replace_its_own_module() -> None:
    with pytest.raises(UserError, match=r"build.go_replace.kueue replaces sigs.k8s.io/kueue itself; use sources.kueue"):
        wrapper_go_mod(RECIPES["kueue"], "v0.17.0", {"sigs.k8s.io/kueue": "v0.18.0"}, None)


def test_replaced_builds_are_cached_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path))
    plain = cache.bin_dir("kueue", "v0.17.0", "/src/k")
    one = cache.bin_dir("kueue", "v0.17.0", "/src/k", replace={"example.com/a": "v1.6.2"})
    other = cache.bin_dir("kueue", "v0.17.0", "/src/k", replace={"example.com/a": "v1.6.1"})
    assert len({plain, one, other}) == 3 and one.name.startswith(plain.name + "-r")
    assert cache.bin_dir("kueue", "v0.17.0", "/src/k", replace={}) == plain
