"""Reports of an input holding several versions of an agent: a section per version and their comparison.

Pooling two versions into one report would average a baseline with its candidate. When some agent comes in
several versions, each (agent, version) gets its own `Report`, in first-seen order; every later version of an
agent is compared with that agent's first-seen version (or with the `--baseline` report when one is given),
and the top-level report is the last version's, with the others in `versions`. Conversation ids that occur
under several versions (two runs of one benchmark) are distinct conversations, one per version;
`colliding_ids` names them so that a person can check. Several agents with one version each keep one report
over all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentwatch.config import Settings
from agentwatch.report.baseline import compare_baseline
from agentwatch.report.build import EXAMPLES_PER_MODE, build_report, latest_revisions
from agentwatch.report.model import Report
from agentwatch.wire.score_view import ScoreView


def colliding_ids(scores: Sequence[ScoreView]) -> list[str]:
    """Conversation ids that occur under more than one version of the same agent, first seen first."""
    versions: dict[tuple[str, str], set[str]] = {}
    for s in scores:
        versions.setdefault(s.identity, set()).add(s.version)
    return [cid for (_agent, cid), seen in versions.items() if len(seen) > 1]


def duplicate_ids(scores: Sequence[ScoreView]) -> tuple[list[str], int]:
    """Conversation ids read more than once for one agent version (first seen first), and extra records."""
    seen: dict[tuple[str, str, str], int] = {}
    for s in scores:
        key = (s.agent, s.version, s.conversation_id)
        seen[key] = seen.get(key, 0) + 1
    repeated = [cid for (_agent, _version, cid), n in seen.items() if n > 1]
    return repeated, sum(n - 1 for n in seen.values())


def build_reports(
    scores: Sequence[ScoreView],
    settings: Settings,
    ks: Sequence[int] | None = None,
    base: Report | None = None,
    base_source: str = "",
    examples: int = EXAMPLES_PER_MODE,
) -> Report:
    """The report of `scores`; a section per (agent, version), with comparisons, when an agent has several."""
    scores = latest_revisions(scores)
    groups: dict[tuple[str, str], list[ScoreView]] = {}
    for s in scores:
        groups.setdefault((s.agent, s.version), []).append(s)
    agents = [agent for agent, _version in groups]
    if len(set(agents)) == len(agents):  # no agent in two versions: one report over everything
        report = build_report(scores, settings, ks, examples)
        if base is not None:
            report.baseline = compare_baseline(report, base, settings, base_source)
        return report
    sections: list[Report] = []
    first_of_agent: dict[str, Report] = {}
    for (agent, version), members in groups.items():
        section = build_report(members, settings, ks, examples)
        section.agent_version = f"{agent} {version}"
        reference = base if base is not None else first_of_agent.get(agent)
        if reference is not None:
            source = base_source if base is not None else f"version {reference.agent_version}"
            section.baseline = compare_baseline(section, reference, settings, source)
        first_of_agent.setdefault(agent, section)
        sections.append(section)
    top = sections[-1].model_copy(update={"versions": sections})
    return top
