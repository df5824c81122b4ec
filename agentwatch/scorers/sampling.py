"""Which conversations are in the graded samples: a deterministic, outcome-blind decision per conversation.

`sample_point(id)` maps a conversation id to a number in [0, 1): the first 8 bytes of SHA-256 of the id's
UTF-8 bytes, read as a big-endian unsigned integer, divided by 2^64. A conversation is in a sample of rate r
when `sample_point(id) < r`. The decision looks at nothing but the id, so it cannot depend on the outcome;
every process and every language that can compute SHA-256 agrees on it; and the sample at a lower rate is a
subset of the sample at a higher one (the conversations a person reviews at 1% are among those a judge grades
at 10%). With a target of judged conversations per hour the judge rate adapts per series (`target_rate`); the
rule stays `sample_point(id) < rate`, at the rate decided for the conversation.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from agentwatch.config import SamplingConfig
from agentwatch.scorers.globs import selects
from agentwatch.scorers.target_rate import TargetRates
from agentwatch.wire.kept import kept

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
    """Sampling rates per agent and task (first matching rule, else the defaults) and the decisions they give.

    With a target (`target_judged_per_hour`), the judge rate of each series comes from `TargetRates`, decided
    once per conversation: the decision is remembered (the last `DECISIONS` conversations), so that asking
    whether to judge a conversation and scoring it later agree, and its traffic counts once.

    Names and ids are remembered as `wire.kept` keys: they come from span attributes of up to 64 K characters,
    and 500 agents of 60,000-character names made the rules' memory hold 30 MB, 500 such conversation ids the
    decisions' 60 MB.
    """

    DECISIONS = 65_536

    def __init__(self, config: SamplingConfig | None = None, targets: TargetRates | None = None) -> None:
        self._config = config or SamplingConfig()
        self._rates: dict[tuple[str, str], tuple[float, float, float | None]] = {}
        self.targets = targets if targets is not None else TargetRates(self._config.target_interval_s)
        self._decided: OrderedDict[tuple[str, str], SampleDecision] = OrderedDict()

    def rates(self, agent: str, task: str) -> tuple[float, float]:
        """(judge rate, review rate) configured for conversations of `agent` and `task` (no target)."""
        judge, review, _target = self._rules(agent, task)
        return judge, review

    def _rules(self, agent: str, task: str) -> tuple[float, float, float | None]:
        key = (kept(agent), kept(task))
        found = self._rates.get(key)
        if found is None:
            cfg = self._config
            judge, review, target = cfg.judge_rate, cfg.review_rate, cfg.target_judged_per_hour
            for rule in cfg.rules:
                if selects(rule.agent, agent) and selects(rule.task, task):
                    judge = judge if rule.judge_rate is None else rule.judge_rate
                    review = review if rule.review_rate is None else rule.review_rate
                    target = target if rule.target_judged_per_hour is None else rule.target_judged_per_hour
                    break
            found = (judge, review, target)
            if len(self._rates) < 10_000:
                self._rates[key] = found
        return found

    def decide(
        self, conversation_id: str, agent: str, task: str, version: str = "", t: float | None = None
    ) -> SampleDecision:
        """Whether the conversation (of `version`, ended at Unix time `t`) is in the two samples."""
        judge_rate, review_rate, target = self._rules(agent, task)
        if target is not None:
            key = (kept(agent), kept(conversation_id))
            known = self._decided.get(key)
            if known is not None:
                return known
            floor = max(review_rate, self._config.min_judge_rate)
            series = (key[0], kept(version), kept(task))
            judge_rate = self.targets.rate(series, t, target, judge_rate, floor)
        u = sample_point(conversation_id)
        decision = SampleDecision(judge_rate, review_rate, u < judge_rate, u < review_rate)
        if target is not None:
            self._decided[key] = decision
            if len(self._decided) > self.DECISIONS:
                self._decided.popitem(last=False)
        return decision
