"""A local cluster's place on disk and its component processes.

Where a cluster's state, logs, pids, argv and kubeconfig live (under `state_root()/<name>`), which
port each component listens on (`PORT_OFFSETS` from `network.base_port`), and how one component
is launched, health-checked, read (its log) and talked to (kubectl, the rendered manifests). The
start-up order is `providers.boot`; the life cycle is `providers.local`.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import InfraError, UserError
from ..install import manifests, pki
from ..k8s.wait import scale
from ..profile import Profile
from ..toolchain import cache as bincache
from ..toolchain import coverage_dir, covered, manifests_dir
from ..worker_count import usable_cores
from . import process

ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "lws", "kueue")
PORT_OFFSETS = {
    "etcd": 0,
    "etcd-peer": 1,
    "kube-apiserver": 2,
    "kube-controller-manager": 3,
    "kube-scheduler": 4,
    "lws-webhook": 10,
    "lws-metrics": 11,
    "lws-health": 12,
    "kueue-webhook": 20,
    "kueue-metrics": 21,
    "kueue-health": 22,
}


# The Go runtime's garbage collector per component: GOGC 400 (a collection when the heap has grown
# by 4x its live size, not the default 1x) under a soft GOMEMLIMIT, past which Go collects as
# needed whatever GOGC says: a cluster lives minutes and idles at ~1 GiB of 24, so memory is
# traded for CPU (measured: docs/performance.md). A GOGC or GOMEMLIMIT in lwsc's own environment
# wins (to measure other settings, or to spare memory).
GO_GC = "400"
GO_MEMORY_LIMIT = {
    "etcd": "512MiB",
    "kube-apiserver": "2GiB",
    "kube-controller-manager": "512MiB",
    "kube-scheduler": "384MiB",
    "kwok": "384MiB",
    "lws": "384MiB",
    "kueue": "512MiB",
}

# GOMAXPROCS 1 for every component where the run has at most two usable cores: seven Go programs
# and the tests' workers share them, and each runtime left at its default runs as many threads as
# there are cores. Measured on 2 cores (docs/performance.md): fewer CPU-seconds in every pair, the
# wall time within the runs' own spread, the same verdicts. Not measured on more cores, so Go's
# default there. A GOMAXPROCS in lwsc's own environment wins.
GO_PROCS_UP_TO_CORES = 2.0


def go_procs(cores: float | None = None) -> str:
    """GOMAXPROCS for the cluster's components: "1" on at most GO_PROCS_UP_TO_CORES usable cores,
    else "" (Go's default)."""
    return "1" if (usable_cores() if cores is None else cores) <= GO_PROCS_UP_TO_CORES else ""


COVERAGE_MARK = "coverage"  # in the state directory: the GOCOVERDIR of its instrumented controllers
COVERAGE_GRACE = 30.0  # seconds an instrumented controller gets to stop and write its counters


def state_root() -> Path:
    env = os.environ.get("LWSC_STATE_DIR")
    return Path(env) if env else Path.home() / ".local" / "state" / "lws-conformance"


@dataclass
class ClusterState:
    """One local cluster's state directory and component processes."""

    profile: Profile
    name: str = "default"

    @property
    def dir(self) -> Path:
        return state_root() / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def handle_file(self) -> Path:
        return self.dir / "handle.json"

    def port(self, what: str) -> int:
        return self.profile.base_port + PORT_OFFSETS[what]

    @property
    def pid_dir(self) -> Path:
        return self.dir / "pids"

    def log(self, component: str) -> Path:
        return self.dir / "logs" / f"{component}.log"

    def records(self) -> list[process.ProcRecord]:
        return process.ProcRecord.load_all(self.pid_dir)

    def log_offset(self, component: str) -> int:
        """The size of `component`'s log now: `wait_log` from it reads only what came later."""
        path = self.log(component)
        return path.stat().st_size if path.is_file() else 0

    def wait_log(self, component: str, needles: tuple[str, ...], offset: int, timeout: float) -> str:
        """The first line of `component`'s log after byte `offset` containing every needle, read as the
        process writes it (a `tail -f`: a process log has no watch API); InfraError naming the
        component, the text and the log's last line when it does not come within `timeout` s (times
        `timeouts.scale`)."""
        timeout *= scale()
        path, deadline, last = self.log(component), time.monotonic() + timeout, ""
        tick = threading.Event()
        while True:
            with path.open("rb") as fh:
                fh.seek(offset)
                for raw in fh:
                    if not raw.endswith(b"\n"):
                        break  # a line still being written: read it whole next time
                    offset += len(raw)
                    last = raw.decode(errors="replace").rstrip()
                    if all(n in last for n in needles):
                        return last
            if time.monotonic() >= deadline:
                raise InfraError(
                    f"{component} log {path}: no line with {needles!r} within {timeout:.0f}s; last: {last[:300]}"
                )
            tick.wait(0.1)

    def healthy(self, component: str, within: float = 2.0) -> bool:
        """True if `component` runs and its health endpoint answers (kwok: runs) within `within` s."""
        recs = [r for r in self.records() if r.name == component]
        if not recs or not process.alive(recs[0]):
            return False
        if component == "kwok":
            return True
        url, ctx, expect = self._health_url(component)
        try:
            process.wait_healthy(recs[0], url, time.monotonic() + within, ctx=ctx, expect=expect)
        except UserError:
            return False
        return True

    def saved_argv(self, component: str) -> list[str] | None:
        """The command line this cluster started `component` with (what a restart reuses)."""
        argv_file = self.dir / "argv" / f"{component}.yaml"
        return yaml.safe_load(argv_file.read_text()) if argv_file.is_file() else None

    def installed_manifests(self, component: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(CRDs, webhook configurations) of `component` as this cluster installs them (cached render)."""
        kubectl = bincache.cache_root() / "bin" / "kubernetes" / self.profile.versions["kubernetes"] / "kubectl"
        return self._manifests(kubectl, component, pki.Pki.at(self.dir / "pki").ca_crt.read_bytes())

    @staticmethod
    def _ordered(recs: list[process.ProcRecord]) -> list[process.ProcRecord]:
        rank = {n: i for i, n in enumerate(ORDER)}
        return sorted(recs, key=lambda r: rank.get(r.name, len(ORDER)))

    def _check_ports(self) -> None:
        lo, hi = process.ephemeral_ports()
        top = self.profile.base_port + max(PORT_OFFSETS.values())
        if self.profile.base_port <= hi and top >= lo:
            raise UserError(
                f"ports {self.profile.base_port}-{top} lie in the kernel's ephemeral range {lo}-{hi} "
                f"(/proc/sys/net/ipv4/ip_local_port_range), where any outgoing connection may take them; "
                f"choose a base port below {lo - max(PORT_OFFSETS.values()) - 1} (--set network.base_port=<n>)"
            )
        for what, off in PORT_OFFSETS.items():
            port = self.profile.base_port + off
            if not process.port_free(port):
                raise UserError(
                    f"port {port} ({what}) on 127.0.0.1 is in use; stop whatever holds it "
                    f"(`lwsc down`?) or choose other ports with --set network.base_port=<n>"
                )

    def _launch(self, name: str, argv: list[str], profile: Profile | None = None) -> process.ProcRecord:
        argv_dir = self.dir / "argv"
        argv_dir.mkdir(parents=True, exist_ok=True)
        (argv_dir / f"{name}.yaml").write_text(yaml.safe_dump(argv))
        return process.start(name, argv, self.log(name), self.pid_dir, env=self.process_env(name, profile))

    def process_env(self, component: str, profile: Profile | None = None) -> dict[str, str]:
        """The environment `component` starts with beyond lwsc's own: its Go GC settings (`GO_GC`,
        `GO_MEMORY_LIMIT`) and threads (`go_procs`) unless lwsc's environment sets them, and
        `coverage_env`."""
        go = {"GOGC": GO_GC, "GOMEMLIMIT": GO_MEMORY_LIMIT.get(component, ""), "GOMAXPROCS": go_procs()}
        return {k: v for k, v in go.items() if v and k not in os.environ} | self.coverage_env(component, profile)

    def coverage_env(self, component: str, profile: Profile | None = None) -> dict[str, str]:
        """GOCOVERDIR for a coverage-instrumented controller (of `profile`, default this cluster's);
        the file COVERAGE_MARK records it, so `down` stops the controllers gracefully first."""
        if not covered(profile or self.profile, component):
            return {}
        where = coverage_dir(profile or self.profile, self.name)
        where.mkdir(parents=True, exist_ok=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / COVERAGE_MARK).write_text(str(where))
        return {"GOCOVERDIR": str(where)}

    def _tls(self, verify: bool) -> ssl.SSLContext:
        p = pki.Pki.at(self.dir / "pki")
        if verify:
            ctx = ssl.create_default_context(cafile=str(p.ca_crt))
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(str(p.admin_crt), str(p.admin_key))
        return ctx

    def _health_url(self, component: str) -> tuple[str, ssl.SSLContext | None, str | None]:
        if component == "etcd":
            return f"http://127.0.0.1:{self.port('etcd')}/health", None, '"health":"true"'
        if component == "kube-apiserver":
            return f"https://127.0.0.1:{self.port('kube-apiserver')}/readyz", self._tls(True), None
        if component in ("kube-controller-manager", "kube-scheduler"):
            return f"https://127.0.0.1:{self.port(component)}/healthz", self._tls(False), None
        if component in ("lws", "kueue"):
            return f"http://127.0.0.1:{self.port(component + '-health')}/readyz", None, None
        raise KeyError(component)

    def _wait_component(
        self, rec: process.ProcRecord, deadline: float, needs: tuple[process.ProcRecord, ...] = ()
    ) -> None:
        if rec.name == "kwok":
            return  # no health endpoint without its kubelet server; nodes turning Ready prove it
        url, ctx, expect = self._health_url(rec.name)
        process.wait_healthy(rec, url, deadline, ctx=ctx, expect=expect, needs=needs)
        if rec.name in ("lws", "kueue"):
            # ready is not serving admission: until its webhook server listens, every request the
            # webhooks cover fails with "failed calling webhook ... connection refused"
            process.wait_listening(rec, self.port(f"{rec.name}-webhook"), deadline)

    def _kubectl(self, kubectl: Path, *args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [str(kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["no output"])[0]
            raise InfraError(f"kubectl {' '.join(args[:2])} failed: {first}")
        return proc.stdout

    def _apply(self, kubectl: Path, docs: list[dict[str, Any]], force: bool = True) -> None:
        """Server-side apply (Kueue's Workload CRD is too large for client-side apply)."""
        flags = ["--force-conflicts"] if force else []
        self._kubectl(kubectl, "apply", "--server-side", *flags, "-f", "-", stdin=manifests.dump(docs))

    def _manifests(self, kubectl: Path, component: str, ca: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        version = self.profile.versions[component]
        source = self.profile.sources.get(component)
        root = manifests_dir(self.profile, component)
        key = bincache.source_key(source) if source else version
        cache_file = (
            self.dir / "manifests" / f"{component}-{key}.json"
            if source
            else bincache.cache_root() / "manifests" / f"{component}-{key}.json"
        )
        docs = manifests.render(kubectl, root, cache_file)
        return manifests.split(manifests.rewrite(docs, self.port(f"{component}-webhook"), ca))

    def down(self, keep_logs: bool = False) -> None:
        """Kill every process this cluster started and remove its state (but for the logs, when
        a failed start-up's error message points at them). Nothing of a cluster outlives its
        `down`, so nothing needs a graceful stop, but for coverage-instrumented controllers: they
        write their counters only when they exit normally, so they get SIGTERM first (the API server
        still up) and `COVERAGE_GRACE` seconds."""
        if (self.dir / COVERAGE_MARK).is_file():
            controllers = [r for r in self.records() if r.name in ("lws", "kueue")]
            process.stop_all(controllers, grace=COVERAGE_GRACE)
        process.kill_all(self.records())
        if not keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        for child in self.dir.iterdir() if self.dir.is_dir() else []:
            if child.name != "logs":
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
