"""Starting, probing and stopping the local cluster's processes.

Processes run detached (own session) so they outlive `lwsc up`; each has a pid record holding
the executable path, checked against /proc before any signal, so a recycled pid is never killed.
Before the apiserver exists there is nothing to watch, so HTTP health is polled here (the only
polling in the harness, bounded by a deadline and cut short when the process dies).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import UserError


@dataclass(frozen=True)
class ProcRecord:
    name: str
    pid: int
    exe: str
    log: str
    stopped: bool = False  # stopped on purpose (a fault hook), not dead

    def save(self, pid_dir: Path) -> None:
        pid_dir.mkdir(parents=True, exist_ok=True)
        (pid_dir / f"{self.name}.json").write_text(json.dumps(asdict(self)))

    @classmethod
    def load_all(cls, pid_dir: Path) -> list[ProcRecord]:
        if not pid_dir.is_dir():
            return []
        return [cls(**json.loads(p.read_text())) for p in sorted(pid_dir.glob("*.json"))]


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # processes this Python process started


def alive(rec: ProcRecord) -> bool:
    """True if `rec.pid` is running and is still the executable we started (not a zombie).

    For our own children the Popen object is the authority (under load a child may not have
    exec'd yet, and /proc would still show the forked Python); for processes started by an
    earlier `lwsc` the executable in /proc must match, so a recycled pid is never mistaken."""
    child = _CHILDREN.get(rec.pid)
    if child is not None:
        return child.poll() is None
    try:
        cmdline = Path(f"/proc/{rec.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        state = Path(f"/proc/{rec.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return cmdline == rec.exe and state != "Z"


def start(name: str, argv: list[str], log: Path, pid_dir: Path, env: dict[str, str] | None = None) -> ProcRecord:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            argv,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            env={**os.environ, **(env or {})},
        )
    _CHILDREN[proc.pid] = proc
    rec = ProcRecord(name=name, pid=proc.pid, exe=argv[0], log=str(log))
    rec.save(pid_dir)
    _await_exec(proc, argv[0])
    return rec


def _await_exec(proc: subprocess.Popen[bytes], exe: str, limit: float = 30.0) -> None:
    """Return once the child runs `exe` (or has exited): before exec, /proc shows the forked
    Python, and `alive()` would wrongly call a starting process dead."""
    target = os.path.realpath(exe)
    deadline = time.monotonic() + limit
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{proc.pid}/exe") == target:
                return
        except OSError:
            pass
        time.sleep(0.001)


def stop(rec: ProcRecord, grace: float = 3.0) -> None:
    """SIGTERM the process group, SIGKILL after `grace` seconds."""
    stop_all([rec], grace)


def stop_all(recs: list[ProcRecord], grace: float = 3.0) -> None:
    """SIGTERM the process groups of `recs` at once, SIGKILL those still running after `grace` s."""
    left = _signal_and_wait(recs, signal.SIGTERM, grace)
    if left:
        _signal_and_wait(left, signal.SIGKILL, grace)


def kill_all(recs: list[ProcRecord], limit: float = 10.0) -> None:
    """SIGKILL the process groups of a cluster being discarded, all at once, and wait (up to
    `limit` seconds) until they are gone: 0.1 s where a graceful stop in order took 1.4 s (the
    controllers, then the apiserver, then etcd) and a SIGTERM to all at once 3 s (controllers
    retrying the stopped apiserver until SIGKILL). Their ports may keep connections in TIME_WAIT
    for a minute: a plain bind() is refused there, a listener with SO_REUSEADDR (every component's,
    and `port_free`) is not."""
    _signal_and_wait(recs, signal.SIGKILL, limit)


def _signal_and_wait(recs: list[ProcRecord], sig: signal.Signals, limit: float) -> list[ProcRecord]:
    """Send `sig` to the live ones of `recs`; return those still running after `limit` seconds."""
    running = [r for r in recs if alive(r)]
    for rec in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(rec.pid, sig)
    deadline = time.monotonic() + limit
    while running:
        for rec in [r for r in running if not alive(r)]:
            _CHILDREN.pop(rec.pid, None)
            running.remove(rec)
        if not running or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return running


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux default 32768-60999)."""
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def log_tail(path: str | Path, lines: int = 3) -> str:
    try:
        text = Path(path).read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no log)"
    return " | ".join(t.strip()[:200] for t in text[-lines:]) or "(empty log)"


def exit_message(rec: ProcRecord) -> str:
    """Why a component exited during start-up, for a one-line error: a cause we recognise in its
    log, named with its fix, else the log's last lines."""
    try:
        text = Path(rec.log).read_text(errors="replace")[-200_000:]
    except FileNotFoundError:
        text = ""
    if "no space left on device" in text:
        return (
            f"{rec.name} exited during start-up: no space left on the disk of {Path(rec.log).parent.parent} "
            f"(log: {rec.log}); free space there or set LWSC_STATE_DIR to a bigger disk, then `lwsc up`"
        )
    if "too many open files" in text:
        return (
            f"{rec.name} exited during start-up: too many open files (log: {rec.log}) — most likely the "
            f"inotify instance limit (fs.inotify.max_user_instances={_inotify_limit()}; each local cluster "
            "uses ~9): stop other clusters (`lwsc status`) or raise it, "
            "e.g. `sysctl -w fs.inotify.max_user_instances=1024`"
        )
    return (
        f"{rec.name} exited during start-up (log: {rec.log}: {log_tail(rec.log)}); "
        "fix the cause shown in its log and run `lwsc up` again"
    )


def _inotify_limit() -> str:
    try:
        return Path("/proc/sys/fs/inotify/max_user_instances").read_text().strip()
    except OSError:
        return "?"


def wait_listening(rec: ProcRecord, port: int, deadline: float) -> None:
    """Wait until 127.0.0.1:`port` accepts a TCP connection; fail fast if the process exits."""
    while True:
        if not alive(rec):
            raise UserError(exit_message(rec))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise UserError(
                f"{rec.name} did not listen on 127.0.0.1:{port} in time (log: {rec.log}: {log_tail(rec.log)}); "
                "raise timeouts.ready_seconds or check the log"
            )
        time.sleep(0.1)


def wait_healthy(
    rec: ProcRecord,
    url: str,
    deadline: float,
    *,
    ctx: ssl.SSLContext | None = None,
    expect: str | None = None,
    needs: tuple[ProcRecord, ...] = (),
) -> None:
    """Poll `url` until HTTP 200 (and `expect` in the body); fail fast if the process, or one it
    `needs` (the API server needs etcd), exits."""
    while True:
        for proc in (*needs, rec):
            if not alive(proc):
                raise UserError(exit_message(proc))
        try:
            with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
                body = resp.read().decode(errors="replace")
                if resp.status == 200 and (expect is None or expect in body):
                    return
        except (urllib.error.URLError, OSError, ssl.SSLError):
            pass
        if time.monotonic() >= deadline:
            raise UserError(
                f"{rec.name} did not become healthy at {url} in time (log: {rec.log}: "
                f"{log_tail(rec.log)}); raise timeouts.ready_seconds or check the log"
            )
        time.sleep(0.1)
