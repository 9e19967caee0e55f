"""Provisioned-state snapshots of the local cluster.

Provisioning a local cluster — the LWS and Kueue CRDs installed until they are served, the
lws-system and kueue-system namespaces, the default StorageClass, the fake nodes as kwok left them,
Kueue's Topology and ResourceFlavor, the ServiceAccounts KCM makes — writes the same etcd state
for every cluster built from the same inputs, and it is most of a cold bring-up. So the first
cluster of a set of inputs is provisioned from scratch, stopped, and its etcd data directory kept
here; later clusters copy it and start their processes on it.

**Key**: a sha256 over every input that shapes the stored state (`inputs`): this format's
number, each binary's identity (its sealed sha256: a different LWS source tree is a different
binary), the rendered CRDs, the topology and the profile keys the provisioning reads, and the
text of the modules that provision. A different input is a different key, never the old snapshot.

**Per cluster, never stored**: webhook configurations (their URLs carry the cluster's ports) and
Events are deleted before the save and the webhooks created anew on every start; a cluster on other
ports than the snapshot's points the CRD conversion webhooks (LWS's and Kueue's) at its own
(`stale_conversions`), in etcd before its API server starts (`point_stored_conversions`: through
the API server each update rebuilds that CRD's storage, ~0.5 s for a big one); etcd keeps its
single member's stored peer URL, which it never dials; kwok's node leases are deleted before the
save (they name the stopped kwok as holder: a kwok started within their duration left every node
unmanaged, its pods Pending, until they expired) and kwok creates them anew and refreshes the
heartbeats. The PKI (a local test CA, 127.0.0.1 only) is part of the snapshot, shared by the
clusters started from it, so every stored CA reference (kube-root-ca.crt, conversion caBundles)
stays right.

**Integrity**: `manifest.json` records every file's size and sha256; `find` checks them and
removes a snapshot that differs (the next bring-up provisions from scratch and saves it again).
A save is written to a temporary directory and renamed, so a snapshot is whole or absent.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from ..install import pki
from ..profile import Profile
from ..toolchain import cache as bincache
from . import etcd_store

FORMAT = 1
MANIFEST = "manifest.json"
# The modules whose code decides what provisioning writes: a change there is a new key.
_PROVISIONING_CODE = ("boot.py", "components.py", "nodes.py", "snapshot.py")
STORED = ("etcd", "pki", "conversions.json")
_PER_CLUSTER_PKI = ("webhook", "kueue-metrics")  # copies made per cluster by LocalCluster


def root() -> Path:
    return bincache.cache_root() / "snapshots"


def inputs(profile: Profile, bins: dict[str, Path], crds: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything the stored state depends on (the key is their hash; kept in the manifest too)."""
    here = Path(__file__).parent
    raw = profile.raw
    return {
        "format": FORMAT,
        "binaries": {name: bincache.identity(path) for name, path in sorted(bins.items())},
        "versions": dict(sorted(profile.versions.items())),
        "crds": hashlib.sha256(json.dumps([_portable(c) for c in crds], sort_keys=True).encode()).hexdigest(),
        "topology": raw["topology"],
        "kueue": [profile.kueue_topology_name, profile.kueue_flavor_name],  # its controller flags are not state
        "node_grace_seconds": profile.node_grace_seconds,
        "pki": pki.KEY_TYPE,
        "code": {name: hashlib.sha256((here / name).read_bytes()).hexdigest() for name in _PROVISIONING_CODE},
    }


