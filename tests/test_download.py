"""The release-download path against a local HTTP server laid out like the real release servers
(dl.k8s.io, GitHub releases, GitHub's releases API), serving right and wrong checksums."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lws_conformance.errors import InfraError, UserError
from lws_conformance.toolchain import cache, diskspace, download
from lws_conformance.toolchain.gobuild import _estimate

K8S, ETCD, KWOK = "v1.36.3", "v3.6.14", "v0.8.0"
ARCH = download.arch()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(root: Path, path: str, data: bytes) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _publish(root: Path) -> None:
    """Every artefact with its correct published checksum."""
    for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
        data = f"#!{b}\n".encode()
        _write(root, f"dl.k8s.io/release/{K8S}/bin/linux/{ARCH}/{b}", data)
        _write(root, f"dl.k8s.io/release/{K8S}/bin/linux/{ARCH}/{b}.sha256", _sha(data).encode())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        member = tarfile.TarInfo(f"etcd-{ETCD}-linux-{ARCH}/etcd")
        member.size = len(b"#!etcd\n")
        tar.addfile(member, io.BytesIO(b"#!etcd\n"))
    tgz = f"etcd-{ETCD}-linux-{ARCH}.tar.gz"
    _write(root, f"github.com/etcd-io/etcd/releases/download/{ETCD}/{tgz}", buf.getvalue())
    _write(
        root,
        f"github.com/etcd-io/etcd/releases/download/{ETCD}/SHA256SUMS",
        f"{_sha(buf.getvalue())}  {tgz}\n{'0' * 64}  other.tar.gz\n".encode(),
    )
    kwok = b"#!kwok\n"
    _write(root, f"github.com/kubernetes-sigs/kwok/releases/download/{KWOK}/kwok-linux-{ARCH}", kwok)
    api = {"assets": [{"name": f"kwok-linux-{ARCH}", "digest": f"sha256:{_sha(kwok)}"}]}
    _write(root, f"api.github.com/repos/kubernetes-sigs/kwok/releases/tags/{KWOK}", json.dumps(api).encode())


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "www"
    _publish(root)
    handler = partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("LWSC_DOWNLOAD_MIRROR", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LWSC_DOWNLOAD", raising=False)
    download._unreachable.clear()
    yield root
    server.shutdown()
    download._unreachable.clear()


def _said() -> tuple[list[str], object]:
    said: list[str] = []
    return said, said.append


@pytest.mark.parametrize(
    ("component", "version", "binaries"),
    [
        ("kubernetes", K8S, ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"]),
        ("etcd", ETCD, ["etcd"]),
        ("kwok", KWOK, ["kwok"]),
    ],
)
def test_verified_release_binaries_are_cached(mirror: Path, component: str, version: str, binaries: list[str]) -> None:
    said, say = _said()
    out = download.fetch(component, version, say)  # type: ignore[arg-type]
    assert out == cache.bin_dir(component, version)
    for b in binaries:
        assert (out / b).read_bytes() == f"#!{b}\n".encode()
        assert (out / b).stat().st_mode & 0o111
    assert any("verified (sha256)" in m for m in said)


@pytest.mark.parametrize(
    ("component", "version", "corrupt"),
    [
        ("kubernetes", K8S, f"dl.k8s.io/release/{K8S}/bin/linux/{ARCH}/kube-scheduler.sha256"),
        ("etcd", ETCD, f"github.com/etcd-io/etcd/releases/download/{ETCD}/SHA256SUMS"),
        ("kwok", KWOK, f"api.github.com/repos/kubernetes-sigs/kwok/releases/tags/{KWOK}"),
    ],
)
def test_a_wrong_checksum_is_refused_and_nothing_is_cached(
    mirror: Path, component: str, version: str, corrupt: str
) -> None:
    path = mirror / corrupt
    text = path.read_text()
    digest = next(w for w in text.replace('"', " ").replace(":", " ").split() if len(w) == 64 and w != "0" * 64)
    path.write_text(text.replace(digest, "f" * 64))
    with pytest.raises(InfraError, match="refused, nothing cached"):
        download.fetch(component, version, lambda m: None)
    bins = cache.cache_root() / "bin" / component
    assert not bins.exists() or not any(bins.iterdir()), f"left in the cache: {list(bins.iterdir())}"


def test_an_unpublished_version_falls_back_to_the_build(mirror: Path) -> None:
    said, say = _said()
    assert download.fetch("kubernetes", "v1.99.0", say) is None  # type: ignore[arg-type]
    assert any("HTTP 404" in m and "building from source" in m for m in said)
    assert not (cache.cache_root() / "bin" / "kubernetes" / "v1.99.0").exists()


def test_an_unreachable_server_falls_back_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LWSC_DOWNLOAD_MIRROR", "http://127.0.0.1:9")  # discard port: nothing listens
    download._unreachable.clear()
    said, say = _said()
    assert download.fetch("kubernetes", K8S, say) is None  # type: ignore[arg-type]
    assert download.fetch("kwok", KWOK, say) is None  # type: ignore[arg-type]
    assert "unreachable" in said[1] and "did not answer earlier" in said[3]
    download._unreachable.clear()


def test_downloads_can_be_turned_off(mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_DOWNLOAD", "off")
    assert download.fetch("kubernetes", K8S, lambda m: None) is None


def test_components_without_official_binaries_are_built() -> None:
    assert download.assets("lws", "v0.9.0") == [] and download.assets("kueue", "v0.17.0") == []


def test_disk_check_says_what_it_needs_and_refuses_when_it_cannot_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said, say = _said()
    diskspace.check(["lws"], say, dirs=[tmp_path])  # type: ignore[arg-type]
    assert said[0].startswith("cold build needs ≈1 GB") and "GB free" in said[0]
    monkeypatch.setattr(diskspace.shutil, "disk_usage", lambda p: type("U", (), {"free": 2 * diskspace.GB})())
    with pytest.raises(UserError, match=r"≈10 GB needed, 2.0 GB free .*bigger disk"):
        diskspace.check(list(diskspace.NEEDS_GB), lambda m: None, dirs=[tmp_path / "not-yet" / "made"])


def test_build_estimate_from_the_last_package_count() -> None:
    assert _estimate(100, 1000, 10.0) == ", ~90s left (of ~1000 packages)"
    assert _estimate(5, 1000, 1.0) == ""  # too early to say
    assert _estimate(1200, 1000, 60.0) == ""  # past the last count: no made-up figure
    assert _estimate(100, None, 10.0) == ""


def test_a_damaged_cache_entry_is_detected(tmp_path: Path) -> None:
    entry = tmp_path / "bin"
    entry.mkdir()
    (entry / "kwok").write_bytes(b"#!kwok\n" * 100)
    assert cache.damaged(entry, ["kwok"]) is None  # an entry from before manifests: sealed now
    assert (entry / cache.MANIFEST).is_file()
    (entry / "kwok").write_bytes(b"#!kwok\n" * 50)  # truncated by a full disk or a killed copy
    assert "kwok differs from the build" in str(cache.damaged(entry, ["kwok"]))
    (entry / "kwok").unlink()
    assert cache.damaged(entry, ["kwok"]) == "missing kwok"


def test_a_damaged_download_is_fetched_again(mirror: Path) -> None:
    out = download.fetch("kwok", KWOK, lambda m: None)
    assert out is not None
    (out / "kwok").write_bytes(b"garbage")
    assert download.fetch("kwok", KWOK, lambda m: None) == out
    assert (out / "kwok").read_bytes() == b"#!kwok\n"
