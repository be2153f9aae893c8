"""Build notebooks/*.ipynb from their sources in notebooks/src/*.py (outputs stripped).

    python tools/make_notebooks.py

A source is a Python file in the "percent" format: cells start with `# %%` (code) or
`# %% [markdown]` (markdown, every line a `# ` comment). Sources are reviewable as plain Python,
ruff checks them, and no output ever lands in git.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CELL_MARKER = re.compile(r"^# %%( \[markdown\])?\s*$", re.M)


def cells_of(source: str) -> list[tuple[str, str]]:
    """(kind, text) of each cell of a percent-format source."""
    cells, markers = [], list(CELL_MARKER.finditer(source))
    for marker, following in zip(markers, [*markers[1:], None]):
        body = source[marker.end() : following.start() if following else len(source)].strip("\n")
        if marker.group(1):
            lines = [
                line[2:] if line.startswith("# ") else line.lstrip("#")
                for line in body.splitlines()
            ]
            cells.append(("markdown", "\n".join(lines)))
        else:
            cells.append(("code", body))
    return cells


def notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    make = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb.cells = [make[kind](text) for kind, text in cells]
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"  # stable ids: rebuilding gives identical files
    return nb


def build(source: Path) -> Path:
    target = NOTEBOOKS / f"{source.stem}.ipynb"
    nbformat.write(notebook(cells_of(source.read_text())), target)
    return target


def main() -> None:
    for source in sorted((NOTEBOOKS / "src").glob("*.py")):
        print(f"wrote {build(source)}")


if __name__ == "__main__":
    main()
