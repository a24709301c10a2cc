"""PyTorch DDP training throughput on the "braid" backend against gloo, same processes.

    braid-run -n 2 /usr/bin/python3 bench/python/ddp_vs_gloo.py [--model mlp|cnn] [--rounds 5] [--steps 20]
        [--hook int8] [--staged]

braid-train's Fashion-MNIST MLP (784-1024-1024-10, 1.86 M parameters; the default) or its CNN
(0.42 M parameters, far more compute per byte of gradient: ddp_bench_setup.model) on random
28x28 inputs, 64 samples per rank a step, SGD momentum 0.9, one thread per rank. Each round
runs --steps steps on a DDP over braid (optionally with a braid comm hook), then the same on a
DDP over gloo (alternating, so both see the same machine load), and with --staged on a third
DDP over a braid group whose allreduces stage through shared memory (the path before
single-copy reads); rank 0 prints samples/s per round and the medians."""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import braid.hooks as braid_hooks
from ddp_bench_setup import SAMPLES_PER_RANK, model, start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--hook", default="", help="a braid.hooks codec for the braid run (default: none)")
    p.add_argument("--staged", action="store_true",
                   help="also time DDP on a braid group made with BRAID_CROSS_MEMORY=0 (allreduces staged through "
                        "shared memory instead of read out of the peers' processes)")
    args = p.parse_args()
    rank, size, gloo, x, y = start()
    runs = {"braid": DDP(model(args.model)), "gloo": DDP(model(args.model), process_group=gloo)}
    if args.staged:
        os.environ["BRAID_CROSS_MEMORY"] = "0"  # read when the group's shared-memory workspace is set up
        runs["braid-staged"] = DDP(model(args.model), process_group=dist.new_group(backend="braid"))
        del os.environ["BRAID_CROSS_MEMORY"]
    if args.hook:
        state = braid_hooks.CompressionHookState(runs["braid"])
        runs["braid"].register_comm_hook(state, braid_hooks.hook(args.hook))
    opts = {name: torch.optim.SGD(m.parameters(), lr=0.02, momentum=0.9) for name, m in runs.items()}

    def steps(name, n):
        module, opt = runs[name], opts[name]
        for _ in range(n):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(module(x), y).backward()
            opt.step()

    for name in runs:
        steps(name, 3)  # warm-up: bucket rebuild, connections, pages
    rates = {name: [] for name in runs}
    for r in range(args.rounds):
        for name in runs:
            dist.barrier()
            t0 = time.perf_counter()
            steps(name, args.steps)
            dist.barrier()
            rates[name].append(args.steps * SAMPLES_PER_RANK * size / (time.perf_counter() - t0))
        if rank == 0:
            print(f"round {r}: " + ", ".join(f"{n} {rates[n][-1]:.0f} samples/s" for n in runs), flush=True)
    if rank == 0:
        med = {n: statistics.median(v) for n, v in rates.items()}
        label = f"braid{'+' + args.hook if args.hook else ''}"
        ratios = [b / g for b, g in zip(rates["braid"], rates["gloo"])]
        print(f"RESULT {size} ranks, {args.model}: {label} {med['braid']:.0f} samples/s, gloo {med['gloo']:.0f} samples/s, "
              f"ratio {med['braid'] / med['gloo']:.2f} (median of the rounds' ratios {statistics.median(ratios):.2f})",
              flush=True)
        if args.staged:
            print(f"RESULT {size} ranks: braid staged {med['braid-staged']:.0f} samples/s, ratio to gloo "
                  f"{med['braid-staged'] / med['gloo']:.2f}; single copy / staged "
                  f"{med['braid'] / med['braid-staged']:.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
