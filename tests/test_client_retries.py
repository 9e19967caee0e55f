"""The harness's API client rides out a restarting kube-apiserver: a request whose connection is
refused is retried until the server answers (without it, a kube-apiserver restart mid-run turned 8
requirements into `error`)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from kubernetes import client

from lws_conformance.k8s.client import api_client

VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.3",
    "gitCommit": "x",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class _Version(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps(VERSION).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_retried_until_the_server_is_back(tmp_path: Path) -> None:
    port = _free_port()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
    )
    servers: list[HTTPServer] = []

    def serve_later() -> None:
        time.sleep(1.5)  # the "restart": nothing listens for 1.5 s
        servers.append(HTTPServer(("127.0.0.1", port), _Version))
        servers[0].serve_forever()

    threading.Thread(target=serve_later, daemon=True).start()
    api = api_client(kubeconfig)
    started = time.monotonic()
    try:
        got = client.VersionApi(api).get_code()
    finally:
        api.close()
        if servers:
            servers[0].shutdown()
    assert got.git_version == "v1.36.3"
    assert time.monotonic() - started >= 1.4, "answered before the server existed?"


def test_a_transient_api_answer_is_retried_by_waits_and_classified() -> None:
    """A 429 "storage is (re)initializing" (a CRD re-applied by an in-place upgrade; it ended an
    upgrade test as a false red once) and 5xx are waited out; other errors are not."""
    from kubernetes.client import ApiException

    from lws_conformance.k8s.client import retry_after
    from lws_conformance.k8s.wait import wait_for

    busy = ApiException(status=429, reason="Too Many Requests")
    busy.headers = {"Retry-After": "1"}
    assert retry_after(busy) == 1.0
    assert retry_after(ApiException(status=503)) == 1.0
    assert retry_after(ApiException(status=404)) is None and retry_after(ValueError()) is None
    calls: list[int] = []

    def list_fn(**_kw: object) -> dict[str, object]:
        calls.append(1)
        if len(calls) == 1:
            raise busy
        return {
            "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": "a", "namespace": "n"}}],
        }

    got = wait_for(
        client.ApiClient(), list_fn, lambda items: items or None, what="ConfigMaps", condition="one", timeout=10
    )
    assert [i["metadata"]["name"] for i in got] == ["a"] and len(calls) == 2
