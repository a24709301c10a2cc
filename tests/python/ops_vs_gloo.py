"""Every c10d operation the "braid" backend supports, on every dtype and reduce op, against
the gloo backend on the same inputs in the same run. Inputs are exact small integers
(common.exact_input), so every reduction is exact and braid must match gloo bit for bit,
whatever order either reduces in. Run under torchrun or braid-run, any world size."""

import datetime

import torch
import torch.distributed as dist

from common import BYTE_DTYPES, REDUCED_DTYPES, any_input, assert_same, exact_input, start

rank, size, gloo = start()
OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN,
       "MAX": dist.ReduceOp.MAX}
SHAPES = [(0,), (1,), (7, 5), (1000,)]  # zero-size, one element, odd 2-D, larger


def gloo_allreduce(t, op_name):
    """gloo has no AVG: its SUM divided by the world size (exact here: a power of two, or
    truncating integer division as braid's integers divide). gloo cannot reduce bfloat16: it
    reduces the same (exact integer) values as float32, cast back exactly."""
    if t.dtype == torch.bfloat16:
        return gloo_allreduce(t.float(), op_name).bfloat16()
    if op_name != "AVG":
        dist.all_reduce(t, op=OPS[op_name], group=gloo)
        return t
    dist.all_reduce(t, group=gloo)
    if t.dtype.is_floating_point:
        return t / size
    return torch.div(t, size, rounding_mode="trunc")


def raw(t):
    """The same storage as bytes: gloo moves uint8 whatever the dtype (it has no bfloat16,
    int16 or complex), and the comparison stays bitwise."""
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def check_allreduce():
    for dtype in REDUCED_DTYPES:
        for shape in SHAPES:
            for op_name in list(OPS) + ["AVG"]:
                if op_name == "AVG" and dtype.is_floating_point and size & (size - 1):
                    continue  # x / 3 is not exact: covered by check_float_tolerance
                x = exact_input(shape, dtype, rank, salt=len(shape))
                want = gloo_allreduce(x.clone(), op_name)
                got = x.clone()
                op = dist.ReduceOp.AVG if op_name == "AVG" else OPS[op_name]
                dist.all_reduce(got, op=op)
                assert_same(got, want, f"all_reduce {op_name} {dtype} {shape}")


def check_float_tolerance():
    """Random floats: gloo and braid may add in different orders. Against a float64 sum of
    every rank's input (each rank regenerates them), each result is within the rounding of
    size-1 additions: |error| <= (size - 1) * eps(f32) * sum |x_i|, plus one rounding."""
    inputs = [torch.randn(4096, generator=torch.Generator().manual_seed(r)) for r in range(size)]
    exact = torch.stack([t.double() for t in inputs]).sum(0)
    bound = size * torch.finfo(torch.float32).eps * torch.stack([t.double().abs() for t in inputs]).sum(0)
    for name, group in (("braid", None), ("gloo", gloo)):
        t = inputs[rank].clone()
        dist.all_reduce(t, group=group)
        err = (t.double() - exact).abs()
        assert bool((err <= bound).all()), f"{name}: all_reduce error {err.max()} above the bound"


def check_non_contiguous():
    for dtype in (torch.float32, torch.int64):
        base = exact_input((6, 8), dtype, rank)
        want = base.t().contiguous()
        dist.all_reduce(want, group=gloo)
        got = base.clone().t()  # a transposed view: strides (1, 8)
        assert not got.is_contiguous()
        dist.all_reduce(got)
        assert_same(got.contiguous(), want, f"all_reduce of a transposed {dtype}")
        sliced = torch.zeros(12, dtype=dtype)
        view = sliced[::2]  # every other element
        view.copy_(exact_input((6,), dtype, rank))
        dist.broadcast(view, src=size - 1)
        assert_same(view.contiguous(), exact_input((6,), dtype, size - 1), "broadcast into a strided view")
        assert_same(sliced[1::2], torch.zeros(6, dtype=dtype), "broadcast left the gaps alone")


def check_broadcast():
    for dtype in REDUCED_DTYPES + BYTE_DTYPES:
        for root in range(size):
            x = any_input((33,), dtype, rank, salt=root)
            want = x.clone()
            dist.broadcast(raw(want), src=root, group=gloo)
            got = x.clone()
            dist.broadcast(got, src=root)
            assert_same(got, want, f"broadcast {dtype} from {root}")


