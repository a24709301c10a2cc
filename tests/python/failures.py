"""Failures surface as Python exceptions carrying braid's message, never as hangs.

    failures.py mismatch   ranks pass different shapes to all_reduce: every rank raises, and
                           the message names the rank, the op and the differing byte counts
    failures.py timeout    init_process_group(timeout=3 s); rank 1 is late for an all_reduce:
                           rank 0 raises braid's Timeout (the group's timeout honoured)
    failures.py peer_lost  rank 1 is killed (SIGKILL) mid-training; every survivor raises
                           PeerLost (not a Timeout: the default 30-minute timeout stays set)

Each rank prints "rank R raised: <message>" for the test driver to check, and the survivors of
peer_lost ignore the launcher's SIGTERM long enough to show they raised by themselves."""

import os
import signal
import sys
import time

import torch
import torch.distributed as dist

from common import start

mode = sys.argv[1]


def raised(rank, e):
    print(f"rank {rank} raised: {e}", flush=True)


def mismatch():
    rank, size, _ = start()
    try:
        dist.all_reduce(torch.ones(10 + rank))
    except RuntimeError as e:
        raised(rank, e)
        assert "Mismatch" in str(e) or "mismatch" in str(e), e
        return
    raise AssertionError(f"rank {rank}: all_reduce of mismatched shapes did not raise")


def timeout():
    rank, size, _ = start(timeout_s=3)
    if rank == 1:
        time.sleep(5)  # late: rank 0 gives up first (after 3 s)
        return
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
    except RuntimeError as e:
        raised(rank, e)
        assert "Timeout" in str(e) or "timed out" in str(e), e
        print(f"rank {rank}: gave up after {time.monotonic() - t0:.1f} s", flush=True)
        return
    raise AssertionError("all_reduce with a late peer did not raise")


def peer_lost():
    rank, size, _ = start()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # raise by ourselves, not die of the launcher
    t = torch.ones(1 << 16)
    for step in range(1000):
        if rank == 1 and step == 20:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(t)
            t.div_(size)
        except RuntimeError as e:
            raised(rank, e)
            assert "PeerLost" in str(e) or "lost" in str(e), e
            sys.exit(3)  # the launcher must exit non-zero anyway (rank 1 died)
    raise AssertionError(f"rank {rank}: 1000 all_reduces without rank 1 and no error")


{"mismatch": mismatch, "timeout": timeout, "peer_lost": peer_lost}[mode]()
