"""How much CPU a process got, and how long it waited for one, read from /proc.

`/proc/<pid>/task/<tid>/schedstat` holds three numbers per thread: nanoseconds on a CPU,
nanoseconds runnable but waiting in a run queue, time slices. Summed over the threads of a process
they say how long the process wanted a CPU and got none. `/proc/<pid>/stat`'s state says whether it
is stopped (`T`, SIGSTOP or a cgroup freeze). Linux only; elsewhere nothing is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Usage:
    """One process's totals since it started: CPU time and run-queue wait (seconds), its state."""

    cpu: float
    wait: float
    state: str  # R, S, D, T, t, Z, ...


def read(pid: int, proc: Path = PROC) -> Usage | None:
    """The process's totals over its live threads, or None when it is gone (or not readable)."""
    try:
        state = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        tasks = list((proc / str(pid) / "task").iterdir())
    except (OSError, IndexError):
        return None
    cpu = wait = 0
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
            cpu, wait = cpu + int(fields[0]), wait + int(fields[1])
        except (OSError, IndexError, ValueError):
            continue  # a thread that exited between the listing and the read
    return Usage(cpu / 1e9, wait / 1e9, state)


def descendants(pids: list[int], proc: Path = PROC) -> list[int]:
    """`pids` and every process under them (by parent pid), e.g. a kind node container's tree."""
    parent: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = set(pids), list(pids)
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)
