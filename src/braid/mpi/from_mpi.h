// braid::mpi::from_mpi: a braid Communicator over the ranks of an MPI communicator, for programs
// that already run under MPI (mpirun, srun --mpi) and want braid's collectives beside MPI's.
//
//   MPI_Init(&argc, &argv);
//   braid::Communicator comm = braid::mpi::from_mpi(MPI_COMM_WORLD);  // or a split one
//   comm.allreduce(...);   // rank r of comm is rank r of MPI_COMM_WORLD
//
// The bootstrap travels over MPI, as NCCL users broadcast ncclUniqueId with MPI_Bcast: rank 0
// of `comm` starts a rendezvous store on an ephemeral port and MPI_Bcasts its address and the
// job token; every rank then joins through that store (Communicator::init(rank, size, store))
// and braid connects shared memory inside each host and TCP between hosts as under braid-run.
// MPI carries nothing after that: braid's traffic never goes through MPI.
//
// Where rank 0's store listens: BRAID_MASTER_ADDR (or MASTER_ADDR) if set; loopback when every
// rank of `comm` shares one host (MPI_COMM_TYPE_SHARED); otherwise the first non-loopback IPv4
// address of an interface that is up on rank 0's host. The token: BRAID_JOB_TOKEN if set,
// otherwise a fresh one drawn by rank 0 and broadcast (MPI is the channel the ranks already
// trust), so a job across hosts needs no token set up by hand.
//
// A free function in its own optional target (braid::mpi, built only where MPI is found), not a
// static member of Communicator: the core library must not include <mpi.h> (DESIGN.md).
#pragma once

#include <mpi.h>

#include "braid/comm/communicator.h"

namespace braid::mpi {

// Collective over `comm`: every rank of it calls from_mpi, as for any MPI collective.
// Throws InvalidArgument when MPI is not initialised (or already finalised), `comm` is
// MPI_COMM_NULL or an intercommunicator; on rank 0's failure to start the store, every rank
// throws, naming rank 0 and why (no rank is left waiting); otherwise as Communicator::init.
Communicator from_mpi(MPI_Comm comm);

}  // namespace braid::mpi
