"""The local cluster's PKI: one CA and one certificate serving every purpose.

Following kwokctl's model, the admin certificate (O=system:masters) is the apiserver's serving
cert, every client's cert, the service-account signing key and the webhook servers' cert. It
carries an IP SAN for 127.0.0.1 because the apiserver dials webhooks by IP URL, and Go verifies
an IP host against IP SANs only. Local-only material: never copied into reports.

Keys are ECDSA P-256 (`KEY_TYPE`), not RSA-2048: every TLS handshake (each watch connection of
the harness and the controllers) signs with the server's key and, for client certificates, the
client's, and a P-256 signature costs a small fraction of an RSA-2048 one. Every consumer (the
API server's serving and service-account keys, KCM's token signer, webhook servers, kubectl,
client-go and Python clients) takes ECDSA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DNS_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "localhost",
    "lws-webhook-service.lws-system.svc",
    "kueue-webhook-service.kueue-system.svc",
)
IPS = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class Pki:
    ca_crt: Path
    admin_crt: Path
    admin_key: Path

    @classmethod
    def at(cls, directory: Path) -> Pki:
        return cls(directory / "ca.crt", directory / "admin.crt", directory / "admin.key")

    def exists(self) -> bool:
        return all(p.is_file() for p in (self.ca_crt, self.admin_crt, self.admin_key))

    def expires(self) -> dt.datetime:
        """When the first of the two certificates expires."""
        certs = [x509.load_pem_x509_certificate(p.read_bytes()) for p in (self.ca_crt, self.admin_crt)]
        return min(c.not_valid_after_utc for c in certs)


KEY_TYPE = "ecdsa-p256"  # part of a provisioned-state snapshot's key (the snapshot stores the PKI)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def generate(directory: Path, days: int = 365) -> Pki:
    """Write ca.crt, admin.crt and admin.key into `directory` (mode 0600 for the key)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lwsc-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = _key()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in DNS_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in IPS]
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "lwsc-admin"),
                ]
            )
        )
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki.at(directory)
    pki.ca_crt.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.admin_crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.admin_key.touch(mode=0o600)
    pki.admin_key.write_bytes(_pem_key(key))
    return pki


def kubeconfig(pki: Pki, server: str) -> str:
    """An admin kubeconfig referencing the PKI files by path (no inline secrets to leak)."""
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: lwsc\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {pki.ca_crt}\n"
        f"users:\n- name: lwsc-admin\n  user:\n    client-certificate: {pki.admin_crt}\n"
        f"    client-key: {pki.admin_key}\n"
        "contexts:\n- name: lwsc\n  context:\n    cluster: lwsc\n    user: lwsc-admin\n"
        "current-context: lwsc\n"
    )
