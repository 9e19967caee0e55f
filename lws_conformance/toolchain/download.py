"""Official release binaries for etcd, Kubernetes and kwok, verified by sha256 before they are
cached (as kwokctl and setup-envtest obtain them), when the release servers answer.

`fetch` returns the cache directory, or None when the servers cannot be reached or do not publish
the version (the caller then builds from source, as on machines without internet access). A
checksum that does not match is refused: nothing is cached and the run stops (InfraError).

Checksums come from where each project publishes them: Kubernetes a `<binary>.sha256` file next
to each binary on dl.k8s.io; etcd a `SHA256SUMS` file in the GitHub release; kwok publishes none,
so the digest GitHub records for each release asset (the releases API, `assets[].digest`).

`LWSC_DOWNLOAD=off` disables downloads. `LWSC_DOWNLOAD_MIRROR=http://host:port` fetches
`<mirror>/<host>/<path>` instead of `https://<host>/<path>` (air-gapped mirrors; the tests).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InfraError
from . import cache
from .recipes import RECIPES

Progress = Callable[[str], None]
TIMEOUT_S = 5.0  # per request; an unreachable server costs at most this before the Go build


_unreachable: set[str] = set()  # hosts that did not answer in this process: not asked again


class Unavailable(Exception):
    """The server did not answer, or does not publish this file: build from source instead."""


@dataclass(frozen=True)
class Asset:
    binary: str  # name in the cache directory
    url: str  # the file, or the .tar.gz holding it
    member: str | None  # path inside the tarball; None for a plain binary


def enabled() -> bool:
    return os.environ.get("LWSC_DOWNLOAD", "auto").lower() not in ("off", "0", "false", "no")


def arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def url(host: str, path: str) -> str:
    mirror = os.environ.get("LWSC_DOWNLOAD_MIRROR")
    return f"{mirror.rstrip('/')}/{host}{path}" if mirror else f"https://{host}{path}"


def assets(component: str, version: str) -> list[Asset]:
    """Where each binary of `component` is published (empty: no official binary; build it)."""
    a = arch()
    if component == "kubernetes":
        return [
            Asset(b, url("dl.k8s.io", f"/release/{version}/bin/linux/{a}/{b}"), None)
            for b in RECIPES["kubernetes"].binaries
        ]
    if component == "etcd":
        tarball = f"etcd-{version}-linux-{a}"
        path = f"/etcd-io/etcd/releases/download/{version}/{tarball}.tar.gz"
        return [Asset("etcd", url("github.com", path), f"{tarball}/etcd")]
    if component == "kwok":
        path = f"/kubernetes-sigs/kwok/releases/download/{version}/kwok-linux-{a}"
        return [Asset("kwok", url("github.com", path), None)]
    return []


def expected_sha256(component: str, version: str, asset: Asset) -> str:
    """The published checksum of the file at `asset.url`."""
    filename = asset.url.rsplit("/", 1)[-1]
    if component == "kubernetes":
        return _hex(_get(asset.url + ".sha256").decode().split()[0], asset.url + ".sha256")
    if component == "etcd":
        sums_url = asset.url.rsplit("/", 1)[0] + "/SHA256SUMS"
        for line in _get(sums_url).decode().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].lstrip("*") == filename:
                return _hex(parts[0], sums_url)
        raise InfraError(f"{sums_url} lists no checksum for {filename}; nothing cached")
    if component == "kwok":
        api = url("api.github.com", f"/repos/kubernetes-sigs/kwok/releases/tags/{version}")
        for item in json.loads(_get(api))["assets"]:
            if item.get("name") == filename and str(item.get("digest", "")).startswith("sha256:"):
                return _hex(item["digest"].split(":", 1)[1], api)
        raise InfraError(f"{api} records no sha256 digest for {filename}; nothing cached")
    raise ValueError(component)


def fetch(component: str, version: str, progress: Progress) -> Path | None:
    """Download, verify and cache every binary of `component`; None when unavailable."""
    wanted = assets(component, version)
    if not wanted or not enabled():
        return None
    out = cache.bin_dir(component, version)
    tmp = cache.cache_root() / "downloads" / f"{component}-{version}"  # the bin dir only on success
    with cache.locked(f"{component}-{version}"):
        if out.is_dir() and cache.damaged(out, RECIPES[component].binaries) is None:
            return out
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            for asset in wanted:
                progress(f"{component} {version}: downloading {asset.url}")
                data = _get(asset.url)
                want = expected_sha256(component, version, asset)
                got = hashlib.sha256(data).hexdigest()
                if got != want:
                    raise InfraError(
                        f"sha256 of {asset.url} is {got}, the published checksum is {want}: refused, "
                        f"nothing cached (a corrupted or tampered download; LWSC_DOWNLOAD=off builds from source)"
                    )
                target = tmp / asset.binary
                target.write_bytes(_extract(data, asset) if asset.member else data)
                target.chmod(0o755)
        except Unavailable as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            progress(f"{component} {version}: no release download ({exc}); building from source")
            return None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        cache.seal(tmp, RECIPES[component].binaries)
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(out)
        progress(f"{component} {version}: release binaries verified (sha256) -> {out}")
        return out


def _get(address: str) -> bytes:
    host = urllib.parse.urlsplit(address).netloc
    if host in _unreachable:
        raise Unavailable(f"{host} did not answer earlier in this run")
    try:
        with urllib.request.urlopen(address, timeout=TIMEOUT_S) as resp:  # noqa: S310 (https or a chosen mirror)
            data: bytes = resp.read()
            return data
    except urllib.error.HTTPError as exc:
        raise Unavailable(f"{address}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        _unreachable.add(host)
        raise Unavailable(f"{address} unreachable: {getattr(exc, 'reason', exc)}") from exc


def _hex(value: str, where: str) -> str:
    value = value.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise InfraError(f"{where} does not hold a sha256 checksum ({value[:20]!r}); nothing cached")
    return value


def _extract(data: bytes, asset: Asset) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        try:
            member = tar.extractfile(asset.member or "")
        except KeyError:
            member = None
        if member is None:
            raise InfraError(f"{asset.url} has no file {asset.member}; nothing cached")
        return member.read()
