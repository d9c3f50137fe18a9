"""Shared by the IFToMM experiments: the results file (one `## ` section per problem,
each replaced by its own script without touching the others) and the timed run."""

from __future__ import annotations

import os
import time

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


def timed_run(ex, **kw):
    """`mbdjax.simulate` of example `ex` twice (`throw=False`), the second timed:
    `(status, steps, trajectory or None, wall s after compilation or None)`."""
    import mbdjax as mbd  # first: it sets XLA's flags before JAX starts
    import jax

    try:
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, throw=False, **kw)
        jax.block_until_ready(traj.q)
        start = time.perf_counter()
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, throw=False, **kw)
        jax.block_until_ready(traj.q)
        wall = time.perf_counter() - start
    except mbd.MbdjaxError as err:
        return (f"refused: {str(err).split(';')[0][:80]}", None, None, None)
    if not bool(traj.success):
        return (f"failed: {str(traj.result).split('<')[-1].rstrip('>')[:60]}", int(traj.num_steps), None, wall)
    return ("ok", int(traj.num_steps), traj, wall)
