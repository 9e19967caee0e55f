"""Run a command in a pod's container (the API's exec subresource), as `kubectl exec` does."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes import client
from kubernetes.stream import stream

from .wait import scale


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_in_pod(api: client.ApiClient, namespace: str, pod: str, container: str, argv: list[str], timeout: float) -> Ran:
    """`argv` in `pod`/`container`; waits at most `timeout` seconds (times `timeouts.scale`) for it
    to end."""
    core = client.CoreV1Api(api)
    resp = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        container=container,
        command=argv,
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
        _preload_content=False,
    )
    try:
        resp.run_forever(timeout=timeout * scale())
        out, err = resp.read_stdout() or "", resp.read_stderr() or ""
        status = resp.read_channel(3)  # the error channel carries the exit status
    finally:
        resp.close()
    code = 0
    if status:
        doc = json.loads(status)
        if doc.get("status") != "Success":
            causes = (doc.get("details") or {}).get("causes") or []
            code = next((int(c["message"]) for c in causes if c.get("reason") == "ExitCode"), 1)
    elif resp.is_open():
        code = -1  # still running at the deadline
    return Ran(code, out, err)
