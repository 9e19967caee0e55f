"""A base image for the harness image (the Containerfile's BASE_IMAGE), made on this machine for
engines that cannot pull `python:3.12-slim`: `scripts/build-base-image`.

Debian bookworm ships Python 3.11 only, so the image is
- a Debian rootfs (`mmdebstrap --variant=essential`, `nodeimage.debian_rootfs`, cached like the
  kind node's) with the shared libraries CPython's extension modules link (OpenSSL, libffi,
  zlib, bz2, lzma, sqlite, readline, ncurses, uuid, expat, crypt, nsl), no documentation;
- plus a Python 3.12 built for this glibc (e.g. a pyenv or `make altinstall` build, shared or
  static libpython): its interpreter in /usr/local/bin, its standard library in
  /usr/local/lib/python3.12 without the test suite, IDLE, tkinter, turtledemo, ensurepip and the
  static-build config directory, and pip (from its site-packages, nothing else from there);
  libpython in /usr/lib/<multiarch>, a directory the loader searches by default;
- imported with `docker import` as one layer, `lwsc.local/python:<version>-<key>`, the key hashing
  the Debian inputs, the Python files and this module; an image whose label matches is reused.

Before the tag is printed, a container of the image (no network) imports ssl, sqlite3, ctypes,
lzma, bz2, zlib, uuid, readline and pip: a Python that needs a library the rootfs lacks fails here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InfraError, UserError
from . import cache, nodeimage
from .engine import Engine
from .gobuild import Progress

PACKAGES = [
    "libssl3",
    "libffi8",
    "zlib1g",
    "libbz2-1.0",
    "liblzma5",
    "libsqlite3-0",
    "libreadline8",
    "libncursesw6",
    "libuuid1",
    "libexpat1",
    "libcrypt1",
    "libnsl2",
]
DEBIAN_OPTIONS = (
    "--variant=essential",
    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",  # merged /usr without the usrmerge package (and Perl)
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/info/*",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
)
# Top-level entries of lib/python3.X left out (site-packages: only pip is taken from it).
STDLIB_SKIP = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages")
SMOKE = "import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, readline, pip, sys; print(sys.version.split()[0])"
PATH_ENV = "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class HostPython:
    """What `python` is: its prefix, version and the pieces the image takes from it."""

    prefix: Path
    version: str  # 3.12.1
    short: str  # 3.12
    multiarch: str  # x86_64-linux-gnu
    libpython: Path | None  # the shared library, when built with --enable-shared

    @property
    def executable(self) -> Path:
        return self.prefix / "bin" / f"python{self.short}"

    @property
    def stdlib(self) -> Path:
        return self.prefix / "lib" / f"python{self.short}"


PROBE = (
    "import json, sys, sysconfig; v = sysconfig.get_config_var; print(json.dumps({"
    "'prefix': sys.base_prefix, 'version': sys.version.split()[0], 'short': v('VERSION'), "
    "'multiarch': v('MULTIARCH') or '', 'shared': bool(v('Py_ENABLE_SHARED')), 'ldlibrary': v('INSTSONAME') or ''}))"
)


def host_python(python: str, want: str = "3.12") -> HostPython:
    """The installation `python` belongs to (a venv's python is followed to its base)."""
    proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"cannot run {python}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    info = json.loads(proc.stdout)
    if info["short"] != want:
        raise UserError(
            f"{python} is Python {info['version']}, the image needs {want}; set PYTHON=/path/to/python{want}"
        )
    prefix = Path(info["prefix"])
    libpython = prefix / "lib" / info["ldlibrary"] if info["shared"] else None
    host = HostPython(prefix, info["version"], info["short"], info["multiarch"], libpython)
    missing = [p for p in (host.executable, host.stdlib / "os.py", libpython) if p is not None and not p.exists()]
    if missing or not host.multiarch:
        raise UserError(
            f"{python} is not a self-contained installation under {prefix} (missing {missing or 'MULTIARCH'})"
        )
    return host


def _skipped(rel: Path) -> bool:
    top = rel.parts[0]
    if top in STDLIB_SKIP or top.startswith("config-"):
        return True
    if rel.name.endswith((".opt-1.pyc", ".opt-2.pyc")):
        return True
    return len(rel.parts) > 1 and top == "lib-dynload" and rel.name.startswith("_tkinter")


def python_files(host: HostPython) -> list[tuple[str, Path]]:
    """(path in the image, file on this machine) of everything the image takes from `host`."""
    short = host.short
    out: list[tuple[str, Path]] = [(f"usr/local/bin/python{short}", host.executable)]
    if host.libpython is not None:
        out.append((f"usr/lib/{host.multiarch}/{host.libpython.name}", host.libpython.resolve()))
    for path in sorted(host.stdlib.rglob("*")):
        rel = path.relative_to(host.stdlib)
        if path.is_file() and not path.is_symlink() and not _skipped(rel):
            out.append((f"usr/local/lib/python{short}/{rel}", path))
    site = host.stdlib / "site-packages"
    for top in sorted(site.glob("pip*")):
        if top.name == "pip" or (top.name.startswith("pip-") and top.name.endswith(".dist-info")):
            for path in sorted(p for p in top.rglob("*") if p.is_file()):
                out.append((f"usr/local/lib/python{short}/site-packages/{path.relative_to(site)}", path))
    return out


def key(host: HostPython, files: list[tuple[str, Path]], mirror: str) -> tuple[str, str]:
    """(the Debian rootfs's key, the image's key)."""
    debian = hashlib.sha256(json.dumps([nodeimage.DEBIAN_SUITE, mirror, PACKAGES, DEBIAN_OPTIONS]).encode())
    h = hashlib.sha256(debian.hexdigest().encode())
    for name, path in files:
        h.update(name.encode())
        st = path.stat()
        h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with Path(__file__).open("rb") as fh:
        h.update(fh.read())
    return debian.hexdigest()[:12], h.hexdigest()[:12]


def _add(tar: tarfile.TarFile, name: str, path: Path, strip: str | None) -> None:
    """`path` as `name`, owned by root; shared libraries without their debug sections."""
    info = tar.gettarinfo(str(path), arcname=name)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if strip and (path.name.endswith(".so") or ".so." in path.name):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / path.name
            if subprocess.run([strip, "--strip-debug", "-o", str(out), str(path)], capture_output=True).returncode == 0:
                info.size = out.stat().st_size
                with out.open("rb") as fh:
                    tar.addfile(info, fh)
                return
    with path.open("rb") as fh:
        tar.addfile(info, fh)


def _link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
    tar.addfile(info)


def write_rootfs(debian: Path, host: HostPython, files: list[tuple[str, Path]], out: Path) -> None:
    """The Debian rootfs tar with the Python files (and python3 / python links) added."""
    strip = shutil.which("strip")
    tmp = out.with_suffix(".tmp")
    with tarfile.open(debian) as src, tarfile.open(tmp, "w") as tar:
        dirs: set[str] = set()  # a path twice in one layer is refused by the engine
        for member in src:
            tar.addfile(member, src.extractfile(member) if member.isfile() else None)
            dirs.add(member.name.removeprefix("./").rstrip("/"))
        for name, path in files:
            nodeimage.add_parent_dirs(tar, dirs, name)
            _add(tar, name, path, strip)
        for link in ("python3", "python"):
            _link(tar, f"usr/local/bin/{link}", f"python{host.short}")
    tmp.rename(out)


PIP_SCRIPT = '#!/bin/sh\nexec /usr/local/bin/python3 -m pip "$@"\n'


def ensure(engine: Engine, python: str, mirror: str, progress: Progress) -> str:
    """The base image on `engine` (built when missing); its reference."""
    host = host_python(python)
    files = python_files(host)
    debian_key, image_key = key(host, files, mirror)
    ref = f"{nodeimage.LOCAL}/python:{host.version}-{image_key}"
    if nodeimage.present(engine, ref, image_key):
        return ref
    debian = nodeimage.debian_rootfs("python-base", debian_key, PACKAGES, mirror, progress, DEBIAN_OPTIONS)
    work = cache.build_dir("python-base", image_key)
    work.mkdir(parents=True, exist_ok=True)
    pip = work / "pip"
    pip.write_text(PIP_SCRIPT)
    pip.chmod(0o755)
    tar = work / "rootfs.tar"
    progress(f"base image: Debian {nodeimage.DEBIAN_SUITE} libraries + Python {host.version} from {host.prefix}")
    write_rootfs(debian, host, [*files, ("usr/local/bin/pip", pip)], tar)
    argv = ["import", "--change", PATH_ENV, "--change", "ENV LANG=C.UTF-8", "--change", 'CMD ["python3"]']
    engine.run(*argv, "--change", f"LABEL lwsc.key={image_key}", str(tar), ref)
    shutil.rmtree(work, ignore_errors=True)
    smoke = engine.run("run", "--rm", "--network=none", "--user", "65532", ref, "python3", "-c", SMOKE, check=False)
    if smoke.strip() != host.version:
        engine.run("rmi", ref, check=False)
        raise InfraError(f"the base image's Python does not start or lacks a library: {smoke.strip()[-300:]!r}")
    return ref


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="build-base-image", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=os.environ.get("PYTHON", ".venv/bin/python"))
    ap.add_argument("--mirror", default=os.environ.get("DEBIAN_MIRROR", nodeimage.NodeInputs.mirror))
    ap.add_argument("--docker", default=os.environ.get("ENGINE", "docker"))
    args = ap.parse_args(argv)
    engine = Engine(os.environ.get("DOCKER_HOST", ""), private=False, docker=args.docker)
    try:
        ref = ensure(engine, args.python, args.mirror, lambda msg: print(f"build-base-image: {msg}", file=sys.stderr))
    except (UserError, InfraError) as exc:
        print(f"build-base-image: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UserError) else 3
    print(ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
