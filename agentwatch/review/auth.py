"""Who may review: configured reviewers with hashed secrets (scrypt passwords or SHA-256 of random tokens).

A password is stored as `scrypt$N$r$p$salt$hash` (base64), made by `agentwatch review-hash`; a token (random,
high-entropy) as the hex SHA-256 of it, which is enough for a secret nobody can guess. Secrets are compared in
constant time, and an unknown name or a token reviewer's name given with a secret costs a password check as a
password reviewer's does, so timing says nothing about who exists or how they sign in (a token sent as
`Authorization: Bearer` is checked by its hash alone: no name is given).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from agentwatch.config import Reviewer

_N, _R, _P = 2**15, 8, 1  # scrypt cost: 32 MiB and ~0.1 s per check on a 2-core machine
_MAXMEM = 64 * 1024 * 1024
_DUMMY = (
    f"scrypt${_N}${_R}${_P}${base64.b64encode(bytes(16)).decode()}${base64.b64encode(bytes(32)).decode()}"
)


def hash_password(password: str, *, n: int = _N) -> str:
    """The `password_hash` of a password (a fresh random salt each time)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=_R, p=_P, maxmem=_MAXMEM, dklen=32)
    return f"scrypt${n}${_R}${_P}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches a `password_hash`; False for a malformed hash."""
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        expected = base64.b64decode(digest, validate=True)
        got = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt, validate=True),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=_MAXMEM,
            dklen=len(expected),
        )
    except (ValueError, binascii.Error):
        return False
    return hmac.compare_digest(got, expected)


def token_hash(token: str) -> str:
    """The `token_sha256` of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class Reviewers:
    """Checks a name and secret, or an Authorization header, against the configured reviewers."""

    def __init__(self, reviewers: list[Reviewer]) -> None:
        self._by_name = {r.name: r for r in reviewers}
        self._tokens = {
            r.token_sha256.get_secret_value().lower(): r.name for r in reviewers if r.token_sha256 is not None
        }

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def names(self) -> frozenset[str]:
        """The reviewers' names."""
        return frozenset(self._by_name)

    def check(self, name: str, secret: str) -> str | None:
        """The reviewer's name when `secret` is their password or token, else None."""
        reviewer = self._by_name.get(name)
        if reviewer is None:
            verify_password(secret, _DUMMY)  # as slow as a real check
            return None
        if reviewer.password_hash is not None:
            return name if verify_password(secret, reviewer.password_hash.get_secret_value()) else None
        assert reviewer.token_sha256 is not None
        # a token's own check takes a microsecond: answering that fast would name the token reviewers
        verify_password(secret, _DUMMY)
        return (
            name
            if hmac.compare_digest(token_hash(secret), reviewer.token_sha256.get_secret_value().lower())
            else None
        )

    def bearer(self, token: str) -> str | None:
        """The reviewer whose token this is, else None."""
        digest = token_hash(token)
        for known, name in self._tokens.items():
            if hmac.compare_digest(digest, known):
                return name
        return None

    def from_header(self, authorization: str) -> str | None:
        """The reviewer an `Authorization: Bearer TOKEN` or `Basic base64(name:secret)` names, or None."""
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and value:
            return self.bearer(value.strip())
        if scheme.lower() == "basic" and value:
            try:
                name, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
            except (ValueError, binascii.Error, UnicodeDecodeError):
                return None
            return self.check(name, secret) if sep else None
        return None
