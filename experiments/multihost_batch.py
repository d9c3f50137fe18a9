"""A batch of simulations over several processes (hosts) with `jax.distributed`.

Every process runs this same script. `jax.distributed.initialize` connects them
(coordinator address, process count and this process's id), after which
`jax.devices()` lists the devices of all processes, and `mbdjax.simulate_batch(...,
devices=jax.devices())` shards the batch over all of them. Each process passes the
same inputs; each computes its share; the results are gathered on every process.

The example sweeps the coupler mass of the zoo's four-bar over B members and prints,
on process 0, the rocker angle at t1 for the lightest and the heaviest coupler and
the largest loop-closure residual.

On one machine, two processes on the CPU (each with one device):

    python experiments/multihost_batch.py --processes 2 --id 0 &
    python experiments/multihost_batch.py --processes 2 --id 1

On a cluster, start it once per host with `--coordinator HOST0:PORT`, the process
count and each host's id (or let a cluster manager such as SLURM fill them in:
`jax.distributed.initialize()` without arguments reads them from the environment).
"""

import argparse

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_collectives_implementation", "gloo")   # collectives between CPU processes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--coordinator", default="localhost:12355", help="host:port of process 0")
    parser.add_argument("--processes", type=int, default=1, help="number of processes")
    parser.add_argument("--id", type=int, default=0, help="this process's id (0 .. processes - 1)")
    parser.add_argument("--batch", type=int, default=8, help="batch size B")
    parser.add_argument("--save", default=None, help="process 0 writes every member's final rocker angle "
                                                     "(full precision) to this .npy file")
    args = parser.parse_args()
    if args.processes > 1:
        jax.distributed.initialize(args.coordinator, num_processes=args.processes, process_id=args.id)

    import jax.numpy as jnp
    import numpy as np

    import mbdjax as mbd
    from mbdjax import models

    ex = models.get("four-bar")
    model = ex.model
    masses = jnp.linspace(0.5, 1.5, args.batch) * float(model.params["coupler"]["mass"])
    params = {**model.params, "coupler": {**model.params["coupler"], "mass": masses}}
    traj = mbd.simulate_batch(model, ex.q0, ex.qd0, params, t1=2.0, saveat=21, devices=jax.devices())
    rocker = np.asarray(traj.q[:, -1, model.index("rocker.phi")])
    closure = float(np.max(np.abs(np.asarray(jax.vmap(lambda t: t.position_residual())(traj)))))
    if jax.process_index() == 0:
        print(f"{jax.process_count()} process(es), {len(jax.devices())} device(s), batch {args.batch}: "
              f"rocker angle at 2 s {rocker[0]:.6f} rad (lightest coupler) … {rocker[-1]:.6f} rad (heaviest); "
              f"largest loop-closure residual {closure:.1e} m")
        if args.save:
            np.save(args.save, rocker)


if __name__ == "__main__":
    main()
