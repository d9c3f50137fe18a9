"""Docstring examples run (DESIGN: 'Examples in docstrings run')."""

import doctest
import importlib
import pkgutil

import jax.numpy as jnp
import pytest

import mbdjax

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(mbdjax.__path__, prefix="mbdjax.") if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_readme_quick_start_runs():
    import os
    import re

    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")).read()
    code = re.search(r"## Quick start\n\n```python\n(.*?)```", readme, re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["traj"].q.shape == (200, 6) and namespace["force"].shape == (200, 2)
    # The spatial snippet continues in the same namespace (it uses jnp and mbd).
    spatial = re.search(r"### Spatial bodies and rolling\n\n```python\n(.*?)```", readme, re.S).group(1)
    exec(compile(spatial, "README.md", "exec"), namespace)
    assert float(jnp.max(jnp.abs(namespace["slip"]))) < 1e-9
    assert float(jnp.max(jnp.abs(namespace["traj"].position_residual()))) < 1e-12
    network = re.search(r"### Networks: circuits, drives, hydraulics\n\n```python\n(.*?)```", readme, re.S).group(1)
    exec(compile(network, "README.md", "exec"), namespace)
    assert float(jnp.max(jnp.abs(namespace["p"]["residual"]))) < 1e-9
    circuit = re.search(r"Nonlinear junctions follow SPICE's defaults:\n\n```python\n(.*?)```", readme, re.S).group(1)
    exec(compile(circuit, "README.md", "exec"), namespace)
    assert 4.0 < float(jnp.max(namespace["v_out"])) < 4.5       # 5 V peak less one diode drop



def test_readme_fit_snippet_runs(capsys):
    import os
    import re

    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")).read()
    code = re.search(r"### Sensitivities and parameter fits\n\n```python\n(.*?)```", readme, re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert abs(float(namespace["res"].values[1]) - 4.0) < 1e-5 and namespace["s"].raw.shape == (40, 1, 3)
    assert "spring.k" in capsys.readouterr().out


def test_readme_batch_snippet_runs():
    import os
    import re

    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")).read()
    code = re.search(r"### Batches, devices and hosts\n\n```python\n(.*?)```", readme, re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["batch"].q.shape == (64, 21, 9)