def check_allgather():
    for dtype in REDUCED_DTYPES + BYTE_DTYPES:
        for shape in ((0,), (3, 4)):
            x = any_input(shape, dtype, rank)
            want = [torch.empty_like(x) for _ in range(size)]
            if x.numel() > 0:  # gloo 1.13 dies of SIGFPE gathering empty tensors; empty is empty
                dist.all_gather([raw(w) for w in want], raw(x), group=gloo)
            got = [torch.empty_like(x) for _ in range(size)]
            dist.all_gather(got, x)
            for r in range(size):
                assert_same(got[r], want[r], f"all_gather {dtype} {shape} block {r}")
            flat = torch.empty((size * x.numel(),), dtype=dtype)
            dist.all_gather_into_tensor(flat, x)
            assert_same(flat, torch.cat([w.reshape(-1) for w in want]), f"all_gather_into_tensor {dtype}")
    x = [any_input((2,), torch.float32, rank), any_input((3, 2), torch.float32, rank, salt=1)]
    want = [[torch.empty_like(t) for t in x] for _ in range(size)]
    dist.all_gather_coalesced([[raw(t) for t in w] for w in want], [raw(t) for t in x], group=gloo)
    got = [[torch.empty_like(t) for t in x] for _ in range(size)]
    dist.all_gather_coalesced(got, x)
    for r in range(size):
        for i in range(len(x)):
            assert_same(got[r][i], want[r][i], f"all_gather_coalesced rank {r} tensor {i}")


def check_allreduce_coalesced():
    for op_name in OPS:
        x = [exact_input((5,), torch.float32, rank), exact_input((2, 3), torch.float32, rank, salt=1)]
        want = [t.clone() for t in x]
        dist.all_reduce_coalesced(want, op=OPS[op_name], group=gloo)
        got = [t.clone() for t in x]
        dist.all_reduce_coalesced(got, op=OPS[op_name])
        for i in range(len(x)):
            assert_same(got[i], want[i], f"all_reduce_coalesced {op_name} tensor {i}")


def check_reduce():
    for dtype in REDUCED_DTYPES:
        for op_name in OPS:
            for root in range(size):
                x = exact_input((9,), dtype, rank, salt=root)
                want = gloo_allreduce(x.clone(), op_name)  # gloo's reduce has no bfloat16 either
                got = x.clone()
                dist.reduce(got, dst=root, op=OPS[op_name])
                if rank == root:  # c10d defines the result on the root only
                    assert_same(got, want, f"reduce {op_name} {dtype} to {root}")
                else:  # braid only reads the other ranks' tensors (docs/python.md)
                    assert_same(got, x, f"reduce {op_name} {dtype} left rank {rank}'s tensor alone")


def check_gather_scatter():
    for dtype in (torch.float32, torch.int64, torch.bool):
        for root in range(size):
            x = any_input((4,), dtype, rank, salt=root)
            want = [torch.empty_like(x) for _ in range(size)] if rank == root else None
            dist.gather(raw(x), [raw(w) for w in want] if want else None, dst=root, group=gloo)
            got = [torch.empty_like(x) for _ in range(size)] if rank == root else None
            dist.gather(x, got, dst=root)
            if rank == root:
                for r in range(size):
                    assert_same(got[r], want[r], f"gather {dtype} to {root} block {r}")
            chunks = [any_input((4,), dtype, r, salt=root) for r in range(size)] if rank == root else None
            want = torch.empty((4,), dtype=dtype)
            dist.scatter(raw(want), [raw(c) for c in chunks] if chunks else None, src=root, group=gloo)
            got = torch.empty((4,), dtype=dtype)
            dist.scatter(got, chunks, src=root)
            assert_same(got, want, f"scatter {dtype} from {root}")


def check_reduce_scatter():
    """gloo 1.13 has no reduce_scatter: the reference is gloo's all_reduce of the same blocks,
    cut at this rank's block (exact inputs: the same numbers)."""
    for dtype in REDUCED_DTYPES:
        for op_name in OPS:
            blocks = [exact_input((3, 2), dtype, rank, salt=p) for p in range(size)]
            full = gloo_allreduce(torch.cat([b.reshape(-1) for b in blocks]), op_name)
            want = full.narrow(0, 6 * rank, 6).reshape(3, 2)
            got = torch.empty((3, 2), dtype=dtype)
            dist.reduce_scatter(got, blocks, op=OPS[op_name])
            assert_same(got, want, f"reduce_scatter {op_name} {dtype}")
            flat_out = torch.empty((6,), dtype=dtype)
            dist.reduce_scatter_tensor(flat_out, torch.cat([b.reshape(-1) for b in blocks]), op=OPS[op_name])
            assert_same(flat_out, want.reshape(-1), f"reduce_scatter_tensor {op_name} {dtype}")


