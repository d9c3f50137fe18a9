"""No public entry point takes a NaN or an infinity silently: a property-based test
puts a non-finite value into one leaf of the parameters or one entry of the state of
every built-in example model (all three front ends and bare Models), and every entry point (simulate, check,
simulate_batch, sensitivity, fit, initial_conditions) raises an mbdjax error
naming that leaf (`parameter crank.mass = nan`, `q0[rod.x] = inf`, batch member 1).

The reference is the input itself: hypothesis chooses the model, the leaf, the entry
and the value, so the message must name exactly what was changed. Each case is
refused before any simulation is compiled, so a hundred cases take seconds.
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mbdjax as mbd
from mbdjax import models
from mbdjax._trajectory import flatten_params, unflatten_params

# every built-in example (all three front ends and bare Models), built when first drawn
NAMES = tuple(sorted(models.EXAMPLES))


@pytest.fixture(scope="module")
def examples():
    built = {}

    class Lazy(dict):
        def __missing__(self, name):
            built[name] = models.get(name)
            return built[name]

    return Lazy()


def _with_leaf(params, name, index, value):
    """`params` with entry `index` (flat) of leaf `name` set to `value`."""
    flat = {k: np.array(v, dtype=float) for k, v in flatten_params(params).items()}
    flat[name].reshape(-1)[index] = value
    return unflatten_params(flat)


VALUES = st.sampled_from([math.nan, math.inf, -math.inf])


@st.composite
def cases(draw):
    name = draw(st.sampled_from(NAMES))
    where = draw(st.sampled_from(["params", "q0", "qd0"]))
    entry = draw(st.sampled_from(["simulate", "check", "simulate_batch"]
                                 + (["sensitivity", "fit"] if where == "params" else [])
                                 + (["initial_conditions"] if where != "qd0" else [])))
    return name, where, entry, draw(st.integers(0, 10_000)), draw(VALUES)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_a_non_finite_input_is_named(examples, case):
    name, where, entry, pick, value = case
    ex = examples[name]
    model, q0, qd0, params = ex.model, jnp.asarray(ex.q0), jnp.asarray(ex.qd0), ex.model.params
    if where == "params" and not flatten_params(params):
        where = "q0"                  # a model without parameters: its state instead
        entry = "simulate" if entry in ("sensitivity", "fit") else entry
    if where == "params":
        flat = flatten_params(params)
        leaf = sorted(flat)[pick % len(flat)]
        index = pick % max(1, np.size(flat[leaf]))
        params = _with_leaf(params, leaf, index, value)
        culprit = f"parameter {leaf}"
    else:
        k = pick % model.n
        if where == "q0":
            q0 = q0.at[k].set(value)
        else:
            qd0 = qd0.at[k].set(value)
        label = {"check": "q" if where == "q0" else "qd", "initial_conditions": "q_guess"}.get(entry, where)
        culprit = f"{label}[{model.coordinates[k]}] = "
    with pytest.raises(mbd.MbdjaxError) as info:
        if entry == "simulate":
            mbd.simulate(model, q0, qd0, t1=0.1, params=params, **ex.options)
        elif entry == "check":
            mbd.check(model, q0, qd=qd0, params=params)
        elif entry == "simulate_batch":
            mbd.simulate_batch(model, jnp.stack([jnp.asarray(ex.q0), q0]), jnp.stack([jnp.asarray(ex.qd0), qd0]),
                               t1=0.1, params=params if where == "params" else None, **ex.options)
        elif entry == "initial_conditions":
            mbd.initial_conditions(model, q0, params=params)
        elif entry == "fit":
            ts = jnp.linspace(0.05, 0.1, 2)
            mbd.fit(model, {"t": ts, "y": jnp.zeros(2)}, params, free=(_first_scalar(model),),
                    outputs=(model.coordinates[0],), q0=q0, qd0=qd0, verbose=False)
        else:
            mbd.sensitivity(model, q0, qd0, params, t=jnp.linspace(0.05, 0.1, 2), outputs=(model.coordinates[0],),
                            wrt=(_first_scalar(model),))
    text = str(info.value)
    assert culprit in text, text
    if entry == "simulate_batch" and where != "params":
        assert "member 1" in text, text


def _first_scalar(model):
    from mbdjax._params import scalar_names

    return scalar_names(model.params)[0]
