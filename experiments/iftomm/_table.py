"""Shared by the IFToMM experiments: the results file (one `## ` section per problem,
each replaced by its own script without touching the others) and the timed run."""

from __future__ import annotations

import os
import time

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.md")
TITLE = "# IFToMM benchmark problems\n\n"


NOTES = "Notes (kept when the table is rewritten):"


def write_section(heading: str, body: str, path: str = PATH) -> str:
    """Replace (or add) the section `## {heading}` of `path` with `body`; returns the path.
    A paragraph of the old section that starts with `NOTES` (written by hand: what a
    table alone does not say) is kept, after the new body."""
    text = open(path).read() if os.path.exists(path) else TITLE
    if not text.startswith(TITLE):
        text = TITLE + text
    marker = f"## {heading}\n"
    section = marker + "\n" + body.rstrip("\n") + "\n"
    start = text.find(marker)
    if start >= 0:  # in place, so the sections keep their order
        end = text.find("\n## ", start + len(marker))
        old = text[start:end if end >= 0 else len(text)]
        if NOTES in old:
            section += "\n" + old[old.index(NOTES):].rstrip("\n") + "\n"
        text = text[:start] + section + (text[end:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as fh:
        fh.write(text)
    return path


def fmt(x, spec=".1e"):
    return "–" if x is None else format(x, spec)


def timed_run(ex, **kw):
    """`mbdjax.simulate` of example `ex` twice, the second timed, as a user runs it
    (`throw=True`): `(status, steps, trajectory or None, wall s after compilation or None)`.
    A refusal before the run reads "refused: ..."; a run stopped by name (a singular
    configuration) reads "stopped: ..." with its wall time; another run-time failure
    reads "failed: ..."."""
    import mbdjax as mbd  # first: it sets XLA's flags before JAX starts
    import jax

    def once():
        start = time.perf_counter()
        try:
            traj = mbd.simulate(ex.model, ex.q0, ex.qd0, **kw)
            jax.block_until_ready(traj.q)
            return traj, None, time.perf_counter() - start
        except mbd.MbdjaxError as err:  # a named stop during the run, or a refusal before it
            singular = "singular configuration at t =" in str(err)
            return None, err, (time.perf_counter() - start) if singular else None
        except Exception as err:  # an equinox run-time error (solver failure)
            return None, err, time.perf_counter() - start

    traj, err, wall = once()
    if err is not None and wall is None:
        return (f"refused: {str(err).split(';')[0][:80]}", None, None, None)
    traj, err, wall = once()
    if isinstance(err, mbd.MbdjaxError):
        head = str(err).split("where")[0].replace("simulate: the motion reached ", "")
        return (f"stopped: {head.strip().rstrip(',')}", None, None, wall)
    if err is not None:
        line = [s for s in str(err).splitlines() if s.strip()]
        return (f"failed: {(line[0] if line else type(err).__name__)[:80]}", None, None, wall)
    return ("ok", int(traj.num_steps), traj, wall)