def check_alltoall():
    for dtype in (torch.float32, torch.int32, torch.bool):
        x = any_input((size * 3, 2), dtype, rank)
        want = torch.empty_like(x)
        dist.all_to_all_single(raw(want), raw(x), group=gloo)
        got = torch.empty_like(x)
        dist.all_to_all_single(got, x)
        assert_same(got, want, f"all_to_all_single {dtype}")
        # Uneven splits: rank r sends p + r + 1 rows to rank p (and so receives r + p + 1 from p).
        send_rows = [p + rank + 1 for p in range(size)]
        recv_rows = [rank + p + 1 for p in range(size)]
        x = any_input((sum(send_rows), 2), dtype, rank, salt=1)
        want = torch.empty((sum(recv_rows), 2), dtype=dtype)
        dist.all_to_all_single(raw(want), raw(x), recv_rows, send_rows, group=gloo)
        got = torch.empty_like(want)
        dist.all_to_all_single(got, x, recv_rows, send_rows)
        assert_same(got, want, f"all_to_all_single with splits {dtype}")
        ins = [any_input((p + 1,), dtype, rank, salt=p) for p in range(size)]
        # gloo 1.13 has no list all_to_all: block p is what rank p made for this rank.
        want = [any_input((rank + 1,), dtype, p, salt=rank) for p in range(size)]
        got = [torch.empty((rank + 1,), dtype=dtype) for _ in range(size)]
        dist.all_to_all(got, ins)
        for p in range(size):
            assert_same(got[p], want[p], f"all_to_all {dtype} from {p}")


def check_send_recv():
    """A ring: each rank sends to the next and receives from the previous, blocking and not."""
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    for dtype in (torch.float32, torch.bfloat16, torch.bool):
        x = any_input((17,), dtype, rank)
        got = torch.empty_like(x)
        if rank % 2 == 0:
            dist.send(x, nxt)
            dist.recv(got, prev)
        else:
            dist.recv(got, prev)
            dist.send(x, nxt)
        assert_same(got, any_input((17,), dtype, prev), f"send/recv {dtype}")
        got = torch.empty((17, 2), dtype=dtype)[:, 0]  # a strided receive buffer
        works = [dist.isend(x, nxt, tag=7), dist.irecv(got, prev, tag=7)]
        for w in works:
            w.wait()
        assert_same(got.contiguous(), any_input((17,), dtype, prev), f"isend/irecv {dtype}")


def recv_from_any(backend_group, root, senders, what, strided=False):
    """`root` receives one tensor from each of `senders` (global ranks) without naming the
    sender, and then a second one from the first of them; the others send. Returns, on the
    root, the senders dist.recv reported, sorted (arrival order is the ranks' race). `strided`:
    receive into a non-contiguous view (braid stages it; gloo refuses one)."""
    if rank in senders:
        dist.send(any_input((9,), torch.int64, rank, salt=1), root, group=backend_group, tag=3)
        if rank == senders[0]:
            dist.send(any_input((9,), torch.int64, rank, salt=2), root, group=backend_group, tag=3)
    if rank != root:
        return None
    got = []
    for _ in range(len(senders) + 1):
        t = torch.empty((9, 2), dtype=torch.int64)[:, 1] if strided else torch.empty(9, dtype=torch.int64)
        source = dist.recv(t, group=backend_group, tag=3)
        got.append((source, t.contiguous()))
    seen = sorted(source for source, _ in got)
    assert seen == sorted(senders + [senders[0]]), f"{what}: senders reported {seen}, want {sorted(senders)} and {senders[0]} twice"
    firsts = {}
    for source, t in got:  # one sender's messages arrive in the order it sent them
        salt = 2 if source in firsts else 1
        firsts[source] = True
        assert_same(t, any_input((9,), torch.int64, source, salt=salt), f"{what}: message {salt} from {source}")
    return seen


