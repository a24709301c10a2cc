"""braid's DDP comm hooks (braid.hooks) on PyTorch's DistributedDataParallel over "braid".

For every hook (fp16, bf16, int8, sign, topk, randomk, powersgd) an MLP learns a fixed random
teacher for STEPS steps: its loss must fall by more than half as much as plain DDP's over the
same steps and data (compressed SGD with error feedback converges at the uncompressed rate
up to a constant: Karimireddy et al. 2019; a hook that sends garbage or nothing makes no
progress at all), every rank must hold bitwise the same parameters (every
rank decodes the same bytes), and the parameters must differ from an uncompressed run's (the
codec really ran). With warmup_steps covering the whole run the int8 hook must equal plain DDP
bitwise (the policy's warm-up is exactly uncompressed averaging). A run interrupted after
HALF steps and resumed from torch.save'd model, optimizer and hook state continues bit for bit
like the uninterrupted one (error-feedback residuals included); a damaged saved state is
refused as braid's Corrupt."""

import io

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import braid.hooks as braid_hooks
from common import finish, start

STEPS, HALF = 30, 15
rank, size, _ = start()
torch.manual_seed(1234)
TEACHER = torch.nn.Linear(64, 10)


def batch(step):
    g = torch.Generator().manual_seed(10_000 * rank + step)
    x = torch.randn(64, 64, generator=g)
    with torch.no_grad():
        return x, TEACHER(x).argmax(1)


def build():
    torch.manual_seed(0)
    # Weights of 8192-16384 elements, compressed with min_elements=4096; the biases are not.
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    ddp = DDP(model, bucket_cap_mb=0.05)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)


def train(ddp, opt, first, last):
    losses = []
    for step in range(first, last):
        x, y = batch(step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def params(ddp):
    return [p.detach().clone() for p in ddp.module.parameters()]


def same_on_every_rank(ps, what):
    for i, p in enumerate(ps):
        root = p.clone()
        dist.broadcast(root, src=0)
        assert torch.equal(root, p), f"rank {rank}: {what}: parameter {i} differs from rank 0's"


def run(hook, warmup_steps=0, first=0, last=STEPS, checkpoint=None):
    ddp, opt = build()
    state = braid_hooks.CompressionHookState(ddp, min_elements=4096, warmup_steps=warmup_steps)
    if checkpoint is not None:
        saved = torch.load(io.BytesIO(checkpoint))
        ddp.module.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        state.load_state_dict(saved["hook"])
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    losses = train(ddp, opt, first, last)
    return ddp, opt, state, losses


plain_ddp, _, _, plain_losses = run(None)
plain = params(plain_ddp)
# topk and randomk at 10% (the named hooks keep 1%): error feedback hands every coordinate on
# within ~1/ratio steps, so 1% would need hundreds of steps to show its progress.
HOOKS = {"fp16": braid_hooks.fp16, "bf16": braid_hooks.bf16, "int8": braid_hooks.int8, "sign": braid_hooks.sign,
         "topk:0.1": braid_hooks.hook("topk:0.1"), "randomk:0.1": braid_hooks.hook("randomk:0.1"),
         "powersgd": braid_hooks.powersgd}
for name, hook in HOOKS.items():
    ddp, _, _, losses = run(hook)
    ps = params(ddp)
    progress = (losses[0] - losses[-1]) / (plain_losses[0] - plain_losses[-1])
    assert progress > 0.5, f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, plain {plain_losses[0]:.3f} -> {plain_losses[-1]:.3f}"
    same_on_every_rank(ps, name)
    assert any(not torch.equal(a, b) for a, b in zip(ps, plain)), f"{name}: identical to uncompressed: no compression?"
    if rank == 0:
        print(f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f} (uncompressed {plain_losses[-1]:.3f})", flush=True)

warm, _, _, _ = run(braid_hooks.int8, warmup_steps=STEPS)
for i, (a, b) in enumerate(zip(params(warm), plain)):
    assert torch.equal(a, b), f"rank {rank}: int8 within its warm-up differs from plain DDP at parameter {i}"

whole, _, _, _ = run(braid_hooks.int8)
half, opt, state, _ = run(braid_hooks.int8, last=HALF)
blob = io.BytesIO()
torch.save({"model": half.module.state_dict(), "opt": opt.state_dict(), "hook": state.state_dict()}, blob)
resumed, _, _, _ = run(braid_hooks.int8, first=HALF, checkpoint=blob.getvalue())
for i, (a, b) in enumerate(zip(params(resumed), params(whole))):
    assert torch.equal(a, b), f"rank {rank}: resumed int8 run differs at parameter {i}: {(a - b).abs().max()}"

damaged = state.state_dict()
damaged["residuals"] = damaged["residuals"][:-1] + bytes([damaged["residuals"][-1] ^ 1])
try:
    braid_hooks.CompressionHookState(half).load_state_dict(damaged)
    raise AssertionError("a damaged residual image was accepted")
except RuntimeError as e:
    assert "Corrupt" in str(e), e

try:
    braid_hooks.CompressionHookState(DDP(torch.nn.Linear(2, 2), process_group=dist.new_group(backend="gloo")))
    raise AssertionError("a gloo group was accepted")
except TypeError as e:
    assert "braid" in str(e), e
finish(rank)
