"""Controllers' and pods' logs: a pod's log read as the container writes it (the API server's
follow stream, one deadline), and the records of a controller's JSON log file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kubernetes import client
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


def json_log_records(path: str | Path | None, msg: str) -> list[dict[str, Any]] | None:
    """The records of a controller's JSON log (controller-runtime's zap production encoder: one
    JSON object a line) whose "msg" is `msg`, in the order written; None when there is no log to
    read (no path, or no such file: a provider whose controllers log elsewhere). Lines that are
    not JSON objects are skipped."""
    if not path or not Path(path).is_file():
        return None
    out: list[dict[str, Any]] = []
    with Path(path).open(errors="replace") as fh:
        for line in fh:
            if msg not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("msg") == msg:
                out.append(record)
    return out
