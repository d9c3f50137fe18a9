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


def _readme_blocks():
    """Every ```python block of the README, with the line it starts on."""
    import os
    import re

    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md"), encoding="utf-8").read()
    return [(readme[:m.start()].count("\n") + 1, m.group(1)) for m in re.finditer(r"```python\n(.*?)```", readme, re.S)]


def _quick_start(ns, out):
    assert ns["traj"].q.shape == (200, 6) and ns["force"].shape == (200, 2)


def _spatial(ns, out):
    assert float(jnp.max(jnp.abs(ns["slip"]))) < 1e-9                       # rolling without slip
    assert float(jnp.max(jnp.abs(ns["traj"].position_residual()))) < 1e-12


def _network(ns, out):
    assert float(jnp.max(jnp.abs(ns["p"]["residual"]))) < 1e-9                # power balance


def _rectifier(ns, out):
    assert 4.0 < float(jnp.max(ns["v_out"])) < 4.5                           # 5 V peak less one diode drop


def _fit(ns, out):
    assert abs(float(ns["res"].values[1]) - 4.0) < 1e-5 and ns["s"].raw.shape == (40, 1, 3)
    assert "spring.k" in out


def _animation(ns, out):
    import os

    assert ns["anim"].frames == 51 and os.path.getsize(ns["page"]) > 10_000 and "51 frames" in out


def _batch(ns, out):
    assert ns["batch"].q.shape == (64, 21, 9)


#: what each README block must leave behind, by a phrase of its code
README_CHECKS = {"from mbdjax.planar import Mechanism": _quick_start, "spatial.Mechanism(": _spatial,
                 "net.inductor(": _network, "net.diode(": _rectifier, "mbd.fit(": _fit,
                 "simulate_batch(": _batch, "animate(": _animation,
                 "mbd.sweep(": None}      # run, with its config block, by test_sweep.py's README test


@pytest.mark.parametrize("line, code", [(n, c) for n, c in _readme_blocks() if "mbd.sweep(" not in c],
                         ids=lambda v: f"README.md:{v}" if isinstance(v, int) else "")
def test_readme_code_block_runs_on_its_own(line, code, capsys):
    """Each README code block runs alone in a fresh namespace (its own imports) and
    leaves the result it describes; every block has a check of its result."""
    checks = [fn for phrase, fn in README_CHECKS.items() if phrase in code]
    assert len(checks) == 1 and checks[0] is not None, f"README.md:{line}: add the block's check to README_CHECKS"
    namespace = {}
    exec(compile("\n" * (line) + code, "README.md", "exec"), namespace)
    checks[0](namespace, capsys.readouterr().out)

