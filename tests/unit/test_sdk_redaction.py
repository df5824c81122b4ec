"""Redaction by key name and by value pattern, measured on a corpus of secrets and of texts that only look alike.

Every secret in the corpus is made up (right shape, random body). A positive is a text holding one secret: it is
found when the secret no longer appears in what the SDK would send. A negative holds none: it is a false alarm
when anything in it was changed. Precision and recall are printed (run with -s) and held to a floor.
"""

from __future__ import annotations

import json
import random
import string

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import configure, shutdown, trace
from agentwatch.sdk.capture import DEFAULT_VALUE_PATTERNS, REDACTED, Capture

_rng = random.Random(29)


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _b64url(n: int) -> str:
    return _rand(n, string.ascii_letters + string.digits + "-_")


JWT = f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{_b64url(40)}.{_b64url(43)}"
AWS_ID = "AKIA" + _rand(16, string.ascii_uppercase + string.digits)
AWS_SECRET = _rand(40, string.ascii_letters + string.digits + "/+")
PEM_BODY = "\n".join(_rand(64, string.ascii_letters + string.digits + "+/") for _ in range(5))

BEARER = _b64url(32)
OPENAI = f"sk-proj-{_b64url(48)}"
OPENAI_OLD = f"sk-{_rand(48)}"
ANTHROPIC = f"sk-ant-api03-{_b64url(90)}"
GITHUB = f"ghp_{_rand(36)}"
GITHUB_PAT = f"github_pat_{_b64url(82)}"
SLACK = f"xoxb-{_rand(12, string.digits)}-{_rand(12, string.digits)}-{_rand(24)}"
STRIPE = f"sk_live_{_rand(24)}"
GOOGLE = f"AIza{_b64url(35)}"
GITLAB = f"glpat-{_b64url(20)}"
PLAIN_SECRET = _rand(24)
ACCESS_TOKEN = _b64url(40)

