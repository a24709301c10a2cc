"""PyTorch's own DistributedDataParallel trains one small MLP over "braid" and an identical one
over gloo (same seed, same per-rank data, same order); the parameters must agree. Then
torch's ZeroRedundancyOptimizer on "braid" must reach the same parameters too.

With two ranks every bucket's sum is a + b on both backends, which floating-point addition
makes the same bits whichever rank adds: the parameters must be bitwise equal. With more ranks
the backends may associate the sum differently; each step's averaged gradient then differs by
a few ulps of the gradients' magnitude, and after STEPS SGD steps of lr 0.05 the parameters
stay within 1e-5 relative (they move O(1e-2) in total, so the bound leaves ~1000x margin over
the float32 rounding while a wrong average or a skipped bucket moves them by > 1e-3)."""

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from common import finish, start

STEPS = 8
rank, size, gloo = start()


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def train(group, zero=False):
    # bucket_cap_mb small: several buckets per step, each allreduced asynchronously while
    # backward goes on, completed through Work futures as DDP requires.
    ddp = DDP(model(), process_group=group, bucket_cap_mb=0.02)
    if zero:  # each rank steps its shard of the parameters, then broadcasts it to the others
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, process_group=group,
                                      lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        x = torch.randn(32, 64, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in ddp.module.parameters()]


def compare(ours, theirs, what):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if size == 2:
            assert torch.equal(a, b), f"rank {rank}: {what}: parameter {i} differs: max |diff| {(a - b).abs().max()}"
        else:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"rank {rank}: {what}: parameter {i}")


ours = train(None)  # the default group: "braid"
theirs = train(gloo)
compare(ours, theirs, "DDP + SGD")
# ZeroRedundancyOptimizer on braid: the same parameters as plain SGD on gloo (ZeRO-1 partitions
# the update, it does not change it: each shard's owner applies the same arithmetic).
compare(train(None, zero=True), theirs, "DDP + ZeroRedundancyOptimizer")
# Replicas agree bitwise across ranks on braid (every rank applies the same averaged bytes).
for i, p in enumerate(ours):
    root = p.clone()
    dist.broadcast(root, src=0)
    assert torch.equal(root, p), f"rank {rank}: parameter {i} differs from rank 0's"
finish(rank)
