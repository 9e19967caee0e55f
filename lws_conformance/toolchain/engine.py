"""The Docker engine kind runs on: the user's own when it answers, else a private one.

The private engine is Debian's `dockerd` started by the harness with its own data root, exec
root, pid file and socket under one directory (`<cache>/engine`), so a user's Docker, its images
and its clusters are never touched; its data root keeps the node image between clusters. It runs
without a default bridge, without iptables rules and without outbound masquerade: containers
reach each other on the kind network and nothing else. Where root's capability bounding set
lacks one a privileged container asks for, its default OCI runtime is `kindnode/oci-runtime`,
which removes those capabilities before calling runc. `stop` ends it (`lwsc down`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import InfraError, UserError
from . import cache
from .gobuild import Progress

FILES = Path(__file__).with_name("kindnode")
# Linux capability numbers (linux/capability.h) a privileged container receives from runc.
CAPABILITIES = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]
FORWARD_COMMENT = "lwsc-kind"
MODES = ("auto", "private", "user")
START_SECONDS = 60.0


@dataclass(frozen=True)
class Engine:
    """A Docker engine to talk to: its DOCKER_HOST and whether the harness started it."""

    host: str  # "" = the docker client's own default (the user's engine)
    private: bool
    docker: str = "docker"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.host:
            env["DOCKER_HOST"] = self.host
        return env

    def describe(self) -> str:
        return f"the harness's private Docker engine ({self.host})" if self.private else "your Docker engine"

    def run(self, *args: str, check: bool = True, stdin: bytes | None = None, timeout: float | None = None) -> str:
        """`docker <args>` on this engine; a failure names the command and docker's last line."""
        proc = subprocess.run([self.docker, *args], input=stdin, capture_output=True, env=self.env(), timeout=timeout)
        if check and proc.returncode != 0:
            last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise InfraError(f"`docker {' '.join(args[:3])}` on {self.describe()} failed: {last}")
        return proc.stdout.decode(errors="replace")


def directory() -> Path:
    return cache.cache_root() / "engine"


def missing_capabilities(status: str | None = None) -> list[str]:
    """Capabilities a privileged container gets that root's bounding set here lacks."""
    text = status if status is not None else Path("/proc/self/status").read_text()
    line = next((ln for ln in text.splitlines() if ln.startswith("CapBnd:")), "")
    if not line:
        return []
    bounding = int(line.split()[1], 16)
    return [f"CAP_{name}" for bit, name in enumerate(CAPABILITIES) if not bounding >> bit & 1]


def runtime_script(drop: list[str], runc: str, python: str) -> str:
    text = (FILES / "oci-runtime").read_text()
    return text.replace("@PYTHON@", python).replace("@DROP@", repr(sorted(drop))).replace("@RUNC@", runc)


def dockerd_argv(dockerd: str, root: Path, runtime: Path | None) -> list[str]:
    argv = [
        dockerd,
        "--data-root", str(root / "data"),
        "--exec-root", str(root / "exec"),
        "--pidfile", str(root / "dockerd.pid"),
        "-H", f"unix://{root / 'docker.sock'}",
        "--bridge=none",
        "--iptables=false",
        "--ip-masq=false",
        "--containerd-namespace", "lwsc",
        "--containerd-plugins-namespace", "lwsc-plugins",
    ]  # fmt: skip
    if runtime is not None:
        argv += ["--add-runtime", f"lwsc={runtime}", "--default-runtime", "lwsc"]
    return argv


