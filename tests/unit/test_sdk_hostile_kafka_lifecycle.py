"""The Kafka span exporter at the ends of a process's life: interpreter exit and `os.fork()`, with kafka-python's
own producer (its exit hook, `close` and `__del__`) and only its network faked: no broker needed."""

from __future__ import annotations

import gc
import re
import weakref
from collections.abc import Callable
from typing import Any

import kafka
import kafka.producer.kafka as kafka_producer_module
import pytest
from kafka.errors import IllegalStateError
from kafka.future import Future
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentwatch.sdk import KafkaSpanExporter


class ExitHooks:
    """Stands for the `atexit` module kafka-python registers its producers' exit hooks with."""

    def __init__(self) -> None:
        self.hooks: list[Callable[[], Any]] = []

    def register(self, hook: Callable[[], Any]) -> None:
        self.hooks.append(hook)

    def unregister(self, hook: Callable[[], Any]) -> None:
        self.hooks[:] = [h for h in self.hooks if h != hook]

    def run_at_exit(self) -> None:
        """What the interpreter does at exit: the hooks, the last registered first."""
        for hook in reversed(self.hooks):
            hook()


class Sender:
    """The producer's sender thread, in a process where it does not run (a forked child) or has finished."""

    def initiate_close(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...

    def is_alive(self) -> bool:
        return False

    def force_close(self) -> None: ...

    def wakeup(self) -> None: ...


class FakeProducer(kafka.KafkaProducer):
    """kafka-python's producer with the real exit hook, `close()` and `__del__`; `send` is acknowledged at once and
    refused once closed, as the real one's is; `flush` is recorded (the real one, in a forked child, waits its
    whole timeout for records only the parent's sender thread could complete)."""

    flushed: list[str] = []

    def __init__(self, **configs: Any) -> None:
        self.config = {**kafka.KafkaProducer.DEFAULT_CONFIG, **configs}
        self._closed = False
        self._sender = Sender()
        self._metrics = None
        self.sent = 0
        self._cleanup = self._cleanup_factory()
        kafka_producer_module.atexit.register(self._cleanup)  # as KafkaProducer.__init__ does

    def send(self, topic: str, key: Any = None, value: Any = None, headers: Any = None, **_: Any) -> Future:
        if self._closed:
            raise IllegalStateError("KafkaProducer already closed!")
        self.sent += 1
        return Future().success(None)

    def flush(self, timeout: float | None = None) -> None:
        FakeProducer.flushed.append(self.config["client_id"])


@pytest.fixture
def exit_hooks(monkeypatch: pytest.MonkeyPatch) -> ExitHooks:
    """kafka-python's producer is the fake, its exit hooks go to an `ExitHooks`."""
    hooks = ExitHooks()
    monkeypatch.setattr(kafka_producer_module, "atexit", hooks)
    monkeypatch.setattr(kafka, "KafkaProducer", FakeProducer)
    FakeProducer.flushed.clear()
    return hooks


def ended_spans(n: int) -> list[ReadableSpan]:
    tracer = TracerProvider().get_tracer("t")
    out = []
    for _ in range(n):
        span = tracer.start_span("s")
        span.end()
        out.append(span)
    return out  # type: ignore[return-value]


def test_spans_still_queued_at_exit_are_sent_not_refused_by_a_producer_closed_before(
    exit_hooks: ExitHooks,
) -> None:
    """kafka-python registers an exit hook when a producer is made, after the TracerProvider registered its own
    (at `configure`): run first, it closed the producer, and the provider's flush at exit handed the spans
    still queued in the BatchSpanProcessor to a closed producer ("KafkaProducer already closed!", all dropped;
    10 of 11 spans with a real broker when the agent exited without `shutdown()`)."""
    provider = TracerProvider(shutdown_on_exit=False)
    exit_hooks.register(provider.shutdown)  # what the provider registers when it is made, at `configure`
    exporter = KafkaSpanExporter("127.0.0.1:9092", topic="spans")
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
    tracer = provider.get_tracer("agent")
    tracer.start_span("first").end()
    assert provider.force_flush(5_000)  # the producer is made at this first export
    for _ in range(10):
        tracer.start_span("late").end()  # queued in the processor when the agent exits

    exit_hooks.run_at_exit()

    stats = exporter.stats()
    assert (stats["sent_spans"], stats["dropped_spans"]) == (11, 0), stats


def test_a_forked_child_never_flushes_the_producer_it_forgets(exit_hooks: ExitHooks) -> None:
    """In a child the exporter forgets the parent's producer; freed there, the producer's `__del__` closed it,
    flushing first: the records the parent had not seen acknowledged never complete in the child, so
    `os.fork()` returned 1 s late in the child, with an "Exception ignored … KafkaTimeoutError" traceback."""
    exporter = KafkaSpanExporter("127.0.0.1:9092", topic="spans", producer_config={"client_id": "parent"})
    exporter.export(ended_spans(3))
    parent = weakref.ref(exporter._producer)
    assert parent() is not None and parent().sent == 3  # type: ignore[union-attr]

    exporter._reset_after_fork()  # what the at-fork hook runs in the child
    gc.collect()

    assert parent() is None  # freed in the child: its finaliser ran
    assert FakeProducer.flushed == []
    assert exit_hooks.hooks == []  # nor is it flushed by its exit hook at the child's exit
    assert exporter.stats()["connected"] is False  # the child connects again at its first export


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"compression": "gzp"}, "compression 'gzp' is not one of"),
        (
            {"producer_config": {"lingerms": 5, "acks": 1}},
            "producer_config: kafka-python's producer has no setting lingerms",
        ),
    ],
)
def test_an_exporter_made_directly_refuses_settings_kafka_python_would_refuse(
    arguments: dict[str, Any], message: str
) -> None:
    """Made without `configure`, the exporter took any compression and producer setting: kafka-python refused them
    at the first connection, and every span was dropped with an error in the log, never at start."""
    with pytest.raises(ValueError, match=re.escape(message)):
        KafkaSpanExporter("127.0.0.1:9092", topic="spans", **arguments)


def test_a_compression_whose_library_is_missing_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A codec kafka-python knows but whose library is not installed failed only when the producer was made."""
    import kafka.codec

    monkeypatch.setattr(kafka.codec, "has_snappy", lambda: False)
    with pytest.raises(ValueError, match="'snappy': its library is not installed"):
        KafkaSpanExporter("127.0.0.1:9092", topic="spans", compression="snappy")
    assert (
        KafkaSpanExporter("127.0.0.1:9092", topic="spans", compression="NONE").stats()["dropped_spans"] == 0
    )
