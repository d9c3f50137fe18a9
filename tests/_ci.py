"""The reference tools the tests compare against (ngspice, MuJoCo): a test that needs
one skips, saying so, only outside CI. Where `CI=true` (set by `.ci/run`, which
installs them) a missing tool fails the run instead, so a green CI always means the
comparison ran."""

import importlib
import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def require_module(name, install):
    """The imported module `name`; outside CI, a skip naming `install` when it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if IN_CI:
            raise AssertionError(f"CI=true but {name} is not installed ({install}); .ci/run must install it") from None
        pytest.skip(f"{name} is not installed ({install})")


def require_program(name, install):
    """The path of the executable `name`; outside CI, a skip naming `install` when it is missing."""
    path = shutil.which(name)
    if path is None:
        if IN_CI:
            raise AssertionError(f"CI=true but {name} is not installed ({install}); .ci/run must install it")
        pytest.skip(f"{name} is not installed ({install})")
    return path
