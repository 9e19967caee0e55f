"""A kind node image built on this machine, for engines that cannot pull `kindest/node`.

What goes in, all from sources this machine reaches:
- a Debian rootfs (`mmdebstrap`, Debian's systemd, containerd, runc, iptables, nftables, CNI
  plugins, ...) with kind's own base-image files from the kind module (`images/base/files`);
- the node's kubelet, kubeadm and kubectl, built from the same `k8s.io/kubernetes` module set as
  the local cluster's control plane;
- the images kubeadm starts, each named with the version it really is: kube-apiserver,
  kube-controller-manager, kube-scheduler and kube-proxy (the same build), etcd (versions.etcd),
  CoreDNS (kind.coredns_version) and pause (compiled from the Kubernetes module's
  build/pause/linux/pause.c), loaded into the node's containerd ahead of time;
- the harness's own images every cluster needs, loaded into the node's containerd too (so no
  cluster loads them again): the pod network daemon (`kindnode/cni-daemon`) and the e2e test image
  agnhost, also under the workload tags the suites' pods name (`WORKLOAD_TAGS`);
- the Go runtime's garbage collector of the node's kubelet and containerd (systemd drop-ins,
  `GO_GC`): a kind cluster lives minutes, so memory is traded for CPU as on the local cluster.

The image is tagged `lwsc.local/kind-node:<kubernetes>-<key>`, the key hashing every input
(binaries, packages, files, this module), and labelled with it: an image whose label does not
match is rebuilt. The rootfs tar is kept in the cache under its own key.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InfraError, UserError
from . import cache
from .engine import FILES, Engine
from .gobuild import Progress, module_download

DEBIAN_SUITE = "bookworm"
PACKAGES = [
    "systemd",
    "systemd-sysv",
    "dbus",
    "conntrack",
    "iptables",
    "nftables",
    "iproute2",
    "ethtool",
    "util-linux",
    "mount",
    "kmod",
    "libseccomp2",
    "pigz",
    "bash",
    "ca-certificates",
    "procps",
    "jq",
    "containerd",
    "runc",
    "containernetworking-plugins",
    "socat",
]
BUSYBOX_TOOLS = ("sh", "ping", "nslookup", "nc", "cat", "head", "sleep", "kill", "hostname", "env", "true")
PAUSE_VERSION = "3.10.2"  # build/pause/Makefile TAG at Kubernetes v1.36
REGISTRY = "registry.k8s.io"
LOCAL = "lwsc.local"
BUILD_LABEL = "lwsc.kind-node-build=1"  # the containers a node image build runs or creates
KIND_NODE_LABEL = "io.x-k8s.kind.cluster"  # on every kind node container
WAIT_CONTAINERD = (
    "for i in $(seq 1 100); do [ -S /run/containerd/containerd.sock ] && /usr/bin/ctr version >/dev/null 2>&1 "
    "&& exit 0; sleep 0.1; done; exit 1"
)
PATH_ENV = "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The workload images the suites name, on a kind node: agnhost (Kubernetes' e2e test image)
# pausing, under two tags so a rolling update changes the image for real (suite name -> tag).
WORKLOAD_TAGS = {"workload": "a", "workload-update": "b"}
# GOGC and the soft GOMEMLIMIT of the node's Go daemons (the local cluster's GOGC; each limit
# ~4x the daemon's idle heap on a kind node, past which Go collects as needed whatever GOGC says).
GO_GC = "400"
GO_MEMORY_LIMIT = {"kubelet": "256MiB", "containerd": "256MiB"}
NODE_SETUP = r"""
set -eu
chmod 755 /kind /kind/bin
find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
  /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
  /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
