"""Shared helpers for the experiment scripts: output folder and a headless pyplot."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def out_path(name):
    """Path of `name` inside experiments/out/ (created on first use)."""
    os.makedirs(OUT, exist_ok=True)
    return os.path.join(OUT, name)


__all__ = ["OUT", "out_path", "plt"]
