"""Plots and animations of trajectories (matplotlib and Pillow, imported lazily, headless-safe).

Each plot function takes a `mbdjax.Trajectory` and optionally a matplotlib `Axes`, and
returns the Axes; `save_standard_plots` writes the standard set of PNG files.
`animate` renders a planar or spatial mechanism's motion to a GIF or MP4, and
`viewer` writes it as a self-contained interactive HTML page.
"""

from ._animate import animate as animate
from ._plots import (
    plot_contact_path as plot_contact_path,
    plot_coordinates as plot_coordinates,
    plot_energy as plot_energy,
    plot_friction as plot_friction,
    plot_network as plot_network,
    plot_reactions as plot_reactions,
    plot_residuals as plot_residuals,
    save_standard_plots as save_standard_plots,
)
from ._viewer import viewer as viewer

__all__ = ["animate", "plot_contact_path", "plot_coordinates", "plot_energy", "plot_friction", "plot_network",
           "plot_reactions", "plot_residuals", "save_standard_plots", "viewer"]
