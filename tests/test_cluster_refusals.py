"""A cluster that refuses is one line and exit 2 for every command that talks to it, before any
work: 401/403 name the context and say to refresh the credentials, 404 says the server is no
Kubernetes API server, a TLS failure names the CA, a kubeconfig's proxy-url is used. Stub servers
on 127.0.0.1 answer each way; nothing is written or left running."""

from __future__ import annotations

import json
import os
import signal
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lws_conformance import cli
from lws_conformance.install import pki
from lws_conformance.providers import existing

VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.3",
    "gitCommit": "x",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.26",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class Stub:
    """An HTTP(S) server answering every request with `status` (and a Status body), or with the
    Kubernetes /version document when `status` is 200 (`version_ok`: /version always); it records
    the request lines it saw."""

    def __init__(self, status: int, tls: pki.Pki | None = None, version_ok: bool = False) -> None:
        seen: list[str] = []
        self.seen = seen
        auths: list[str | None] = []
        self.auths = auths  # each request's Authorization header

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                seen.append(self.requestline)
                auths.append(self.headers.get("Authorization"))
                code = 200 if version_ok and self.path.startswith("/version") else status
                body = json.dumps(VERSION if code == 200 else {"kind": "Status", "code": code}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls.admin_crt, tls.admin_key)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def kubeconfig(tmp_path: Path, server: str, extra: str = "") -> Path:
    kc = tmp_path / "vendor.kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: vendor\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'{extra}}}}}]\n"
        "contexts: [{name: vendor, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: expired}}]\n"
    )
    return kc