def conversion_webhooks(crds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CRDs whose conversion webhook URL and CA are per cluster: a restored cluster points
    them at its own webhook server (`{"spec": {"conversion": ...}}` patches)."""
    return [c for c in crds if ((c.get("spec") or {}).get("conversion") or {}).get("webhook")]


def point_stored_conversions(etcd_url: str, crds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Point the restored CRDs among `crds` (this cluster's, rendered) at this cluster's conversion
    webhooks in etcd itself, before the API server starts: it then serves them as stored, where an
    update through it rebuilds each CRD's storage (1.2 s for LWS's and Kueue's six, measured
    2026-12-06). The API server keeps CRDs as JSON in their v1beta1 form (conversion
    `webhookClientConfig`); only a URL is rewritten, and only where the stored CA and review
    versions are this cluster's. Returns the CRDs left to patch through the API server."""
    left = []
    for crd in crds:
        want = crd["spec"]["conversion"]["webhook"]
        key = f"/registry/apiextensions.k8s.io/customresourcedefinitions/{crd['metadata']['name']}"
        stored = etcd_store.get_json(etcd_url, key)
        conv = ((stored or {}).get("spec") or {}).get("conversion") or {}
        config = conv.get("webhookClientConfig") or {}
        if (
            (stored or {}).get("apiVersion") != "apiextensions.k8s.io/v1beta1"
            or conv.get("strategy") != crd["spec"]["conversion"].get("strategy")
            or conv.get("conversionReviewVersions") != want.get("conversionReviewVersions")
            or config.get("caBundle") != want["clientConfig"].get("caBundle")
            or set(config) != {"url", "caBundle"}
            or not want["clientConfig"].get("url")
        ):
            left.append(crd)
            continue
        config["url"] = want["clientConfig"]["url"]
        etcd_store.put_json(etcd_url, key, stored)
    return left


def _portable(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD without its per-cluster conversion webhook URL and CA."""
    if not conversion_webhooks([crd]):
        return crd
    out: dict[str, Any] = json.loads(json.dumps(crd))
    out["spec"]["conversion"]["webhook"].pop("clientConfig", None)
    return out


def key(what: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _files(directory: Path, parts: tuple[str, ...]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    found = [f for part in parts for f in [directory / part, *(directory / part).rglob("*")]]
    for path in sorted(f for f in found if f.is_file()):
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out[str(path.relative_to(directory))] = [path.stat().st_size, digest.hexdigest()]
    return out


def find(snapshot_key: str) -> Path | None:
    """The snapshot (a directory: etcd/, pki/, conversions.json) if present and whole; a damaged
    one is removed, so the caller provisions from scratch and saves it again."""
    where = root() / snapshot_key
    manifest = where / MANIFEST
    if not manifest.is_file():
        return None
    try:
        recorded = json.loads(manifest.read_text())["files"]
    except (ValueError, KeyError):
        recorded = None
    if recorded is None or _files(where, STORED) != recorded or _expiring(where):
        shutil.rmtree(where, ignore_errors=True)
        return None
    return where


def _expiring(where: Path) -> bool:
    """Its PKI (valid a year) expires within a month: make a new one rather than start on it."""
    left = pki.Pki.at(where / "pki").expires() - dt.datetime.now(dt.UTC)
    return left < dt.timedelta(days=30)


KEEP = 16  # snapshots kept (least recently used go first): mutant and matrix runs make many keys
_BLOCK = 1 << 20


def _sparse_copy(src: str, dst: str) -> None:
    """Copy leaving all-zero blocks as holes: etcd preallocates its 64 MiB WAL segment, mostly
    zeros, so a snapshot takes a few MiB of disk instead of ~70 (etcd reads holes as zeros)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while block := fin.read(_BLOCK):
            if block.count(0) == len(block):
                fout.seek(len(block), os.SEEK_CUR)
            else:
                fout.write(block)
        fout.truncate()
    shutil.copystat(src, dst)


def _prune(keep: int = KEEP) -> None:
    """Drop the least recently used snapshots beyond `keep`, and temporary directories of saves
    whose process is gone (a Ctrl-C during a save)."""
    for tmp in root().glob("*.tmp"):
        try:
            os.kill(int(tmp.name.split(".")[-2]), 0)
        except (ProcessLookupError, ValueError, IndexError):
            shutil.rmtree(tmp, ignore_errors=True)
    done = sorted(
        (d for d in root().iterdir() if (d / MANIFEST).is_file()), key=lambda d: (d / MANIFEST).stat().st_mtime
    )
    for old in done[: max(0, len(done) - keep)]:
        shutil.rmtree(old, ignore_errors=True)


def save(snapshot_key: str, cluster_dir: Path, what: dict[str, Any], crds: list[dict[str, Any]]) -> None:
    """Keep a stopped cluster's etcd data and PKI as the snapshot of `snapshot_key`, with the
    CRD conversion webhooks its state points at (another process saving the same key at the same
    time is harmless: the first rename wins)."""
    where = root() / snapshot_key
    tmp = where.with_name(f"{where.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(cluster_dir / "etcd", tmp / "etcd", copy_function=_sparse_copy)
    shutil.copytree(cluster_dir / "pki", tmp / "pki", ignore=shutil.ignore_patterns(*_PER_CLUSTER_PKI))
    conversions = {c["metadata"]["name"]: c["spec"]["conversion"] for c in conversion_webhooks(crds)}
    (tmp / "conversions.json").write_text(json.dumps(conversions, sort_keys=True))
    (tmp / MANIFEST).write_text(json.dumps({"inputs": what, "files": _files(tmp, STORED)}, indent=1))
    try:
        tmp.rename(where)
    except OSError:  # saved meanwhile by another process
        shutil.rmtree(tmp, ignore_errors=True)
    _prune()


def restore(snap: Path, cluster_dir: Path) -> None:
    """A private copy of the snapshot's etcd data and PKI for one cluster."""
    for part in ("etcd", "pki"):
        shutil.rmtree(cluster_dir / part, ignore_errors=True)
        shutil.copytree(snap / part, cluster_dir / part, copy_function=_sparse_copy)
    os.utime(snap / MANIFEST)  # recently used: pruned last


def stale_conversions(snap: Path, crds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CRDs whose conversion webhook (URL with this cluster's port, CA) differs from the one
    stored: a cluster on other ports than the snapshot's must point them at its own server."""
    stored = json.loads((snap / "conversions.json").read_text())
    return [c for c in conversion_webhooks(crds) if stored.get(c["metadata"]["name"]) != c["spec"]["conversion"]]
