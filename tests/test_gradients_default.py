"""Gradients through whole simulations with the default stabilization (the projection
after every step, `mbdjax._stabilization.projection`) and the default formulation and
solver (augmented, Tsit5): a planar chain, a closed four-bar and a spatial model.

Reference: central finite differences of the same simulation, with Richardson's
extrapolation over h = 1e-3·p and 2e-3·p (truncation O(h⁴), about 1e-11 relative here),
at rtol = atol = 1e-12 so that the step-size control's noise, about 1e-12/h, stays
below 1e-8. Acceptance: 1e-6 relative, the figure the speed work must keep.

The cases run under `jax.jit` with the parameter traced and the initial state
concrete, as a fitting loop does: the spatial Bricard loop (slow: 35 s) also checks
that its redundant row is still found and removed there. The top starts without
precession, so it nutates: from the steady precession of `models.get("top")` the
motion is nearly polynomial (3 steps over 0.05 s at rtol 1e-12), the step control
never sees the oscillation its mass derivative has, and the discrete derivative is
off by 8e-4 relative (README, *Adjoints*).
"""

import jax
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models

# (example, parameter (body, field), output coordinate, t1 in s)
CASES = {
    "chain": (lambda: models.pendulum_chain(3), ("link2", "mass"), "link3.phi", 0.6),
    "four-bar": (lambda: models.get("four-bar"), ("coupler", "mass"), "rocker.phi", 0.5),
    "top": (lambda: models.heavy_top(precession=0.0), ("top", "mass"), "top.theta", 0.2),
    "bricard": (lambda: models.get("bricard"), ("bar2", "mass"), "bar1.y", 0.3),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "bricard" else c
                                  for c in sorted(CASES)])
def test_reverse_mode_through_the_default_projection_matches_finite_differences(case):
    make, (body, field), output, t1 = CASES[case]
    ex = make()
    model = ex.model
    i = model.index(output)
    p0 = float(model.params[body][field])

    def final(value):
        p = {**model.params, body: {**model.params[body], field: value}}
        traj = mbd.simulate(model, ex.q0, ex.qd0, t1=t1, params=p, saveat=2, rtol=1e-12, atol=1e-12,
                            **ex.options)
        return traj.q[-1, i]

    # one compiled program for the gradient and for the values the differences take
    value_and_grad = jax.jit(jax.value_and_grad(final))
    grad = float(value_and_grad(p0)[1])

    def central(h):
        return (float(value_and_grad(p0 + h)[0]) - float(value_and_grad(p0 - h)[0])) / (2 * h)

    fd = (4 * central(1e-3 * p0) - central(2e-3 * p0)) / 3
    assert abs(fd) > 1e-6, f"{case}: the output barely depends on the parameter ({fd:.3g})"
    assert abs(grad - fd) <= 1e-6 * abs(fd), (case, grad, fd)
