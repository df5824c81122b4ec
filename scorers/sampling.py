"""Which conversations are in the graded samples: a deterministic, outcome-blind decision per conversation.

`sample_point(id)` maps a conversation id to a number in [0, 1): the first 8 bytes of SHA-256 of the id's UTF-8
bytes, read as a big-endian unsigned integer, divided by 2^64. A conversation is in a sample of rate r when
`sample_point(id) < r`. The decision looks at nothing but the id, so it cannot depend on the outcome; every
process and every language that can compute SHA-256 agrees on it; and the sample at a lower rate is a subset of
the sample at a higher one (the conversations a person reviews at 1% are among those a judge grades at 10%).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fnmatch import fnmatchcase

from agentwatch.config import SamplingConfig

_SCALE = float(2**64)


def sample_point(conversation_id: str) -> float:
    """The conversation's fixed point in [0, 1) (see the module docstring)."""
    digest = hashlib.sha256(conversation_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


@dataclass(slots=True, frozen=True)
class SampleDecision:
    """The rates in force for one conversation and whether it falls in each sample."""

    judge_rate: float
    review_rate: float
    judge: bool
    review: bool


class Sampler:
    """Sampling rates per agent and task (first matching rule, else the defaults) and the decisions they give."""

    def __init__(self, config: SamplingConfig | None = None) -> None:
        self._config = config or SamplingConfig()
        self._rates: dict[tuple[str, str], tuple[float, float]] = {}

    def rates(self, agent: str, task: str) -> tuple[float, float]:
        """(judge rate, review rate) for conversations of `agent` and `task`."""
        key = (agent, task)
        found = self._rates.get(key)
        if found is None:
            cfg = self._config
            judge, review = cfg.judge_rate, cfg.review_rate
            for rule in cfg.rules:
                if fnmatchcase(agent, rule.agent) and fnmatchcase(task, rule.task):
                    judge = judge if rule.judge_rate is None else rule.judge_rate
                    review = review if rule.review_rate is None else rule.review_rate
                    break
            found = (judge, review)
            if len(self._rates) < 10_000:
                self._rates[key] = found
        return found

    def decide(self, conversation_id: str, agent: str, task: str) -> SampleDecision:
        """Whether the conversation is in the judge sample and in the review sample."""
        judge_rate, review_rate = self.rates(agent, task)
        u = sample_point(conversation_id)
        return SampleDecision(judge_rate, review_rate, u < judge_rate, u < review_rate)