def check_recv_anysource():
    """dist.recv without src (c10d's recvAnysource) on braid reports the same senders with the
    same tensors as on gloo: every other rank sends to the root, in the whole world and in a
    subgroup of the odd ranks (whose group-local ranks c10d maps back to global ones)."""
    if size == 1:
        return
    others = [r for r in range(size) if r != 0]
    want = recv_from_any(gloo, 0, others, "gloo recv from any source")
    got = recv_from_any(None, 0, others, "braid recv from any source", strided=True)
    assert got == want, f"braid reported senders {got}, gloo {want}"
    odd = [r for r in range(size) if r % 2 == 1]
    ours, theirs = dist.new_group(odd, backend="braid"), dist.new_group(odd, backend="gloo")
    if len(odd) > 1 and rank in odd:
        want = recv_from_any(theirs, odd[0], odd[1:], "gloo subgroup recv from any source")
        got = recv_from_any(ours, odd[0], odd[1:], "braid subgroup recv from any source", strided=True)
        assert got == want, f"braid subgroup reported senders {got}, gloo {want}"
    # isend/irecv without src: the Work names the sender once waited for.
    if rank == 0:
        t = torch.empty(9, dtype=torch.int64)
        work = dist.irecv(t, tag=4)
        work.wait()
        assert work._source_rank() == size - 1, work._source_rank()
        assert_same(t, any_input((9,), torch.int64, size - 1), "irecv from any source")
    elif rank == size - 1:
        dist.isend(any_input((9,), torch.int64, rank), 0, tag=4).wait()


def check_async_futures():
    """Many ops in flight at once, collected through their futures, in reverse order."""
    xs = [exact_input((64,), torch.float32, rank, salt=i) for i in range(8)]
    wants = [x.clone() for x in xs]
    for w in wants:
        dist.all_reduce(w, group=gloo)
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    futures = [w.get_future() for w in works]
    for i in reversed(range(len(xs))):
        value = futures[i].wait()
        assert_same(value[0], wants[i], f"future {i}")
        assert works[i].is_completed()
    chained = dist.all_reduce(exact_input((64,), torch.float32, rank, salt=0), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    assert_same(chained.wait(), wants[0] * 2, "future.then")


def check_subgroups():
    """A braid subgroup of the odd ranks and one of ranks 0 and last, against gloo's."""
    for ranks in ([r for r in range(size) if r % 2 == 1], [0, size - 1]):
        ours = dist.new_group(ranks, backend="braid")
        theirs = dist.new_group(ranks, backend="gloo")
        if rank not in ranks:
            continue
        x = exact_input((10,), torch.float32, rank)
        want = x.clone()
        dist.all_reduce(want, group=theirs)
        dist.all_reduce(x, group=ours)
        assert_same(x, want, f"all_reduce in subgroup {ranks}")
        y = any_input((5,), torch.int64, rank)
        dist.broadcast(y, src=ranks[-1], group=ours)
        assert_same(y, any_input((5,), torch.int64, ranks[-1]), f"broadcast in subgroup {ranks}")
        dist.barrier(group=ours)


def check_refusals():
    """What braid does not do is a RuntimeError at the call naming the rank and the op."""
    def refused(fn, words):
        try:
            fn()
        except RuntimeError as e:
            for w in words:
                assert w in str(e), f"'{w}' not in: {e}"
            return
        raise AssertionError(f"no error for {words}")
    t = torch.ones(4, dtype=torch.int32)
    refused(lambda: dist.all_reduce(t, op=dist.ReduceOp.BAND), ["bitwise", f"rank {rank}", "allreduce"])
    refused(lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool)), ["cannot reduce", "Bool", "allreduce"])
    refused(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int8)), ["cannot reduce", "Char"])
    refused(lambda: dist.broadcast(t, src=size), ["group"])  # torch's own check or braid's
    dist.all_reduce(t)  # the group still works after refusals
    assert_same(t, torch.full((4,), size, dtype=torch.int32), "all_reduce after refusals")


for check in (check_allreduce, check_float_tolerance, check_non_contiguous, check_broadcast, check_allgather,
              check_allreduce_coalesced, check_reduce, check_gather_scatter, check_reduce_scatter, check_alltoall,
              check_send_recv, check_recv_anysource, check_async_futures, check_subgroups, check_refusals):
    check()
    dist.barrier()
# torch 1.13's dist.monitored_barrier() refuses every backend but gloo before asking it; the
# group's own method reaches braid's.
dist.distributed_c10d._get_default_group().monitored_barrier(datetime.timedelta(seconds=60))

# Destroying the group while an op is still queued whose future runs Python code: the group's
# destructor must wait for it without holding the GIL the callback needs (no deadlock), and the
# callback still sees the right sum.
dist.barrier(group=gloo)
big = torch.ones(8 << 20)
seen = []
pending = dist.all_reduce(big, async_op=True).get_future().then(lambda f: seen.append(float(f.value()[0][-1])))
del pending
dist.destroy_process_group()
assert seen == [float(size)], seen
print(f"rank {rank}: ok", flush=True)
