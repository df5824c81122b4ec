"""The quality alerts of deploy/prometheus/alert_rules.yml and the sequential-test rule each one reads, named once."""

from __future__ import annotations

QUALITY_ALERTS = {
    "AgentwatchPass3Drift": "pass",
    "AgentwatchASRDrop": "asr",
    "AgentwatchAbandonmentSpike": "abandoned",
    "AgentwatchHallucinationRate": "hallucination",
    "AgentwatchToolLoops": "loop",
    "AgentwatchErrorRateAboveBaseline": "error",
    "AgentwatchNoAnswerRateAboveBaseline": "no_answer",
    "AgentwatchOverBudgetRate": "over_budget",
}
