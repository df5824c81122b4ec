"""Each shortcut taken for speed against the plain computation it replaces, on generated inputs.

The decoder's attribute reading (needed keys found by a set intersection, tags looked for only in messages
holding the tag prefix), the exporter's per-conversation work (bucket counts bumped inline, shared observation
vectors, bisected histograms, one automated verdict per score) and the SDK's JSON encoder made once.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from agentwatch.collector.conventions import NEEDED_KEYS, TAG_PREFIX
from agentwatch.collector.decode import decode_message
from agentwatch.config import Settings
from agentwatch.exporters.alert_rules import CHANNELS, Minutes, observation
from agentwatch.exporters.buckets import Bucket, Contribution
from agentwatch.exporters.contribution import Contributions
from agentwatch.exporters.counters import COST_BUCKETS, Histogram
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.labels import LabelCaps
from agentwatch.sdk.capture import Capture
from agentwatch.stats.corrected import correction_point
from agentwatch.stats.inclusion import automated_of, graded_probability
from agentwatch.wire.schema import EVIDENCE
from tests.support.scores import T0, make_score

# --------------------------------------------------------------------------- the decoder's attributes

_KEYS = st.sampled_from(
    [*sorted(NEEDED_KEYS)[:12], "gen_ai.conversation.id", "thread.id", "code.lineno", "server.address"]
) | st.builds(lambda s: TAG_PREFIX + s, st.text("abcxyz.", min_size=1, max_size=6))
_VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=4), max_size=3),
)


def _set(value: Any, target: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    else:
        target.array_value.SetInParent()  # an empty list is still a list
        for item in value:
            target.array_value.values.add().string_value = item


def _plain(value: Any, limit: int) -> Any:
    """What the decoder keeps of a value: strings cut to `limit` and marked, everything else as it is."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…[truncated]"
    if isinstance(value, list):
        return [_plain(v, limit) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(st.lists(st.tuples(_KEYS, _VALUES), max_size=12), min_size=1, max_size=4),
    limit=st.sampled_from([4, 65536]),
)
def test_decoded_attributes_are_the_needed_and_tag_keys_last_one_winning(spans, limit) -> None:
    data = TracesData()
    scope = data.resource_spans.add().scope_spans.add()
    for i, pairs in enumerate(spans):
        sp = scope.spans.add(trace_id=b"\x01" * 16, span_id=(i + 1).to_bytes(8, "big"), name="s")
        for key, value in pairs:
            kv = sp.attributes.add(key=key)
            _set(value, kv.value)
    records = decode_message(data.SerializeToString(), "application/x-protobuf", max_attribute_bytes=limit)
    for rec, pairs in zip(records, spans, strict=True):
        wanted = {k: _plain(v, limit) for k, v in pairs if k in NEEDED_KEYS or k.startswith(TAG_PREFIX)}
        assert rec.attrs == wanted


# --------------------------------------------------------------------------- the exporter


_CONTRIBUTIONS = st.builds(
    Contribution,
    scored=st.booleans(),
    passed=st.booleans(),
    outcome=st.integers(0, 5),
    modes=st.lists(st.sampled_from(["loop", "error", "answer"]), max_size=2, unique=True).map(tuple),
    tool_sums=st.just(()),
    tool_counts=st.just(()),
    cost_bin=st.none() | st.integers(-5, 5),
    duration_bin=st.none() | st.integers(-5, 5),
    budgeted=st.booleans(),
    over_budget=st.booleans(),
    asr_bin=st.none() | st.integers(0, 1000),
    asr_credit=st.none() | st.floats(0, 1),
    evidence=st.lists(st.integers(0, len(EVIDENCE) - 1), max_size=3, unique=True).map(
        lambda e: tuple(sorted(e))
    ),
    judge_sampled=st.booleans(),
    review_sampled=st.booleans(),
    label=st.none() | st.integers(0, 5),
    unit=st.none() | st.just(("t", "i1")),
    graded_p=st.sampled_from([1.0, 0.25]),
)


@settings(max_examples=150, deadline=None)
@given(contributions=st.lists(_CONTRIBUTIONS, max_size=8))
def test_bucket_add_agrees_with_merging_one_bucket_per_conversation(contributions) -> None:
    added, merged = Bucket.window_total(), Bucket.window_total()
    for c in contributions:
        added.add(c)
        one = Bucket()
        one.add(c)
        merged.merge(one)
    assert added == merged
    for c in contributions:  # taking every conversation back leaves nothing (no zero entries either)
        added.add(c, -1)
    assert added.total == added.scored == added.passed == 0
    assert not added.cost and not added.duration and not added.asr and not added.graded_p and not added.modes
    assert added.outcomes == [0] * 6 and added.evidence == [0] * len(EVIDENCE)


