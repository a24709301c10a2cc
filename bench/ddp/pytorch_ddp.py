#!/usr/bin/python3
"""The PyTorch DDP peer of braid-train (bench/compare_ddp.sh).

Trains the same models as braid-train (the mlp and cnn of src/braid/tools/braid_train/
image_models.cc) on the same Fashion-MNIST files with the same batch, optimizer (SGD, momentum
0.9), normalisation, per-rank thread count and data order rule (a seeded permutation strided
over ranks, last incomplete batch dropped), with torch.nn.parallel.DistributedDataParallel over
the gloo backend, optionally with its fp16 or PowerSGD communication hook. Prints one JSON line:
samples/s over the training time (evaluation excluded) and the final test accuracy.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.distributed.optim import ZeroRedundancyOptimizer

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, prefix, limit):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    if limit > 0:
        images, labels = images[:limit], labels[:limit]
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - MEAN) / STD
    return x.unsqueeze(1).contiguous(), torch.from_numpy(labels.astype(np.int64))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 1024), nn.Linear(1024, 1024), nn.Linear(1024, 10)

    def forward(self, x):
        x = x.reshape(x.shape[0], -1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.conv2, self.bn2 = nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64)
        self.fc1, self.fc2 = nn.Linear(64 * 7 * 7, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(x.reshape(x.shape[0], -1))))


def run(rank, args, port, result_path):
    torch.set_num_threads(args.threads)
    os.environ.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.manual_seed(args.seed)
    model = Mlp() if args.model == "mlp" else Cnn()
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
    if args.hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.hook.startswith("powersgd"):
        rank_r = int(args.hook.split(":")[1]) if ":" in args.hook else 2
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=rank_r,
                                            start_powerSGD_iter=2, min_compression_rate=1)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    if args.zero:
        # PyTorch's ZeRO stage 1: each rank keeps the optimizer state of its share of the
        # parameters (DDP still allreduces the gradients) and broadcasts its updated parameters.
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    x, y = load(args.data, "train", args.train_samples)
    tx, ty = load(args.data, "t10k", args.test_samples)
    per_rank = args.batch // args.world
    steps_per_epoch = (len(x) // args.world) // per_rank
    train_seconds, samples = 0.0, 0
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed * 1000 + epoch)
        order = torch.randperm(len(x), generator=g)
        shard = order[rank::args.world]
        dist.barrier()
        start = time.perf_counter()
        for step in range(steps_per_epoch):
            idx = shard[step * per_rank:(step + 1) * per_rank]
            opt.zero_grad()
            F.cross_entropy(ddp(x[idx]), y[idx]).backward()
            opt.step()
        dist.barrier()
        train_seconds += time.perf_counter() - start
        samples += steps_per_epoch * args.batch
    ddp.eval()
    with torch.no_grad():
        lo, hi = len(tx) * rank // args.world, len(tx) * (rank + 1) // args.world
        correct = torch.tensor([float((ddp.module(tx[lo:hi]).argmax(1) == ty[lo:hi]).sum()), float(hi - lo)])
    dist.all_reduce(correct)
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump({"peer": "pytorch-zero-gloo" if args.zero else "pytorch-ddp-gloo", "model": args.model, "world": args.world, "hook": args.hook,
                       "samples_per_second": samples / train_seconds,
                       "test_accuracy": float(correct[0] / correct[1]), "epochs": args.epochs}, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--batch", type=int, default=128, help="global batch")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--hook", default="none", help="none | fp16 | powersgd[:r]")
    p.add_argument("--zero", action="store_true", help="torch.distributed.optim.ZeroRedundancyOptimizer over SGD")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-samples", type=int, default=0)
    p.add_argument("--test-samples", type=int, default=0)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--rank", type=int, default=-1,
                   help="run this one rank only (started by another launcher, e.g. in a network namespace)")
    p.add_argument("--json", required=True)
    args = p.parse_args()
    if args.batch % args.world:
        p.error(f"--batch {args.batch} is not divisible by --world {args.world}")
    if args.rank >= 0:
        run(args.rank, args, args.port, args.json)
        return
    mp.spawn(run, args=(args, args.port, args.json), nprocs=args.world, join=True)
    with open(args.json) as f:
        print(f.read())


if __name__ == "__main__":
    main()
