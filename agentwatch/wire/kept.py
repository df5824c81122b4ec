"""Names and ids as keys to remember: themselves when short, else their SHA-256 digest.

Agent, version and task names and conversation ids come from what producers write (span attributes of up to
64 K characters), so a memory keyed by them as they are costs what a producer chooses. Past `KEPT_LENGTH`
characters a value is remembered by its digest: what one key costs no longer grows with what was written. A
digest starts with `DIGESTED`, and so does no value remembered as it is (such a value is digested too): two
values share a key only if their digests are equal.
"""

from __future__ import annotations

import hashlib

KEPT_LENGTH = 256
DIGESTED = "\x00sha256:"


def kept(value: str) -> str:
    """`value` as a key to remember: itself up to KEPT_LENGTH, else its SHA-256 digest, marked."""
    if len(value) <= KEPT_LENGTH and not value.startswith(DIGESTED):
        return value
    return DIGESTED + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def shown(key: str) -> str:
    """A key from `kept` as a label or text shows it: a digest as `sha256:<hex>` (without the marker's NUL)."""
    return "sha256:" + key[len(DIGESTED) :] if key.startswith(DIGESTED) else key
