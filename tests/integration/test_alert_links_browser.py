"""From a firing alert to its failing conversations, in a real Prometheus and a real Chromium.

A real Prometheus evaluates deploy/prometheus's rules (the quality alerts' `for` shortened) with the external
labels the shipped prometheus.yml sets, pointed at a review service running on the test broker; it scrapes a
series whose error test has crossed its threshold. The firing alert's `review_url` annotation, as Prometheus
rendered it, is opened in Chromium: the sign-in page, then the review service's list of that series' failing
conversations with errors in the alert's window — and only those — and from it a conversation with why it
failed. The `runbook_url` annotation is the configured base with the alert's section.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentwatch.kafka.broker import free_port
from agentwatch.wire.review_records import TranscriptRecord, review_sample_of
from tests.support.review import PASSWORD, ServiceThread, conversation, judged, review_settings, scored

PROM = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
RUNBOOK = "https://runbooks.example/agentwatch/README.md"
SERIES = (
    'agent="support-bot", version="2.0", task="refunds", window="7d", rule="error", reference_version="1.9"'
)
EXPOSITION = f"""# TYPE agentwatch_alert_statistic gauge
agentwatch_alert_statistic{{{SERIES}}} 21.5
# TYPE agentwatch_alert_threshold gauge
agentwatch_alert_threshold{{{SERIES}}} 14.2
# TYPE agentwatch_alert_alarm gauge
agentwatch_alert_alarm{{{SERIES}}} 1
# TYPE agentwatch_exporter_ready gauge
agentwatch_exporter_ready 1
"""


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium not found: apt-get install -y chromium (scripts/test.sh installs it)")
    return path


class _Exposition(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the handler's protocol
        body = EXPOSITION.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _rules(tmp: Path) -> Path:
    """deploy/prometheus/alert_rules.yml as shipped, the quality alerts' `for` shortened to 1s."""
    doc = yaml.safe_load((PROM / "alert_rules.yml").read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "agentwatch_alert_statistic" in rule.get("expr", ""):
                rule["for"] = "1s"
    path = tmp / "alert_rules.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """An exposition server, and the state `_start` starts a Prometheus from (scraping it every second):
    (Prometheus's web port, state); the Prometheus is stopped at the end."""
    if not Path(PROMETHEUS).exists():
        pytest.fail("prometheus not found: apt-get install -y prometheus")
    exposition = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exposition)
    threading.Thread(target=exposition.serve_forever, daemon=True).start()
    web = free_port()
    state: dict[str, Any] = {"exposition": exposition, "tmp": tmp_path, "web": web}
    yield web, state  # the review service's address is known only later: `_start` writes the config
    proc = state.get("proc")
    if proc is not None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    exposition.shutdown()


def _start(state: dict[str, Any], review_url: str) -> None:
    tmp: Path = state["tmp"]
    port = state["exposition"].server_address[1]
    config = {
        "global": {
            "scrape_interval": "1s",
            "evaluation_interval": "1s",
            "external_labels": {"review_url": review_url, "runbook_url": RUNBOOK},
        },
        "rule_files": [str(PROM / "recording_rules.yml"), str(_rules(tmp))],
        "scrape_configs": [
            {"job_name": "agentwatch", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    state["proc"] = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{state['web']}",
        ],
        stdout=open(tmp / "prometheus.log", "wb"),  # noqa: SIM115 - closed with the process
        stderr=subprocess.STDOUT,
    )


def _firing(web: int, name: str, timeout: float = 40) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/alerts", timeout=5) as resp:
                alerts = json.load(resp)["data"]["alerts"]
        except OSError:
            alerts = []
        for alert in alerts:
            if alert["labels"]["alertname"] == name and alert["state"] == "firing":
                return dict(alert)
        time.sleep(0.5)
    pytest.fail(f"{name} did not fire within {timeout}s")


def _held(
    cid: str,
    *,
    version: str = "2.0",
    task: str = "refunds",
    hours_ago: float = 1,
    error: bool = True,
    review_rate: float = 0.0,
) -> TranscriptRecord:
    conv = conversation(cid, version=version, task=task, ended=datetime.now(UTC) - timedelta(hours=hours_ago))
    if error:
        conv.turns[-1].error = "RateLimitError: 429 from the model"
    score = scored(
        conv,
        verdict=judged("partial_incorrect" if error else "complete", 0.3 if error else 0.95),
        review_rate=review_rate,
    )
    sample = review_sample_of(score, failing=True)
    assert sample is not None
    return TranscriptRecord(
        kind="transcript", sample=sample, conversation=conv, score=score, published_at=datetime.now(UTC)
    )


@pytest.mark.broker
@pytest.mark.prometheus
def test_the_alerts_link_opens_the_series_failing_conversations(broker, tmp_path, prometheus) -> None:
    from playwright.sync_api import sync_playwright

    web, state = prometheus
    settings = review_settings(broker.bootstrap_servers, tmp_path)
    held = [
        _held("err-1", hours_ago=3),
        _held("err-2", hours_ago=0.5),
        _held("err-old", hours_ago=30),  # before the alert's window
        _held("err-other-version", version="1.9"),  # another series
        _held("err-other-task", task="lookup"),
        _held("fine", error=False, review_rate=1.0),  # the review sample, passed: not failing
    ]
    with ServiceThread(settings) as svc:
        for record in held:
            assert svc.service.store.ingest(record, time.time(), 30 * 86400) == "stored"
        _start(state, svc.url)
        alert = _firing(web, "AgentwatchErrorRateAboveBaseline")
        link = alert["annotations"]["review_url"]
        assert link.startswith(f"{svc.url}/failing?alert=AgentwatchErrorRateAboveBaseline&agent=support-bot")
        assert "&why=error&until=" in link and "window=" not in link  # the review service's alerts.window
        assert alert["annotations"]["runbook_url"] == f"{RUNBOOK}#agentwatcherrorrateabovebaseline"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(10_000)
                response = page.goto(link)  # the link in the page, as the on-call engineer clicks it
                assert response is not None and response.status == 401  # sign in first
                page.fill("input[name=name]", "alice")
                page.fill("input[name=secret]", PASSWORD)
                page.click("button[type=submit]")
                page.wait_for_selector("#failing")
                assert page.url.startswith(f"{svc.url}/failing?alert=AgentwatchErrorRateAboveBaseline")
                assert "AgentwatchErrorRateAboveBaseline" in page.inner_text("#alert")
                assert page.inner_text("#summary").startswith("2 failing conversations with error")
                rows = page.locator("#failing tbody tr")
                assert rows.count() == 2
                assert all("error" in t for t in rows.locator("td:nth-child(4)").all_inner_texts())
                assert all("2.0" == t.strip() for t in rows.locator("td:nth-child(2)").all_inner_texts())
                rows.first.locator("a.open").click()  # the latest first: err-2
                page.wait_for_selector("#why")
                assert "err-2" in page.inner_text("h1 + p")
                assert "RateLimitError: 429 from the model" in page.inner_text("#why")
                assert (page.locator("#back-link").get_attribute("href") or "").startswith("/failing?")
            finally:
                browser.close()
