"""Expected calls against the calls a conversation made, by their effects rather than their keystrokes.

Shared by task policies and conversation-level expectations:
- each expected call is paired with a distinct *successful* call of the same (normalised) name — or of one of
  its `alternatives` — whose arguments fit; a call that returned an error changed nothing, so it neither
  satisfies an expectation nor counts as an unexpected effect (agents retry a refused booking);
- an expected call must happen when it is `required`, which by default means the tool has effects: an
  expected lookup or handoff the agent skipped is no failure. An expected call the agent made exactly, that the
  environment refused (it returned an error) before the agent had changed anything (after one of its writes the
  refusal may be its doing), is not missing — a note says so — when another expected call of the same tool was
  made (the ground truth held a write the environment does not accept beside the valid one, and the agent did
  the valid one), or — with `refused_first="note"`, for expectations that replay a ground truth from the same
  starting state — when the expectation names no alternative (the ground truth's own replay is refused too;
  with an alternative, the alternative was the valid one);
- an expected write the agent did not make is not missing either — a note says so — when the latest successful
  call addressing its record (called with some of the write's arguments, the same values, and nothing else)
  returned that record, or one object directly in it, holding every other argument of the write with the same
  value: the write would have changed nothing (the ground truth "changed" a user's address to the one it had);
- calls nobody expected are checked as `extra_calls` says: `read_only` (default) fails a successful call with
  effects, `none` fails any successful call, `any` fails none. A successful call with effects is one even when
  every `new_X` argument equals its `X`: environments record the modification itself (τ-bench marks the order
  modified, and no further modification is accepted). One that returned a record exactly as the latest call
  returning a record of its kind did (a reservation "changed" to the flights and cabin it had, the same change
  made twice) left the state as it was: no effect, nobody's or the agent's before a refusal;
- `order`: `relative` — the paired calls happen in the expected order (others may come between); `strict` —
  exactly the expected calls, in order, and nothing else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentwatch.scorers.differences import ABSENT, Difference, closest, shown
from agentwatch.scorers.made_calls import (
    MadeCall,
    canonical,
    lookups_latest_first,
    shown_already,
    state_changes,
)
from agentwatch.scorers.matching import match_pairs
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.tool_kinds import EFFECT, ToolKinds
from agentwatch.wire.json_text import MAX_NESTING, deeper_than
from agentwatch.wire.schema import ArgumentDifference
from agentwatch.wire.values import read_structured


@dataclass(slots=True)
class WantedCall:
    """An expected call: its normalised name (and its alternatives'), how to describe it, whether it must
    happen, what it carries."""

    name: str
    label: str
    required: bool
    spec: Any  # the PolicyTool or ExpectedTool it came from, handed back to the argument check
    names: frozenset[str] = frozenset()  # the name and its alternatives, normalised


# Calls compared with the expected calls that did not happen, to name the closest in their reasons; past it the
# rest go without (a policy of 1,000 expected writes of 10 tools against 10,000 calls compared 1,000,000, 6 s).
CLOSEST_BUDGET = 100_000


@dataclass(slots=True)
class Missing:
    """An expected call that did not happen, and the closest call of its tool that was made (if any) with
    where it differs."""

    wanted: WantedCall
    closest: MadeCall | None = None
    differences: list[Difference] = field(default_factory=list)
    looked: bool = True  # False: the conversation's budget of comparisons (`CLOSEST_BUDGET`) was spent

    def detail(self) -> str:
        """What the reason adds after "no successful call matches ...": why the closest call does not."""
        if not self.looked:
            return (
                f"its closest call was not looked for (a conversation's reasons compare at most "
                f"{CLOSEST_BUDGET:,} calls with the expected calls that did not happen)"
            )
        if self.closest is None:
            return f"no call of {self.wanted.spec.name} was made"
        call = self.closest.call
        where = f"the closest call {call.name} (turn {self.closest.turn})"
        if call.error is not None:
            head = f"{where} returned an error ({shown(call.error)})"
            return head + (
                f" and differs at {'; '.join(d.text() for d in self.differences)}" if self.differences else ""
            )
        if not self.differences:
            return f"{where} differs in a way no argument shows"
        return f"{where} differs at {'; '.join(d.text() for d in self.differences)}"


@dataclass(slots=True)
class Graded:
    """What a policy or a conversation's expectation found: failing reasons, forbidden tools called, notes, and
    where the expected calls that did not happen differ from the closest calls made."""

    failures: list[str] = field(default_factory=list)  # reasons, `code: text`
    forbidden: list[str] = field(default_factory=list)  # forbidden tools called, as called
    notes: list[str] = field(default_factory=list)  # informational reasons, `note: text`
    differences: list[ArgumentDifference] = field(default_factory=list)

    def add_calls(self, found: CallsFound, prefix: str, extra_calls: str) -> None:
        """Add what comparing the expected calls with the calls made found."""
        self.failures.extend(found.reasons(prefix, extra_calls))
        self.notes.extend(found.notes(prefix))
        self.differences.extend(found.differences(prefix))


@dataclass(slots=True)
class CallsFound:
    """What the comparison found: expected calls not made, calls nobody expected, a broken order."""

    missing: list[Missing] = field(default_factory=list)
    unexpected: list[MadeCall] = field(default_factory=list)
    order: str | None = None
    refused: list[tuple[WantedCall, MadeCall]] = field(default_factory=list)  # expected, made, refused
    # expected writes not made, and the call whose result shows their values already
    unchanged: list[tuple[WantedCall, MadeCall]] = field(default_factory=list)

    def differences(self, prefix: str) -> list[ArgumentDifference]:
        """The structured form of the `<prefix>_tools` reasons: one record per differing value."""
        out = []
        for m in self.missing:
            tool = str(m.wanted.spec.name)
            if m.closest is None:
                out.append(
                    ArgumentDifference(reason=f"{prefix}_tools", tool=tool, path="(call)", expected=tool)
                )
            for d in m.differences:
                got = None if d.got is ABSENT else d.got
                out.append(
                    ArgumentDifference(
                        reason=f"{prefix}_tools",
                        tool=tool,
                        path=d.path,
                        expected=_writable(d.expected),
                        got=_writable(got),
                    )
                )
        return out

    def notes(self, prefix: str) -> list[str]:
        """A `note` for each expected call the environment refused, and for each expected write that would have
        changed nothing (informational: they fail nothing)."""
        return [
            *(
                f"note: {prefix}: the expected {w.label} was refused in this run ({_short(m.call.error)}): not "
                "required"
                for w, m in self.refused
            ),
            *(
                f"note: {prefix}: the expected {w.label} would have changed nothing: {m.call.name} (turn {m.turn}) "
                "returned its values already: not required"
                for w, m in self.unchanged
            ),
        ]

    def reasons(self, prefix: str, extra_calls: str) -> list[str]:
        """Reason entries `<prefix>_tools`, `<prefix>_effects` and `<prefix>_order` of what was found."""
        out = [
            f"{prefix}_tools: no successful call matches {m.wanted.label}: {m.detail()}" for m in self.missing
        ]
        if self.unexpected:
            what = (
                "call(s) nobody expected" if extra_calls == "none" else "call(s) with effects nobody expected"
            )
            out.append(f"{prefix}_effects: {what}: {', '.join(describe(m.call) for m in self.unexpected)}")
        if self.order:
            out.append(f"{prefix}_order: {self.order}")
        return out


def wanted_calls(
    specs: Sequence[Any], names: NameNormalizer, kinds: ToolKinds, made: Sequence[MadeCall]
) -> list[WantedCall]:
    """The expected calls of `specs` (objects with `name` and `required`); `required: null` means "when the
    tool has effects" — judged by name, or by the calls of that name the agent flagged read-only."""
    flagged = {m.name for m in made if m.call.read_only}
    out = []
    for spec in specs:
        name = names(spec.name)
        required = spec.required
        if required is None:
            required = name not in flagged and kinds.of_name(name) == EFFECT
        alternatives = frozenset(names(a) for a in getattr(spec, "alternatives", ()))
        out.append(WantedCall(name, describe(spec), required, spec, alternatives | {name}))
    return out


def describe(spec: Any) -> str:
    """`name(key=value, ...)` of an expected call, values shortened."""
    args = getattr(spec, "arguments", None)
    if not args:
        return str(spec.name)
    shown = ", ".join(f"{k}={_short(v)}" for k, v in args.items())
    return f"{spec.name}({shown})"


def _missing(
    w: WantedCall,
    made: Sequence[MadeCall],
    free: set[int],
    differ: Callable[[WantedCall, MadeCall], list[Difference]],
    by_name: Mapping[str, Sequence[int]],
    budget: int,
) -> tuple[Missing, int]:
    """An expected call that did not happen, with the closest call of its tool: among the successful calls no
    other expectation took (`free`: their ids), else the successful ones, else the refused ones; and the calls
    compared. Not looked for when the tool's calls are more than `budget`."""
    of_tool = [made[k] for k in _of_names(w.names, by_name)]
    if len(of_tool) > budget:
        return Missing(w, looked=False), 0
    compared = 0
    for group in (
        [m for m in of_tool if id(m) in free],
        [m for m in of_tool if m.ok],
        [m for m in of_tool if not m.ok],
    ):
        compared += len(group)
        found = closest(group, lambda m: differ(w, m))
        if found is not None:
            return Missing(w, found[0], found[1]), compared
    return Missing(w), compared


def replacement_pairs(args: Any, source: str, target: str) -> list[tuple[str, str]] | None:
    """The replacements `source[i] -> target[i]` of two parallel list arguments, each side as canonical JSON,
    the ones that replace an element by itself left out; None when they are not two lists of equal length."""
    if not isinstance(args, dict):
        return None
    a, b = _as_list(args.get(source)), _as_list(args.get(target))
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return None
    pairs = [(canonical(x), canonical(y)) for x, y in zip(a, b, strict=True)]
    return sorted(pair for pair in pairs if pair[0] != pair[1])


def _as_list(value: Any) -> Any:
    """A list passed as its JSON or Python text read as the list (`arguments.values_match` does the same)."""
    return read_structured(value)[0] if isinstance(value, str) else value


def same_replacements(expected: Any, used: Any, source: str, target: str) -> bool:
    """Whether two calls make the same replacements `source -> target`, in any order (`replacement_pairs`)."""
    want, have = replacement_pairs(expected, source, target), replacement_pairs(used, source, target)
    return want is not None and want == have


def _writable(value: Any) -> Any:
    """A value as a score record carries it: one nested deeper than `MAX_NESTING` (which a transcript may hold)
    is said in words, as the record could not be written with it."""
    if isinstance(value, (dict, list)) and deeper_than(value, MAX_NESTING):
        return f"<a value nested deeper than {MAX_NESTING} levels>"
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_calls(
    wanted: Sequence[WantedCall],
    made: Sequence[MadeCall],
    fits: Callable[[WantedCall, MadeCall], bool],
    differ: Callable[[WantedCall, MadeCall], list[Difference]],
    order: str = "any",
    extra_calls: str = "read_only",
    refused_first: str = "missing",
) -> CallsFound:
    """Compare expected calls with the calls made (see the module docstring); `differ` says where a call made
    differs from an expected one (for the reasons of the expected calls that did not happen)."""
    found = CallsFound()
    changes = state_changes(made)
    done_at = [k for k, m in enumerate(made) if m.ok]
    done = [made[k] for k in done_at]
    # the calls of each tool name, in order: an expectation is only ever compared with the calls of its names
    done_by_name, made_by_name = _by_name(done), _by_name(made)

    def fit(i: int, j: int) -> bool:
        return fits(wanted[i], done[j])

    first = sorted(range(len(wanted)), key=lambda i: not wanted[i].required)  # required ones pair first
    pairs = match_pairs(first, len(done), fit, lambda i: _of_names(wanted[i].names, done_by_name))
    taken = set(pairs.values())
    paired_names = Counter(name for i in pairs for name in wanted[i].names)
    free: set[int] | None = None  # the ids of the successful calls no expectation took, once one is missing
    lookups: list[tuple[MadeCall, dict[str, str]]] | None = None  # once an expected call is not made
    budget = CLOSEST_BUDGET
    for i, w in enumerate(wanted):
        if not w.required or i in pairs:
            continue
        at = next((k for k in _of_names(w.names, made_by_name) if not made[k].ok and fits(w, made[k])), None)
        # Excused only where nothing the agent changed before could have caused the refusal: beside the valid
        # one (another expected call of the same tool that was made), or as a write the environment does not
        # accept from the state the agent found. Not so for an expectation with alternatives: one of them is the
        # valid one, and it was not made.
        done_instead = any(paired_names[name] for name in w.names)  # `w` itself is not paired
        if (
            at is not None
            and not any(changes[:at])
            and (done_instead or (refused_first == "note" and len(w.names) == 1))
        ):
            found.refused.append((w, made[at]))
            continue
        if lookups is None:
            lookups = lookups_latest_first(made)
        shown_by, examined = shown_already(w.spec, lookups, budget)
        budget -= examined
        if shown_by is not None:
            found.unchanged.append((w, shown_by))
        else:
            if free is None:
                free = {id(m) for j, m in enumerate(done) if j not in taken}
            missing, compared = _missing(w, made, free, differ, made_by_name, budget)
            found.missing.append(missing)
            budget -= compared
    if extra_calls != "any":
        found.unexpected = [
            m for j, m in enumerate(done) if j not in taken and (extra_calls == "none" or changes[done_at[j]])
        ]
    if not found.missing and order != "any" and wanted:
        found.order = _order_broken(wanted, pairs, done, made, fits, order)
    return found


def _by_name(calls: Sequence[MadeCall]) -> dict[str, list[int]]:
    """The positions of the calls of each tool name, ascending."""
    out: dict[str, list[int]] = {}
    for k, m in enumerate(calls):
        out.setdefault(m.name, []).append(k)
    return out


def _of_names(names: Collection[str], by_name: Mapping[str, Sequence[int]]) -> Sequence[int]:
    """The positions of the calls of any of `names`, ascending (`by_name`: from `_by_name`)."""
    if len(names) == 1:
        return by_name.get(next(iter(names)), ())
    return sorted(k for name in names for k in by_name.get(name, ()))


def _order_broken(
    wanted: Sequence[WantedCall],
    pairs: dict[int, int],
    done: Sequence[MadeCall],
    made: Sequence[MadeCall],
    fits: Callable[[WantedCall, MadeCall], bool],
    order: str,
) -> str | None:
    """Why the order is broken, or None: the paired expected calls must occur as a subsequence, in order, of
    the successful calls (`strict`: and they must be every call made)."""
    sequence = [w for i, w in enumerate(wanted) if i in pairs]
    k = 0
    for m in done:
        if k < len(sequence) and m.name in sequence[k].names and fits(sequence[k], m):
            k += 1
    in_order = k == len(sequence)
    if order == "strict" and (not in_order or len(made) != len(wanted)):
        expected = " → ".join(w.label.split("(", 1)[0] for w in wanted)
        return f"expected exactly {expected}, got {' → '.join(m.call.name for m in made) or 'no call'}"
    if order == "relative" and not in_order and len(sequence) > 1:
        expected = " → ".join(w.label.split("(", 1)[0] for w in sequence)
        return f"expected {expected} in this order, got {' → '.join(m.call.name for m in done)}"
    return None
