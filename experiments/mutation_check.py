"""Mutation check: does the default test run notice a broken line?

Each mutation changes one line of the library in a fresh clone of this repository
(the working tree is never touched), then runs the default-run tests of the files
that should notice (`-m "not slow"`, stopping at the first failure). A mutation is
*caught* when at least one test fails. The five lines are those a reader would most
fear to get wrong silently:

- the sign of γ (the acceleration right side, THEORY §1);
- one entry of the planar revolute joint's hand-written Jacobian;
- the exponent of the diode's Shockley law;
- the friction threshold (sticking ends at μ_s N, mutated to μ_k N);
- the velocity projector of the default stabilization (a half step instead of the
  minimum-norm projection).

Run: python experiments/mutation_check.py [--only NAME ...] [--keep]
Prints one line per mutation (caught or MISSED, the first failing test, the time)
and exits 1 if any mutation is missed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, file, the exact original text, its mutation, test files that should notice)
MUTATIONS = [
    ("gamma sign", "mbdjax/_kinematics.py",
     "    return -jax.jvp(first, (q, t), (qd, one))[1]",
     "    return jax.jvp(first, (q, t), (qd, one))[1]",
     ["tests/test_kinematics.py"]),
    ("revolute Jacobian entry", "mbdjax/planar/_joints.py",
     "        jnp.stack([o, z, bi[0], -o, z, -bj[0]]),",
     "        jnp.stack([o, z, -bi[0], -o, z, -bj[0]]),",
     ["tests/test_planar.py"]),
    ("diode exponent", "mbdjax/network/_laws.py",
     "    x = v / a\n    e = jnp.exp(jnp.minimum(x, EXP_LIMIT))\n    grow",
     "    x = v / a\n    e = jnp.exp(jnp.minimum(0.5 * x, EXP_LIMIT))\n    grow",
     ["tests/test_circuits.py"]),
    ("friction threshold", "mbdjax/network/_compile.py",
     '            holding = f["mu_s"] * f["normal"] - jnp.abs(mu[e.name])',
     '            holding = f["mu_k"] * f["normal"] - jnp.abs(mu[e.name])',
     ["tests/test_friction.py", "tests/test_friction_forced.py"]),
    ("velocity projector", "mbdjax/_stabilization/projection.py",
     "    return qd - _min_norm_correction(B, B @ qd - kin.velocity_rhs(model, q, t, p), fallback)",
     "    return qd - 0.5 * _min_norm_correction(B, B @ qd - kin.velocity_rhs(model, q, t, p), fallback)",
     ["tests/test_simulate.py"]),
]


def _mutate(clone, file, old, new):
    path = os.path.join(clone, file)
    text = open(path).read()
    if text.count(old) != 1:
        raise SystemExit(f"mutation_check: the line to mutate in {file} is not found exactly once; "
                         f"update MUTATIONS to the current code:\n{old}")
    with open(path, "w") as fh:
        fh.write(text.replace(old, new))


def _run_tests(clone, tests):
    """`(failed, first failing test id or None, seconds)` of the default run of `tests`
    with the clone's own `mbdjax` first on the path."""
    env = {**os.environ, "PYTHONPATH": clone, "CI": "true"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider",
                           *tests], cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    first = re.search(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, re.M)
    return proc.returncode != 0, (first.group(1) if first else None), wall, proc.stdout[-2000:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="run only these mutations (by name)")
    parser.add_argument("--keep", action="store_true", help="keep the clones (their paths are printed)")
    args = parser.parse_args(argv)
    missed = 0
    for name, file, old, new, tests in MUTATIONS:
        if args.only and name not in args.only:
            continue
        clone = tempfile.mkdtemp(prefix="mbdjax-mutant-")
        subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
        check = subprocess.run([sys.executable, "-c", "import mbdjax; print(mbdjax.__file__)"], cwd=clone,
                               env={**os.environ, "PYTHONPATH": clone}, capture_output=True, text=True)
        if not check.stdout.strip().startswith(clone):
            raise SystemExit(f"mutation_check: the clone's mbdjax is not the one imported ({check.stdout.strip()})")
        _mutate(clone, file, old, new)
        failed, first, wall, tail = _run_tests(clone, tests)
        missed += not failed
        print(f"{name:24s} {'caught' if failed else 'MISSED'}  {first or ('(no test failed)' if not failed else '')}"
              f"  [{' '.join(tests)}; {wall:.0f} s]", flush=True)
        if failed and first is None:
            print(tail)
        if args.keep:
            print("  clone:", clone)
        else:
            shutil.rmtree(clone, ignore_errors=True)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
