#include "braid/tools/braid_train/elastic_state_transfer.h"

#include <array>
#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/tools/braid_train/model_snapshot.h"

namespace braid::train {

namespace {

constexpr std::size_t kHeaderFields = 6;  // step, steps per epoch, total, epochs, losses, optimizer bytes

}  // namespace

void share_training_state(Communicator& comm, TrainingPosition& position, ::torch::optim::Optimizer& optimizer,
                          bool newcomer) {
  const bool sender = comm.rank() == 0;
  if (sender && newcomer) {
    throw PeerLost({.rank = 0, .op = "elastic join"},
                   "no old member is left to send the training state: every member that held it was lost");
  }
  std::string optimizer_bytes = sender ? serialize_optimizer(optimizer) : std::string();
  std::array<std::int64_t, kHeaderFields> header{position.step, position.steps_per_epoch, position.total_steps,
                                                 position.epochs_evaluated,
                                                 static_cast<std::int64_t>(position.step_losses.size()),
                                                 static_cast<std::int64_t>(optimizer_bytes.size())};
  broadcast(comm, header.data(), header.size(), DType::kI64, 0);
  if (!newcomer && header[0] != position.step) {
    throw Mismatch({.rank = comm.rank(), .peer = 0, .op = "elastic join"},
                   fmt::format("rank 0 of the new generation is at step {}, this member at step {}", header[0],
                               position.step));
  }
  // Rank 0 proved the job token; still, counts read off the wire are bounded before allocating.
  if (header[0] < 0 || header[1] <= 0 || header[2] < header[0] || header[3] < 0 || header[4] != header[0] ||
      header[5] < 0 || header[5] > (std::int64_t{1} << 40)) {
    throw Corrupt({.rank = comm.rank(), .peer = 0, .op = "elastic join"},
                  fmt::format("training state header from rank 0 is inconsistent: step {}, {} steps per epoch, "
                              "{} in all, {} epochs, {} losses, {} optimizer bytes",
                              header[0], header[1], header[2], header[3], header[4], header[5]));
  }
  std::vector<double> losses = position.step_losses;
  losses.resize(static_cast<std::size_t>(header[4]));
  optimizer_bytes.resize(static_cast<std::size_t>(header[5]));
  broadcast(comm, losses.data(), losses.size(), DType::kF64, 0);
  broadcast(comm, optimizer_bytes.data(), optimizer_bytes.size(), DType::kU8, 0);
  if (!newcomer) return;
  position = {.step = header[0], .steps_per_epoch = header[1], .total_steps = header[2], .epochs_evaluated = header[3],
              .step_losses = std::move(losses)};
  load_optimizer(optimizer, optimizer_bytes);
}

}  // namespace braid::train
