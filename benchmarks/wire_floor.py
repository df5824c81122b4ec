"""How fast the collector's decode could be if it read the OTLP wire format itself, compiled by mypyc.

Run: `python -m benchmarks.wire_floor [--conversations 2000]` (needs mypyc and a C compiler, which the `dev`
extra and a build toolchain bring). On `benchmarks.collector`'s workload it times, in CPU, the raw protobuf
parse (the ceiling issue 31 measures against), the "needed values read, nothing kept" floor through the
protobuf Python API, and `benchmarks.wire_reader` — which reads the same values from the bytes — as source
and compiled. It first checks that the reader finds what the protobuf API reads, span for span. The reader
checks nothing a decoder must, so its figure is a floor for a decoder written that way, not a decoder.
Prints figures; asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from agentwatch.collector.decode import READ_KEYS
from agentwatch.collector.otlp_slim import SlimTracesData
from benchmarks import wire_reader
from benchmarks.calibration import calibration_line, calibration_us
from benchmarks.collector import REPEATS, Workload, _raw_parse_once, _read_floor_once, make_workload

_KEYS = frozenset(key.encode() for key in READ_KEYS)


def _through_api(payload: bytes) -> list[wire_reader.SpanTuple]:
    """What the protobuf Python API reads of a message's spans, as the reader's tuples."""
    data: Any = SlimTracesData.FromString(payload)  # built from a descriptor at run time
    out: list[wire_reader.SpanTuple] = []
    for rs in data.resource_spans:
        for ss in rs.scope_spans:
            for sp in ss.spans:
                attrs = {
                    key: sp.attributes[key].string_value for key in READ_KEYS.intersection(sp.attributes)
                }
                out.append(
                    (
                        sp.trace_id,
                        sp.span_id,
                        sp.parent_span_id,
                        sp.name,
                        sp.start_time_unix_nano,
                        sp.end_time_unix_nano,
                        attrs,
                    )
                )
    return out


def _compiled_reader(folder: Path) -> ModuleType:
    """`benchmarks/wire_reader.py` compiled by mypyc in `folder`, imported."""
    source = folder / "wire_reader.py"
    shutil.copy(Path(wire_reader.__file__), source)
    run = subprocess.run(
        [sys.executable, "-m", "mypyc", "wire_reader.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    built = sorted(folder.glob("wire_reader.*.so"))
    if run.returncode != 0 or not built:
        raise SystemExit(f"mypyc build failed:\n{(run.stdout + run.stderr)[-3000:]}")
    spec = importlib.util.spec_from_file_location("wire_reader", built[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reader_once(read: Callable[[bytes, frozenset[bytes]], list[Any]], w: Workload) -> tuple[int, float]:
    """(spans, CPU s) of one pass of `read` over every message."""
    start = time.process_time()
    count = sum(len(read(payload, _KEYS)) for payload in w.messages)
    return count, time.process_time() - start


def _best(run: Callable[[], tuple[int, float]]) -> float:
    """Spans a CPU second, the best of REPEATS runs."""
    count, seconds = min((run() for _ in range(REPEATS)), key=lambda r: r[1])
    return count / seconds


def main() -> None:
    """Check the reader against the protobuf API, then print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2000, help="conversations (default 2000)")
    args = parser.parse_args()
    before = calibration_us()
    w = make_workload(args.conversations)
    with tempfile.TemporaryDirectory(prefix="agentwatch-wire-") as folder:
        compiled = _compiled_reader(Path(folder))
        for payload in w.messages:
            expected = _through_api(payload)
            if (
                wire_reader.read_spans(payload, _KEYS) != expected
                or compiled.read_spans(payload, _KEYS) != expected
            ):
                raise SystemExit("the wire reader and the protobuf API read different values")
        print(f"the wire reader reads what the protobuf API reads on all {w.spans:,} spans")
        raw = _best(lambda: _raw_parse_once(w))
        figures = {
            "needed values read through the protobuf API": _best(lambda: _read_floor_once(w)),
            "the same read from the wire bytes, source": _best(
                lambda: _reader_once(wire_reader.read_spans, w)
            ),
            "the same read from the wire bytes, compiled": _best(
                lambda: _reader_once(compiled.read_spans, w)
            ),
        }
    print(f"{'raw protobuf parse (ceiling)':<46} {raw:>12,.0f} spans/s  (CPU, best of {REPEATS})")
    for name, rate in figures.items():
        print(f"{name:<46} {rate:>12,.0f} spans/s  {rate / raw:6.1%} of the raw parse")
    print(calibration_line(before))


if __name__ == "__main__":
    main()
