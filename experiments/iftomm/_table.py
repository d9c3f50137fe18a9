"""The shared results file of the IFToMM experiments: one `## ` section per problem,
each replaced by its own script without touching the others."""

from __future__ import annotations

import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.md")
TITLE = "# IFToMM benchmark problems\n\n"


def write_section(heading: str, body: str, path: str = PATH) -> str:
    """Replace (or add) the section `## {heading}` of `path` with `body`; returns the path."""
    text = open(path).read() if os.path.exists(path) else TITLE
    if not text.startswith(TITLE):
        text = TITLE + text
    marker = f"## {heading}\n"
    start = text.find(marker)
    if start >= 0:
        end = text.find("\n## ", start + len(marker))
        text = text[:start] + text[end + 1:] if end >= 0 else text[:start]
    text = text.rstrip("\n") + "\n\n" + marker + "\n" + body.rstrip("\n") + "\n"
    with open(path, "w") as fh:
        fh.write(text)
    return path


def fmt(x, spec=".1e"):
    return "–" if x is None else format(x, spec)
