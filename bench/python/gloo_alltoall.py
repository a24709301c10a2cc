"""PyTorch's gloo backend alltoall (dist.all_to_all_single on CPU float32): the Gloo peer of
braid-bench alltoall across emulated hosts (bench/tcp_striping.sh).

    braid-run -n 4 /usr/bin/python3 bench/python/gloo_alltoall.py -b 16M -n 3 --repeats 3 \
        --init tcp://10.77.0.1:29673

Rank and world size come from braid-run (BRAID_RANK, BRAID_WORLD_SIZE); the process group
rendezvouses at --init. SIZE is each rank's send buffer (SIZE / n to every rank), as braid-bench
counts it. Per batch: a barrier, --iters calls, a barrier; the time per call is rank 0's, the
median over --repeats batches, after --warmup calls. Then one checked call (every received block
against its sender's input). Prints braid-bench's row layout, so the bench scripts read it:
size count type redop time(us) algbw busbw #wrong, busbw = algbw (n-1)/n.

Gloo's own C++ `gloo::alltoall` (Debian's libgloo 0.0~git20220518) is not used: linked into
braid-gloo-allreduce it took 0.1-1.4 s per call from 256 KiB up on one host, where PyTorch's
bundled Gloo takes 0.2-2 ms; PyTorch's is the one users run."""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-b", "--size", type=size_arg, default=16 << 20, help="bytes each rank sends in all")
    parser.add_argument("-n", "--iters", type=int, default=3, help="calls per timed batch")
    parser.add_argument("-w", "--warmup", type=int, default=1, help="untimed calls first")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches; the median is reported")
    parser.add_argument("--init", required=True, help="init_method of the process group (tcp://ADDR:PORT)")
    args = parser.parse_args()
    rank, n = int(os.environ["BRAID_RANK"]), int(os.environ["BRAID_WORLD_SIZE"])
    dist.init_process_group("gloo", init_method=args.init, rank=rank, world_size=n)
    count = args.size // 4 // n * n
    # Element i of rank r's input: r * count + i, exact in float32 up to 2^24 per block set.
    source = (torch.arange(count, dtype=torch.float64) + rank * count).remainder(1 << 24).to(torch.float32)
    target = torch.empty_like(source)
    for _ in range(args.warmup):
        dist.all_to_all_single(target, source)
    batches = []
    for _ in range(args.repeats):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_to_all_single(target, source)
        dist.barrier()
        batches.append((time.perf_counter() - start) / args.iters)
    target.zero_()
    dist.all_to_all_single(target, source)
    block = count // n
    wrong = 0
    for j in range(n):  # rank j's block `rank`
        expected = (torch.arange(rank * block, (rank + 1) * block, dtype=torch.float64) + j * count).remainder(1 << 24)
        wrong += int((target[j * block:(j + 1) * block].to(torch.float64) != expected).sum())
    wrong_all = torch.tensor([wrong], dtype=torch.int64)
    dist.all_reduce(wrong_all)
    seconds = statistics.median(batches)
    if rank == 0:
        size = count * 4
        algbw = size / seconds / 1e9
        print(f"# gloo_alltoall: {n} ranks, torch {torch.__version__} gloo, dist.all_to_all_single, float32")
        print("# size count type redop time(us) algbw(GB/s) busbw(GB/s) #wrong")
        print(f"  {size:12d} {count:11d} {'f32':>5} {'none':>6} {seconds * 1e6:11.1f} {algbw:12.3f}"
              f" {algbw * (n - 1) / n:12.3f} {int(wrong_all):7d}", flush=True)
    dist.destroy_process_group()
    return 0 if int(wrong_all) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
