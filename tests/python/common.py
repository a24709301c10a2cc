"""What every rank script of the Python backend tests shares: start the "braid" default group
(env://, whichever launcher set it), a gloo group over the same ranks as the reference, and
deterministic inputs every rank can regenerate for any rank."""

import datetime

import torch
import torch.distributed as dist

import braid.torch  # noqa: F401  (registers "braid")

# Every dtype braid reduces; the exact-integer inputs below make every reduction exact in all
# of them, so braid and gloo must agree bit for bit whatever order each reduces in.
REDUCED_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8]
# Dtypes braid cannot reduce but moves as bytes.
BYTE_DTYPES = [torch.bool, torch.int8, torch.int16, torch.complex64]


def start(timeout_s=None):
    kwargs = {} if timeout_s is None else {"timeout": datetime.timedelta(seconds=timeout_s)}
    dist.init_process_group("braid", **kwargs)
    return dist.get_rank(), dist.get_world_size(), dist.new_group(backend="gloo")


def exact_input(shape, dtype, rank, salt=0):
    """Small integers (|x| <= 2, never 0) as `dtype`: sums of up to 8 ranks, their averages
    over a power-of-two world, products and extremes are all exactly representable, even in
    bfloat16 (8 significant bits), and uint8 products stay below 256."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype == torch.uint8:
        values = torch.randint(1, 3, shape, generator=g)
    else:
        values = torch.randint(1, 3, shape, generator=g) * (torch.randint(0, 2, shape, generator=g) * 2 - 1)
    return values.to(dtype)


def any_input(shape, dtype, rank, salt=0):
    """Bytes of any dtype (for the operations that only move data)."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def assert_same(got, want, what):
    """Bitwise: same dtype, shape and bytes (NaN-free inputs, so equal() is bitwise here)."""
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError(f"rank {dist.get_rank()}: {what}: braid gave {got} but gloo {want}")


def finish(rank):
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: ok", flush=True)
