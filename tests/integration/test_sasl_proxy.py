"""The test SASL proxy's own parts, without a broker: SCRAM against RFC 7677's example, PLAIN, and the rewrite of
ApiVersions responses (tests/integration/test_kafka_sasl.py runs it with real clients)."""

from __future__ import annotations

import base64
import struct

import pytest

from tests.support.sasl_proxy import (
    PlainServer,
    ScramServer,
    api_version_ranges,
    rewrite_api_versions,
    uvarint,
)


def test_scram_sha256_matches_rfc7677_example() -> None:
    server = ScramServer(
        "SCRAM-SHA-256",
        {"user": "pencil"},
        4096,
        salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="),
        server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.done and server.user == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_refuses_a_wrong_proof_and_an_unknown_user(mechanism: str) -> None:
    from kafka.net.sasl.scram import ScramClient

    for user, password in (("alice", "wrong"), ("mallory", "s3cret")):
        client = ScramClient(user, password, mechanism)
        server = ScramServer(mechanism, {"alice": "s3cret"})
        client.process_server_first_message(server.step(client.first_message()))
        with pytest.raises(ValueError, match="invalid proof|unknown user"):
            server.step(client.final_message())
        assert not server.done
    client = ScramClient("alice", "s3cret", mechanism)
    server = ScramServer(mechanism, {"alice": "s3cret"})
    client.process_server_first_message(server.step(client.first_message()))
    client.process_server_final_message(server.step(client.final_message()))  # checks ServerSignature
    assert server.done


def test_plain() -> None:
    assert PlainServer({"alice": "s3cret"}).step(b"\0alice\0s3cret") == b""
    for token in (b"\0alice\0wrong", b"\0bob\0s3cret", b"bob\0alice\0s3cret", b"alice"):
        with pytest.raises(ValueError):
            PlainServer({"alice": "s3cret"}).step(token)


def _response(version: int, entries: list[tuple[int, int, int]], tail: bytes) -> bytes:
    flexible = version >= 3
    out = struct.pack(">ih", 7, 0) + (
        uvarint(len(entries) + 1) if flexible else struct.pack(">i", len(entries))
    )
    for key, low, high in entries:
        out += struct.pack(">hhh", key, low, high) + (uvarint(0) if flexible else b"")
    return out + tail


@pytest.mark.parametrize(
    ("version", "tail"),
    [
        (0, b""),
        (2, struct.pack(">i", 0)),  # throttle_time_ms
        (3, struct.pack(">i", 0) + uvarint(1) + uvarint(0) + uvarint(2) + b"\x01\x02"),  # and a tagged field
    ],
)
def test_rewrite_api_versions(version: int, tail: bytes) -> None:
    tansu = [(0, 0, 11), (17, 0, 1), (36, 0, 2), (18, 0, 4)]
    rewritten = rewrite_api_versions(_response(version, tansu, tail), version, {17: (1, 1), 36: (0, 2)})
    assert rewritten == _response(version, [(0, 0, 11), (17, 1, 1), (36, 0, 2), (18, 0, 4)], tail)
    assert api_version_ranges(rewritten, version)[17] == (1, 1)
    # absent keys are added; error responses are left alone
    added = rewrite_api_versions(_response(version, [(0, 0, 11)], tail), version, {17: (1, 1)})
    assert added == _response(version, [(0, 0, 11), (17, 1, 1)], tail)
    error = struct.pack(">ihi", 7, 35, 0)
    assert rewrite_api_versions(error, version, {17: (1, 1)}) == error
