"""Many runs: `simulate_batch` (vectorized or one member after another, over devices and hosts),
resumable sweeps to disk, their store and the `mbdjax sweep` configurations.

Nothing is imported here: each module is loaded where it is used (`import mbdjax` stays light).
"""
