"""Plots of trajectories (matplotlib, imported lazily, headless-safe).

Each function takes a `mbdjax.Trajectory` and optionally a matplotlib `Axes`, and
returns the Axes; `save_standard_plots` writes the standard set of PNG files.
"""

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

__all__ = ["plot_contact_path", "plot_coordinates", "plot_energy", "plot_friction", "plot_network", "plot_reactions", "plot_residuals", "save_standard_plots"]
