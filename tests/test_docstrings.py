"""Docstring examples run (DESIGN: 'Examples in docstrings run')."""

import doctest
import importlib
import pkgutil

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
