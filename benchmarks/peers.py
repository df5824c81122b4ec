"""Offline scoring beside Fair Forge's Agentic metric, on the same three-turn conversations, in one run.

Run: `python -m benchmarks.peers [--n 1000] [--rounds 3]`. Prints figures; asserts nothing.

Fair Forge (`alquimia-fair-forge` on PyPI, 3.0.0 measured) is not an agentwatch dependency: install it where
you measure (e.g. in a scratch virtualenv beside agentwatch's service extra) and this script times it when it
imports. Both score the conversations of `benchmarks.score` (3 turns, 2 tool calls each, reference answers and
expected tools): agentwatch with `ConversationScorer` (every grader, hallucination checks on), Fair Forge with
`Agentic.run` (answer correctness by its LLM judge, tool correctness by its dictionary comparison). Fair Forge
has no judge-free answer grading, so its judge is LangChain's `FakeListChatModel` answering at once with a
valid verdict: what is timed is Fair Forge's own work, no model latency. Its default judge mode is used
(structured output); its other mode (`use_structured_output=False`) fails on its own prompt in 3.0.0 (the JSON
schema it appends is read as template variables) and scores every answer 0.
The two take turns for `--rounds` rounds; CPU time of this process; medians; a calibration line beside them.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from typing import Any

from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from benchmarks.calibration import calibration_line, calibration_us
from benchmarks.score import synthetic


def fair_forge_datasets(convs: list[Conversation]) -> list[Any]:
    """The conversations as Fair Forge `Dataset`s: one `Batch` per turn, tools as its `agentic` dicts."""
    from fair_forge.schemas.common import Batch, Dataset

    out = []
    for conv in convs:
        batches = []
        for i, turn in enumerate(conv.turns):
            exp = turn.expected
            assert exp is not None and exp.reference_answer is not None
            batches.append(
                Batch(
                    qa_id=f"{conv.conversation_id}-{i}",
                    query=turn.input or "",
                    assistant=turn.answer or "",
                    ground_truth_assistant=exp.reference_answer,
                    agentic={
                        "tools_used": [
                            {"tool_name": c.name, "parameters": c.arguments or {}, "step": step}
                            for step, c in enumerate(turn.tool_calls)
                        ],
                        "final_answer_uses_tools": True,
                    },
                    ground_truth_agentic={
                        "expected_tools": [
                            {"tool_name": t.name, "parameters": t.arguments or {}, "step": step}
                            for step, t in enumerate(exp.tools or [])
                        ],
                        "tool_sequence_matters": exp.sequence_matters,
                    },
                )
            )
        out.append(
            Dataset(
                session_id=conv.conversation_id,
                assistant_id=conv.agent,
                context="",
                conversation=batches,
            )
        )
    return out


def fair_forge_runner(convs: list[Conversation]) -> Any:
    """A function running Fair Forge's Agentic metric over `convs` (None when Fair Forge is not installed)."""
    try:
        from fair_forge.core.retriever import Retriever
        from fair_forge.metrics.agentic import Agentic
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
    except ImportError as exc:
        print(f"Fair Forge not measured ({exc}): pip install alquimia-fair-forge where you run this")
        return None
    datasets = fair_forge_datasets(convs)

    class Conversations(Retriever):
        def load_dataset(self) -> list[Any]:
            return datasets

    class InstantJudge(FakeListChatModel):
        """Replies at once; accepts the structured-output binding Fair Forge's judge asks for."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(**kwargs)

    judge = InstantJudge(responses=['{"correctness_score": 0.9, "reasoning": "matches the reference"}'])

    def run() -> int:
        results = Agentic.run(Conversations, model=judge, k=3)
        assert (
            results[0].correctness_scores[0] == 0.9
        )  # the judge's verdict was read: nothing failed silently
        return len(results)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="conversations (three turns each)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both")
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    before = calibration_us()
    convs = [synthetic(i) for i in range(args.n)]
    scorer = ConversationScorer()
    for c in convs[:50]:  # warm: what the scorers load lazily is not timed
        scorer.score(c)
    fair_forge = fair_forge_runner(convs)
    if fair_forge is not None:
        fair_forge()  # warm
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(args.rounds):
        start = time.process_time()
        for c in convs:
            scorer.score(c)
        ours.append(time.process_time() - start)
        if fair_forge is not None:
            start = time.process_time()
            done = fair_forge()
            theirs.append(time.process_time() - start)
            assert done == args.n
    a = statistics.median(ours)
    print(
        f"agentwatch ConversationScorer: {args.n / a:,.0f} conversations/s of CPU "
        f"({a / args.n * 1e6:.0f} µs each; rounds {', '.join(f'{args.n / s:,.0f}' for s in ours)})"
    )
    if theirs:
        f = statistics.median(theirs)
        print(
            f"Fair Forge Agentic (instant stand-in judge): {args.n / f:,.0f} conversations/s of CPU "
            f"({f / args.n * 1e6:.0f} µs each; rounds {', '.join(f'{args.n / s:,.0f}' for s in theirs)})"
        )
        ratios = [t / o for o, t in zip(ours, theirs, strict=True)]
        print(
            f"ratio (agentwatch speed / Fair Forge speed): {f / a:.0f}× median, "
            f"{min(ratios):.0f}–{max(ratios):.0f}× over the rounds"
        )
    print(calibration_line(before))


if __name__ == "__main__":
    main()
