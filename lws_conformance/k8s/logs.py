"""A pod's log, read as the container writes it: the API server's follow stream, one deadline."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from ..errors import InfraError


def wait_pod_log(
    api: client.ApiClient, namespace: str, pod: str, container: str, needles: tuple[str, ...], timeout: float
) -> str:
    """The first line of the container's log containing every needle (from the log's start);
    InfraError naming the pod, the text and the last line read when none comes within `timeout` s."""
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
