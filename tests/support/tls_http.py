"""A judge endpoint over TLS for tests: `RawServer`'s handler behind a TLS handshake, with throwaway certificates
made here (a CA and a server certificate it signed, valid or expired). Each connection's handshake is recorded."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.hostile_http import Handler, RawServer
from tests.support.tls_proxy import write_pem


@dataclass(frozen=True)
class ServerCertificate:
    """A server certificate and its key, and the CA certificate that signed it, as PEM files."""

    ca: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def server_certificate(
    directory: Path,
    *,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = ("127.0.0.1",),
    expired: bool = False,
) -> ServerCertificate:
    """A CA and a server certificate it signed for `dns` and `ips`; with `expired`, one that ended yesterday."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("judge test CA"))
        .issuer_name(_name("judge test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=3))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    ends = now - dt.timedelta(days=1) if expired else now + dt.timedelta(days=1)
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("judge"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=2))
        .not_valid_after(ends)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    issued = ServerCertificate(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    issued.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    write_pem(cert, key, issued.cert, issued.key)
    return issued


class TLSServer(RawServer):
    """`RawServer` over TLS with `certificate`; `handshakes` holds each connection's handshake: `ok` or the
    server's error. With `reset`, every connection is reset before its handshake (a failure a retry may pass);
    with `client_certificate`, the server asks for one signed by the test CA (mutual TLS)."""

    def __init__(
        self,
        handler: Handler,
        certificate: ServerCertificate,
        *,
        reset: bool = False,
        client_certificate: bool = False,
        maximum_version: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED,
    ) -> None:
        super().__init__(handler)
        self.base_url = f"https://127.0.0.1:{self.port}/v1"
        self.handshakes: list[str] = []
        self._reset = reset
        self._recorded = threading.Condition()
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(certificate.cert, certificate.key)
        self._context.maximum_version = maximum_version
        if client_certificate:
            self._context.verify_mode = ssl.CERT_REQUIRED
            self._context.load_verify_locations(cafile=str(certificate.ca))

    def __enter__(self) -> TLSServer:
        super().__enter__()
        return self

    def _record(self, what: str) -> None:
        with self._recorded:
            self.handshakes.append(what)
            self._recorded.notify_all()

    def wait_handshakes(self, n: int, timeout: float = 10.0) -> list[str]:
        """The handshakes once at least `n` are recorded (or `timeout` has passed)."""
        with self._recorded:
            self._recorded.wait_for(lambda: len(self.handshakes) >= n, timeout)
            return list(self.handshakes)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        if self._reset:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
            conn.close()
            self._record("reset")
            return
        try:
            tls = self._context.wrap_socket(conn, server_side=True)
        except OSError as exc:  # ssl.SSLError is one: the client refused the certificate
            conn.close()
            self._record(f"{type(exc).__name__}: {exc}")
            return
        self._record("ok")
        super()._serve(tls)
