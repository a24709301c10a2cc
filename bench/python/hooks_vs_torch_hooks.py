"""braid's DDP comm hooks against PyTorch's own, in the same processes: samples/s of PyTorch
DDP training on backend "braid" with a braid.hooks codec and on gloo with one of
torch.distributed.algorithms.ddp_comm_hooks, same model, same seed, same data.

    braid-run -n 2 /usr/bin/python3 bench/python/hooks_vs_torch_hooks.py [--model mlp|wide]
        [--rounds 5] [--steps 10] [--pairs plain,int8-fp16,powersgd,powersgd-1bucket] [--powersgd-rank 4]

(bench/python/hooks_slow_link.sh runs it across the 1 Gbit/s link of two emulated hosts.)

Pairs, each a braid run against a torch run:
    plain       braid, no hook             gloo, no hook
    int8-fp16   braid_hooks.int8           default_hooks.fp16_compress_hook
    powersgd    braid powersgd:R           powerSGD_hook.powerSGD_hook, rank R (error feedback,
                                           warm start, as braid's), with one bucket: the only
                                           way it runs on gloo (see runs_of)
    powersgd-1bucket  braid powersgd:R, one bucket    the same torch run (a control: same buckets)
    hook-overhead     braid hook("none")              braid, no hook (what a collective per
                                                      parameter costs against one per bucket)
Models: "mlp" is braid-train's Fashion-MNIST MLP (784-1024-1024-10, 1.86 M parameters); "wide"
784-4096-4096-10 (19.3 M parameters), where communication dominates more. 64 samples per rank a
step, SGD momentum 0.9, one thread per rank. Every run trains its own replica from the same
seed (its own hook state too), first a few warm-up steps (buckets rebuilt, PowerSGD's start
iteration passed), then in each round --steps timed steps; the runs alternate within each
round so all see the same machine; a run without DDP (no communication) bounds them all.
Rank 0 prints samples/s per run and round, the medians, the ratio of the medians (braid /
torch) and the median of the per-round ratios as "RESULT" lines; --json writes them."""

import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

import braid.hooks as braid_hooks
from ddp_bench_setup import SAMPLES_PER_RANK, model, start

COMPUTE_ONLY = "compute only (no DDP)"
WARMUP_STEPS = 4  # DDP rebuilds its buckets after step 1; torch's PowerSGD starts at step 2


def ddp_of(args, one_bucket, **kwargs):
    """DDP over the model; `one_bucket`: every gradient in one bucket (DDP's first bucket is
    otherwise capped at dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB, which the Reducer reads when
    it is built)."""
    if not one_bucket:
        return DDP(model(args.model), **kwargs)
    saved = dist._DEFAULT_FIRST_BUCKET_BYTES
    dist._DEFAULT_FIRST_BUCKET_BYTES = 1 << 40
    try:
        return DDP(model(args.model), bucket_cap_mb=1 << 20, **kwargs)
    finally:
        dist._DEFAULT_FIRST_BUCKET_BYTES = saved


def braid_run(args, hook, one_bucket=False):
    ddp = ddp_of(args, one_bucket)
    if hook:
        # warmup_steps=0: compress from the first step, as torch's hooks (PowerSGD after its start
        # iteration, passed during the warm-up steps).
        state = braid_hooks.CompressionHookState(ddp, warmup_steps=0)
        ddp.register_comm_hook(state, braid_hooks.hook(hook))
    return ddp


def torch_run(args, gloo, hook, one_bucket=False):
    ddp = ddp_of(args, one_bucket, process_group=gloo)
    if hook == "fp16":
        ddp.register_comm_hook(gloo, default_hooks.fp16_compress_hook)
    elif hook == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=gloo, matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=2, min_compression_rate=1,
                                            use_error_feedback=True, warm_start=True)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    return ddp


