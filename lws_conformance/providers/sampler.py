"""The light background sampler behind `starvation`: one per pytest process (xdist worker).

Two daemon threads. The ticker wakes every 0.5 s and records how late it woke (the harness's own
scheduling lag); every second tick it reads, for each watched local cluster, the run-queue wait,
CPU time and state of every component process in its pid records (`schedstat`). The canary GETs
each watched cluster's `/version` every 1.5 s and records how long the answer took (a GET still
unanswered counts its age). Clusters are watched from the first test that uses them; every
provider gets the canary and the lag, the local provider (shared and private clusters) the
component processes too. `window` turns what was seen between two instants into a
`starvation.Window`.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client, config

from . import process, schedstat
from .base import ClusterHandle
from .starvation import Window

TICK = 0.5  # seconds between the ticker's wakes
PROC_EVERY = 2  # ticks between reads of /proc
CANARY_EVERY = 1.5  # seconds between canary GETs
KEEP = 7200  # samples kept per series (an hour of /proc reads)


@dataclass(frozen=True)
class Tick:
    """One read of a cluster's component processes: name -> (pid, totals)."""

    at: float
    usage: dict[str, tuple[int, schedstat.Usage]]


@dataclass
class Target:
    """A watched cluster: where its pid records are (local provider), its canary's client."""

    pid_dir: Path | None
    api: client.ApiClient | None
    ticks: deque[Tick] = field(default_factory=lambda: deque(maxlen=KEEP))
    canary: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=KEEP))  # (sent, seconds)
    in_flight: float | None = None  # when the unanswered canary GET was sent


def canary_client(kubeconfig: Path) -> client.ApiClient:
    """A client that never retries: a refused connection (an API server a fault hook stopped) is
    a quick answer, not a slow one."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.retries = False
    return client.ApiClient(configuration=cfg)


def pid_dir(handle: ClusterHandle) -> Path | None:
    """The local cluster's pid records (as `health` reads them), else None."""
    if handle.provider != "local" or "etcd" not in handle.logs:
        return None
    return Path(handle.logs["etcd"]).parent.parent / "pids"


def read_components(pids: Path, read: Callable[[int], schedstat.Usage | None] = schedstat.read) -> Tick:
    """The totals of every recorded component a fault hook has not stopped."""
    usage = {}
    for rec in process.ProcRecord.load_all(pids):
        if rec.stopped:  # stopped on purpose: neither starved nor frozen
            continue
        got = read(rec.pid)
        if got is not None:
            usage[rec.name] = (rec.pid, got)
    return Tick(time.time(), usage)


def window(target: Target, lags: list[tuple[float, float]], start: float, stop: float, now: Tick | None) -> Window:
    """What `target` and the ticker saw between `start` and `stop` (time.time()); `now` is a read
    taken at the window's end (the last tick otherwise)."""
    ticks = list(target.ticks) + ([now] if now else [])
    ats = [t.at for t in ticks]
    base = ticks[max(0, bisect.bisect_right(ats, start) - 1)] if ticks else None
    inside = [t for t in ticks if start <= t.at <= stop + TICK * PROC_EVERY]
    end = inside[-1] if inside else None
    wait: dict[str, float] = {}
    cpu: dict[str, float] = {}
    frozen: dict[str, float] = {}
    if base is not None and end is not None:
        for name, (pid, last) in end.usage.items():
            first = base.usage.get(name)
            w0, c0 = (first[1].wait, first[1].cpu) if first and first[0] == pid else (0.0, 0.0)
            wait[name], cpu[name] = max(0.0, last.wait - w0), max(0.0, last.cpu - c0)
        for t in (t for t in inside if t.at <= stop):
            for name, (_pid, u) in t.usage.items():
                if u.state == "T":
                    frozen[name] = frozen.get(name, 0.0) + TICK * PROC_EVERY
    answers = [s for sent, s in target.canary if start <= sent <= stop]
    if target.in_flight is not None and target.in_flight <= stop:
        answers.append(time.time() - max(target.in_flight, start))
    late = [s for at, s in lags if start <= at <= stop + TICK]
    return Window(stop - start, wait, cpu, frozen, max(answers, default=None), max(late, default=0.0))


class Sampler:
    """The ticker, the canary and what they saw, for every cluster this process watches."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.targets: dict[str, Target] = {}
        self.lags: deque[tuple[float, float]] = deque(maxlen=KEEP * PROC_EVERY)
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def watch(self, handle: ClusterHandle) -> Target:
        """Start watching `handle`'s cluster (once per kubeconfig), and the threads if not yet."""
        key = str(handle.kubeconfig)
        with self.lock:
            target = self.targets.get(key)
            if target is None:
                api = None
                with contextlib.suppress(Exception):  # no canary for an unreadable kubeconfig
                    api = canary_client(handle.kubeconfig)
                target = self.targets[key] = Target(pid_dir(handle), api)
            if not self.threads:
                self.threads = [
                    threading.Thread(target=self._tick, name="lwsc-starvation-ticker", daemon=True),
                    threading.Thread(target=self._canary, name="lwsc-starvation-canary", daemon=True),
                ]
                for t in self.threads:
                    t.start()
        if target.pid_dir is not None:
            target.ticks.append(read_components(target.pid_dir))  # a baseline before the test starts
        return target

    def window(self, handle: ClusterHandle, start: float, stop: float) -> Window | None:
        """What was seen of `handle`'s cluster between `start` and `stop` (None: not watched)."""
        target = self.targets.get(str(handle.kubeconfig))
        if target is None:
            return None
        now = read_components(target.pid_dir) if target.pid_dir is not None else None
        with self.lock:
            return window(target, list(self.lags), start, stop, now)

    def _tick(self) -> None:
        due, n = time.monotonic() + TICK, 0
        while not self.stop.wait(max(0.0, due - time.monotonic())):
            late = max(0.0, time.monotonic() - due)
            with self.lock:
                self.lags.append((time.time(), late))
                targets = list(self.targets.values())
            n += 1
            if n % PROC_EVERY == 0:
                for target in targets:
                    if target.pid_dir is not None:
                        tick = read_components(target.pid_dir)
                        with self.lock:
                            target.ticks.append(tick)
            due = max(due + TICK, time.monotonic())

    def _canary(self) -> None:
        while not self.stop.wait(CANARY_EVERY):
            with self.lock:
                targets = list(self.targets.values())
            for target in targets:
                if target.api is None:
                    continue
                sent = time.time()
                target.in_flight = sent
                with contextlib.suppress(Exception):  # a refused or failed GET: `health` judges a dead server
                    client.VersionApi(target.api).get_code(_request_timeout=(10, 120))
                with self.lock:
                    target.canary.append((sent, time.time() - sent))
                    target.in_flight = None


_SAMPLER: dict[str, Sampler] = {}


def of_process() -> Sampler:
    """This process's sampler (one per pytest worker)."""
    return _SAMPLER.setdefault("it", Sampler())


def starved(handle: ClusterHandle, start: float, stop: float) -> Window | None:
    """This process's sampler's window of `handle` (None when it never watched that cluster)."""
    return of_process().window(handle, start, stop)
