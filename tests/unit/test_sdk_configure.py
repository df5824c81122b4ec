"""`configure` with the global TracerProvider (in fresh processes, since it can be set only once per process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time

import pytest
from opentelemetry.sdk.trace import TracerProvider

from agentwatch import configure, shutdown
from agentwatch.kafka.broker import free_port


def run_script(
    code: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTWATCH_", "OTEL_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=False,
    )


def test_configure_from_environment_sets_the_global_provider_once():
    proc = run_script(
        """
        from opentelemetry import trace as otel_trace
        from agentwatch import configure, shutdown, trace, conversation

        first = configure()
        assert first.owns_provider and otel_trace.get_tracer_provider() is first.tracer_provider
        res = first.tracer_provider.resource.attributes
        assert res["service.name"] == "env-bot" and res["service.version"] == "7", dict(res)
        second = configure()  # again: composes with the provider it set, replacing its own processors
        assert second.tracer_provider is first.tracer_provider and not second.owns_provider

        @trace(kind="agent")
        def turn(q):
            return q

        with conversation(id="g"):
            turn("x")
        assert first.exporter.get_finished_spans() == ()
        shutdown()
        (span,) = second.exporter.get_finished_spans()
        assert span.name == "invoke_agent env-bot", span.name
        assert span.attributes["gen_ai.agent.version"] == "7"
        assert span.attributes["gen_ai.conversation.id"] == "g"
        print("OK")
        """,
        env={
            "AGENTWATCH_SPAN_EXPORTER": "memory",
            "AGENTWATCH_AGENT": "env-bot",
            "AGENTWATCH_AGENT_VERSION": "7",
        },
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr


def test_configure_adds_to_an_application_provider_already_set_globally():
    proc = run_script(
        """
        from opentelemetry import trace as otel_trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from agentwatch import configure, shutdown, trace, conversation

        theirs = InMemorySpanExporter()
        app_provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
        app_provider.add_span_processor(SimpleSpanProcessor(theirs))
        otel_trace.set_tracer_provider(app_provider)
        ours = configure("memory", agent="bot", batch=False)
        assert ours.tracer_provider is app_provider and not ours.owns_provider

        @trace
        def f():
            otel_trace.get_tracer("app").start_span("app work").end()

        with conversation(id="c"):
            f()
        shutdown()
        for exporter in (theirs, ours.exporter):
            spans = exporter.get_finished_spans()
            assert sorted(s.name for s in spans) == ["app work", "f"], spans
            assert all(s.attributes["gen_ai.conversation.id"] == "c" for s in spans)
            assert all(s.resource.attributes["service.name"] == "app" for s in spans)
        print("OK")
        """
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr


def test_kafka_from_environment_with_no_broker_never_blocks_the_agent():
    proc = run_script(
        """
        import time
        from agentwatch import configure, shutdown, trace

        inst = configure()
        @trace(kind="tool")
        def t(i):
            return i
        for i in range(2000):
            t(i)
        shutdown(timeout_s=1.0)
        print("OK", inst.exporter.dropped_spans, inst.exporter.topic)
        """,
        env={
            "AGENTWATCH_SPAN_EXPORTER": "kafka",
            "AGENTWATCH_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}",
            "AGENTWATCH_SPANS_TOPIC": "custom.topic",
        },
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr
    _, dropped, topic = proc.stdout.split()
    assert topic == "custom.topic"
    # never blocked: had one call waited for the unreachable broker (max_block_ms), the 2,000 calls would not have
    # finished within the script's timeout; every span was kept until shutdown, then counted as dropped
    assert int(dropped) == 2000


def test_otlp_and_console_exporters_are_built():
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GRPC
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTP
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    t0 = time.perf_counter()
    try:
        assert isinstance(configure("otlp", tracer_provider=TracerProvider()).exporter, GRPC)
        http = configure(
            "otlp",
            otlp_protocol="http/protobuf",
            otlp_endpoint="http://127.0.0.1:1/v1/traces",
            tracer_provider=TracerProvider(),
        ).exporter
        assert isinstance(http, HTTP)
        assert isinstance(
            configure("console", tracer_provider=TracerProvider()).exporter, ConsoleSpanExporter
        )
        assert configure("none", tracer_provider=TracerProvider()).exporter is None
    finally:
        shutdown()
    assert time.perf_counter() - t0 < 10


def test_the_sdk_imports_nothing_of_the_services() -> None:
    """`import agentwatch.sdk` in an agent loads no pydantic, numpy, scipy, confluent-kafka, collector, scorers or
    exporters (the dependency rule that keeps the SDK light)."""
    import subprocess
    import sys

    code = (
        "import sys, agentwatch.sdk, agentwatch.wire\n"
        "heavy = ('pydantic', 'numpy', 'scipy', 'confluent_kafka', 'agentwatch.collector', 'agentwatch.scorers',"
        " 'agentwatch.exporters', 'agentwatch.config')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stdout


def test_the_collector_imports_nothing_of_the_exporters() -> None:
    """The collector and the exporters meet through the scores topic only: loading one never loads the other."""
    import subprocess
    import sys

    code = (
        "import sys, agentwatch.collector.service, agentwatch.config\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentwatch.exporters')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stdout


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("AGENTWATCH_CAPTURE_CONTENT", "flase", "AGENTWATCH_CAPTURE_CONTENT='flase' is neither on"),
        ("AGENTWATCH_COMPRESSION", "gzp", "AGENTWATCH_COMPRESSION: compression 'gzp' is not one of"),
        (
            "AGENTWATCH_BOOTSTRAP_SERVERS",
            "localhost:notaport",
            "AGENTWATCH_BOOTSTRAP_SERVERS: 'localhost:notaport'",
        ),
        (
            "AGENTWATCH_MAX_ATTRIBUTE_BYTES",
            "-5",
            "AGENTWATCH_MAX_ATTRIBUTE_BYTES must be an integer of 64 or more",
        ),
        (
            "AGENTWATCH_SPAN_EXPORTER",
            "kafak",
            "AGENTWATCH_SPAN_EXPORTER (or AGENTWATCH_EXPORTER): unknown exporter",
        ),
    ],
)
def test_a_bad_variable_is_an_error_at_configure_naming_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, said: str
) -> None:
    """Each was accepted: capture left on by a typo of "false", every span dropped later for a codec or a port
    that cannot be, a negative size made 64, a misspelt exporter named without its variable."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=re.escape(said)):
        configure(tracer_provider=TracerProvider())


