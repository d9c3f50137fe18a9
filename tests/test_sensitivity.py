"""`mbdjax.sensitivity`: forward and reverse mode against each other, finite
differences and a closed form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd

jax.config.update("jax_enable_x64", True)

TIGHT = dict(rtol=1e-11, atol=1e-13)
TS = jnp.linspace(0.25, 3.0, 12)


@pytest.fixture(scope="module")
def oscillator():
    """Damped oscillator m ẍ + c ẋ + k x = 0 written as a Model (m = 1, c = 0.3, k = 4)."""
    return mbd.Model(
        ("x",), mass_diagonal=lambda p: jnp.array([p["body"]["m"]]),
        potential=lambda q, t, p: 0.5 * p["spring"]["k"] * q[0] ** 2,
        dissipation=lambda q, qd, t, p: 0.5 * p["damper"]["c"] * qd[0] ** 2,
        params={"body": {"m": 1.0}, "spring": {"k": 4.0}, "damper": {"c": 0.3}},
    )


@pytest.fixture(scope="module")
def both(oscillator):
    wrt = ("body.m", "spring.k", "damper.c")
    args = (oscillator, jnp.array([1.0]), jnp.zeros(1))
    fwd = mbd.sensitivity(*args, t=TS, outputs=("x",), wrt=wrt, **TIGHT)
    rev = mbd.sensitivity(*args, t=TS, outputs=lambda tr: tr.q[:, 0], wrt=wrt, mode="reverse", **TIGHT)
    return fwd, rev


def test_forward_and_reverse_agree_with_finite_differences(oscillator, both):
    """Central differences (step 1e-6 relative) of the simulated x(t); 1e-6 relative to
    the largest sensitivity of each parameter; the two modes agree to 1e-9."""
    fwd, rev = both
    assert fwd.raw.shape == rev.raw.shape == (12, 1, 3)
    np.testing.assert_allclose(fwd.raw, rev.raw, rtol=0, atol=1e-9 * np.max(np.abs(fwd.raw)))

    def x_of(values):
        p = {"body": {"m": values[0]}, "spring": {"k": values[1]}, "damper": {"c": values[2]}}
        return np.asarray(mbd.simulate(oscillator, jnp.array([1.0]), jnp.zeros(1), t1=TS[-1], saveat=TS,
                                       params=p, **TIGHT).q[:, 0])

    base = np.array([1.0, 4.0, 0.3])
    for j in range(3):
        h = 1e-6 * base[j]
        up, down = base.copy(), base.copy()
        up[j] += h
        down[j] -= h
        fd = (x_of(up) - x_of(down)) / (2 * h)
        assert np.max(np.abs(fd - fwd.raw[:, 0, j])) < 1e-6 * np.max(np.abs(fd)), fwd.names[j]


def test_undamped_sensitivity_matches_closed_form(oscillator):
    """c = 0: x = cos ωt, ω = √(k/m), so ∂x/∂k = −t sin(ωt)/(2√(km)) and ∂x/∂m =
    t sin(ωt) √k / (2 m^{3/2}); normalized ∂ln x/∂ln k = −½ ωt tan(ωt)."""
    p = {"body": {"m": 1.0}, "spring": {"k": 4.0}, "damper": {"c": 0.0}}
    s = mbd.sensitivity(oscillator, jnp.array([1.0]), jnp.zeros(1), p, t=TS, outputs="x",
                        wrt=("spring.k", "body.m"), **TIGHT)
    t, w = np.asarray(TS), 2.0
    np.testing.assert_allclose(s.raw[:, 0, 0], -t * np.sin(w * t) / 4.0, atol=1e-8)
    np.testing.assert_allclose(s.raw[:, 0, 1], t * np.sin(w * t), atol=1e-8)
    ok = s.defined[:, 0]
    np.testing.assert_allclose(s.normalized[ok, 0, 0], -0.5 * w * t[ok] * np.tan(w * t[ok]), rtol=1e-6)


def test_ranking_table_and_plot(both, tmp_path):
    fwd, _ = both
    names = [n for n, _ in fwd.ranking()]
    assert set(names) == {"body.m", "spring.k", "damper.c"}
    assert names[-1] == "damper.c"          # light damping matters least over three periods
    text = fwd.table()
    assert "spring.k" in text and "rms ∂ln y/∂ln p" in text
    import matplotlib

    matplotlib.use("Agg")
    ax = fwd.plot(output="x")
    ax.figure.savefig(tmp_path / "s.png")
    assert (tmp_path / "s.png").exists()


def test_bad_requests_name_the_problem(oscillator):
    args = (oscillator, jnp.array([1.0]), jnp.zeros(1))
    with pytest.raises(mbd.MbdjaxError, match="unknown parameters.*spring.k"):
        mbd.sensitivity(*args, t=TS, outputs="x", wrt=("spring.kk",))
    with pytest.raises(mbd.MbdjaxError, match="not coordinates"):
        mbd.sensitivity(*args, t=TS, outputs=("y",), wrt=("spring.k",))
    with pytest.raises(mbd.MbdjaxError, match="mode must be"):
        mbd.sensitivity(*args, t=TS, outputs="x", wrt=("spring.k",), mode="adjoint")
    with pytest.raises(mbd.MbdjaxError, match="more than once"):
        mbd.sensitivity(*args, t=TS, outputs="x", wrt=("spring.k", "spring.k"))


def test_initial_state_may_depend_on_the_parameters(oscillator):
    """q0 = fn(params): released from the static deflection x0 = F/k of a 1 N load, the
    sensitivity to k includes ∂x0/∂k = −F/k²; c = 0 gives x = (F/k) cos ωt, so
    ∂x/∂k = −cos(ωt)/k² − (1/k) t sin(ωt)/(2√(km)) (closed form); 1e-8."""
    p = {"body": {"m": 1.0}, "spring": {"k": 4.0}, "damper": {"c": 0.0}}

    def start(params):
        return jnp.array([1.0 / params["spring"]["k"]]), jnp.zeros(1)

    s = mbd.sensitivity(oscillator, start, None, p, t=TS, outputs="x", wrt=("spring.k",), **TIGHT)
    t, w = np.asarray(TS), 2.0
    np.testing.assert_allclose(s.raw[:, 0, 0], -np.cos(w * t) / 16.0 - 0.25 * t * np.sin(w * t) / 4.0, atol=1e-8)
