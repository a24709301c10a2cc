"""What the DDP benchmarks of bench/python share: the model they train and their start.

Each script runs as `braid-run -n N /usr/bin/python3 bench/python/<script>.py`, so this module,
next to it, is on sys.path."""

import torch
import torch.distributed as dist

SAMPLES_PER_RANK = 64  # a step's batch on every rank


def model(name="mlp"):
    """braid-train's Fashion-MNIST MLP ("mlp": 784-1024-1024-10, 1.86 M parameters), a wider
    one ("wide": 784-4096-4096-10, 19.3 M) or braid-train's CNN ("cnn": two conv-BN-ReLU-pool
    blocks of 32 and 64 channels and two linear layers, 0.42 M; its BatchNorm buffers are
    broadcast by DDP every step), from seed 0: every replica starts equal."""
    torch.manual_seed(0)
    if name == "cnn":
        nn = torch.nn
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    width = {"mlp": 1024, "wide": 4096}[name]
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))


def start():
    """One torch thread per rank, the "braid" process group and a gloo group over the same
    ranks, and this rank's batch (random 28x28 images and labels, seeded by the rank).
    Returns (rank, size, gloo, x, y)."""
    torch.set_num_threads(1)
    dist.init_process_group("braid")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(SAMPLES_PER_RANK, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (SAMPLES_PER_RANK,), generator=g)
    return rank, size, gloo, x, y
