"""Every axis of the standard plots names a quantity and its unit.

Reference: the units of the coordinates by construction (planar bodies: x, y in m and
φ in rad; network elements: charge in C; node efforts in V), so a label with the
wrong unit or none fails. The runs repeat the plotting docstrings' settings (the
same compiled programs).
"""

import jax.numpy as jnp
import pytest

import mbdjax as mbd
from mbdjax import models, plotting


def _labels(ax):
    return ax.get_xlabel(), ax.get_ylabel()


@pytest.fixture(scope="module")
def runs():
    pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), constraint_names=("rod",))
    out = {"pendulum": mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=1.0, saveat=21)}
    for name, t1 in (("rlc", 1.0), ("stick-slip", 3.0), ("slider-crank", 0.1)):
        ex = models.get(name)
        out[name] = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=11, **ex.options)
    return out


def test_every_axis_names_a_quantity_and_a_unit(runs):
    import matplotlib.pyplot as plt

    cases = [
        (plotting.plot_coordinates, "pendulum", ("t [s]", "q [model units]")),        # a bare Model: no units known
        (plotting.plot_residuals, "pendulum", ("t [s]", "residual [row units; rates per s]")),
        (plotting.plot_energy, "pendulum", ("t [s]", "[J]")),
        (plotting.plot_network, "rlc", ("t [s]", "effort [V]")),
        (plotting.plot_friction, "stick-slip", ("t [s]", "force [N] (torque [N·m] on a shaft)")),
        (plotting.plot_reactions, "slider-crank", ("t [s]", "|F| [N]")),
    ]
    for fn, run, want in cases:
        ax = fn(runs[run])
        assert _labels(ax) == want, (fn.__name__, _labels(ax))
        plt.close(ax.figure)
    crank = runs["slider-crank"]
    angles = [c for c in crank.coordinates if c.endswith(".phi")]
    ax = plotting.plot_coordinates(crank, names=angles)
    assert ax.get_ylabel() == "q [rad]"
    plt.close(ax.figure)
    ax = plotting.plot_coordinates(crank, names=[c for c in crank.coordinates if c not in angles])
    assert ax.get_ylabel() == "q [m]"
    plt.close(ax.figure)
    ax = plotting.plot_coordinates(runs["rlc"])
    assert ax.get_ylabel() == "q [C]"                                                  # charges
    plt.close(ax.figure)
    from mbdjax.plotting._plots import coordinate_unit

    assert coordinate_unit(runs["stick-slip"], "x.x") == "m" and coordinate_unit(crank, "crank.phi") == "rad"


def test_standard_plots_label_every_axis(runs, tmp_path):
    """save_standard_plots: no axis of any figure it writes is left without a label
    holding a unit in brackets."""
    import matplotlib.pyplot as plt

    seen = []
    original = plt.Figure.savefig

    def spy(fig, *args, **kwargs):
        seen.extend(fig.axes)
        return original(fig, *args, **kwargs)

    plt.Figure.savefig = spy
    try:
        for run in runs.values():
            plotting.save_standard_plots(run, tmp_path)
    finally:
        plt.Figure.savefig = original
    assert len(seen) >= 12
    for ax in seen:
        xlabel, ylabel = _labels(ax)
        assert "[" in ylabel, (ax.get_title(), ylabel)
        assert "[" in xlabel or ax.get_xlabel() == "" and ax.get_shared_x_axes().get_siblings(ax) != [ax], \
            (ax.get_title(), xlabel)


def test_reactions_plot_shows_the_driving_torque(runs):
    """The driven slider-crank's crank turns at a constant 2π rad/s, so by the
    work-energy theorem the driver's torque on the crank times ω is dE/dt: over the
    run, ∫ τ ω dt = E(t1) − E(0) (Simpson's rule on the saved points, to 1e-6 of the
    work of |τ|). The drive has no reaction force, so only the torque panel shows it."""
    import matplotlib.pyplot as plt
    import numpy as np
    from scipy.integrate import simpson

    ex = models.get("slider-crank")
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=401, **ex.options)
    force, torque = traj.reaction("drive")          # on body_i, the ground: minus the torque on the crank
    t, omega = np.asarray(traj.t), np.asarray(traj.qd[:, ex.model.index("crank.phi")])
    energy = np.asarray(traj.energy())
    work = simpson(-np.asarray(torque) * omega, x=t)
    scale = simpson(np.abs(np.asarray(torque) * omega), x=t)
    assert float(np.max(np.abs(np.asarray(force)))) == 0.0 and scale > 0.1
    assert abs(work - (energy[-1] - energy[0])) < 1e-6 * scale
    ax = plotting.plot_reactions(traj, quantity="torque")
    drive = [line for line in ax.get_lines() if line.get_label() == "drive"][0]
    np.testing.assert_allclose(drive.get_ydata(), np.abs(np.asarray(torque)))
    assert ax.get_ylabel() == "|T| [N·m]"
    plt.close(ax.figure)


def test_no_legend_covers_the_data_area(runs, tmp_path, monkeypatch):
    """Every figure the standard plots save (one- and two-panel, with legends of 2 to 9
    entries) has each legend outside its axes' data area and inside the figure, so no
    curve is hidden and no entry is cut off. Checked geometrically on the drawn figure
    (display coordinates, the extents matplotlib reports), at savefig time."""
    import matplotlib.figure

    seen = []
    save = matplotlib.figure.Figure.savefig

    def checked(fig, path, *args, **kwargs):
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None:
                continue
            lb, ab = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
            assert lb.x0 >= ab.x1 or lb.x1 <= ab.x0 or lb.y0 >= ab.y1 or lb.y1 <= ab.y0, (path, ax.get_title())
            assert box.x0 <= lb.x0 and lb.x1 <= box.x1 and box.y0 <= lb.y0 and lb.y1 <= box.y1, (path, lb, box)
            seen.append(len(leg.get_texts()))
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", checked)
    for name in ("slider-crank", "rlc", "stick-slip"):
        plotting.save_standard_plots(runs[name], str(tmp_path / name))
    assert len(seen) >= 8 and max(seen) >= 5


def test_a_crowded_panel_names_its_curve_count_instead_of_a_legend(runs):
    """Above `MAX_LEGEND_ENTRIES` curves the legend would fill the figure: it is left
    out and the title says how many curves there are."""
    import matplotlib.pyplot as plt

    from mbdjax.plotting._plots import MAX_LEGEND_ENTRIES, legend

    fig, ax = plt.subplots()
    for k in range(MAX_LEGEND_ENTRIES + 1):
        ax.plot([0, 1], [k, k], label=f"c{k}")
    ax.set_title("many")
    assert legend(ax) is None and ax.get_legend() is None
    assert ax.get_title() == f"many ({MAX_LEGEND_ENTRIES + 1} curves; name fewer for a legend)"
    plt.close(fig)
