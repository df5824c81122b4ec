"""What `pip install agentwatch` (the SDK alone) weighs and how long `import agentwatch.sdk` takes.

Run: python -m benchmarks.sdk_install [--imports N]

Builds a bare virtualenv and one with the built wheel installed (pip, no extras), and
prints the size of the install (du of site-packages minus the bare venv's), the installed distributions, and
the median wall time of N fresh `python -c "import agentwatch.sdk"` processes minus that of `python -c pass`,
plus the cumulative import time `python -X importtime` reports for agentwatch.sdk. Needs PyPI or a pip cache.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.wheel import build_wheel, clean_env


def site_packages_bytes(venv: Path) -> int:
    """Bytes under the venv's site-packages (du -sb)."""
    (site,) = venv.glob("lib/python*/site-packages")
    return int(
        subprocess.run(["du", "-sb", str(site)], capture_output=True, text=True, check=True).stdout.split()[0]
    )


def make_venv(path: Path) -> Path:
    """A fresh virtualenv at path; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def sdk_only_venv(work: Path) -> Path:
    """A virtualenv under work with the built wheel installed by pip, no extras; returns its python."""
    wheel = build_wheel(work / "wheel")
    python = make_venv(work / "sdk")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        env=clean_env(),
        check=True,
        capture_output=True,
        timeout=900,
    )
    return python


def median_start_s(python: Path, code: str, n: int) -> float:
    """Median wall time of n fresh `python -c code` processes."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([str(python), "-c", code], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def importtime_us(python: Path, module: str) -> int:
    """Cumulative µs `python -X importtime` reports for module (median of 5)."""
    found = []
    for _ in range(5):
        err = subprocess.run(
            [str(python), "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        lines = [ln for ln in err.splitlines() if re.search(rf"\|\s*{re.escape(module)}$", ln)]
        found.append(int(lines[-1].split("|")[1]))
    return int(statistics.median(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imports", type=int, default=21, help="fresh processes timed per import")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bare = make_venv(work / "bare")
        t0 = time.perf_counter()
        python = sdk_only_venv(work)
        install_s = time.perf_counter() - t0
        size = site_packages_bytes(python.parents[1]) - site_packages_bytes(work / "bare")
        listed = subprocess.run(
            [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
        ).stdout.split()
        base = median_start_s(bare, "pass", args.imports)
        sdk = median_start_s(python, "import agentwatch.sdk", args.imports)
        print("SDK-only install (pip install agentwatch, no extras)")
        print(f"  pip install time: {install_s:.1f} s (pip cache warm or not, as it was)")
        print(f"  site-packages beyond a bare venv: {size / 1e6:.1f} MB")
        print(f"  distributions ({len(listed)}): {' '.join(sorted(listed, key=str.lower))}")
        print(
            f"  import agentwatch.sdk: {1e3 * (sdk - base):.0f} ms over a bare interpreter start "
            f"(median of {args.imports}: {1e3 * sdk:.0f} ms vs {1e3 * base:.0f} ms)"
        )
        print(
            f"  python -X importtime, agentwatch.sdk cumulative: {importtime_us(python, 'agentwatch.sdk') / 1e3:.0f} ms"
        )


if __name__ == "__main__":
    main()
