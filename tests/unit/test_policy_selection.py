"""Which policy and which sampling rule a conversation's agent and task select: a name, or a shell-style glob."""

from __future__ import annotations

import pytest

from agentwatch.config import SamplingConfig, TaskPolicy
from agentwatch.scorers.policy import PolicyBook
from agentwatch.scorers.sampling import Sampler

# task ids as a course's τ²-bench domain writes them: as globs, `[acceso]` is a set of one letter
BRACKETED = "[acceso]medico_disponible[PERSONA:None]"


@pytest.mark.parametrize(
    ("pattern", "task", "selected"),
    [
        (BRACKETED, BRACKETED, True),
        (BRACKETED, "amedico_disponibleP", True),  # still a glob where it matches as one
        ("refund-*", "refund-card", True),
        ("refund-*", "exchange", False),
        ("refund-?", "refund-12", False),
        ("*", "", True),
    ],
)
def test_a_policy_selects_its_own_task_whatever_it_holds(pattern: str, task: str, selected: bool) -> None:
    """The import writes each task's id as its policy's task: one holding brackets graded none of its
    conversations (13 of a course's healthcare domain, `no_grader`)."""
    book = PolicyBook([TaskPolicy(id="p", task=pattern)])
    found = book.match("agent", task)
    assert (found is not None and found.id == "p") is selected


def test_a_sampling_rule_selects_its_own_task_whatever_it_holds() -> None:
    config = SamplingConfig.model_validate(
        {
            "judge_rate": 0.0,
            "rules": [{"task": BRACKETED, "judge_rate": 1.0}, {"task": "x*", "judge_rate": 0.5}],
        }
    )
    sampler = Sampler(config)
    assert sampler.rates("agent", BRACKETED)[0] == 1.0
    assert sampler.rates("agent", "xy")[0] == 0.5
    assert sampler.rates("agent", "other")[0] == 0.0
