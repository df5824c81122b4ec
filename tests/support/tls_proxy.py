"""A TLS-terminating TCP proxy for tests, and throwaway certificates to run it with.

Tansu 0.6 cannot serve TLS itself (see docs/collector_service.md), so tests put this proxy in front of its
plaintext listener: clients speak TLS to the proxy (optionally with a client certificate: mutual TLS), the proxy
forwards the decrypted bytes to the broker. The broker must advertise the proxy's address in its metadata
(`EmbeddedBroker(advertised_port=proxy_port)`), so that clients never connect to the plaintext port.

One thread accepts, one thread per connection does the handshake and then forwards in both directions (so no
TLS object is ever used by two threads). A failed handshake sends the TLS alert a broker would send (e.g.
`certificate required`), closes that connection only and is recorded in `handshake_errors`.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import select
import socket
import ssl
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# --------------------------------------------------------------------------------------------- certificates


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, as PEM files."""

    cert: Path
    key: Path


class CertificateAuthority:
    """A throwaway CA that signs server and client certificates into `directory`."""

    def __init__(self, directory: Path, name: str = "agentwatch test CA") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = dt.datetime.now(dt.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
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
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        slug = name.replace(" ", "-")
        self.cert_file = self.directory / f"{slug}.pem"
        self.cert_file.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self, common_name: str, *, dns: tuple[str, ...] = (), ips: tuple[str, ...] = (), client: bool = False
    ) -> Issued:
        """A certificate for a server (subjectAltName `dns` and `ips`) or, with `client`, for a TLS client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        slug = common_name.replace(" ", "-")
        issued = Issued(self.directory / f"{slug}.crt", self.directory / f"{slug}.key")
        write_pem(cert, key, issued.cert, issued.key)
        return issued


def write_pem(
    cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, cert_path: Path, key_path: Path
) -> None:
    """Write a certificate and its private key (PKCS#8, not encrypted) as PEM files."""
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


# --------------------------------------------------------------------------------------------- proxy


class LoopbackProxy(ABC):
    """A TCP server on 127.0.0.1:`port` that hands each connection to `_serve` on a thread of its own; stops by
    closing every socket it tracked. Subclasses forward to `upstream` (host, port)."""

    name = "proxy"

    def __init__(self, port: int, upstream: tuple[str, int]) -> None:
        self.port = port
        self.upstream = upstream
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._accepting: threading.Thread | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Self:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.2)
        self._listener = listener
        self._accepting = threading.Thread(target=self._accept, name=f"{self.name}-{self.port}", daemon=True)
        self._accepting.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._accepting is not None:
            self._accepting.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            for sock in list(self._open):
                try:
                    sock.close()
                except OSError:
                    pass
            self._open.clear()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    @abstractmethod
    def _serve(self, conn: socket.socket) -> None:
        """Handle one accepted connection (runs on its own thread)."""

    def _forward(self, client: socket.socket, upstream: socket.socket) -> None:
        """Relay bytes both ways until either side closes or the proxy stops (`client` may be TLS)."""
        try:
            client.settimeout(1.0)
            upstream.settimeout(1.0)
        except OSError:  # the proxy stopped and closed them before the relay began
            return
        pending = getattr(client, "pending", lambda: 0)
        while not self._stopping.is_set():
            if pending():
                readable = [client]
            else:
                try:
                    readable, _, _ = select.select([client, upstream], [], [], 0.5)
                except (OSError, ValueError):
                    return
            for sock in readable:
                try:
                    data = sock.recv(65536)
                except TimeoutError:  # a TLS record that held no application data
                    continue
                except (OSError, ssl.SSLError):
                    return
                if not data:
                    return
                try:
                    (upstream if sock is client else client).sendall(data)
                except (OSError, ssl.SSLError):
                    return


class TLSProxy(LoopbackProxy):
    """Accepts TLS on 127.0.0.1:`port` and forwards the plaintext to `upstream` (host, port).

    `client_ca`: require a client certificate signed by this CA (mutual TLS).
    """

    name = "tls-proxy"

    def __init__(
        self, port: int, upstream: tuple[str, int], server: Issued, *, client_ca: Path | None = None
    ) -> None:
        super().__init__(port, upstream)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(server.cert, server.key)
        if client_ca is not None:
            self.context.load_verify_locations(cafile=str(client_ca))
            self.context.verify_mode = ssl.CERT_REQUIRED
        self.connections = 0  # TLS handshakes that succeeded
        self.handshake_errors: list[str] = []

    # ------------------------------------------------------------------ threads

    def _serve(self, conn: socket.socket) -> None:
        self._track(conn)
        try:
            conn.settimeout(10)
            tls = self.context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        except OSError:  # the proxy stopped and closed the connection before it was wrapped
            return
        self._track(tls)
        try:
            tls.do_handshake()  # on failure OpenSSL has sent the alert (certificate required, unknown ca, ...)
        except (OSError, ssl.SSLError) as exc:
            self.handshake_errors.append(repr(exc))
            self._linger_close(conn)
            return
        self.connections += 1
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            tls.close()
            return
        self._track(upstream)
        try:
            self._forward(tls, upstream)
        finally:
            for sock in (tls, upstream):
                try:
                    sock.close()
                except OSError:
                    pass

    @staticmethod
    def _linger_close(conn: socket.socket) -> None:
        """Close without a reset, so that the client reads the alert rather than `connection reset by peer`."""
        try:
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(2)
            while conn.recv(65536):
                pass
        except OSError:
            pass
        finally:
            conn.close()