def test_an_otlp_protocol_that_is_none_is_an_error_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTWATCH_OTLP_PROTOCOL", "http/jsn")
    with pytest.raises(ValueError, match="AGENTWATCH_OTLP_PROTOCOL: 'http/jsn' is not one of"):
        configure("otlp", tracer_provider=TracerProvider())


def test_capture_without_configure_reads_an_unknown_switch_as_off() -> None:
    """A process that never calls `configure` (its own TracerProvider) cannot be told at setup: a value neither
    on nor off switches content capture off, the privacy-safe reading, with a warning."""
    from agentwatch.sdk.capture import content_capture_from_env

    assert content_capture_from_env({"AGENTWATCH_CAPTURE_CONTENT": "disabled"}) is False
    assert (
        content_capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}) is True
    )
    assert content_capture_from_env({"AGENTWATCH_CAPTURE_CONTENT": "off"}) is False
    assert content_capture_from_env({}) is True


def test_a_process_without_configure_reads_the_capture_variables_too() -> None:
    """With its own TracerProvider and no `configure`, AGENTWATCH_REDACT_KEYS=+ssn,iban and the size cap were
    ignored: the SSN and IBAN went out, and whole values. They are read as `configure` reads them."""
    proc = run_script(
        """
        import json
        from opentelemetry import trace as otel_trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from agentwatch import trace

        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        otel_trace.set_tracer_provider(provider)

        @trace(kind="tool")
        def pay(ssn, iban, note):
            return "ok"

        pay("123-45-6789", "DE89370400440532013000", "x" * 5000)
        (span,) = memory.get_finished_spans()
        arguments = span.attributes["gen_ai.tool.call.arguments"]
        assert "123-45-6789" not in arguments and "DE89" not in arguments, arguments
        assert len(arguments.encode()) <= 300, len(arguments)
        print("OK")
        """,
        env={"AGENTWATCH_REDACT_KEYS": "+ssn,iban", "AGENTWATCH_MAX_ATTRIBUTE_BYTES": "300"},
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr[-2000:]


def test_configure_from_several_threads_at_once_makes_one_provider() -> None:
    """Worker threads each configuring on their first request made one TracerProvider each: ours and other
    instrumentations' spans went to different ones, and `shutdown` flushed one of them."""
    proc = run_script(
        """
        import threading
        from agentwatch import configure, shutdown

        made = [None] * 8
        barrier = threading.Barrier(8)

        def worker(i):
            barrier.wait()
            made[i] = configure("memory", agent="a").tracer_provider

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({id(p) for p in made}) == 1, len({id(p) for p in made})
        shutdown()
        print("OK")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr[-2000:]


def test_a_span_processor_that_raises_reaches_neither_the_agent_nor_the_processors_after_it(caplog):
    """A processor given in `extra_processors` that raised in `on_end` made every `@trace` call raise after the
    function had returned, and the exporter after it never saw a span; raising in `on_start`, it broke the
    spans of every other instrumentation. Its error is logged (once) and the other processors run."""
    from opentelemetry.sdk.trace import SpanProcessor

    from agentwatch import trace

    class Broken(SpanProcessor):
        def on_start(self, span, parent_context=None):
            raise RuntimeError("broken on_start")

        def on_end(self, span):
            raise RuntimeError("broken on_end")

    provider = TracerProvider()
    memory = configure("memory", tracer_provider=provider, batch=False, extra_processors=[Broken()]).exporter

    @trace(kind="tool")
    def lookup(i: int) -> int:
        return i

    try:
        assert [lookup(i) for i in range(3)] == [0, 1, 2]
        with provider.get_tracer("another.instrumentation").start_as_current_span("http GET"):
            pass
        names = [s.name for s in memory.get_finished_spans()]
        assert names == ["execute_tool lookup"] * 3 + ["http GET"], names
    finally:
        shutdown()
    logged = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(logged) == 2, logged  # once each, with the traceback, not once a span
    assert any("in on_start;" in m for m in logged) and any("in on_end;" in m for m in logged), logged


def test_a_flush_waits_for_the_exporters_deliveries_within_its_timeout() -> None:
    """OpenTelemetry's batch processor hands its spans to the exporter and returns True, ignoring the timeout:
    with the Kafka exporter that meant queued in the client, not delivered. The provider's flush now also
    waits for the exporter's deliveries, in what is left of the same timeout."""
    from collections.abc import Sequence

    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    from agentwatch import trace

    class Queued(SpanExporter):
        """Accepts spans at once and delivers them when told to; its flush says whether all were delivered."""

        def __init__(self) -> None:
            self.accepted = 0
            self.delivered = False
            self.flushes: list[int] = []

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            self.accepted += len(spans)
            return SpanExportResult.SUCCESS

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            self.flushes.append(timeout_millis)
            return self.delivered

    class Slow(SpanProcessor):
        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            time.sleep(0.05)
            return True

    provider = TracerProvider()
    exporter = Queued()
    configure(exporter, tracer_provider=provider, batch=True, extra_processors=[Slow()])

    @trace(kind="tool")
    def lookup(i: int) -> int:
        return i

    try:
        lookup(1)
        assert provider.force_flush(2_000) is False  # handed over, not delivered
        assert exporter.accepted == 1
        [given] = exporter.flushes
        assert 0 < given <= 2_000 - 50  # what the slow processor left of the timeout
        exporter.delivered = True
        assert provider.force_flush(2_000) is True
    finally:
        shutdown()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"capture_content": "false"}, "capture_content must be True, False or None, got 'false'"),
        ({"redact_values": "no"}, "redact_values must be True, False or None, got 'no'"),
        ({"max_attribute_bytes": 10}, "max_attribute_bytes must be an integer of 64 or more, got 10"),
        ({"max_attribute_bytes": "8k"}, "max_attribute_bytes must be an integer of 64 or more, got '8k'"),
        ({"redact_keys": "ssn"}, "redact_keys must be a list of key words, got the string 'ssn'"),
        ({"redact_keys": ["ssn", 7]}, "redact_keys must hold strings, got 7"),
        ({"redact_patterns": r"TCK-\d{6}"}, "redact_patterns must be a dict or a list of patterns"),
        ({"redact_patterns": [7]}, "redaction pattern 0 is not a valid regular expression"),
    ],
)
def test_a_capture_argument_configure_would_misread_is_an_error_naming_it(
    given: dict[str, object], said: str
) -> None:
    """Each was accepted: `capture_content="false"` left capture on, a size of 10 was made 64 (and "8k" raised
    int()'s error, naming nothing), `redact_keys="ssn"` redacted the words "s" and "n" and the SSN went out, and a
    pattern given as one string was read as one pattern per character."""
    with pytest.raises(ValueError, match=re.escape(said)):
        configure("memory", tracer_provider=TracerProvider(), batch=False, **given)


def test_a_configure_that_fails_leaves_the_configuration_before_it_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad redaction pattern raised only after the new processors had replaced the old ones: the exporter of
    the configuration in force was shut down, and the agent's spans went to the exporter of the call that
    failed."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentwatch import trace
    from agentwatch.sdk.runtime import RUNTIME

    monkeypatch.setattr(RUNTIME, "capture", RUNTIME.capture)  # restored after the test
    provider = TracerProvider()
    working, refused = InMemorySpanExporter(), InMemorySpanExporter()
    configure(working, tracer_provider=provider, batch=False, max_attribute_bytes=4096)
    try:
        with pytest.raises(ValueError, match="redaction pattern 'ticket'"):
            configure(refused, tracer_provider=provider, batch=False, redact_patterns={"ticket": "TCK-("})

        @trace(kind="tool")
        def lookup(i: int) -> int:
            return i

        assert lookup(1) == 1
        assert [len(working.get_finished_spans()), len(refused.get_finished_spans())] == [1, 0]
        assert RUNTIME.capture.max_bytes == 4096
    finally:
        shutdown()
