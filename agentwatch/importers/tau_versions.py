"""Which grading a τ²-bench run was rewarded by, where its recorded commit says and the grading changed since.

τ²-bench writes the commit of the checkout that ran it (`info.git_commit`). Its banking_knowledge grading
changed in 1.0.1 (2026-07-15): before it, every call through `call_discoverable_agent_tool` was recorded in the
database the reward compares, so a read nobody asked for failed the reward; since, a read is recorded only when
the task's ground truth makes it. A run of one of the earlier commits (`data/tau2_bench_commits.yaml`) is graded
by the rules it was rewarded by; a commit not listed (a later one, a fork's own, `unknown`) by the current ones.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

__all__ = ["records_every_discoverable_call"]

_MIN_PREFIX = 7  # the shortest abbreviation of a commit git prints


@cache
def _earlier_commits() -> tuple[str, ...]:
    text = (resources.files("agentwatch") / "data" / "tau2_bench_commits.yaml").read_text("utf-8")
    return tuple(str(c) for c in yaml.safe_load(text)["records_every_discoverable_call"])


def records_every_discoverable_call(git_commit: Any) -> bool:
    """Whether a run of this commit was rewarded by the grading that records every discoverable tool's call,
    reads too (tau2-bench from 1.0.0 until before 1.0.1); a commit given abbreviated is matched by its prefix."""
    if not isinstance(git_commit, str):
        return False
    commit = git_commit.strip().lower()
    if len(commit) < _MIN_PREFIX:
        return False
    return any(known.startswith(commit) or commit.startswith(known) for known in _earlier_commits())
