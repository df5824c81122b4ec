"""The docs point at what exists: every `agentwatch/...` path they name is in the tree, and what deploy/README.md
says the compose file holds, it holds."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "deploy").rglob("*.md")),
    *sorted((ROOT / "deploy").rglob("*.yaml")),
    *sorted((ROOT / "deploy").rglob("*.yml")),
]
PATH = re.compile(r"(?<![\w./-])agentwatch/[\w./-]*[\w/]")


def test_every_agentwatch_path_the_docs_name_exists() -> None:
    missing = []
    for doc in DOCS:
        for found in PATH.findall(doc.read_text(encoding="utf-8")):
            path = found.rstrip("/.")
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {found}")
    assert missing == []  # e.g. agentwatch/config.py, which became the package agentwatch/config/
    assert len(DOCS) > 10


def test_the_deploy_readme_says_what_compose_runs() -> None:
    services = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    assert "alertmanager" in services
    assert "not part of the compose file" not in readme
    assert "Alertmanager is part of the compose file" in readme
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    targets = prometheus["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert targets == ["alertmanager:9093"]  # and Prometheus sends it the alerts, as the README says


def test_scoring_your_own_logs_is_on_the_readmes_first_screen() -> None:
    first_screen = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:30]
    text = "\n".join(first_screen)
    assert "## Score your own logs" in text
    assert "agentwatch import openai-chat" in text and "agentwatch score" in text
