"""Docstring examples run (DESIGN: 'Examples in docstrings run'), every public
function and class has one, and a module's run counts its examples: a run with
nothing to run fails."""

import doctest
import importlib
import inspect
import pkgutil

import jax.numpy as jnp
import pytest

import mbdjax

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_FINDER = doctest.DocTestFinder()


def _examples(obj, name) -> int:
    """Number of examples in the docstrings of `obj` (a class: with its methods')."""
    return sum(len(t.examples) for t in _FINDER.find(obj, name, globs={}))


def _public_objects():
    """`{"package.name": object}` of the functions and classes the public packages
    export. Exceptions (shown where they are raised) and the abstract bases (shown by
    their concrete subclasses) are left out."""
    import mbdjax.models
    import mbdjax.network
    import mbdjax.planar
    import mbdjax.plotting
    import mbdjax.spatial

    out = {}
    for pkg in (mbdjax, mbdjax.planar, mbdjax.spatial, mbdjax.network, mbdjax.models, mbdjax.plotting):
        for name in dir(pkg):
            obj = getattr(pkg, name)
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("mbdjax"):
                continue
            if inspect.isclass(obj) and (issubclass(obj, Exception) or name.startswith("Abstract")):
                continue
            out[f"{pkg.__name__}.{name}"] = obj
    return out


def test_every_public_object_has_an_example():
    missing = sorted(name for name, obj in _public_objects().items() if _examples(obj, name) == 0)
    assert not missing, f"add a runnable docstring example to {missing}"


def _modules_with_examples():
    names = sorted(m.name for m in pkgutil.walk_packages(mbdjax.__path__, prefix="mbdjax.")
                   if not m.name.endswith("__main__"))
    return [n for n in names if _examples(importlib.import_module(n), n)]


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples(name):
    """Each module's examples run and pass; the count of examples run must be the
    count found, so a module whose examples were silently skipped fails."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=FLAGS)
    assert result.attempted == _examples(module, name) > 0
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
