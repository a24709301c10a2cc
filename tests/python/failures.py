"""Failures surface as Python exceptions carrying braid's message, never as hangs.

    failures.py mismatch   ranks pass different shapes to all_reduce: every rank raises, and
                           the message names the rank, the op and the differing byte counts
    failures.py timeout    init_process_group(timeout=3 s); rank 1 is late for an all_reduce:
                           rank 0 raises braid's Timeout (the group's timeout honoured)
    failures.py any_source_lost  (3 ranks) rank 0 receives from any source; rank 1 is killed,
                           and rank 0 still receives rank 2's messages (one sender gone is no
                           error); then rank 2 is killed too: rank 0 raises PeerLost
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


def wait_until_gone(pid):
    """Until `pid` has exited (a zombie counts: the launcher may reap it later)."""
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.01)


def any_source_lost():
    rank, size, gloo = start()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # raise by ourselves, not die of the launcher
    pids = [None] * size
    dist.all_gather_object(pids, os.getpid(), group=gloo)
    t = torch.zeros(4)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    if rank == 2:
        wait_until_gone(pids[1])
        for i in range(2):
            dist.send(torch.full((4,), float(i)), 0)
        # At once: a send completes once its bytes are in rank 0's ring or socket, which rank 0
        # still reads after this process is gone.
        os.kill(os.getpid(), signal.SIGKILL)
    for i in range(2):
        source = dist.recv(t)
        assert source == 2 and t[0].item() == i, (source, t)
    print(f"rank {rank}: received 2 after rank 1 was lost", flush=True)
    try:
        dist.recv(t)
    except RuntimeError as e:
        raised(rank, e)
        assert "PeerLost" in str(e), e
        sys.exit(3)
    raise AssertionError("a receive from any source with every sender gone did not raise")


{"mismatch": mismatch, "timeout": timeout, "peer_lost": peer_lost, "any_source_lost": any_source_lost}[mode]()
