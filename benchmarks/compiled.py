"""The compiled build beside pure Python: the scorers and the collector's hot modules compiled by mypyc.

Run: `python -m benchmarks.compiled [--rounds 3] [--n 20000] [--conversations 2000]` (needs a C compiler and
mypy, which the `dev` extra brings). It copies `agentwatch/` and the build files to a temporary folder, builds
there as a compiled wheel is built (`AGENTWATCH_COMPILE=1`, setup.py: `MODULES` compiled, the source unchanged),
and first checks that both builds give the same scores, every field, on
the published dev runs graded by their generated policies and on `benchmarks.score`'s conversations. Then the
two builds take turns, each benchmark in a fresh interpreter: `benchmarks.score` (CPU µs per conversation) and
`benchmarks.collector` (CPU ms per 1,000 conversations by stage, and the pipeline's share of the raw protobuf
parse), and `benchmarks.peers` where Fair Forge is installed beside. Prints figures; asserts nothing; keeps
nothing it built.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from benchmarks.calibration import calibration_line, calibration_us

ROOT = Path(__file__).resolve().parents[1]
# What a compiled build compiles (pyproject.toml, `[tool.agentwatch] compiled`; setup.py reads the same list).
MODULES: tuple[str, ...] = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["agentwatch"]["compiled"]
)

# Scores every conversation of the published dev runs (graded by their generated policies, labels off) and
# of benchmarks.score, and writes them as JSON: what both builds must agree on.
_SCORE_ALL = """
import gzip, json, sys
from agentwatch.config import Settings, TaskPolicy
from agentwatch.importers.results_files import load_document
from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from benchmarks.score import synthetic
from tests.support import published_runs

out = []
for name in published_runs.ALL:
    document = load_document(gzip.decompress(published_runs.locate(name).read_bytes()))
    imported = import_results(document, "agent", name, name)
    policies = [TaskPolicy.model_validate(p) for p in imported.policies]
    scorer = ConversationScorer(Settings(policies=policies), labels="ignore")
    out += [scorer.score(Conversation.model_validate(line)) for line in imported.lines]
scorer = ConversationScorer()
out += [scorer.score(synthetic(i)) for i in range(2000)]
json.dump([s.model_dump(mode="json") for s in out], open(sys.argv[1], "w"), sort_keys=True)
"""


def build(tree: Path) -> float:
    """Copy the checkout's package and build files into `tree` and compile there as a compiled build does
    (`AGENTWATCH_COMPILE=1 setup.py build_ext --inplace`); the seconds it took (SystemExit on failure)."""
    shutil.copytree(
        ROOT / "agentwatch", tree / "agentwatch", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tree,
        env={**os.environ, "AGENTWATCH_COMPILE": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise SystemExit(f"mypyc build failed:\n{(run.stdout + run.stderr)[-3000:]}")
    built = list((tree / "agentwatch").rglob("*.so"))
    if len(built) < len(MODULES):
        raise SystemExit(f"mypyc built {len(built)} extension modules for {len(MODULES)} sources")
    return time.perf_counter() - start


def run_python(tree: Path, args: list[str]) -> str:
    """Run `python args` with `tree`'s agentwatch first on the path (the benchmarks and tests from this
    checkout); its standard output."""
    env = {**os.environ, "PYTHONPATH": f"{tree}:{ROOT}"}
    run = subprocess.run(
        [sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {tree}:\n{run.stderr[-3000:]}")
    return run.stdout


def same_scores(pure: Path, compiled: Path, scratch: Path) -> str:
    """Whether both builds score every conversation alike, in words (the first difference named)."""
    scores = []
    for label, tree in (("pure", pure), ("compiled", compiled)):
        target = scratch / f"scores-{label}.json"
        run_python(tree, ["-c", _SCORE_ALL, str(target)])
        scores.append(json.loads(target.read_text()))
    differ = [(a, b) for a, b in zip(*scores, strict=True) if a != b]
    if not differ:
        return f"the same scores, every field, on {len(scores[0])} conversations (the dev runs and benchmarks.score's)"
    a, b = differ[0]
    fields = ", ".join(k for k in a if a[k] != b.get(k))
    return (
        f"DIFFERENT scores on {len(differ)} of {len(scores[0])} conversations; the first, {a['conversation_id']}, "
        f"in {fields}; reasons {a['reasons'][:2]} vs {b['reasons'][:2]}"
    )


# What is read off the benchmarks' output.
SCORE_US = r"CPU time [\d.]+ s: ([\d.]+) µs per conversation"
PEERS = r"ratio \(agentwatch speed / Fair Forge speed\): ([\d.]+)× median"
SHARE = r"decode → score ([\d.]+)%"
STAGES = r"per 1,000 conversations \(CPU ms\): (.*)"


def figure(pattern: str, text: str) -> float:
    """The number `pattern`'s group finds in a benchmark's output (SystemExit when it is not there)."""
    found = re.search(pattern, text)
    if found is None:
        raise SystemExit(f"no figure matching {pattern!r} in:\n{text}")
    return float(found.group(1).replace(",", ""))


def main() -> None:
    """Build, check, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the two builds taking turns")
    parser.add_argument("--n", type=int, default=20000, help="benchmarks.score conversations per run")
    parser.add_argument("--conversations", type=int, default=2000, help="benchmarks.collector conversations")
    args = parser.parse_args()
    before = calibration_us()
    with tempfile.TemporaryDirectory(prefix="agentwatch-mypyc-") as folder:
        compiled = Path(folder) / "compiled"
        seconds = build(compiled)
        print(
            f"mypyc: {len(MODULES)} modules compiled in {seconds:.0f} s ({', '.join(Path(m).stem for m in MODULES)})"
        )
        print(same_scores(ROOT, compiled, Path(folder)))
        score: dict[str, list[float]] = {"pure": [], "compiled": []}
        stages: dict[str, list[str]] = {"pure": [], "compiled": []}
        peers: dict[str, list[float]] = {"pure": [], "compiled": []}
        with_peers = importlib.util.find_spec("fair_forge") is not None
        for _ in range(args.rounds):
            for label, tree in (("pure", ROOT), ("compiled", compiled)):
                text = run_python(tree, ["-m", "benchmarks.score", "--n", str(args.n)])
                score[label].append(figure(SCORE_US, text))
                if with_peers:
                    peers[label].append(
                        figure(PEERS, run_python(tree, ["-m", "benchmarks.peers", "--n", "1000"]))
                    )
                text = run_python(
                    tree, ["-m", "benchmarks.collector", "--conversations", str(args.conversations)]
                )
                share = figure(SHARE, text)
                split = re.search(STAGES, text)
                stages[label].append(f"{split.group(1) if split else '?'}; {share:.1f}% of the raw parse")
        for label in ("pure", "compiled"):
            print(
                f"{label:>9} scoring, CPU µs per conversation: {', '.join(f'{x:.0f}' for x in score[label])}"
            )
            for line in stages[label]:
                print(f"{label:>9} collector, CPU ms per 1,000 conversations: {line}")
        ratios = [p / c for p, c in zip(score["pure"], score["compiled"], strict=True)]
        print(f"scoring, compiled / pure speed: {', '.join(f'{r:.2f}×' for r in ratios)}")
        for label in ("pure", "compiled") if with_peers else ():
            print(
                f"{label:>9} beside Fair Forge (benchmarks.peers, medians): {', '.join(f'{x:.0f}×' for x in peers[label])}"
            )
        if not with_peers:
            print("(Fair Forge not importable here: benchmarks.peers not run)")
    print(calibration_line(before))


if __name__ == "__main__":
    main()
