"""Registers braid as the torch.distributed backend "braid".

    import torch.distributed as dist
    import braid.torch  # noqa: F401  (registers the backend)
    dist.init_process_group("braid")          # env:// under torchrun or braid-run

The default group and every ``dist.new_group(..., backend="braid")`` rendezvous through the
store torch hands the backend (so ``env://``, ``tcp://`` and ``file://`` all work) and then
talk over braid's own transports (shared memory on one host, TCP across hosts).

braid bounds every operation by ``BRAID_TIMEOUT``; unless the user set it, the first braid
group's ``timeout`` (init_process_group's, 30 minutes by default) becomes it, so the timeout a
script gives torch is the one braid honours.
"""

import os

import torch.distributed as _dist

from braid import _C

BACKEND_NAME = "braid"


# torch's env:// names, and what braid-run and Open MPI's mpirun set instead (first wins).
_LAUNCHER_NAMES = {
    "RANK": ("BRAID_RANK", "OMPI_COMM_WORLD_RANK"),
    "WORLD_SIZE": ("BRAID_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
    "LOCAL_RANK": ("BRAID_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "LOCAL_WORLD_SIZE": ("BRAID_LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    "MASTER_ADDR": ("BRAID_MASTER_ADDR",),
    # braid-run picks a free port for braid's own store, which a Python job never starts (the
    # backend rendezvouses through torch's store): torch's TCPStore takes that port. mpirun
    # has none to give: the user exports MASTER_ADDR / MASTER_PORT (docs/python.md).
    "MASTER_PORT": ("BRAID_MASTER_PORT",),
}


def _apply_launcher_environment():
    """Lets an unchanged env:// script run under braid-run or mpirun, which set their own
    variables rather than torchrun's; a variable already set is left alone."""
    for torch_name, sources in _LAUNCHER_NAMES.items():
        if torch_name in os.environ:
            continue
        for source in sources:
            if source in os.environ:
                os.environ[torch_name] = os.environ[source]
                break


def _create_process_group(store, rank, size, timeout):
    os.environ.setdefault("BRAID_TIMEOUT", repr(timeout.total_seconds()))
    return _C.ProcessGroupBraid(store, rank, size)


_apply_launcher_environment()
if not hasattr(_dist.Backend, BACKEND_NAME.upper()):
    _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)