def runs_of(args, gloo):
    """The runs (name -> a function building its DDP, fresh each round) and the pairs (name ->
    (braid run, torch run)) that --pairs asks for."""
    r = args.powersgd_rank
    psgd_braid, psgd_torch = f"braid powersgd:{r}", f"torch powersgd:{r} (1 bucket)"
    builders = {
        "braid": lambda: braid_run(args, ""),
        "torch": lambda: torch_run(args, gloo, ""),
        "braid int8": lambda: braid_run(args, "int8"),
        "torch fp16": lambda: torch_run(args, gloo, "fp16"),
        psgd_braid: lambda: braid_run(args, f"powersgd:{r}"),
        # torch's PowerSGD hook issues a bucket's P and Q allreduces from future callbacks (on
        # gloo's thread) while DDP issues the next bucket's from the main thread: the order of
        # collectives then differs across ranks and gloo aborts (EnforceNotMet "op.preamble.
        # length <= op.nbytes") with more than one bucket. It runs with one bucket, and braid
        # too in the control pair "powersgd-1bucket".
        psgd_torch: lambda: torch_run(args, gloo, "powersgd", one_bucket=True),
        f"braid powersgd:{r} (1 bucket)": lambda: braid_run(args, f"powersgd:{r}", one_bucket=True),
        "braid hook none": lambda: braid_run(args, "none"),
    }
    table = {"plain": ("braid", "torch"), "int8-fp16": ("braid int8", "torch fp16"),
             "powersgd": (psgd_braid, psgd_torch), "powersgd-1bucket": (f"braid powersgd:{r} (1 bucket)", psgd_torch),
             # A diagnostic: braid's hook without compression (one collective per parameter)
             # against DDP's bucket allreduces on braid.
             "hook-overhead": ("braid hook none", "braid")}
    pairs = {name: table[name] for name in args.pairs.split(",")}
    runs = {name: builders[name] for pair in pairs.values() for name in pair}
    # The bound on every run: the same steps without DDP (no communication at all).
    runs[COMPUTE_ONLY] = lambda: model(args.model)
    return runs, pairs


class Run:
    """One DDP (or the bare model) with its optimizer, trained from the same seed as the others."""

    def __init__(self, build, x, y):
        self.module = build()
        self.opt = torch.optim.SGD(self.module.parameters(), lr=0.02, momentum=0.9)
        self.x, self.y = x, y

    def steps(self, n):
        for _ in range(n):
            self.opt.zero_grad()
            torch.nn.functional.cross_entropy(self.module(self.x), self.y).backward()
            self.opt.step()

    def timed(self, n):
        dist.barrier()
        t0 = time.perf_counter()
        self.steps(n)
        dist.barrier()
        return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "wide"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--pairs", default="plain,int8-fp16,powersgd,powersgd-1bucket")
    p.add_argument("--powersgd-rank", type=int, default=4)
    p.add_argument("--json", default="")
    args = p.parse_args()
    rank, size, gloo, x, y = start()
    builders, pairs = runs_of(args, gloo)
    runs = {name: Run(build, x, y) for name, build in builders.items()}
    for run in runs.values():
        run.steps(WARMUP_STEPS)
    rates = {name: [] for name in runs}
    for r in range(args.rounds):
        for name, run in runs.items():
            rates[name].append(args.steps * SAMPLES_PER_RANK * size / run.timed(args.steps))
        if rank == 0:
            print(f"round {r}: " + ", ".join(f"{n} {v[-1]:.0f}" for n, v in rates.items()) + " samples/s", flush=True)
    if rank == 0:
        medians = {n: statistics.median(v) for n, v in rates.items()}
        result = {"model": args.model, "world": size, "steps": args.steps, "rounds": args.rounds,
                  "transport_env": os.environ.get("BRAID_TRANSPORT", ""), "samples_per_second": rates,
                  "median": medians, "ratio": {}}
        result["round_ratio_median"] = {}
        for pair, (ours, theirs) in pairs.items():
            o, t = medians[ours], medians[theirs]
            # Runs of one round are seconds apart, so their ratio sees the same machine load:
            # on a busy machine the median of those is the steadier figure.
            paired = statistics.median(a / b for a, b in zip(rates[ours], rates[theirs]))
            result["ratio"][pair], result["round_ratio_median"][pair] = o / t, paired
            print(f"RESULT {args.model} {size} ranks: {ours} {o:.0f} samples/s, {theirs} {t:.0f} samples/s, "
                  f"ratio of medians {o / t:.2f}, median of round ratios {paired:.2f}", flush=True)
        print(f"RESULT {args.model} {size} ranks: {COMPUTE_ONLY} {medians[COMPUTE_ONLY]:.0f} samples/s", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
