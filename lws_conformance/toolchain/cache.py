"""Where binaries live: outside the clone, keyed by component and version (or source path).

`LWSC_CACHE_DIR` moves the cache (CI keeps it between runs); the default is
~/.cache/lws-conformance. A build writes into `<dir>.tmp` and renames, so a Ctrl-C never leaves a
half-built cache entry that a later run would trust. Each entry is sealed with a manifest (size,
mtime and sha256 per binary): a binary whose size or mtime changed is hashed again, and a
corrupt one is rebuilt rather than started.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("LWSC_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "lws-conformance"


def source_key(source: str) -> str:
    return "src-" + hashlib.sha256(str(Path(source).resolve()).encode()).hexdigest()[:12]


COVER_SUFFIX = "-cover"  # a coverage-instrumented build (profile key build.coverage) beside the plain one


def bin_dir(
    component: str,
    version: str,
    source: str | None = None,
    coverage: bool = False,
    replace: Mapping[str, str] | None = None,
) -> Path:
    """A build's cache entry; `replace` (build.go_replace of the component) keys it apart."""
    key = source_key(source) if source else version
    if replace:
        lines = "\n".join(f"{m} {t}" for m, t in sorted(replace.items()))
        key += "-r" + hashlib.sha256(lines.encode()).hexdigest()[:8]
    return cache_root() / "bin" / component / (key + COVER_SUFFIX if coverage else key)


def build_dir(component: str, key: str) -> Path:
    return cache_root() / "build" / f"{component}-{key}"


@contextmanager
def locked(name: str, shared: bool = False) -> Iterator[None]:
    """An exclusive file lock, so two `lwsc` processes (or xdist workers) never build at once;
    `shared`: one that many hold at once, while nobody holds it exclusively."""
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def size_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


MANIFEST = ".lwsc-manifest.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path) -> dict[str, int | str]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": _sha256(path)}


def seal(directory: Path, names: Collection[str]) -> None:
    """Record what the entry's binaries are, so later runs can tell a damaged one."""
    doc = {name: _stamp(directory / name) for name in names}
    (directory / MANIFEST).write_text(json.dumps(doc, indent=1))


def _sealed(binary: Path, manifest: dict[str, dict[str, object]]) -> dict[str, object] | None:
    """The manifest's entry for `binary` when its size and mtime still match (no hashing)."""
    want, st = manifest.get(binary.name) or {}, binary.stat()
    return want if want.get("size") == st.st_size and want.get("mtime_ns") == st.st_mtime_ns else None


def damaged(directory: Path, names: Collection[str]) -> str | None:
    """None when every binary is present and as sealed; else what is wrong. An entry from before
    manifests is sealed now (trusted once). Costs a stat per binary unless one changed."""
    missing = [n for n in names if not (directory / n).is_file()]
    if missing:
        return f"missing {', '.join(missing)}"
    manifest = directory / MANIFEST
    if not manifest.is_file():
        seal(directory, names)
        return None
    doc = json.loads(manifest.read_text())
    for name in names:
        if _sealed(directory / name, doc):
            continue
        want = doc.get(name) or {}
        if want.get("sha256") != _sha256(directory / name):
            size = (directory / name).stat().st_size
            return f"{name} differs from the build ({size} bytes, sealed {want.get('size')})"
    return None


def identity(binary: Path) -> str:
    """What a binary is, cheaply: its sealed sha256 when the cache manifest next to it still
    matches its size and mtime, else its path, size and mtime (a prebuilt binary given by path)."""
    manifest = binary.parent / MANIFEST
    want = _sealed(binary, json.loads(manifest.read_text()) if manifest.is_file() else {})
    if want and want.get("sha256"):
        return str(want["sha256"])
    st = binary.stat()
    return f"{binary.resolve()}:{st.st_size}:{st.st_mtime_ns}"
