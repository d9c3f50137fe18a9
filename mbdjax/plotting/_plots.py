"""Standard trajectory plots: coordinates, constraint residuals, energy, reactions."""

from __future__ import annotations

import os

import jax
import numpy as np

from .._errors import MbdjaxError


_ANGLE_NAMES = ("phi", "theta", "psi", "th", "angle")


def coordinate_unit(traj, name):
    """The SI unit of coordinate `name`: as the model's front end recorded it
    (`Model.coordinate_units`: `rad` for angles, `m` for body and node positions, `C`
    (charge) or `m³` (volume) for the flow coordinate of an electrical or fluid
    element, `1` for Euler parameters); for a model without units, `rad` and `1` for
    coordinates named like angles and Euler parameters; `None` otherwise.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> from mbdjax.plotting._plots import coordinate_unit
        >>> ex = models.get("rlc")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **ex.options)
        >>> coordinate_unit(traj, "C.q")
        'C'
    """
    units = traj.model.coordinate_units if traj.model is not None else None
    if units is not None and name in traj.coordinates:
        return units[traj.coordinates.index(name)]
    last = name.rpartition(".")[2]
    if last in _ANGLE_NAMES:
        return "rad"
    return "1" if last in ("e0", "e1", "e2", "e3") else None


def units_label(units, quantity):
    """`"quantity [u]"` for one unit, `"quantity [u1, u2]"` for several."""
    found = sorted({u for u in units if u is not None})
    if not found:
        return f"{quantity} [model units]"
    return f"{quantity} [{', '.join(found)}]" + (" (and model units)" if None in units else "")


def pyplot():
    """matplotlib.pyplot, on the Agg backend when there is no display and no backend
    was chosen (a backend set by the user, `MPLBACKEND` or matplotlibrc, is kept).
    Asking matplotlib for its backend would resolve its automatic choice by trying the
    interactive toolkits one by one, which took a tenth of the main job's time."""
    import matplotlib   # on first use: only drawing needs it (half a second to import)

    if not os.environ.get("DISPLAY"):
        chosen = getattr(matplotlib.rcParams, "_get_backend_or_none", None)
        backend = chosen() if chosen is not None else matplotlib.get_backend()
        if backend is None or backend.lower() not in ("agg", "pdf", "svg", "ps", "cairo", "pgf"):
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt   # here, after the backend is chosen above

    return plt


def figure(rows=1, width=7.0, height=4.0, sharex=True):
    """`(fig, axes (rows,))`: axes stacked over a shared time axis (`sharex=False`: each
    its own), with fixed margins in inches (room for a y label with exponent tick
    labels, an x label and a title).
    matplotlib's constrained layout measures every label to place them and took half
    the time of the main job's plots."""
    plt = pyplot()
    fig, axes = plt.subplots(rows, 1, figsize=(width, height), sharex=sharex and rows > 1, squeeze=False)
    left, right, bottom, top, gap = 0.95, 0.2, 0.55, 0.4, 0.75
    panel = (height - bottom - top - gap * (rows - 1)) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - top / height, hspace=gap / panel)
    fig._mbdjax_layout = (width, left, right)      # inches: widened by `legend` to fit legends
    return fig, axes[:, 0]


#: most legend entries shown; a panel with more curves names their count in its title
MAX_LEGEND_ENTRIES = 24


