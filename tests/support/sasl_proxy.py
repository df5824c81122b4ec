"""A SASL-terminating Kafka proxy for tests: the server side of SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN.

Tansu 0.6 offers SCRAM but cannot provision a user on a broker that requires authentication (see
docs/collector_service.md), so no client could ever log in to it. This proxy stands in front of a plaintext Tansu
and plays the broker's part of the authentication phase only:

- it listens on 127.0.0.1 (optionally behind TLS, with a certificate of `tls_proxy.CertificateAuthority`: the
  clients' `SASL_SSL`), and opens one plaintext connection to Tansu per client connection;
- `ApiVersions` (api key 18) is forwarded to Tansu; its response is re-encoded with the SaslHandshake and
  SaslAuthenticate versions this proxy implements (`HANDSHAKE_VERSIONS`, `AUTHENTICATE_VERSIONS`) in place of
  Tansu's, every other entry and field unchanged;
- `SaslHandshake` (17) and `SaslAuthenticate` (36) are answered here (RFC 5802/7677 SCRAM with PBKDF2-HMAC salted
  passwords, ClientProof verified, ServerSignature sent; RFC 4616 PLAIN), for the users given to the proxy; a
  refused login gets error 58 (SASL_AUTHENTICATION_FAILED) and the connection closes `failed_login_close_delay_s`
  later (a Kafka broker's `connection.failed.authentication.delay.ms`, 100 ms by default; 0 closes at once);
- any other request before a successful login closes the connection (a broker requiring SASL does the same);
- after the login every byte is relayed unchanged in both directions.

Tansu must advertise the proxy's port (`EmbeddedBroker(advertised_port=proxy.port)`) so that clients never reach
its plaintext listener. Each connection is served by one thread, so no TLS object is used by two threads.
`requests` records (api key, api version, client id) of every request the proxy received before the login ended,
and `logins` / `failures` each (mechanism, user) outcome, for the tests to check what the clients actually sent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import socket
import ssl
import struct
from dataclasses import dataclass

from tests.support.tls_proxy import Issued, LoopbackProxy

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
HANDSHAKE_VERSIONS = (1, 1)  # v0 switches to unframed SASL tokens: not implemented, so not advertised
AUTHENTICATE_VERSIONS = (0, 2)  # v1 adds session_lifetime_ms, v2 is flexible (tagged fields)
SCRAM_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
SCRAM_ITERATIONS = 4096  # librdkafka and kafka-python accept 4096 and more
UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58


class ProtocolError(Exception):
    """The client broke the protocol: the connection is closed."""


# --------------------------------------------------------------------------------------------- wire format


class Reader:
    """Decodes Kafka primitive types from one frame."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("truncated frame")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ProtocolError("varint too long")

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self.take(n).decode()

    def bytes_(self) -> bytes:
        n = self.int32()
        return b"" if n < 0 else self.take(n)

    def compact_bytes(self) -> bytes:
        n = self.uvarint() - 1
        return b"" if n < 0 else self.take(n)

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())

    def rest(self) -> bytes:
        return self.data[self.pos :]


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def nullable_string(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else string(value)


def compact_nullable_string(value: str | None) -> bytes:
    if value is None:
        return uvarint(0)
    raw = value.encode()
    return uvarint(len(raw) + 1) + raw


@dataclass(frozen=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Reader  # positioned after the header

    @property
    def flexible(self) -> bool:
        """Whether this request (and so its response) uses a flexible version: only SaslAuthenticate's here."""
        return self.api_key == SASL_AUTHENTICATE and self.api_version >= 2


def parse_request(frame: bytes) -> Request:
    r = Reader(frame)
    api_key, api_version, correlation_id = r.int16(), r.int16(), r.int32()
    client_id = r.string()
    request = Request(api_key, api_version, correlation_id, client_id, r)
    if request.flexible:
        r.tagged_fields()  # request header v2
    return request


def response_frame(request: Request, body: bytes) -> bytes:
    header = struct.pack(">i", request.correlation_id) + (uvarint(0) if request.flexible else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


def rewrite_api_versions(frame: bytes, version: int, supported: dict[int, tuple[int, int]]) -> bytes:
    """The ApiVersions response `frame` (size prefix excluded) of request `version`, with the version ranges of
    the api keys in `supported` replaced (or added); everything else is copied. An error response is unchanged."""
    flexible = version >= 3  # body only: ApiVersions responses always have a v0 header
    r = Reader(frame)
    correlation_id, error_code = r.int32(), r.int16()
    if error_code != 0:
        return frame
    count = r.uvarint() - 1 if flexible else r.int32()
    entries: list[tuple[int, int, int, bytes]] = []
    for _ in range(count):
        key, low, high = r.int16(), r.int16(), r.int16()
        tags = b""
        if flexible:
            start = r.pos
            r.tagged_fields()
            tags = frame[start : r.pos]
        entries.append((key, low, high, tags))
    tail = r.rest()  # throttle_time_ms (v1+) and the body's tagged fields (v3+), copied as they are
    empty_tags = uvarint(0) if flexible else b""
    present = {key for key, *_ in entries}
    entries += [(key, *supported[key], empty_tags) for key in sorted(set(supported) - present)]
    out = bytearray(struct.pack(">ih", correlation_id, error_code))
    out += uvarint(len(entries) + 1) if flexible else struct.pack(">i", len(entries))
    for key, low, high, tags in entries:
        low, high = supported.get(key, (low, high))
        out += struct.pack(">hhh", key, low, high) + tags
    return bytes(out + tail)


def api_version_ranges(frame: bytes, version: int) -> dict[int, tuple[int, int]]:
    """api key → (min, max) of an ApiVersions response (size prefix excluded); used by tests to check rewrites."""
    flexible = version >= 3
    r = Reader(frame)
    r.int32()
    if r.int16() != 0:
        return {}
    count = r.uvarint() - 1 if flexible else r.int32()
    out = {}
    for _ in range(count):
        key, low, high = r.int16(), r.int16(), r.int16()
        if flexible:
            r.tagged_fields()
        out[key] = (low, high)
    return out


# --------------------------------------------------------------------------------------------- SASL servers


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise ValueError(f"malformed SCRAM attribute {part!r}")
        out[name] = value
    return out


class ScramServer:
    """The server side of one SCRAM-SHA-256/512 exchange (RFC 5802, RFC 7677).

    `step(token)` takes the client's message and returns the server's; `user` is set once the client-first
    message named one, `done` once the client proved it knows the password. A failure raises ValueError.
    """

    def __init__(
        self,
        mechanism: str,
        users: dict[str, str],
        iterations: int = SCRAM_ITERATIONS,
        *,
        salt: bytes | None = None,
        server_nonce: str | None = None,
    ) -> None:
        """`salt` and `server_nonce`: fixed values for known-answer tests (random by default)."""
        self.mechanism = mechanism
        self.hash = SCRAM_HASHES[mechanism]
        self.users = users
        self.iterations = iterations
        self.user: str | None = None
        self.done = False
        self._state = "client-first"
        self._salt = salt or os.urandom(16)
        self._server_nonce = server_nonce or base64.b64encode(os.urandom(18)).decode()

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash).digest()

    def step(self, token: bytes) -> bytes:
        message = token.decode()
        if self._state == "client-first":
            return self._client_first(message)
        if self._state == "client-final":
            return self._client_final(message)
        raise ValueError("SCRAM exchange already finished")

    def _client_first(self, message: str) -> bytes:
        # gs2-header ("n,," or "n,a=authzid,"; channel binding is not offered) then client-first-message-bare
        cbind, _, rest = message.partition(",")
        authzid, _, bare = rest.partition(",")
        if cbind not in ("n", "y"):
            raise ValueError("channel binding is not supported")
        self._gs2_header = f"{cbind},{authzid},"
        attrs = _attributes(bare)
        if "m" in attrs:
            raise ValueError("mandatory SCRAM extension not supported")
        self.user = attrs["n"].replace("=2C", ",").replace("=3D", "=")
        client_nonce = attrs["r"]
        self._client_first_bare = bare
        self._nonce = client_nonce + self._server_nonce
        self._server_first = f"r={self._nonce},s={_b64(self._salt)},i={self.iterations}"
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        self._state = "finished"
        without_proof, sep, proof_attr = message.rpartition(",p=")
        if not sep:
            raise ValueError("client-final-message has no proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise ValueError("nonce mismatch")
        if base64.b64decode(attrs.get("c", "")) != self._gs2_header.encode():
            raise ValueError("channel binding mismatch")
        password = self.users.get(self.user or "")
        if password is None:
            raise ValueError(f"unknown user {self.user!r}")
        salted = hashlib.pbkdf2_hmac(self.hash().name, password.encode(), self._salt, self.iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = self.hash(client_key).digest()
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = self._hmac(stored_key, auth_message)
        proof = base64.b64decode(proof_attr)
        if len(proof) != len(client_signature):
            raise ValueError("malformed proof")
        recovered_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(self.hash(recovered_key).digest(), stored_key):
            raise ValueError(f"invalid proof for user {self.user!r}")
        server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        self.done = True
        return f"v={_b64(server_signature)}".encode()


class PlainServer:
    """The server side of SASL PLAIN (RFC 4616): one message, authzid NUL authcid NUL password."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.user: str | None = None
        self.done = False

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise ValueError("malformed PLAIN message")
        authzid, user, password = (p.decode() for p in parts)
        self.user = user
        if authzid and authzid != user:
            raise ValueError("authorization identity differs from the user")
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise ValueError(f"invalid credentials for user {user!r}")
        self.done = True
        return b""


# --------------------------------------------------------------------------------------------- proxy


@dataclass
class Outcome:
    mechanism: str
    user: str | None
    reason: str = ""


@dataclass
class _Session:
    mechanism: str | None = None
    server: ScramServer | PlainServer | None = None
    authenticated: bool = False


class SASLProxy(LoopbackProxy):
    """Answers the SASL phase of Kafka connections on 127.0.0.1:`port`, then relays to `upstream` (host, port).

    `users`: username → password; `mechanisms`: those offered in SaslHandshake responses; `tls`: a server
    certificate to put TLS in front of everything (SASL_SSL).
    """

    name = "sasl-proxy"

    def __init__(
        self,
        port: int,
        upstream: tuple[str, int],
        users: dict[str, str],
        *,
        mechanisms: tuple[str, ...] = MECHANISMS,
        tls: Issued | None = None,
        failed_login_close_delay_s: float = 0.1,
    ) -> None:
        super().__init__(port, upstream)
        self.failed_login_close_delay_s = failed_login_close_delay_s
        self.users = dict(users)
        self.mechanisms = mechanisms
        self.context: ssl.SSLContext | None = None
        if tls is not None:
            self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.context.load_cert_chain(tls.cert, tls.key)
        self.requests: list[
            tuple[int, int, str | None]
        ] = []  # (api key, version, client id) before the login
        self.logins: list[Outcome] = []
        self.failures: list[Outcome] = []
        self.refused: list[str] = []  # connections closed for a request before the login, or a protocol error

    def versions_used(self, api_key: int) -> set[int]:
        """The versions of `api_key` that clients sent to this proxy."""
        with self._lock:
            return {v for k, v, _ in self.requests if k == api_key}

    # ------------------------------------------------------------------ threads

    def _serve(self, conn: socket.socket) -> None:
        self._track(conn)
        client: socket.socket = conn
        upstream: socket.socket | None = None
        try:
            conn.settimeout(30)  # in the try: stop() may close a tracked connection before its thread starts
            if self.context is not None:
                client = self.context.wrap_socket(conn, server_side=True)
                self._track(client)
            upstream = socket.create_connection(self.upstream, timeout=30)
            self._track(upstream)
            if self._authenticate(client, upstream):
                self._forward(client, upstream)
        except (OSError, ssl.SSLError, ProtocolError) as exc:
            if not self._stopping.is_set() and not isinstance(exc, ConnectionError | TimeoutError):
                log.debug("sasl proxy connection ended: %r", exc)
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    try:
                        sock.close()
                    except OSError:
                        pass

    @staticmethod
    def _recv_exact(sock: socket.socket, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("connection closed")
            data += chunk
        return bytes(data)

    def _recv_frame(self, sock: socket.socket) -> bytes:
        size = struct.unpack(">i", self._recv_exact(sock, 4))[0]
        if not 0 < size < 100 * 1024 * 1024:
            raise ProtocolError(f"bad frame size {size}")
        return self._recv_exact(sock, size)

    def _authenticate(self, client: socket.socket, upstream: socket.socket) -> bool:
        """Serve requests until a login succeeds (True) or the connection must close (False)."""
        session = _Session()
        while not self._stopping.is_set():
            try:
                frame = self._recv_frame(client)
            except ConnectionError:
                return False
            request = parse_request(frame)
            with self._lock:
                self.requests.append((request.api_key, request.api_version, request.client_id))
            log.info(
                "sasl proxy: request api_key=%d api_version=%d client_id=%r",
                request.api_key,
                request.api_version,
                request.client_id,
            )
            if request.api_key == API_VERSIONS:
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
                answer = self._recv_frame(upstream)
                answer = rewrite_api_versions(
                    answer,
                    request.api_version,
                    {SASL_HANDSHAKE: HANDSHAKE_VERSIONS, SASL_AUTHENTICATE: AUTHENTICATE_VERSIONS},
                )
                client.sendall(struct.pack(">i", len(answer)) + answer)
            elif request.api_key == SASL_HANDSHAKE:
                client.sendall(self._handshake(request, session))
                if session.mechanism is None:
                    self._stopping.wait(self.failed_login_close_delay_s)
                    return False
            elif request.api_key == SASL_AUTHENTICATE:
                reply, ok = self._authenticate_step(request, session)
                client.sendall(reply)
                if not ok:
                    self._stopping.wait(self.failed_login_close_delay_s)
                    return False
                if session.authenticated:
                    return True
            else:
                self.refused.append(f"api key {request.api_key} before authentication")
                return False
        return False

    def _handshake(self, request: Request, session: _Session) -> bytes:
        if not HANDSHAKE_VERSIONS[0] <= request.api_version <= HANDSHAKE_VERSIONS[1]:
            raise ProtocolError(f"SaslHandshake v{request.api_version} is not implemented")
        mechanism = request.body.string() or ""
        error = 0
        if session.server is not None:
            error = ILLEGAL_SASL_STATE
        elif mechanism in self.mechanisms:
            session.mechanism = mechanism
            session.server = (
                ScramServer(mechanism, self.users) if mechanism in SCRAM_HASHES else PlainServer(self.users)
            )
        else:
            error = UNSUPPORTED_SASL_MECHANISM
            self.failures.append(Outcome(mechanism, None, "unsupported mechanism"))
        body = struct.pack(">hi", error, len(self.mechanisms)) + b"".join(string(m) for m in self.mechanisms)
        return response_frame(request, body)

    def _authenticate_step(self, request: Request, session: _Session) -> tuple[bytes, bool]:
        version = request.api_version
        if not AUTHENTICATE_VERSIONS[0] <= version <= AUTHENTICATE_VERSIONS[1]:
            raise ProtocolError(f"SaslAuthenticate v{version} is not implemented")
        token = request.body.compact_bytes() if request.flexible else request.body.bytes_()
        error, message, reply = 0, None, b""
        server = session.server
        if server is None or server.done:
            error, message = ILLEGAL_SASL_STATE, "SaslAuthenticate without a SaslHandshake"
        else:
            try:
                reply = server.step(token)
            except (ValueError, KeyError, UnicodeDecodeError) as exc:
                error = SASL_AUTHENTICATION_FAILED
                message = (
                    f"Authentication failed during authentication due to invalid credentials with SASL "
                    f"mechanism {session.mechanism}"
                )
                self.failures.append(Outcome(session.mechanism or "", server.user, str(exc)))
            else:
                if server.done:
                    session.authenticated = True
                    self.logins.append(Outcome(session.mechanism or "", server.user))
        if request.flexible:
            body = (
                struct.pack(">h", error)
                + compact_nullable_string(message)
                + uvarint(len(reply) + 1)
                + reply
                + struct.pack(">q", 0)
                + uvarint(0)
            )
        else:
            body = struct.pack(">h", error) + nullable_string(message) + struct.pack(">i", len(reply)) + reply
            if version >= 1:
                body += struct.pack(">q", 0)  # session_lifetime_ms: no re-authentication
        return response_frame(request, body), error == 0
