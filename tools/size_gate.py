"""The size gate of `make lint`: no module of the package over a limit, and the total printed.

Growth should be a decision: a module that passes the limit is split by job (see the README's
layout), or the limit is raised here in a commit that says why.

    python tools/size_gate.py            # exits 1 and names the modules over the limit
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "parallelgraph"
#: lines a module of the package may have
LIMIT = 700


def line_counts(package: Path = PACKAGE) -> dict[Path, int]:
    """Lines of every Python module under `package`, by path relative to its parent."""
    return {
        path.relative_to(package.parent): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(package.rglob("*.py"))
        if "_generated" not in path.parts  # kernels rendered from the op table, not written
    }


def main() -> int:
    counts = line_counts()
    over = {path: lines for path, lines in counts.items() if lines > LIMIT}
    largest = max(counts, key=counts.__getitem__)
    print(
        f"size gate: {len(counts)} modules, {sum(counts.values()):,} lines in all; "
        f"largest {largest} ({counts[largest]} lines; limit {LIMIT})"
    )
    for path, lines in sorted(over.items(), key=lambda item: -item[1]):
        print(f"  over the limit: {path} has {lines} lines (split it by job)")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
