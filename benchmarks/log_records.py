"""Reading a log topic: OTLP log records per second through `decode_log_message`, beside the raw protobuf parse.

Run: `python -m benchmarks.log_records [--records 20000]`. Prints figures; asserts nothing.

A logs topic carries every log of a service (`collector.log_topics`), so most records are application logs the
collector skips; a few are GenAI message events. Three workloads of one message of `--batch` records each:
- `app`: application logs (a text body, four attributes, trace and span ids, no event name);
- `events`: one `gen_ai.client.inference.operation.details` record per model call, two messages of a
  tool-calling exchange structured in its attributes, as the official OpenAI instrumentation logs them;
- `mixed`: one event record per 20 application logs.
CPU time of decoding every message, median of `--rounds`, against `LogsData.FromString` of the same messages
(the parse alone), with a calibration line beside it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, LogsData

from agentwatch.collector.decode import set_any_value
from agentwatch.collector.log_records import decode_log_message
from benchmarks.calibration import calibration_line, calibration_us


def _app(record: LogRecord, i: int) -> None:
    record.body.string_value = f"GET /orders/{i} 200 in 12 ms"
    for key, item in (("http.method", "GET"), ("http.route", "/orders/{id}"), ("http.status_code", 200)):
        kv = record.attributes.add()
        kv.key = key
        set_any_value(kv.value, item)
    kv = record.attributes.add()
    kv.key, kv.value.string_value = "code.function", "handle"


_MESSAGES = [
    {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]},
    {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
        ],
    },
]


def _event(record: LogRecord, i: int) -> None:
    record.event_name = "gen_ai.client.inference.operation.details"
    for key, item in (
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.request.model", "gpt-4o-mini"),
        ("gen_ai.input.messages", _MESSAGES[:1]),
        ("gen_ai.output.messages", _MESSAGES[1:]),
    ):
        kv = record.attributes.add()
        kv.key = key
        set_any_value(kv.value, item)


def _batch(size: int, start: int, kind: Callable[[int], Callable[[LogRecord, int], None]]) -> bytes:
    data = LogsData()
    rl = data.resource_logs.add()
    kv = rl.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "weather"
    scope = rl.scope_logs.add()
    for i in range(start, start + size):
        record = scope.log_records.add()
        record.time_unix_nano = 1_700_000_000_000_000_000 + i
        record.trace_id = (i + 1).to_bytes(16, "big")
        record.span_id = (i + 1).to_bytes(8, "big")
        kind(i)(record, i)
    return data.SerializeToString()


WORKLOADS: dict[str, Callable[[int], Callable[[LogRecord, int], None]]] = {
    "app": lambda i: _app,
    "events": lambda i: _event,
    "mixed": lambda i: _event if i % 21 == 0 else _app,
}


def _each(read: Callable[[bytes], object], messages: list[bytes]) -> None:
    for message in messages:
        read(message)


def _cpu(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    """Print log records per second decoded and parsed, per workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500, help="records a message")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    before = calibration_us()
    for name, kind in WORKLOADS.items():
        messages = [_batch(args.batch, s, kind) for s in range(0, args.records, args.batch)]
        n = len(messages) * args.batch
        fragments = sum(len(decode_log_message(m).fragments) for m in messages)
        parse = _cpu(partial(_each, LogsData.FromString, messages), args.rounds)
        decode = _cpu(partial(_each, decode_log_message, messages), args.rounds)
        print(
            f"{name:7s} {n:,} records ({fragments:,} fragments): decode {n / decode:,.0f} records/s, "
            f"parse alone {n / parse:,.0f} records/s ({parse / decode:.0%} of it)"
        )
    print(calibration_line(before))


if __name__ == "__main__":
    main()
