"""dist.all_reduce on the "braid" backend against gloo, in the same processes and run.

    braid-run -n 4 /usr/bin/python3 bench/python/allreduce_vs_gloo.py [--rounds 7]
    torchrun --standalone --nproc_per_node 4 --redirects 1 --tee 1 bench/python/allreduce_vs_gloo.py

Two sizes: 64 MiB of float32 (bandwidth: busbw = 2 (n-1)/n x size / time, nccl-tests' factor)
and 8 bytes (latency: time per call). At 8 bytes braid is also timed as
"braid-worker": the same call made async and waited with a timeout, which leaves the op to the
group's background thread (a plain wait() runs an op nobody has started on the waiting thread:
docs/collectives.md, "The waiter runs what nobody has started"), so the two columns are that
hand-off's cost in the same run. Each round times a batch of calls on braid, then the
same batch on gloo (alternating, so both see the same machine load); rank 0 prints every
round and the medians over rounds. The buffer is allocated and touched once before timing
(first-touch page faults are not what is measured)."""

import argparse
import datetime
import statistics
import time

import torch
import torch.distributed as dist

import braid.torch  # noqa: F401


def timed(tensor, group, iters, on_worker=False):
    dist.barrier(group=group)
    t0 = time.perf_counter()
    if on_worker:
        limit = datetime.timedelta(seconds=300)
        for _ in range(iters):
            dist.all_reduce(tensor, group=group, async_op=True).wait(limit)
    else:
        for _ in range(iters):
            dist.all_reduce(tensor, group=group)
    dist.barrier(group=group)
    return (time.perf_counter() - t0) / iters


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    dist.init_process_group("braid")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    # name -> (group, on_worker)
    runs = {"braid": (None, False), "braid-worker": (None, True), "gloo": (gloo, False)}
    cases = [("64 MiB", torch.ones(16 << 20), 5), ("8 B", torch.ones(2), 2000)]
    factor = 2 * (size - 1) / size
    for label, tensor, iters in cases:
        groups = {n: r for n, r in runs.items() if n != "braid-worker" or label == "8 B"}
        for group, on_worker in groups.values():  # warm-up: connections, scratch, pages
            timed(tensor, group, max(1, iters // 10), on_worker)
        samples = {name: [] for name in groups}
        for r in range(args.rounds):
            for name, (group, on_worker) in groups.items():
                samples[name].append(timed(tensor, group, iters, on_worker))
            if rank == 0:
                print(f"{label} round {r}: " + ", ".join(f"{n} {samples[n][-1] * 1e6:.1f} us" for n in groups), flush=True)
        if rank == 0:
            nbytes = tensor.numel() * tensor.element_size()
            med = {n: statistics.median(v) for n, v in samples.items()}
            for n in groups:
                print(f"RESULT {label} {size} ranks {n}: median {med[n] * 1e6:.1f} us, "
                      f"busbw {factor * nbytes / med[n] / 1e9:.3f} GB/s", flush=True)
            print(f"RESULT {label} {size} ranks: braid/gloo time ratio {med['braid'] / med['gloo']:.3f}", flush=True)
            if "braid-worker" in med:
                print(f"RESULT {label} {size} ranks: braid-worker/gloo time ratio "
                      f"{med['braid-worker'] / med['gloo']:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