@pytest.fixture
def lwsc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[object]:
    """`lwsc ARGS` in this process, in an empty directory: (exit code, stderr lines)."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE)}

    def run(*args: str) -> tuple[int, list[str]]:
        capsys.readouterr()
        code = cli.main(list(args))
        return code, capsys.readouterr().err.splitlines()

    yield run
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    assert sorted(p.name for p in work.iterdir()) == [], "a refused command wrote into the working directory"


COMMANDS = (
    ["discover"],
    ["preflight"],
    ["cleanup", "--all"],
    ["job-status"],
    ["retrieve"],
    ["run", "--focus", "LWS-NAME-001"],
)


def _one_line(code: int, err: list[str], *needles: str) -> str:
    errors = [ln for ln in err if "lwsc: error:" in ln]
    assert code == 2 and len(errors) == 1, err
    assert not any("Traceback" in ln for ln in err), err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refusing_server_is_one_line_for_every_command(status: int, tmp_path: Path, lwsc: object) -> None:
    stub = Stub(status)
    try:
        kc = kubeconfig(tmp_path, stub.url)
        for cmd in COMMANDS:
            code, err = lwsc(*cmd, "--kubeconfig", str(kc))  # type: ignore[operator]
            expected = {
                401: ("401 Unauthorized", "context vendor", "refresh the credentials"),
                403: ("403 Forbidden", "context vendor", "refresh the credentials"),
                404: ("not a Kubernetes API server", stub.url),
            }[status]
            _one_line(code, err, *expected)
    finally:
        stub.close()


def test_a_tls_failure_names_the_ca(tmp_path: Path, lwsc: object) -> None:
    theirs, ours = pki.generate(tmp_path / "server-pki"), pki.generate(tmp_path / "other-pki")
    stub = Stub(200, tls=theirs)
    try:
        kc = kubeconfig(tmp_path, stub.url, f", certificate-authority: '{ours.ca_crt}'")
        for cmd in COMMANDS:
            code, err = lwsc(*cmd, "--kubeconfig", str(kc))  # type: ignore[operator]
            _one_line(code, err, "TLS", str(ours.ca_crt), "CERTIFICATE_VERIFY_FAILED")
        no_ca = kubeconfig(tmp_path, stub.url)
        code, err = lwsc("preflight", "--kubeconfig", str(no_ca))  # type: ignore[operator]
        _one_line(code, err, "TLS", "names no CA")
    finally:
        stub.close()


def test_the_kubeconfigs_proxy_carries_the_requests(tmp_path: Path, lwsc: object) -> None:
    """The server's name resolves nowhere; only the kubeconfig's proxy-url reaches it (a raw socket
    to the server would call it unreachable)."""
    proxy = Stub(200)
    try:
        kc = kubeconfig(tmp_path, "http://api.cluster.invalid:6443", f", proxy-url: '{proxy.url}'")
        assert existing.reachable(existing.target(kc, None)) == "v1.36.3"
        assert proxy.seen == ["GET http://api.cluster.invalid:6443/version/ HTTP/1.1"]
    finally:
        proxy.close()
    refusing = Stub(401)
    try:
        kc = kubeconfig(tmp_path, "http://api.cluster.invalid:6443", f", proxy-url: '{refusing.url}'")
        code, err = lwsc("cleanup", "--all", "--kubeconfig", str(kc))  # type: ignore[operator]
        _one_line(code, err, "401 Unauthorized", "refresh the credentials")
    finally:
        refusing.close()


def test_a_run_against_a_refusing_cluster_leaves_no_run_directory(tmp_path: Path, lwsc: object) -> None:
    stub = Stub(401)
    try:
        kc = kubeconfig(tmp_path, stub.url)
        code, err = lwsc("run", "--kubeconfig", str(kc), "--focus", "LWS-NAME-001")  # type: ignore[operator]
        _one_line(code, err, "401")
        assert err[0].startswith("[") and f"existing cluster {stub.url}" in err[0], err  # the target, said first
    finally:
        stub.close()
    # the fixture checks that neither reports/ nor reports/latest was created


def test_a_refusal_after_the_check_is_one_line_too(tmp_path: Path, lwsc: object) -> None:
    """/version answers, the listing that follows is refused (a token that lacks the permission):
    still one line, exit 2, no traceback."""
    stub = Stub(403, version_ok=True)
    try:
        code, err = lwsc("cleanup", "--all", "--kubeconfig", str(kubeconfig(tmp_path, stub.url)))  # type: ignore[operator]
        _one_line(code, err, "forbids this user (403", "midway", "refresh the credentials")
    finally:
        stub.close()


EXEC_API = "client.authentication.k8s.io/v1beta1"
EXEC_PLUGIN = f"""#!/bin/sh
echo '{{"apiVersion": "{EXEC_API}", "kind": "ExecCredential", "status": {{"token": "from-exec"}}}}'
"""


def _listed(tmp_path: Path, name: str, server: str, user: str, current: bool) -> Path:
    kc = tmp_path / f"{name}.kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\n"
        + (f"current-context: {name}-ctx\n" if current else "")
        + f"clusters: [{{name: {name}-c, cluster: {{server: '{server}'}}}}]\n"
        f"contexts: [{{name: {name}-ctx, context: {{cluster: {name}-c, user: {name}-u}}}}]\n"
        f"users: [{{name: {name}-u, user: {user}}}]\n"
    )
    return kc


def test_a_kubeconfig_list_is_merged_as_kubectl_merges_it(
    tmp_path: Path, lwsc: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBECONFIG=a:b: `lwsc preflight` uses the context only b defines (b's current-context: a
    sets none), with the credentials of b's exec plugin; a's server is never asked. With a
    current-context in a, --context picks b's all the same."""
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(EXEC_PLUGIN)
    plugin.chmod(0o755)
    exec_user = f"{{exec: {{apiVersion: {EXEC_API}, command: '{plugin}', interactiveMode: Never}}}}"
    used, unused = Stub(404, version_ok=True), Stub(200)
    try:
        a = _listed(tmp_path, "a", unused.url, "{token: a-token}", current=False)
        b = _listed(tmp_path, "b", used.url, exec_user, current=True)
        monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
        code, err = lwsc("preflight")  # type: ignore[operator]
        said = f"cluster: {used.url} (context b-ctx, kubeconfig {a}{os.pathsep}{b}), chosen by $KUBECONFIG"
        assert said in err[0], err
        assert used.seen and set(used.auths) == {"Bearer from-exec"} and not unused.seen, (used.auths, unused.seen)
        assert code == 3 and "404 Not Found midway" in err[-1], err  # the stub is no whole cluster
        _listed(tmp_path, "a", unused.url, "{token: a-token}", current=True)
        code, err = lwsc("preflight", "--context", "b-ctx")  # type: ignore[operator]
        assert f"cluster: {used.url} (context b-ctx" in err[0] and not unused.seen, err
        code, err = lwsc("preflight", "--context", "c-ctx")  # type: ignore[operator]
        _one_line(code, err, "context 'c-ctx' not in", "a-ctx, b-ctx")
    finally:
        used.close()
        unused.close()