def answers(engine: Engine, timeout: float = 10.0) -> bool:
    try:
        proc = subprocess.run(
            [engine.docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            env=engine.env(),
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _pid(root: Path) -> int | None:
    try:
        pid = int((root / "dockerd.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def running(root: Path | None = None) -> bool:
    return _pid(root or directory()) is not None


def private_host(root: Path | None = None) -> str:
    return f"unix://{(root or directory()) / 'docker.sock'}"


def ensure(mode: str, docker: str, progress: Progress) -> Engine:
    """The engine for this run. auto: the user's Docker when `docker info` answers, else the
    private engine (started if it is not running); private / user: only that one."""
    if mode not in MODES:
        raise UserError(f"kind.engine must be one of {', '.join(MODES)}, got {mode!r}")
    if mode in ("auto", "user"):
        user = Engine("", private=False, docker=docker)
        if answers(user):
            return user
        if mode == "user":
            raise UserError(
                f"kind.engine=user but `{docker} info` does not answer; start Docker, or use "
                f"--set kind.engine=auto to let the harness start a private engine"
            )
    return start(docker, progress)


def start(docker: str, progress: Progress, root: Path | None = None) -> Engine:
    """The private engine, started when it is not running (idempotent)."""
    root = root or directory()
    engine = Engine(private_host(root), private=True, docker=docker)
    if running(root) and answers(engine):
        return engine
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise UserError(
            "no Docker engine answers and dockerd is not installed; install Debian's docker.io "
            "(`scripts/bootstrap --kind` or `apt-get install docker.io`), or start Docker"
        )
    if len(str(root / "exec" / "containerd" / "containerd.sock.ttrpc")) > 100:
        raise UserError(
            f"the private engine's directory {root} is too long for a unix socket; set a shorter LWSC_CACHE_DIR"
        )
    root.mkdir(parents=True, exist_ok=True)
    drop = missing_capabilities()
    runtime: Path | None = None
    if drop:
        runc = shutil.which("runc") or "/usr/sbin/runc"
        python = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
        runtime = root / "oci-runtime"
        runtime.write_text(runtime_script(drop, runc, python))
        runtime.chmod(0o755)
    (root / "docker.sock").unlink(missing_ok=True)
    log = (root / "dockerd.log").open("ab")
    progress(f"starting the private Docker engine ({engine.host}; log {root / 'dockerd.log'})")
    subprocess.Popen(
        dockerd_argv(dockerd, root, runtime),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # outlives this lwsc: `lwsc down` stops it
    )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if (root / "docker.sock").is_socket() and _connects(root / "docker.sock") and answers(engine, 5.0):
            return engine
        time.sleep(0.2)  # a process start-up, not a cluster condition: no API to watch
    tail = (root / "dockerd.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
    stop(root)
    raise InfraError(f"the private Docker engine did not answer within {START_SECONDS:.0f}s: {tail[0]}")


def _connects(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def stop(root: Path | None = None, grace: float = 30.0) -> bool:
    """Stop the private engine (its containers stop with it); True when one was running."""
    root = root or directory()
    pid = _pid(root)
    remove_forward_rules()
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _pid(root) == pid:
        time.sleep(0.1)
    if _pid(root) == pid:
        os.killpg(pid, signal.SIGKILL)
    return True


def _iptables(*args: str) -> subprocess.CompletedProcess[str] | None:
    binary = shutil.which("iptables")
    if binary is None:
        return None
    return subprocess.run([binary, "-w", *args], capture_output=True, text=True)


def allow_forward(bridge: str) -> bool:
    """Let traffic between containers on `bridge` through a host FORWARD chain that drops by
    default (another Docker engine sets that policy, and bridged frames pass iptables when
    br_netfilter is loaded). Adds one commented rule, removed by `remove_forward_rules`."""
    nf = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
    chain = _iptables("-S", "FORWARD")
    if chain is None or chain.returncode != 0 or not nf.is_file() or nf.read_text().strip() != "1":
        return False
    if "-P FORWARD DROP" not in chain.stdout and "-P FORWARD REJECT" not in chain.stdout:
        return False
    rule = ["FORWARD", "-i", bridge, "-o", bridge, "-m", "comment", "--comment", FORWARD_COMMENT, "-j", "ACCEPT"]
    check = _iptables("-C", *rule)
    if check is not None and check.returncode != 0:
        _iptables("-I", *rule)
    return True


def remove_forward_rules() -> None:
    chain = _iptables("-S", "FORWARD")
    if chain is None or chain.returncode != 0:
        return
    for line in chain.stdout.splitlines():
        if f"--comment {FORWARD_COMMENT}" in line and line.startswith("-A "):
            _iptables("-D", *line.split()[1:])