def legend(ax, ncol=1):
    """The legend of `ax`, placed right of the axes, outside the data area, so it never
    hides a curve. A figure made by `figure` is widened by the legend's width (the
    widest of its panels') with the axes' size kept; on a caller's own axes the legend
    is only placed. Columns are added when the entries would not fit the panel's
    height; above `MAX_LEGEND_ENTRIES` curves the legend is left out and the title says
    how many there are. Returns the legend or None."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if len(handles) > MAX_LEGEND_ENTRIES:
        ax.set_title(f"{ax.get_title()} ({len(handles)} curves; name fewer for a legend)")
        return None
    fig = ax.figure
    panel = ax.get_position().height * fig.get_size_inches()[1]
    ncol = max(ncol, -(-len(handles) // max(int(panel / 0.2), 1)))
    leg = ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", ncol=ncol,
                    borderaxespad=0.3)
    layout = getattr(fig, "_mbdjax_layout", None)
    if layout is not None:
        width, left, right = layout
        renderer = fig.canvas.get_renderer()
        room = max(a.get_legend().get_window_extent(renderer).width for a in fig.axes
                   if a.get_legend() is not None) / fig.dpi + 0.1
        total = width + room
        height = fig.get_size_inches()[1]
        fig.set_size_inches(total, height)
        fig.subplots_adjust(left=left / total, right=1 - (right + room) / total)
    return leg


def axes(ax):
    if ax is not None:
        return ax
    return figure()[1][0]


def plot_coordinates(traj, names=None, ax=None):
    """Each coordinate (or those in `names`) against time.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax import plotting
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=1.0, saveat=21)
        >>> ax = plotting.plot_coordinates(traj)
        >>> ax.get_title(), [line.get_label() for line in ax.get_lines()]
        ('generalized coordinates', ['x', 'y'])
    """
    ax = axes(ax)
    t = np.asarray(traj.t)
    for name in names or traj.coordinates:
        ax.plot(t, np.asarray(traj.coordinate(name)), label=name)
    ax.set_xlabel("t [s]")
    ax.set_ylabel(units_label([coordinate_unit(traj, n) for n in names or traj.coordinates], "q"))
    ax.set_title("generalized coordinates")
    legend(ax)
    ax.grid(alpha=0.3)
    return ax


def plot_residuals(traj, ax=None):
    """`max |Φ|` and `max |B q̇ − b|` against time, on a log scale.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax import plotting
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=1.0, saveat=21)
        >>> ax = plotting.plot_residuals(traj)
        >>> [line.get_label() for line in ax.get_lines()], ax.get_yscale()
        (['max |Φ|', 'max |B q̇ − b|'], 'log')
    """
    ax = axes(ax)
    t = np.asarray(traj.t)
    floor = 1e-18
    if traj.constraint_names:
        ax.semilogy(t, np.max(np.abs(np.asarray(traj.position_residual())), axis=-1) + floor, label="max |Φ|")
    if traj.constraint_names or traj.nonholonomic_names:
        ax.semilogy(t, np.max(np.abs(np.asarray(traj.velocity_residual())), axis=-1) + floor,
                    label="max |B q̇ − b|")
    # decades as plain text ("1e-12"): matplotlib's default writes them as mathtext,
    # whose parser took a fifth of the main job's plotting time
    from matplotlib.ticker import LogFormatter   # on first use, as matplotlib (`pyplot`)

    ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=True))
    ax.set_xlabel("t [s]")
    ax.set_ylabel("residual [row units; rates per s]")
    ax.set_title("constraint residuals")
    legend(ax)
    ax.grid(alpha=0.3)
    return ax


def plot_energy(traj, ax=None):
    """Total energy `T + V` relative to its initial value.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax import plotting
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=1.0, saveat=21)
        >>> ax = plotting.plot_energy(traj)
        >>> [line.get_label() for line in ax.get_lines()]
        ['E(t) − E(0)', 'work of forces, dampers, drivers']
    """
    ax = axes(ax)
    t = np.asarray(traj.t)
    e = np.asarray(traj.energy())
    ax.plot(t, e - e[0], label="E(t) − E(0)")
    try:
        work = np.asarray(traj.work()) if traj.model is not None else None
    except MbdjaxError:  # mass_matrix models, or drivers without multipliers
        work = None
    if work is not None:
        ax.plot(t, work, "--", label="work of forces, dampers, drivers")
        legend(ax)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("[J]")
    ax.set_title("energy balance")
    ax.grid(alpha=0.3)
    return ax


def plot_reactions(traj, joints=None, ax=None, quantity="force"):
    """Magnitude of the reaction force (`quantity="force"`, N) or torque (`"torque"`,
    N·m, about the joint point) of each joint (or those in `joints`), on its body_i.
    A driver's torque (the torque that drives a crank, with no reaction force) shows
    in the torque panel.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models, plotting
        >>> ex = models.get("slider-crank")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.1, saveat=11, **ex.options)
        >>> ax = plotting.plot_reactions(traj)
        >>> [line.get_label() for line in ax.get_lines()]
        ['crank_pin', 'drive', 'guide', 'rod_crank', 'rod_slider']
    """
    ax = axes(ax)
    t = np.asarray(traj.t)
    fns = (traj.model.reaction_fns or {}) if traj.model is not None else {}
    chosen = list(joints or sorted(fns))
    reactions = traj.reactions(chosen) if chosen else {}
    if quantity not in ("force", "torque"):
        raise ValueError(f"plot_reactions: quantity must be 'force' or 'torque', got {quantity!r}.")
    for joint in chosen:
        value = np.asarray(reactions[joint][0 if quantity == "force" else 1])
        ax.plot(t, np.abs(value) if value.ndim == 1 else np.linalg.norm(value, axis=-1), label=joint)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("|F| [N]" if quantity == "force" else "|T| [N·m]")
    ax.set_title("joint reaction forces" if quantity == "force" else "joint reaction and driving torques")
    if fns:
        legend(ax)
    ax.grid(alpha=0.3)
    return ax


def plot_contact_path(traj, ax=None):
    """Path of each rolling contact point on its plane (global x, y), for models of the
    spatial front end with contacts; the start is marked with a dot.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models, plotting
        >>> ex = models.get("rolling-disk")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=11, **ex.options)
        >>> ax = plotting.plot_contact_path(traj)
        >>> ax.get_title(), len(ax.get_lines()[0].get_xdata())
        ('contact path on the plane', 11)
    """
    ax = axes(ax)
    contacts = traj.model.contacts if traj.model is not None else None
    table = contacts.kinematics if contacts is not None else {}
    for name, fn in sorted(table.items()):
        points, _ = jax.vmap(lambda q, qd, fn=fn: fn(q, qd, traj.params))(traj.q, traj.qd)
        points = np.asarray(points)
        line, = ax.plot(points[:, 0], points[:, 1], label=name)
        ax.plot(points[:1, 0], points[:1, 1], "o", color=line.get_color())
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title("contact path on the plane")
    if table:
        legend(ax)
    ax.grid(alpha=0.3)
    return ax


def _network_part(traj):
    """The trajectory's model's network part (`Model.network`), or None."""
    return traj.model.network if traj.model is not None else None


def plot_network(traj, ax=None):
    """Node efforts (voltages, pressures: the junction multipliers) of a network model,
    or, without multipliers, the flows of its stores.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models, plotting
        >>> ex = models.get("rlc")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **ex.options)
        >>> ax = plotting.plot_network(traj)
        >>> ax.get_title()
        'node efforts (voltage, pressure)'
    """
    ax = axes(ax)
    part = _network_part(traj)
    t = np.asarray(traj.t)
    junctions = part.junctions() if part is not None else []
    if traj.lam is not None and junctions:
        for node in junctions:
            ax.plot(t, np.asarray(traj.effort(node)), label=node)
        ax.set_title("node efforts (voltage, pressure)")
        ax.set_ylabel(units_label([part.effort_unit(n) for n in junctions], "effort"))
    else:
        for name in part.flow_stores() if part is not None else []:
            flow = np.asarray(traj.flow(name))
            ax.plot(t, flow[:, 0] if flow.ndim > 1 else flow, label=name)
        ax.set_title("flows of the flow stores")
        ax.set_ylabel("flow [A, m³/s, m/s, rad/s by domain]")
    ax.set_xlabel("t [s]")
    legend(ax)
    ax.grid(alpha=0.3)
    return ax


def plot_friction(traj, ax=None):
    """Force of each exact (stick–slip) friction element with its static limits
    `±μ_s N` (dashed) and the sticking intervals shaded.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models, plotting
        >>> ex = models.get("stick-slip")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=3.0, saveat=11, **ex.options)
        >>> ax = plotting.plot_friction(traj)
        >>> [line.get_label() for line in ax.get_lines()][:1]
        ['fr force']
    """
    ax = axes(ax)
    part = _network_part(traj)
    t = np.asarray(traj.t)
    frictions = part.frictions() if part is not None else []
    for name in frictions:
        (line,) = ax.plot(t, np.asarray(traj.effort(name)), label=f"{name} force")
        limit = part.static_limit(name, traj.params)
        for sign in (1, -1):
            ax.axhline(sign * limit, color=line.get_color(), ls="--", lw=0.8)
        stuck = part.sticking(traj, name)
        if stuck is not None:
            ax.fill_between(t, 0, 1, where=np.asarray(stuck), color=line.get_color(), alpha=0.12,
                            transform=ax.get_xaxis_transform(), label=f"{name} sticking")
    ax.set_title("friction force, static limits ±μ_s N (dashed), sticking (shaded)")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("force [N] (torque [N·m] on a shaft)")
    legend(ax)
    ax.grid(alpha=0.3)
    return ax


def save_standard_plots(traj, out_dir, prefix=""):
    """Write coordinates.png, residuals.png, energy.png, and reactions.png (with
    joint reactions), contact_path.png (with rolling contacts), network.png (node
    efforts of a network) and friction.png (stick–slip friction) where they apply.

    Returns the list of paths written.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax import plotting
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=1.0, saveat=21)
        >>> import os, tempfile
        >>> paths = plotting.save_standard_plots(traj, tempfile.mkdtemp(), prefix="pendulum_")
        >>> [os.path.basename(p) for p in paths]
        ['pendulum_coordinates.png', 'pendulum_residuals.png', 'pendulum_energy.png']
    """
    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    plots = [("coordinates", plot_coordinates), ("residuals", plot_residuals), ("energy", plot_energy)]
    if traj.lam is not None and traj.model is not None and traj.model.reaction_fns:
        plots.append(("reactions", plot_reactions))
    if traj.model is not None and traj.model.contacts is not None:
        plots.append(("contact_path", plot_contact_path))
    if _network_part(traj) is not None:
        plots.append(("network", plot_network))
        if traj.model.switching is not None and traj.lam is not None:
            plots.append(("friction", plot_friction))
    angles = [c for c in traj.coordinates if c.rsplit(".", 1)[-1] in _ANGLE_NAMES]
    others = [c for c in traj.coordinates if c not in angles]
    for name, fn in plots:
        if name == "residuals" and not (traj.constraint_names or traj.nonholonomic_names):
            continue
        if name == "coordinates" and angles and others:
            fig, (ax1, ax2) = figure(rows=2, height=6.0)
            plot_coordinates(traj, names=others, ax=ax1)
            plot_coordinates(traj, names=angles, ax=ax2)
            for ax, part in ((ax1, "positions and flows"), (ax2, "angles")):
                ax.set_title(ax.get_title().replace("generalized coordinates", f"generalized coordinates: {part}", 1))
            ax1.set_xlabel("")
        elif name == "reactions":        # forces above, torques (drivers' included) below
            fig, (ax1, ax2) = figure(rows=2, height=6.0)
            plot_reactions(traj, ax=ax1)
            plot_reactions(traj, ax=ax2, quantity="torque")
            ax1.set_xlabel("")
        else:
            fig, (ax,) = figure()
            fn(traj, ax=ax)
        path = os.path.join(out_dir, f"{prefix}{name}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
