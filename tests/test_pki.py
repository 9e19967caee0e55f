"""The local cluster's PKI: ECDSA P-256 keys, one certificate for serving and client auth."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from lws_conformance.install import pki


def test_keys_are_ecdsa_p256(tmp_path: Path) -> None:
    p = pki.generate(tmp_path)
    key = serialization.load_pem_private_key(p.admin_key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    for crt in (p.ca_crt, p.admin_crt):
        pub = x509.load_pem_x509_certificate(crt.read_bytes()).public_key()
        assert isinstance(pub, ec.EllipticCurvePublicKey)
    assert p.admin_key.stat().st_mode & 0o777 == 0o600


def test_a_mutual_tls_handshake_on_127_0_0_1_verifies(tmp_path: Path) -> None:
    """The certificate serves TLS on 127.0.0.1 (IP SAN) and authenticates the client, both
    verified against the CA, as the API server and every client use it."""
    p = pki.generate(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(p.admin_crt, p.admin_key)
    server_ctx.load_verify_locations(p.ca_crt)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.create_default_context(cafile=str(p.ca_crt))
    client_ctx.load_cert_chain(p.admin_crt, p.admin_key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen: dict[str, object] = {}

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            seen["peer"] = tls.getpeercert()
            tls.sendall(b"ok")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.recv(2) == b"ok"
    t.join(10)
    listener.close()
    subject = dict(x[0] for x in seen["peer"]["subject"])  # type: ignore[index]
    assert subject == {"organizationName": "system:masters", "commonName": "lwsc-admin"}
