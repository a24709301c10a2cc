"""Where a PyTorch DDP step spends its time on "braid" and on gloo: the breakdown behind
bench/python/ddp_vs_gloo.py's ratio.

    braid-run -n 2 /usr/bin/python3 bench/python/ddp_step_profile.py [--rounds 5] [--steps 20] [--model mlp]
        [--hook powersgd:4]

Same model, data and threads as ddp_vs_gloo.py (the Fashion-MNIST MLP, 64 samples per rank a
step, one torch thread per rank). Four runs alternate within every round, so all see the
same machine: the bare model (no DDP: the compute bound), DDP with a comm hook that
communicates nothing (DDP's own cost: bucket copies, autograd hooks, futures), DDP on "braid"
and DDP on gloo.
Each step is cut at four instants:

    forward  start .. loss computed
    backward loss.backward() called .. the first layer's weight gradient computed (the last
             gradient autograd produces: from here on only communication is left)
    tail     .. backward() returned (DDP's reducer waits for every bucket's future in it:
             the communication that did not overlap backward, plus the futures' completion)
    step     optimizer.step()

A second measure times each DDP bucket's allreduce alone (the sizes DDP's buckets have,
found by a pass-through comm hook), main thread waiting: what the communication costs when it
competes with no backward. With --hook (a braid.hooks codec) the braid run uses that hook.
Rank 0 prints per-phase medians in milliseconds and RESULT lines."""

import argparse
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import braid.hooks as braid_hooks
from ddp_bench_setup import model, start

PHASES = ("forward", "backward", "tail", "step", "total")


class Run:
    def __init__(self, module, first_weight, x, y):
        self.module, self.x, self.y = module, x, y
        self.opt = torch.optim.SGD(module.parameters(), lr=0.02, momentum=0.9)
        self.times = {p: [] for p in PHASES}
        self._grad_done = 0.0
        first_weight.register_hook(self._last_gradient)

    def _last_gradient(self, grad):
        self._grad_done = time.perf_counter()
        return grad

    def steps(self, n, record=True):
        for _ in range(n):
            self.opt.zero_grad()
            t0 = time.perf_counter()
            loss = torch.nn.functional.cross_entropy(self.module(self.x), self.y)
            t1 = time.perf_counter()
            loss.backward()
            t3 = time.perf_counter()
            self.opt.step()
            t4 = time.perf_counter()
            if record:
                t2 = self._grad_done
                for phase, v in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
                    self.times[phase].append(v * 1e3)


def pass_through(state, bucket):
    """A comm hook that communicates nothing: DDP's own cost (bucket copies, hooks, futures)."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def bucket_sizes(module_builder, group, x, y):
    """The element counts of DDP's buckets after its rebuild (a pass-through hook sees them)."""
    ddp = DDP(module_builder(), process_group=group)
    sizes = []

    def record(state, bucket):
        sizes.append((bucket.index(), bucket.buffer().numel()))
        return pass_through(state, bucket)

    ddp.register_comm_hook(None, record)
    for _ in range(3):
        sizes.clear()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
    return [n for _, n in sorted(sizes)]


def allreduce_alone(group, sizes, repeats):
    """Median ms of the step's bucket allreduces issued back to back, then waited for."""
    tensors = [torch.ones(n) for n in sizes]
    times = []
    for _ in range(repeats):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        works = [dist.all_reduce(t, group=group, async_op=True) for t in tensors]
        for w in works:
            w.wait()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "wide"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--hook", default="", help="a braid.hooks codec for the braid run (default: none)")
    p.add_argument("--only", default="", help="time only this run (braid, gloo; for a profiler), no summary")
    args = p.parse_args()
    rank, size, gloo, x, y = start()

    runs = {}
    bare = model(args.model)
    runs["compute only"] = Run(bare, bare[1].weight, x, y)
    for name, group in (("DDP, no comm", None), ("braid", None), ("gloo", gloo)):
        ddp = DDP(model(args.model), process_group=group)
        if name == "DDP, no comm":
            ddp.register_comm_hook(None, pass_through)
        if name == "braid" and args.hook:
            ddp.register_comm_hook(braid_hooks.CompressionHookState(ddp), braid_hooks.hook(args.hook))
        runs[name] = Run(ddp, ddp.module[1].weight, x, y)
    for run in runs.values():
        run.steps(3, record=False)  # bucket rebuild, connections, pages
    if args.only:
        runs = {args.only: runs[args.only]}
    for r in range(args.rounds):
        for run in runs.values():
            dist.barrier()
            run.steps(args.steps)
        if rank == 0:
            print(f"round {r}: " + ", ".join(f"{n} {statistics.median(v.times['total'][-args.steps:]):.2f} ms"
                                             for n, v in runs.items()), flush=True)
    if args.only:
        dist.destroy_process_group()
        return
    sizes = bucket_sizes(lambda: model(args.model), None, x, y)
    alone = {name: allreduce_alone(group, sizes, 5 * args.rounds) for name, group in (("braid", None), ("gloo", gloo))}
    if rank == 0:
        print(f"{size} ranks, {args.model}, buckets of {sizes} elements; medians of {args.rounds} x {args.steps} steps, ms")
        print(f"{'run':>14} " + " ".join(f"{p:>9}" for p in PHASES))
        for name, run in runs.items():
            print(f"{name:>14} " + " ".join(f"{statistics.median(run.times[p]):9.2f}" for p in PHASES))
        for name, ms in alone.items():
            print(f"RESULT {name}: the step's bucket allreduces alone {ms:.2f} ms")
        med = {n: statistics.median(v.times["total"]) for n, v in runs.items()}
        print(f"RESULT {size} ranks: step braid {med['braid']:.2f} ms, gloo {med['gloo']:.2f} ms, compute only "
              f"{med['compute only']:.2f} ms; gloo/braid {med['gloo'] / med['braid']:.2f}, bound gloo/compute "
              f"{med['gloo'] / med['compute only']:.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