echo ReadKMsg=no >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init
systemctl enable kubelet.service containerd.service undo-mount-hacks.service
systemctl mask systemd-binfmt.service
mkdir -p /etc/kubernetes/manifests /opt/cni/bin /etc/cni/net.d /usr/local/sbin
for p in /usr/lib/cni/*; do ln -sf "$p" /opt/cni/bin/; done
ln -sf /usr/bin/containerd /usr/local/bin/containerd
ln -sf /usr/bin/containerd-shim-runc-v2 /usr/local/bin/containerd-shim-runc-v2
ln -sf /usr/sbin/runc /usr/local/sbin/runc
# A pod sandbox asks for oom_score_adj -998, which needs a capability root may lack here.
sed -i -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
  -e 's#sandbox_image = .*#sandbox_image = "@PAUSE@"#' /etc/containerd/config.toml
/usr/bin/ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer|length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json
"""


@dataclass(frozen=True)
class NodeInputs:
    """Everything the node image is made of (`lwsc build --kind` and the kind provider)."""

    kubernetes: str
    etcd: str
    coredns: str
    kind_version: str
    binaries: dict[str, Path]  # kubelet kubeadm kubectl kube-proxy kube-apiserver ... etcd coredns crictl agnhost
    mirror: str = "http://deb.debian.org/debian"

    def images(self) -> dict[str, str]:
        """image reference -> binary, for the images loaded into the node ahead of time."""
        out = {
            f"{REGISTRY}/{b}:{self.kubernetes}": b
            for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")
        }
        out[f"{REGISTRY}/etcd:{self.etcd}"] = "etcd"
        out[f"{REGISTRY}/coredns/coredns:{self.coredns}"] = "coredns"
        out[f"{REGISTRY}/pause:{PAUSE_VERSION}"] = "pause"
        return out


def pause_ref() -> str:
    return f"{REGISTRY}/pause:{PAUSE_VERSION}"


def workload_ref(kubernetes: str, tag: str) -> str:
    return f"{LOCAL}/workload:{kubernetes}-{tag}"


def go_dropin(daemon: str) -> tuple[str, bytes, int]:
    """The systemd drop-in that starts `daemon` with `GO_GC` and its `GO_MEMORY_LIMIT`."""
    text = f'[Service]\nEnvironment="GOGC={GO_GC}" "GOMEMLIMIT={GO_MEMORY_LIMIT[daemon]}"\n'
    return (f"/etc/systemd/system/{daemon}.service.d/20-lwsc-go-gc.conf", text.encode(), 0o644)


def kind_base_files(kind_version: str) -> Path:
    return Path(module_download("sigs.k8s.io/kind", kind_version)["Dir"]) / "images" / "base" / "files"


def _digest(h: hashlib._Hash, path: Path) -> None:
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)


def _tree_digest(h: hashlib._Hash, root: Path) -> None:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode())
        _digest(h, path)


def rootfs_key(inputs: NodeInputs) -> str:
    return hashlib.sha256(json.dumps([DEBIAN_SUITE, inputs.mirror, PACKAGES]).encode()).hexdigest()[:12]


def node_key(inputs: NodeInputs, pause_c: Path) -> str:
    h = hashlib.sha256()
    h.update(
        json.dumps([inputs.kubernetes, inputs.etcd, inputs.coredns, inputs.kind_version, rootfs_key(inputs)]).encode()
    )
    for name in sorted(inputs.binaries):
        h.update(name.encode())
        _digest(h, inputs.binaries[name])
    _digest(h, pause_c)
    _tree_digest(h, FILES)
    _tree_digest(h, kind_base_files(inputs.kind_version))
    _digest(h, Path(__file__))
    return h.hexdigest()[:12]


def node_tag(inputs: NodeInputs, key: str) -> str:
    return f"{LOCAL}/kind-node:{inputs.kubernetes}-{key}"


def helper_tag(name: str, key: str) -> str:
    return f"{LOCAL}/{name}:{key}"


def _label(engine: Engine, ref: str) -> str | None:
    out = subprocess.run(
        [engine.docker, "image", "inspect", "--format", '{{ index .Config.Labels "lwsc.key" }}', ref],
        capture_output=True,
        text=True,
        env=engine.env(),
    )
    return out.stdout.strip() if out.returncode == 0 else None


def present(engine: Engine, ref: str, key: str) -> bool:
    return _label(engine, ref) == key


class Link(str):
    """A symbolic link's target, as the source of a tar entry."""


def _tar(entries: Iterable[tuple[str, Path | bytes | Link, int]]) -> bytes:
    """A tar stream of (path in the image, source file or content, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        dirs: set[str] = set()
        for name, src, mode in entries:
            add_parent_dirs(tar, dirs, name)
            if name.endswith("/"):  # a directory of its own (e.g. /tmp, mode 1777)
                info = tarfile.TarInfo(name.strip("/"))
                info.type, info.mode = tarfile.DIRTYPE, mode
                tar.addfile(info)
                continue
            if isinstance(src, Link):
                info = tarfile.TarInfo(name.strip("/"))
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(src), mode
                tar.addfile(info)
                continue
            data = src.read_bytes() if isinstance(src, Path) else src
            info = tarfile.TarInfo(name.strip("/"))
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def import_image(
    engine: Engine, ref: str, entries: list[tuple[str, Path | bytes | Link, int]], changes: list[str], key: str
) -> None:
    argv = ["import"]
    for change in [PATH_ENV, *changes, f"LABEL lwsc.key={key}"]:
        argv += ["--change", change]
    engine.run(*argv, "-", ref, stdin=_tar(entries))


Entries = list[tuple[str, Path | bytes | Link, int]]


def derive_image(engine: Engine, base: str, ref: str, entries: Entries, changes: list[str], key: str) -> None:
    """`base` plus files, committed as `ref` (for images that need the rootfs's userland)."""
    cid = engine.run("create", "--label", BUILD_LABEL, base, "/bin/true").strip()
    try:
        engine.run("cp", "-", f"{cid}:/", stdin=_tar(entries))
        argv = ["commit"]
        for change in [*changes, f"LABEL lwsc.key={key}"]:
            argv += ["--change", change]
        engine.run(*argv, cid, ref)
    finally:
        engine.run("rm", "-f", cid, check=False)


def build_pause(pause_c: Path, out_dir: Path) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        raise UserError("building the kind node image needs gcc (for the pause binary); install gcc")
    out = out_dir / "pause"
    proc = subprocess.run(
        [gcc, "-static", "-O2", f"-DVERSION=v{PAUSE_VERSION}", "-o", str(out), str(pause_c)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise InfraError(f"compiling {pause_c} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return out


def rootfs(inputs: NodeInputs, progress: Progress) -> Path:
    """The node's Debian rootfs tar (cached by package list, suite and mirror)."""
    return debian_rootfs("rootfs", rootfs_key(inputs), PACKAGES, inputs.mirror, progress)


def debian_rootfs(
    name: str,
    key: str,
    packages: list[str],
    mirror: str,
    progress: Progress,
    options: Sequence[str] = ("--variant=minbase",),
) -> Path:
    """A Debian DEBIAN_SUITE rootfs tar made by `mmdebstrap` with `packages` (and `options`),
    cached as `<cache>/kind/<name>-<suite>-<key>.tar`: `key` must hash everything that goes in."""
    out = cache.cache_root() / "kind" / f"{name}-{DEBIAN_SUITE}-{key}.tar"
    if out.is_file() and (out.with_suffix(".ok")).is_file():
        return out
    tool = shutil.which("mmdebstrap")
    if tool is None:
        raise UserError(
            "building a Debian rootfs needs mmdebstrap (`scripts/bootstrap --kind` or "
            "`apt-get install mmdebstrap`), or give a node image with --set kind.node_image=..."
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    log = out.with_suffix(".log")
    progress(f"Debian {DEBIAN_SUITE} rootfs ({name}) from {mirror} (log {log}; ~3 min)")
    started = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.run(
            [tool, "--format=tar", *options, f"--include={','.join(packages)}", DEBIAN_SUITE, str(tmp), mirror],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise InfraError(f"mmdebstrap failed (exit {proc.returncode}); log: {log}")
    tmp.rename(out)
    out.with_suffix(".ok").write_text(f"{time.monotonic() - started:.0f}s\n")
    return out


@dataclass(frozen=True)
class Built:
    node: str  # "" when only the helper images were asked for
    cni: str
    agnhost: str
    workloads: dict[str, str]  # suite image name -> the workload tag of agnhost

    @property
    def preloaded(self) -> frozenset[str]:
        """The harness's images the node image's containerd holds (none without a node image)."""
        return frozenset((self.cni, self.agnhost, *self.workloads.values())) if self.node else frozenset()


def add_parent_dirs(tar: tarfile.TarFile, dirs: set[str], name: str) -> None:
    """Add a 0755 directory entry for every parent of `name` not in `dirs` yet (and record it)."""
    parts = name.strip("/").split("/")
    for i in range(1, len(parts)):
        d = "/".join(parts[:i])
        if d not in dirs:
            dirs.add(d)
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)


def remove_build_leftovers(engine: Engine) -> list[str]:
    """Remove the containers an interrupted build left (a killed process never reached its
    `finally`); never a kind node: `docker commit` keeps the build container's labels in the node
    image, so every node of a cluster made from it carries BUILD_LABEL too."""
    ours = engine.run("ps", "-aq", "--filter", f"label={BUILD_LABEL}").split()
    nodes = engine.run("ps", "-aq", "--filter", f"label={BUILD_LABEL}", "--filter", f"label={KIND_NODE_LABEL}")
    left = [c for c in ours if c not in nodes.split()]
    if left:
        engine.run("rm", "-f", *left, check=False)
    return left


def ensure(engine: Engine, inputs: NodeInputs, progress: Progress, node: bool = True) -> Built:
    """The node image (unless `node` is false) and the helper images on `engine`, each built
    when missing or not what `inputs` make."""
    k8s_dir = Path(module_download("k8s.io/kubernetes", inputs.kubernetes)["Dir"])
    pause_c = k8s_dir / "build" / "pause" / "linux" / "pause.c"
    key = node_key(inputs, pause_c)
    workloads = {name: workload_ref(inputs.kubernetes, tag) for name, tag in WORKLOAD_TAGS.items()}
    built = Built(
        node_tag(inputs, key) if node else "", helper_tag("kind-cni", key), helper_tag("agnhost", key), workloads
    )
    wanted = [r for r in (built.node, built.cni, built.agnhost) if r]
    if all(present(engine, r, key) for r in wanted):
        _tag_workloads(engine, built)
        return built
    with cache.locked(f"kind-node-{key}"):
        remove_build_leftovers(engine)
        started = time.monotonic()
        work = cache.build_dir("kind-node", key)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        binaries = {**inputs.binaries, "pause": build_pause(pause_c, work)}
        base = helper_tag("kind-rootfs", rootfs_key(inputs))
        if not present(engine, base, rootfs_key(inputs)):
            tar = rootfs(inputs, progress)
            progress(f"kind node image: importing the rootfs as {base}")
            engine.run("import", "--change", "LABEL lwsc.key=" + rootfs_key(inputs), str(tar), base)
        if not present(engine, built.cni, key):
            derive_image(
                engine,
                base,
                built.cni,
                [
                    ("/usr/local/bin/cni-daemon", FILES / "cni-daemon", 0o755),
                    ("/usr/local/bin/kubectl", binaries["kubectl"], 0o755),
                ],
                ['ENTRYPOINT ["/usr/local/bin/cni-daemon"]'],
                key,
            )
        if not present(engine, built.agnhost, key):
            # agnhost's `pause` by default: a container that runs until it is stopped and binds
            # no port, so several in one pod coexist; tests that need a server give its args.
            # Debian's static busybox gives the tests a shell, nslookup and nc inside a pod.
            entries: list[tuple[str, Path | bytes | Link, int]] = [("/agnhost", binaries["agnhost"], 0o755)]
            entries.append(("/bin/busybox", binaries["busybox"], 0o755))
            entries.append(("/tmp/", b"", 0o1777))
            entries += [(f"/bin/{tool}", Link("busybox"), 0o777) for tool in BUSYBOX_TOOLS]
            import_image(engine, built.agnhost, entries, ['ENTRYPOINT ["/agnhost"]', 'CMD ["pause"]'], key)
        _tag_workloads(engine, built)
        if built.node and not present(engine, built.node, key):
            progress("kind node image: component images (" + ", ".join(inputs.images()) + ")")
            for ref, binary in inputs.images().items():
                path = f"/usr/local/bin/{binary}"
                entries = [(path, binaries[binary], 0o755)]
                changes = [f'ENTRYPOINT ["{path}"]']
                if binary == "kube-proxy":  # it runs iptables / nft: the rootfs's userland
                    derive_image(engine, base, ref, entries, changes, key)
                else:
                    import_image(engine, ref, entries, changes, key)
            progress(f"kind node image: assembling {built.node}")
            _assemble(engine, inputs, base, binaries, built.node, key, sorted(built.preloaded))
            progress(f"kind node image: built {built.node} in {time.monotonic() - started:.0f}s")
        shutil.rmtree(work, ignore_errors=True)
        prune_stale(engine, key)
        return built


def _tag_workloads(engine: Engine, built: Built) -> None:
    for ref in built.workloads.values():
        engine.run("tag", built.agnhost, ref)


def prune_stale(engine: Engine, key: str) -> list[str]:
    """Remove the harness's node and helper images of other keys (each node image is ~1.4 GB) and
    the layers nothing references any more; an image a running cluster uses stays."""
    refs = engine.run("images", "--format", "{{.Repository}}:{{.Tag}}", check=False).split()
    mine = (f"{LOCAL}/kind-node:", f"{LOCAL}/kind-cni:", f"{LOCAL}/agnhost:")
    stale = [r for r in refs if r.startswith(mine) and not r.endswith(key)]
    for ref in stale:
        engine.run("rmi", ref, check=False)
    engine.run("image", "prune", "-f", check=False)
    return stale


def _node_files(inputs: NodeInputs, binaries: dict[str, Path]) -> list[tuple[str, Path | bytes | Link, int]]:
    base = kind_base_files(inputs.kind_version)
    entries: list[tuple[str, Path | bytes | Link, int]] = []
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        rel = "/" + str(path.relative_to(base))
        executable = rel.startswith("/usr/local/bin/") or rel.startswith("/kind/bin/")
        entries.append((rel, path, 0o755 if executable else 0o644))
    for name in ("kubelet", "kubeadm", "kubectl"):
        entries.append((f"/usr/bin/{name}", binaries[name], 0o755))
    entries.append(("/usr/local/bin/crictl", binaries["crictl"], 0o755))
    entries.append(("/usr/local/bin/ctr", FILES / "ctr", 0o755))
    entries.append(("/kind/version", inputs.kubernetes.encode(), 0o644))
    entries += [go_dropin(daemon) for daemon in sorted(GO_MEMORY_LIMIT)]
    # kind applies these unless the cluster config disables them; the kind provider disables the
    # default CNI and installs the pod network itself, and the storage class is its own.
    entries.append(("/kind/manifests/default-cni.yaml", b"# the kind provider installs the pod network\n", 0o644))
    # No dynamic provisioner is built here, so no default StorageClass: claims would never bind.
    # kind applies this file as its storage step; a note in kube-system says why it is empty.
    storage = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "lwsc-storage", "namespace": "kube-system"},
        "data": {"note": "no dynamic volume provisioner in this node image: no default StorageClass"},
    }
    entries.append(("/kind/manifests/default-storage.yaml", json.dumps(storage).encode(), 0o644))
    return entries


def _assemble(
    engine: Engine, inputs: NodeInputs, base: str, binaries: dict[str, Path], ref: str, key: str, extra: list[str]
) -> None:
    """The node image `ref`: `base`, the node's files, and kubeadm's images plus `extra` (the
    harness's images every cluster needs) in its containerd."""
    cid = engine.run(
        "run", "-d", "--label", BUILD_LABEL, "--security-opt", "seccomp=unconfined", "--entrypoint", "sleep", base,
        "infinity",
    ).strip()  # fmt: skip
    try:
        engine.run("cp", "-", f"{cid}:/", stdin=_tar(_node_files(inputs, binaries)))
        engine.run("exec", cid, "bash", "-c", NODE_SETUP.replace("@PAUSE@", pause_ref()))
        engine.run("exec", "-d", cid, "bash", "-c", "containerd > /var/log/containerd-build.log 2>&1")
        engine.run(
            "exec", cid, "bash", "-c",
            WAIT_CONTAINERD,
        )  # fmt: skip
        archive = subprocess.run(
            [engine.docker, "save", *inputs.images(), *extra], capture_output=True, env=engine.env(), check=False
        )
        if archive.returncode != 0:
            raise InfraError(f"docker save of the node's images failed: {archive.stderr.decode()[-200:]}")
        engine.run(
            "exec", "-i", cid, "/usr/bin/ctr", "--namespace=k8s.io", "images", "import",
            "--all-platforms", "--no-unpack", "--digests", "-", stdin=archive.stdout,
        )  # fmt: skip
        engine.run("exec", cid, "pkill", "containerd", check=False)
        stage = ref + "-stage"
        engine.run(
            "commit",
            "--change", 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]',
            "--change", "ENV container=docker",
            "--change", "CMD []",
            cid, stage,
        )  # fmt: skip
    finally:
        engine.run("rm", "-f", cid, check=False)
    # `docker commit` cannot set STOPSIGNAL (systemd as PID 1 stops on SIGRTMIN+3): one build
    # step from the committed image, which is local, so nothing is pulled.
    dockerfile = f"FROM {stage}\nSTOPSIGNAL SIGRTMIN+3\nLABEL lwsc.key={key}\n"
    proc = subprocess.run(
        [engine.docker, "build", "-q", "-t", ref, "-"],
        input=dockerfile.encode(),
        capture_output=True,
        env={**engine.env(), "DOCKER_BUILDKIT": "0"},
    )
    engine.run("rmi", stage, check=False)
    if proc.returncode != 0:
        raise InfraError(f"docker build of {ref} failed: {proc.stderr.decode(errors='replace').strip()[-300:]}")