# (text, the secret it holds)
POSITIVES: list[tuple[str, str]] = [
    (f"Authorization: Bearer {BEARER}", BEARER),
    (f"curl -H 'Authorization: Bearer {JWT}' https://api.example.com/v1/orders", JWT),
    (f"token is {JWT}", JWT),
    (f"session={JWT}; Path=/; HttpOnly", JWT),
    (f"use key {AWS_ID} for the upload", AWS_ID),
    (f"AWS_ACCESS_KEY_ID={AWS_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----", PEM_BODY),
    (f"key:\n-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\nthanks", PEM_BODY),
    (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}", PEM_BODY),  # cut before its end
    (f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}\n-----END EC PRIVATE KEY-----", PEM_BODY),
    ("connect to postgresql://app:Sup3rS3cret!@db.internal:5432/orders", "Sup3rS3cret!"),
    ("DATABASE_URL=postgres://admin:hunter2pass@10.0.0.5/prod", "hunter2pass"),
    ("mongodb+srv://reporting:Zx81-pass@cluster0.example.net/?retryWrites=true", "Zx81-pass"),
    ("redis://:s3cr3tredis@cache:6379/0", "s3cr3tredis"),
    ("amqp://guest:guest-pw-2024@rabbit:5672/", "guest-pw-2024"),
    ("fetch https://deploy:ghs7Hk29sQ@git.example.com/repo.git failed", "ghs7Hk29sQ"),
    ("Failed to connect: mysql://root:R00tPassw0rd@localhost/shop (timeout)", "R00tPassw0rd"),
    (f"OPENAI_API_KEY={OPENAI}", OPENAI),
    (f"my key is {OPENAI_OLD}", OPENAI_OLD),
    (f"export ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC),
    (f"git clone https://{GITHUB}@github.com/acme/app", GITHUB),
    (f"token {GITHUB_PAT} for CI", GITHUB_PAT),
    (f"slack token {SLACK}", SLACK),
    (f"stripe secret {STRIPE}", STRIPE),
    (f"maps key {GOOGLE}", GOOGLE),
    (f"gitlab {GITLAB}", GITLAB),
    ("password=hunter2!", "hunter2!"),
    ("login with user=ann&password=correct-horse-battery&remember=1", "correct-horse-battery"),
    ('{"username": "ann", "password": "Tr0ub4dor&3"}', "Tr0ub4dor"),
    ("db passwd: s3cretpw", "s3cretpw"),
    ("PGPASSWORD=pg-secret-99 psql -h db", "pg-secret-99"),
    ("client_secret=9f8e7d6c5b4a3210", "9f8e7d6c5b4a3210"),
    ("api_key: 7c1d9a0b2e4f6a8c", "7c1d9a0b2e4f6a8c"),
    ("X-API-Key header: apikey=abcd1234efgh5678", "abcd1234efgh5678"),
    ("refresh_token=1//0gkQ8x-abcdefghijk", "1//0gkQ8x-abcdefghijk"),
    ("Authorization: Basic YWxpY2U6cGFzc3dvcmQxMjM=", "YWxpY2U6cGFzc3dvcmQxMjM="),
    ("authorization: basic dXNlcjpzM2NyZXQ=", "dXNlcjpzM2NyZXQ="),
    (f"secret: {PLAIN_SECRET}", PLAIN_SECRET),
    (f"the access_token={ACCESS_TOKEN} expires in 3600 s", ACCESS_TOKEN),
]

NEGATIVES: list[str] = [
    "Your order ORD-10492 was refunded: $42.10 will reach your card in 3-5 days.",
    "I can't share the password policy document, but passwords need 12 characters.",
    "Reset your password from the account page; we never ask for it by email.",
    "The token count of this reply was 1,204 (input 900, output 304).",
    "Use a bearer token in the Authorization header (see docs/auth.md).",
    "Visit https://shop.example.com/orders/10492?ref=email for details.",
    "Our API lives at https://api.example.com:8443/v2/ and needs TLS 1.2.",
    "Email ann@example.com or call +1 555 0100.",
    "ssh git@github.com:acme/app.git is the clone address.",
    "postgresql://db.internal:5432/orders is the read replica (no credentials here).",
    "The AWS region is eu-west-1 and the bucket is acme-invoices-2024.",
    "Commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the refund rounding.",
    "SHA-256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "The tracking number is 1Z999AA10123456784 (UPS).",
    "Flight LH2034 departs 07:45 from gate B12; seat 14C.",
    "Basic plan costs $9.99/month, the premium plan $19.99.",
    "a basic question: what is the refund window?",
    "The secret to good support is patience and clear answers.",
    "She said the password was on a sticky note, which is against policy.",
    'tool result: {"status": "refunded", "amount": 42.1, "currency": "EUR"}',
    "Traceback (most recent call last):\n  File \"agent.py\", line 12, in run\nKeyError: 'order_id'",
    "BEGIN TRANSACTION; UPDATE orders SET status='refunded' WHERE id=10492; COMMIT;",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIJAKd\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "UUID 3f2504e0-4f89-11d3-9a0c-0305e82c3301 identifies the ticket.",
    "The skier bought sk-8 wax and a helmet.",
    "eyJ is how base64 of '{\"' begins; a full JWT has three parts.",
    "Call the lookup_order tool with order_id=10492 and include_items=true.",
    "Set max_tokens=512 and temperature=0.2 for the summary.",
    "Your session will expire in 30 minutes; save your work.",
    "Cookies help us remember your cart between visits.",
    "The key to the storage room is at the front desk.",
    "Account number ending in 4821 was charged twice.",
    "Price per 1M tokens: $0.15 input, $0.60 output.",
    "mailto:support@example.com?subject=Refund%20request",
    "The file is at s3://acme-invoices/2024/03/invoice-10492.pdf",
    "Pass the salt: our passwords are hashed with scrypt, N=2^15.",
    "Token bucket rate limiting allows bursts of 10 requests.",
    "AKIA is the prefix AWS uses for long-term access key ids.",
    "Authorization failed: the user lacks the refunds:write scope.",
]


def _found(c: Capture, text: str, secret: str) -> bool:
    out = c.text(text)
    return secret not in out and REDACTED in out


def test_the_corpus_measures_precision_and_recall() -> None:
    c = Capture()
    missed = [text for text, secret in POSITIVES if not _found(c, text, secret)]
    altered = [text for text in NEGATIVES if c.text(text) != text]
    tp, fn, fp = len(POSITIVES) - len(missed), len(missed), len(altered)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    print(
        f"\nvalue redaction on {len(POSITIVES)} texts with a secret and {len(NEGATIVES)} without: "
        f"recall {recall:.3f} ({tp}/{tp + fn}), precision {precision:.3f} ({fp} texts without a secret changed)"
    )
    for text in missed:
        print("  missed:", text[:100].replace("\n", "\\n"))
    for text in altered:
        print("  changed:", text[:100].replace("\n", "\\n"))
    assert missed == [], "a secret of the corpus went out"
    assert fp <= 2, altered
    assert precision >= 0.95


@pytest.mark.parametrize(("text", "secret"), POSITIVES[:12])
def test_each_secret_shape_is_replaced_in_place(text: str, secret: str) -> None:
    out = Capture().text(text)
    assert secret not in out and REDACTED in out
    assert len(out) < len(text) + 20  # the rest of the text is kept


def test_the_secret_is_replaced_not_its_context() -> None:
    c = Capture()
    assert c.text("connect to postgresql://app:Sup3rS3cret!@db.internal:5432/orders") == (
        f"connect to postgresql://app:{REDACTED}@db.internal:5432/orders"
    )
    assert c.text("Authorization: Bearer abcdefgh12345678") == f"Authorization: Bearer {REDACTED}"
    assert (
        c.text("login with user=ann&password=correct-horse&x=1")
        == f"login with user=ann&password={REDACTED}&x=1"
    )


def test_new_key_names_redact_whole_values() -> None:
    c = Capture()
    value = {
        "apikey": "a",
        "passwd": "b",
        "pwd": "c",
        "credentials": {"user": "u", "pass": "p"},
        "private_key": "d",
        "aws_access_key": "e",
        "Cookie": "sid=1",
        "set-cookie": "sid=2",
        "jwt": "f",
        "dbConnectionString": "g",
        "sentry_dsn": "h",
        "keyboard": "qwerty",
        "max_tokens": 5,
        "author": "ann",
    }
    got = json.loads(c.dumps(value))
    redacted = {k for k, v in got.items() if v == REDACTED}
    assert redacted == set(value) - {"keyboard", "max_tokens", "author"}


def test_value_patterns_reach_nested_strings_and_json_in_strings() -> None:
    c = Capture()
    value = {
        "args": ["--db", "postgresql://u:topsecretpw@h/db"],
        "note": json.dumps({"password": "letmein99"}),
    }
    out = c.dumps(value)
    assert "topsecretpw" not in out and "letmein99" not in out


def test_the_fast_assignment_rule_matches_its_pattern() -> None:
    """The default set runs `assignment` separator-first; the plain pattern finds the same secrets."""
    plain = Capture(value_patterns={"assignment": DEFAULT_VALUE_PATTERNS["assignment"] + "(?:)"})
    fast = Capture(value_patterns={"assignment": DEFAULT_VALUE_PATTERNS["assignment"]})
    for text in [t for t, _ in POSITIVES] + NEGATIVES:
        assert fast.text(text) == plain.text(text), text


def test_patterns_are_configurable_and_a_bad_one_fails_at_setup() -> None:
    c = Capture(value_patterns={"ticket": r"TCK-(?P<secret>\d{6})"})
    assert c.text("see ticket TCK-123456 today") == f"see ticket TCK-{REDACTED} today"
    assert c.text("password=hunter2!") == "password=hunter2!"  # the defaults replaced
    assert Capture(redact_values=False).text(f"token {JWT}") == f"token {JWT}"
    with pytest.raises(ValueError, match="'broken'"):
        Capture(value_patterns={"broken": "(unclosed"})


@pytest.mark.parametrize(
    "patterns",
    [{"ticket": r"TCK-(?P<secret>\d{6})"}, {**DEFAULT_VALUE_PATTERNS, "pin": r"PIN\d{4}"}, [r"PIN\d{4}"]],
)
def test_a_pattern_of_the_users_applies_to_texts_shorter_than_any_default_secret(patterns) -> None:
    """The defaults need 12 characters to match, and shorter texts are not searched for them; a pattern of the
    user's may match fewer: a value that is just a ticket or a PIN is redacted, alone, in a dict, in a call."""
    c = Capture(value_patterns=patterns)
    secret = "TCK-123456" if "ticket" in patterns else "PIN1234"
    assert secret not in c.text(secret)
    for _ in range(2):  # the second time the keys are decided: the dict is not copied unless it must be
        assert secret not in c.dumps({"ref": secret, "n": 1})
    assert Capture().text(secret) == secret  # under the defaults alone, nothing to find


def test_a_pattern_that_fails_redacts_everything_and_never_raises() -> None:
    def exploding(_text: str, _low: str) -> str:
        raise RuntimeError("regex engine failure")

    c = Capture()
    assert c._values is not None
    c._values.rules = [exploding]
    assert c.text("some text that is long enough") == REDACTED


def test_huge_values_are_scanned_only_as_far_as_they_are_kept() -> None:
    c = Capture(max_bytes=1024)
    text = "x" * 5_000_000 + " password=hunter2!"
    out = c.text(text)
    assert len(out.encode()) <= 1024 and out.endswith("…[truncated]")
    cut = "a" * 1000 + " postgresql://app:Sup3rS3cret!@db/x"  # a secret across the size bound
    assert "Sup3r" not in c.text(cut)


def test_exceptions_leave_the_agent_redacted() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    configure(exporter, tracer_provider=provider, batch=False)
    try:

        @trace(kind="tool")
        def connect() -> None:
            raise ConnectionError("could not reach postgresql://app:Sup3rS3cret!@db:5432/orders")

        with pytest.raises(ConnectionError):
            connect()
    finally:
        shutdown()
    (span,) = exporter.get_finished_spans()
    assert "Sup3rS3cret" not in (span.status.description or "")
    (event,) = span.events
    attributes = dict(event.attributes or {})
    assert all("Sup3rS3cret" not in str(v) for v in attributes.values())
    assert REDACTED in str(attributes["exception.message"])


def test_configure_reads_the_environment(monkeypatch) -> None:
    from agentwatch.sdk.runtime import RUNTIME

    monkeypatch.setenv("AGENTWATCH_REDACT_KEYS", "+ssn,iban")
    monkeypatch.setenv("AGENTWATCH_REDACT_VALUES", "0")
    configure(InMemorySpanExporter(), tracer_provider=TracerProvider(), batch=False)
    try:
        got = json.loads(
            RUNTIME.capture.dumps({"ssn": "1", "iban": "2", "password": "3", "note": f"t {JWT}"})
        )
    finally:
        shutdown()
    assert got == {"ssn": REDACTED, "iban": REDACTED, "password": REDACTED, "note": f"t {JWT}"}


def test_a_jwt_is_found_where_a_token_can_start_and_a_run_of_eyj_is_read_once() -> None:
    """The JWT pattern tried every "eyJ" of a long run of them and read the run to its end each time (9 KB of
    "eyJeyJ…" cost 22 ms a copy on the agent's thread). It starts only where a token can: after a space, a quote,
    `=` or `:`, or at the start; the run is then one attempt (its text comes back as it was)."""
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    c = Capture()
    for text in (jwt, f"Bearer {jwt}", f'{{"id_token": "{jwt}"}}', f"token={jwt}", f"auth:{jwt}"):
        assert jwt not in c.redact_text(text), text
    run = "eyJ" * 3000
    assert c.redact_text(run) == run
