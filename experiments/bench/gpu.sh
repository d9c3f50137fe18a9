#!/usr/bin/env bash
# Batched part of the peer benchmark on a GPU: mbdjax (float64 and float32) and MJX,
# B up to 100 000. Run from anywhere in the repository:  bash experiments/bench/gpu.sh
# Options: SKIP_INSTALL=1 (do not pip install), BATCHES="1 1024 100000", T1="0.5 0.5 0.5".
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  python -c "import mujoco, mujoco.mjx" 2>/dev/null || pip install -q -e ".[bench]"
  python -c "import jax, sys; sys.exit(jax.default_backend() != 'gpu')" 2>/dev/null \
    || pip install -q "jax[cuda12]" || echo "NOTE: could not install jax[cuda12]"
fi
if ! python -c "import jax, sys; sys.exit(jax.devices()[0].platform != 'gpu')"; then
  echo "no GPU visible to JAX (jax.devices() = $(python -c 'import jax; print(jax.devices())')); nothing to do"
  exit 1
fi
BATCHES=${BATCHES:-"1 1024 100000"}
T1=${T1:-"0.5 0.5 0.5"}
common=(--batches $BATCHES --horizons $T1 --systems chain5 four-bar --no-wp --gpu --mjx-integrators Euler RK4)
python experiments/bench/peers.py "${common[@]}" --peers mbdjax mjx --dtype float64 --mjx-dtype float32 \
  --out experiments/bench/results_gpu.md --plot /dev/null
python experiments/bench/peers.py "${common[@]}" --peers mbdjax --dtype float32 \
  --out experiments/bench/results_gpu_float32.md --plot /dev/null
