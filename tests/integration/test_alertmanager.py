"""The Alertmanager inhibit rule of deploy/: judge drift silences the graded-sample alerts of the series the
drifting judge grades, in a real Alertmanager (Debian's `prometheus-alertmanager`), and its list of alerts
matches the alert rules that read graded-sample metrics."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.request import Request, urlopen

import pytest
import yaml

pytestmark = pytest.mark.prometheus

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"
PROM = DEPLOY / "prometheus"
# Metrics computed from the graded sample's verdicts: a judge that moves moves them. Failure evidence,
# coverage and the figures corrected by people's labels do not depend on the judge being stable.
GRADED = (
    "agentwatch_pass_pow_k",
    "agentwatch_pass_at_k",
    "agentwatch_success_rate",
    "agentwatch_asr",
    "agentwatch_outcome_ratio",
    "agentwatch_regression_probability",
)
# The sequential tests' rules on the graded sample (docs/alerts.md); the others count failure evidence over all
# conversations, which rule-based scorers find without the judge.
GRADED_RULES = ("pass", "asr", "abandoned")


def _metrics_of(expr: str, recorded: dict[str, str]) -> set[str]:
    """The exporter metrics an expression reads, recording rules expanded."""
    names = set(re.findall(r"[a-z_]*:?agentwatch_[a-z0-9_:]+", expr))
    names |= {
        f"agentwatch_alert_statistic:{r}"
        for r in re.findall(r'agentwatch_alert_statistic\{rule="(\w+)"', expr)
    }
    out: set[str] = set()
    for name in names:
        out |= _metrics_of(recorded[name], recorded) if name in recorded else {name}
    return out


def test_the_inhibited_alerts_are_the_alerts_on_the_graded_sample() -> None:
    recorded = {
        r["record"]: r["expr"]
        for g in yaml.safe_load((PROM / "recording_rules.yml").read_text())["groups"]
        for r in g["rules"]
    }
    alerts = [
        r
        for g in yaml.safe_load((PROM / "alert_rules.yml").read_text())["groups"]
        for r in g["rules"]
        if "alert" in r
    ]
    graded_metrics = set(GRADED) | {f"agentwatch_alert_statistic:{r}" for r in GRADED_RULES}
    graded = {a["alert"] for a in alerts if _metrics_of(a["expr"], recorded) & graded_metrics}
    (rule,) = yaml.safe_load(CONFIG.read_text())["inhibit_rules"]
    assert rule["source_matchers"] == ['alertname="AgentwatchJudgeDriftSeries"']
    assert rule["equal"] == ["agent", "version", "task"]
    (target,) = rule["target_matchers"]
    pattern = re.fullmatch(r'alertname=~"(.+)"', target).group(1)  # type: ignore[union-attr]
    inhibited = {a["alert"] for a in alerts if re.fullmatch(pattern, a["alert"])}
    assert inhibited == graded
    assert {"AgentwatchPass3Regression", "AgentwatchPass3Drift", "AgentwatchASRDrop"} <= inhibited


class _Sink(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Sink.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[tuple[str, list[dict]]]:
    """A real Alertmanager with deploy's inhibit rules; its receivers replaced by a webhook into a list."""
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if binary is None:
        pytest.fail("Alertmanager not found: install Debian's `prometheus-alertmanager` package")
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    _Sink.received = []
    config = yaml.safe_load(CONFIG.read_text())
    hook = [{"url": f"http://127.0.0.1:{sink.server_address[1]}/", "send_resolved": False}]
    config["receivers"] = [{"name": r["name"], "webhook_configs": hook} for r in config["receivers"]]
    config["route"].update(group_wait="1s", group_interval="1s")
    config["route"]["routes"] = []  # every alert to the webhook, info included: what is inhibited is seen
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    port = _free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={path}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urlopen(f"{url}/-/ready", timeout=1).read()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "Alertmanager did not become ready"
                time.sleep(0.2)
        yield url, _Sink.received
    finally:
        proc.terminate()
        proc.wait(10)
        sink.shutdown()


def _alert(name: str, severity: str, **labels: str) -> dict:
    return {
        "labels": {"alertname": name, "severity": severity, **labels},
        "annotations": {"summary": name},
        "startsAt": "2026-01-01T00:00:00Z",
    }


def test_judge_drift_inhibits_the_regression_alerts_of_the_series_it_grades(alertmanager) -> None:
    url, received = alertmanager
    drifted = {"agent": "support-bot", "version": "1.4.0", "task": "refund"}
    other = {"agent": "billing-bot", "version": "2.0", "task": "invoices"}
    alerts = [
        _alert("AgentwatchJudgeDriftSeries", "info", judge="openai:gpt-4o-mini:v1", **drifted),
        _alert(
            "AgentwatchJudgeDrift",
            "warning",
            judge="openai:gpt-4o-mini:v1",
            frozen_judge="openai:gpt-4o-mini:v1",
        ),
        _alert(
            "AgentwatchPass3Regression",
            "info",
            baseline_version="1.3.0",
            k="3",
            method="exchangeable",
            **drifted,
        ),
        _alert("AgentwatchPass3Drift", "critical", reference_version="1.3.0", **drifted),
        _alert("AgentwatchErrorRateAboveBaseline", "warning", evidence="error", **drifted),  # needs no judge
        _alert(
            "AgentwatchPass3Drift", "critical", reference_version="1.9", **other
        ),  # another judge's series
    ]

    def post(batch: list[dict]) -> None:
        request = Request(
            f"{url}/api/v2/alerts",
            data=json.dumps(batch).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urlopen(request, timeout=5).read()

    def state() -> dict[tuple[str, str], list[str]]:
        found = json.loads(urlopen(f"{url}/api/v2/alerts", timeout=5).read())
        return {
            (a["labels"]["alertname"], a["labels"].get("agent", "-")): a["status"]["inhibitedBy"]
            for a in found
        }

    # The judge's alerts first, as Prometheus sends them (for: 0m, evaluated before the graded figures move):
    # Alertmanager's inhibitor learns of a source alert asynchronously, so a target posted in the same
    # request may be notified before its source is known.
    post(alerts[:2])
    deadline = time.monotonic() + 20
    while ("AgentwatchJudgeDriftSeries", "support-bot") not in state():
        assert time.monotonic() < deadline, state()
        time.sleep(0.2)
    time.sleep(0.5)
    post(alerts[2:])

    deadline = time.monotonic() + 20
    while not received or not state()[("AgentwatchPass3Drift", "support-bot")]:
        assert time.monotonic() < deadline, (state(), received)
        time.sleep(0.2)
    status = state()
    assert (
        status[("AgentwatchPass3Regression", "support-bot")]
        and status[("AgentwatchPass3Drift", "support-bot")]
    )
    assert not status[("AgentwatchPass3Drift", "billing-bot")]
    assert not status[("AgentwatchErrorRateAboveBaseline", "support-bot")]
    assert (
        not status[("AgentwatchJudgeDrift", "-")]
        and not status[("AgentwatchJudgeDriftSeries", "support-bot")]
    )
    time.sleep(2.5)  # a few group intervals: what was inhibited is never sent
    sent = {(a["labels"]["alertname"], a["labels"].get("agent", "-")) for n in received for a in n["alerts"]}
    assert ("AgentwatchPass3Drift", "billing-bot") in sent and ("AgentwatchJudgeDrift", "-") in sent
    assert ("AgentwatchErrorRateAboveBaseline", "support-bot") in sent
    assert ("AgentwatchPass3Drift", "support-bot") not in sent
    assert ("AgentwatchPass3Regression", "support-bot") not in sent
