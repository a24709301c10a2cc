"""DDP comm hooks backed by braid's compressed allreduce (docs/python.md, docs/compression.md).

    import braid.torch, braid.hooks as braid_hooks
    ddp = DistributedDataParallel(model)                     # on a "braid" process group
    state = braid_hooks.CompressionHookState(ddp, min_elements=65536, warmup_steps=100)
    ddp.register_comm_hook(state, braid_hooks.int8)          # fp16, bf16, int8, sign, topk,
                                                             # randomk, powersgd, or hook("topk:0.001")

Each bucket is averaged parameter by parameter, each with the codec the compression policy
picks for it (none during the warm-up steps and for tensors under min_elements elements, the
hook's codec otherwise; PowerSGD factors 2-D weights, vectors go uncompressed), error feedback
on for the biased codecs (int8, sign, topk, powersgd). Residuals are keyed by parameter name,
so they follow a parameter across DDP's bucket rebuild after the first step and across runs.

The state's state_dict() (the step and every residual, checksummed) goes into a checkpoint
with torch.save; CompressionHookState(ddp, ...).load_state_dict(...) in the resumed run makes
it continue bit for bit.
"""

import braid.torch  # noqa: F401  (the backend the hooks run on)
from braid import _C


class CompressionHookState:
    """What a braid comm hook keeps between steps: the policy's options, the step count and the
    error-feedback residuals. `ddp` names the parameters; `process_group` (default: DDP's) must
    be a "braid" group."""

    def __init__(self, ddp, process_group=None, min_elements=65536, warmup_steps=0):
        self.process_group = process_group if process_group is not None else ddp.process_group
        if not isinstance(self.process_group, _C.ProcessGroupBraid):
            raise TypeError(f"braid's comm hooks need a \"braid\" process group, not {type(self.process_group).__name__}")
        self.min_elements = int(min_elements)
        self.warmup_steps = int(warmup_steps)
        self.step = 0
        self._names = {p.data_ptr(): name for name, p in ddp.module.named_parameters() if p.requires_grad}
        self._residuals = _C.CompressionHookResiduals()

    def state_dict(self):
        return {"step": self.step, "min_elements": self.min_elements, "warmup_steps": self.warmup_steps,
                "residuals": self._residuals.serialize()}

    def load_state_dict(self, state):
        self._residuals.deserialize(state["residuals"])  # raises on a damaged image
        self.step = int(state["step"])
        self.min_elements = int(state["min_elements"])
        self.warmup_steps = int(state["warmup_steps"])

    def pieces(self, bucket):
        """(name, offset, count, rows, cols) of every gradient in the bucket's flat buffer."""
        buffer = bucket.buffer()
        base = buffer.data_ptr()
        out = []
        for param, grad in zip(bucket.parameters(), bucket.gradients()):
            name = self._names.get(param.data_ptr())
            if name is None:
                raise RuntimeError("a bucket holds a parameter the hook state does not know: build the state from "
                                   "the DistributedDataParallel module it is registered on")
            offset = (grad.data_ptr() - base) // buffer.element_size()
            rows = grad.shape[0] if grad.dim() >= 2 else 0
            cols = grad.numel() // rows if rows else 0
            out.append((name, offset, grad.numel(), rows, cols))
        return out


def hook(codec):
    """A DDP comm hook compressing with `codec` ("int8", "topk:0.01", "powersgd:4", ...)."""

    def braid_compressed_allreduce(state, bucket):
        work = _C.compressed_allreduce(state.process_group, bucket.buffer(), state.pieces(bucket), codec,
                                       state.min_elements, state.warmup_steps, state.step,
                                       state._residuals)
        if bucket.is_last():
            state.step += 1
        return work.get_future().then(lambda fut: fut.value()[0])

    braid_compressed_allreduce.__name__ = f"braid_{codec.replace(':', '_').replace('.', '_')}"
    return braid_compressed_allreduce


fp16 = hook("fp16")
bf16 = hook("bf16")
int8 = hook("int8")
sign = hook("sign")
topk = hook("topk:0.01")
randomk = hook("randomk:0.01")
powersgd = hook("powersgd:4")
