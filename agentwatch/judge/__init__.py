"""The judge: obtains verdicts on conversations (see docs/judge.md); the scorers take them.

`verdict` is the interface (`Judge`, `JudgeVerdict`, failure codes, the guard `run_judge`); `client` the
OpenAI-compatible HTTP judge; `prompt` the versioned rubric and transcript; `runner` the bounded pool with the
`cache`, the spend cap (`budget`) and the circuit `breaker`; `counters` what the services export;
`calibration` agreement with people's labels.
"""

from agentwatch.service_extra import require

require(__name__)  # fails with the extra to install, before any service dependency is imported

from agentwatch.judge.verdict import Judge, JudgeVerdict  # noqa: E402

__all__ = ["Judge", "JudgeVerdict"]