def _observation_reference(c: Contribution, point: float) -> list[int]:
    """The channels of one conversation, from their definitions."""
    credited = c.scored and c.asr_credit is not None
    v = {
        "all": 1,
        "graded": int(c.scored),
        "failed": int(c.scored and not c.passed),
        "credited": int(credited),
        "credit_missed": int(credited and point >= c.asr_credit),  # type: ignore[operator]
        "abandoned": int(c.scored and c.outcome == 4),
    }
    for code in ("error", "no_answer", "loop", "hallucination", "over_budget"):
        v[code] = int(EVIDENCE.index(code) in c.evidence)
    return [v[name] for name in CHANNELS]


@settings(max_examples=200, deadline=None)
@given(c=_CONTRIBUTIONS, point=st.floats(0, 1, exclude_max=True))
def test_shared_observation_vectors_are_the_channels_of_each_conversation(c, point) -> None:
    v = observation(c, point)
    assert v.tolist() == _observation_reference(c, point)
    assert observation(c, point) is v  # shared, and read-only so that no caller can change another's
    assert not v.flags.writeable


@settings(max_examples=60, deadline=None)
@given(adds=st.lists(st.tuples(_CONTRIBUTIONS, st.integers(0, 4)), min_size=1, max_size=12))
def test_minute_counts_are_the_sums_of_the_observations(adds) -> None:
    ring = Minutes(5)
    expected = np.zeros((5, len(CHANNELS)), dtype=np.int64)
    now = T0 + 4 * 60
    for c, minute in adds:
        v = observation(c, 0.5)
        ring.add(T0 + minute * 60, v, 1, now)
        expected[minute] += np.array(_observation_reference(c, 0.5))
    assert ring.ordered(now).tolist() == expected.tolist()


@given(x=st.floats(0, 20, allow_nan=False))
def test_histogram_bucket_is_the_first_bound_not_below_the_value(x) -> None:
    h = Histogram.with_bounds(COST_BUCKETS)
    h.observe(x)
    first = next((i for i, ub in enumerate(COST_BUCKETS) if x <= ub), len(COST_BUCKETS))
    assert h.counts == [int(i == first) for i in range(len(COST_BUCKETS) + 1)]


@settings(max_examples=80, deadline=None)
@given(
    passed=st.none() | st.booleans(),
    judged=st.booleans(),
    label=st.none() | st.sampled_from(["complete", "partial_incorrect"]),
    review=st.booleans(),
    rate=st.sampled_from([None, 0.25, 1.0]),
)
def test_one_automated_verdict_per_score_gives_the_same_probabilities_and_points(
    passed, judged, label, review, rate
) -> None:
    extra: dict[str, Any] = {
        "judge_rate": rate,
        "review_rate": rate,
        "review_sampled": review,
        "label": label,
    }
    if judged and passed is not None:
        extra["graded_by"] = ["judge"]
    score = make_score("c1", passed, **extra)
    automated = automated_of(score)
    credits = Settings().scoring.credits
    assert graded_probability(score, automated) == graded_probability(score)
    assert correction_point(score, credits, automated) == correction_point(score, credits)
    c = Contributions(LabelCaps(Settings().exporter), credits).of(score, T0, None)
    assert math.isclose(c.graded_p, graded_probability(score)) or score.passed is None


# --------------------------------------------------------------------------- the SDK

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(value=_JSON)
def test_captured_json_is_what_json_dumps_writes(value) -> None:
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    # redaction off: a generated key such as "DSN" is a secret's name, redacted by design (tested below)
    assert Capture(max_bytes=1 << 20, redact_keys=(), redact_values=False).dumps_plain(value) == expected
    redacting = Capture(max_bytes=1 << 20).dumps_plain(value)
    assert redacting == expected or "[REDACTED]" in redacting


@given(value=_JSON, secret=st.sampled_from(["password", "api_key", "Authorization", "note"]))
def test_a_plain_dict_is_redacted_as_any_mapping_is(value, secret) -> None:
    from types import MappingProxyType

    capture = Capture()
    plain = {secret: "s3cr3t", "nested": {secret: 1, "v": value}, "v": value}
    as_mapping = MappingProxyType(
        {secret: "s3cr3t", "nested": MappingProxyType({secret: 1, "v": value}), "v": value}
    )
    assert capture.sanitize(plain) == capture.sanitize(as_mapping)
    assert (capture.sanitize(plain)[secret] == "[REDACTED]") == (secret != "note")


@given(names=st.lists(st.text(max_size=80), min_size=1, max_size=6))
def test_remembered_labels_are_the_sanitised_names(names) -> None:
    from agentwatch.exporters.labels import sanitize_label

    est = Estimator(Settings())
    for name in names + names:  # the second time from memory
        assert est._caps.label(name) == sanitize_label(name, Settings().exporter.max_label_length)
