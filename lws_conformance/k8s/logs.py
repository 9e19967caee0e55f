"""Controllers' and pods' logs: a pod's log read as the container writes it (the API server's
follow stream, one deadline), the records of a controller's JSON log file, and the last lines of a
local controller's log file after an offset."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from ..errors import InfraError
from .wait import scale


def wait_pod_log(
    api: client.ApiClient, namespace: str, pod: str, container: str, needles: tuple[str, ...], timeout: float
) -> str:
    """The first line of the container's log containing every needle (from the log's start);
    InfraError naming the pod, the text and the last line read when none comes within `timeout` s
    (times `timeouts.scale`)."""
    timeout *= scale()
    core, deadline, last = client.CoreV1Api(api), time.monotonic() + timeout, ""
    for _stream in range(3):  # a stream ends when its container does: a restarted one is followed anew
        if (left := deadline - time.monotonic()) <= 0:
            break
        resp: Any = core.read_namespaced_pod_log(
            pod, namespace, container=container, follow=True, _preload_content=False, _request_timeout=left
        )
        try:
            for raw in resp:
                last = raw.decode(errors="replace").rstrip()
                if all(n in last for n in needles):
                    return str(last)
        except (ReadTimeoutError, ProtocolError):
            break
        finally:
            resp.release_conn()
    raise InfraError(f"pod {namespace}/{pod} log: no line with {needles!r} within {timeout:.0f}s; last: {last[:300]}")


def json_log_records(path: str | Path | None, msg: str, offset: int = 0) -> list[dict[str, Any]] | None:
    """The records of a controller's JSON log (controller-runtime's zap production encoder: one
    JSON object a line) whose "msg" is `msg`, in the order written; None when there is no log to
    read (no path, or no such file: a provider whose controllers log elsewhere). Lines that are
    not JSON objects are skipped. From byte `offset` on (e.g. `Scenario.log_offsets`: what was
    logged since the test began), so a long run's log is not read whole."""
    if not path or not Path(path).is_file():
        return None
    with Path(path).open("rb") as fh:
        fh.seek(offset)
        return json_records((raw.decode(errors="replace") for raw in fh), msg)


def json_records(lines: Iterable[str], msg: str) -> list[dict[str, Any]]:
    """The JSON records among `lines` whose "msg" is `msg`, in order (other lines skipped)."""
    out: list[dict[str, Any]] = []
    for line in lines:
        if msg not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("msg") == msg:
            out.append(record)
    return out


def deployment_log(api: client.ApiClient, namespace: str, deployment: str, container: str = "manager") -> str | None:
    """What the `container` of every pod of Deployment `deployment` (pods `<deployment>-…`) has
    logged, as the API server serves it (pods/log), pods in name order; None when there is no such
    pod or its log cannot be read (a token without pods/log)."""
    core = client.CoreV1Api(api)
    try:
        pods = sorted(
            p.metadata.name
            for p in core.list_namespaced_pod(namespace).items
            if p.metadata and p.metadata.name and p.metadata.name.startswith(f"{deployment}-")
        )
        logs = [core.read_namespaced_pod_log(name, namespace, container=container) for name in pods]
    except ApiException:
        return None
    return "\n".join(str(text) for text in logs) if pods else None


TAIL_BYTES = 1 << 20  # at most the last MiB of what came after the offset is read


def file_size(path: str | Path | None) -> int:
    """The size of the file at `path` now (0 if there is none): an offset for `lines_since`."""
    try:
        return Path(path).stat().st_size if path else 0
    except OSError:
        return 0


def lines_since(path: str | Path, offset: int, lines: int = 200) -> list[str]:
    """The last `lines` lines a process wrote to the log at `path` after byte `offset` (e.g. since
    a test started), reading no more than `TAIL_BYTES` of it, never the whole log."""
    with Path(path).open("rb") as fh:
        size = fh.seek(0, 2)
        start = max(offset, size - TAIL_BYTES)
        cut = start > offset  # begun inside what came after the offset: maybe mid-line
        fh.seek(start - 1 if cut else start)
        data = fh.read()
    if cut:  # from the byte before `start`: drop it with the rest of a line begun before `start`
        data = data[data.index(b"\n") + 1 :] if b"\n" in data else b""
    return data.decode(errors="replace").splitlines()[-lines:]
