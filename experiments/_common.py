"""Shared helpers for the experiment scripts: output folder, a headless pyplot, and the
checks of the claims the README states for each script.

`check(label, value, bound)` prints `check: <label> <value> (bound <bound>) ok|FAILED`
and records a failure; `finish()` exits with status 1 if any check failed, so a script
run (and the test that runs it) fails when a stated number no longer holds.
"""

import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
FAILED = []


def out_path(name):
    """Path of `name` inside experiments/out/ (created on first use)."""
    os.makedirs(OUT, exist_ok=True)
    return os.path.join(OUT, name)


def check(label, value, bound=None, lower=None):
    """Check `value <= bound` (and `value >= lower` where given); print one `check:` line
    and record a failure. A NaN value fails. Returns whether the check passed.
    """
    value = float(value)
    ok = not math.isnan(value) and (bound is None or value <= bound) and (lower is None or value >= lower)
    limits = ", ".join(([f"bound {bound:.3g}"] if bound is not None else [])
                       + ([f"at least {lower:.3g}"] if lower is not None else []))
    print(f"check: {label} {value:.3g} ({limits}) {'ok' if ok else 'FAILED'}", flush=True)
    if not ok:
        FAILED.append(label)
    return ok


def finish():
    """Exit with status 1 (naming the failed checks) if any check failed."""
    if FAILED:
        print(f"FAILED checks: {', '.join(FAILED)}", flush=True)
        sys.exit(1)


__all__ = ["OUT", "check", "finish", "out_path", "plt"]
