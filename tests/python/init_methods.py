"""The backend rendezvouses through whatever store torch builds: file:// and tcp:// here
(env:// is every other test), twice in one process (destroy_process_group, then again)."""

import os
import tempfile

import torch
import torch.distributed as dist

import braid.torch  # noqa: F401

rank, size = int(os.environ["BRAID_RANK"]), int(os.environ["BRAID_WORLD_SIZE"])
job = os.environ["BRAID_JOB_ID"]  # the same on every rank: one file per job (FileStore removes it)
methods = [f"file://{tempfile.gettempdir()}/braid_init_{job}",
           f"tcp://127.0.0.1:{os.environ['BRAID_MASTER_PORT']}"]
for method in methods:
    dist.init_process_group("braid", init_method=method, rank=rank, world_size=size)
    t = torch.full((3,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(size * (size + 1) // 2))), f"{method}: {t}"
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: {method.split(':')[0]} ok", flush=True)
