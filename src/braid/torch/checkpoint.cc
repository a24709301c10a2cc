#include "braid/torch/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <sstream>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/failure_agreement.h"
#include "braid/torch/checked_archive.h"

namespace braid::torch {
namespace {

// 2: every tensor's CRC32C (checkpoint_checksums.h) and the optimizer state as one checked
// blob. Format 1 had no checksums and is refused: it cannot be verified.
constexpr std::int64_t kFormatVersion = 2;

// fp16's loss scaler, as float64 [scale, clean, skipped, overflows in a row] (the counters are
// far below 2^53, so the doubles hold them exactly).
constexpr const char* kLossScalerKey = "loss_scaler";

::torch::Tensor loss_scaler_tensor(const parallel::DynamicLossScaler::State& s) {
  return ::torch::tensor({s.scale, static_cast<double>(s.clean), static_cast<double>(s.skipped),
                          static_cast<double>(s.overflows_in_a_row)},
                         ::torch::kFloat64);
}

parallel::DynamicLossScaler::State loss_scaler_state(const ::torch::Tensor& t, const CheckedReader& reader) {
  if (t.scalar_type() != ::torch::kFloat64 || t.dim() != 1 || t.numel() != 4) {
    throw Corrupt(reader.context, fmt::format("{}: the loss scaler entry is not 4 float64 values", reader.path));
  }
  auto v = t.accessor<double, 1>();
  return {.scale = v[0], .clean = static_cast<std::int64_t>(v[1]), .skipped = static_cast<std::int64_t>(v[2]),
          .overflows_in_a_row = static_cast<int>(v[3])};
}

// Whether `ok` holds on every rank (one allgather), so that all ranks throw together instead
// of some going on into the next collective.
bool all_ranks(Communicator& comm, bool ok) {
  std::vector<std::uint8_t> flags(static_cast<std::size_t>(comm.size()));
  std::uint8_t mine = ok ? 1 : 0;
  allgather(comm, &mine, flags.data(), 1, DType::kU8);
  return std::all_of(flags.begin(), flags.end(), [](std::uint8_t f) { return f == 1; });
}

// Every rank's serialized compression state, at rank 0 (empty elsewhere): padded to the
// longest so one fixed-size gather moves them.
std::vector<std::vector<std::byte>> gather_states(Communicator& comm, const std::vector<std::byte>& mine) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(comm.size()));
  std::int64_t my_size = static_cast<std::int64_t>(mine.size());
  allgather(comm, &my_size, sizes.data(), 1, DType::kI64);
  std::int64_t longest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::byte> padded(static_cast<std::size_t>(longest));
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<std::byte> all(comm.rank() == 0 ? padded.size() * sizes.size() : 0);
  gather(comm, padded.data(), all.data(), longest, DType::kU8, 0);
  std::vector<std::vector<std::byte>> states;
  if (comm.rank() != 0) return states;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    auto begin = all.begin() + static_cast<std::ptrdiff_t>(r * padded.size());
    states.emplace_back(begin, begin + sizes[r]);
  }
  return states;
}

// Parameters and buffers by their full names, flat. (Module::save/load would do, but load
// rebinds each parameter to the loaded storage with set_(), which detaches it from the gradient
// accumulator DDP has hooked; copying values in place keeps every tensor where DDP saw it.)
void write_module_state(::torch::nn::Module& module, ::torch::serialize::OutputArchive& archive, ChecksumTable& table) {
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    write_checked(archive, table, "model/", "param." + item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    write_checked(archive, table, "model/", "buffer." + item.key(), item.value(), true);
  }
}

void read_module_state(::torch::nn::Module& module, ::torch::serialize::InputArchive& archive,
                       const CheckedReader& reader) {
  ::torch::NoGradGuard no_grad;
  auto restore = [&](const std::string& key, ::torch::Tensor& target, bool is_buffer) {
    ::torch::Tensor stored = reader.read(archive, key, "model/", is_buffer);
    if (!stored.sizes().equals(target.sizes()) || stored.scalar_type() != target.scalar_type()) {
      throw InvalidArgument(reader.context,
                            fmt::format("checkpoint tensor '{}' has another shape or dtype than the model's", key));
    }
    target.copy_(stored);
  };
  for (auto& item : module.named_parameters(/*recurse=*/true)) restore("param." + item.key(), item.value(), false);
  for (auto& item : module.named_buffers(/*recurse=*/true)) restore("buffer." + item.key(), item.value(), true);
}

// The optimizer's state (momentum, Adam moments) as one checked blob: its archive's tensor
// names are the optimizer's own business, and a blob is checked whatever they are.
::torch::Tensor optimizer_blob(::torch::optim::Optimizer& optimizer) {
  ::torch::serialize::OutputArchive optim;
  optimizer.save(optim);
  std::ostringstream out;
  optim.save_to(out);
  std::string bytes = out.str();
  return bytes_tensor(bytes.data(), bytes.size());
}

std::string encode_archive(DistributedDataParallel& ddp, ::torch::optim::Optimizer& optimizer,
                           const RunState& state, const std::string& fingerprint,
                           const GradSyncSnapshot& snapshot, const std::vector<std::vector<std::byte>>& states) {
  ::torch::serialize::OutputArchive archive, model;
  ChecksumTable table;
  write_module_state(ddp.module(), model, table);
  archive.write("model", model);
  write_checked(archive, table, "", "optimizer_state", optimizer_blob(optimizer));
  archive.write("format", ::torch::tensor({kFormatVersion}, ::torch::kInt64));
  const TrainingPosition& position = state.position;
  write_checked(archive, table, "", "position",
                ::torch::tensor({position.step, position.epoch, position.batch_in_epoch, snapshot.step,
                                 static_cast<std::int64_t>(states.size())},
                                ::torch::kInt64));
  write_checked(archive, table, "", "fingerprint", bytes_tensor(fingerprint.data(), fingerprint.size()));
  if (state.loss_scaler) write_checked(archive, table, "", kLossScalerKey, loss_scaler_tensor(*state.loss_scaler));
  std::vector<std::int64_t> order(snapshot.bucket_order.begin(), snapshot.bucket_order.end());
  write_checked(archive, table, "", "bucket_order", ::torch::tensor(order, ::torch::kInt64));
  for (std::size_t r = 0; r < states.size(); ++r) {
    write_checked(archive, table, "", fmt::format("residuals_rank{}", r), bytes_tensor(states[r].data(), states[r].size()));
  }
  write_checksums(archive, table);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

}  // namespace

std::string checkpoint_path(const std::string& dir) { return (std::filesystem::path(dir) / "checkpoint.pt").string(); }

namespace {

// After a save: the temporary files of saves killed mid-write (write_file_atomically's
// "checkpoint.pt.tmp.<pid>"; this save's own was renamed), each as large as a checkpoint and
// otherwise never reclaimed. Best effort: a leftover is harmless, the load never reads one.
void remove_killed_writes(const std::string& dir) {
  std::error_code error;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir, error)) {
    if (e.path().filename().string().starts_with("checkpoint.pt.tmp.")) std::filesystem::remove(e.path(), error);
  }
}

}  // namespace

void save_checkpoint(Communicator& comm, const std::string& dir, DistributedDataParallel& ddp,
                     ::torch::optim::Optimizer& optimizer, const RunState& state, const std::string& fingerprint) {
  GradSyncSnapshot snapshot = ddp.grad_sync().snapshot();
  std::vector<std::vector<std::byte>> states = gather_states(comm, snapshot.compression_state);
  std::string failure;
  if (comm.rank() == 0) {
    try {
      std::filesystem::create_directories(dir);
      write_file_atomically(checkpoint_path(dir),
                            encode_archive(ddp, optimizer, state, fingerprint, snapshot, states));
      remove_killed_writes(dir);
    } catch (const c10::Error& e) {
      failure = e.what_without_backtrace();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!all_ranks(comm, failure.empty())) {
    throw SystemError({.rank = comm.rank(), .peer = 0, .op = "save_checkpoint"},
                      fmt::format("rank 0 could not write {}{}", checkpoint_path(dir),
                                  failure.empty() ? "" : ": " + failure));
  }
}

namespace {

// The table of checksums, checked itself, after the format: nothing else is trusted before it.
ChecksumTable read_checksums(::torch::serialize::InputArchive& archive, const ErrorContext& context,
                             const std::string& path) {
  ::torch::Tensor format;
  archive.read("format", format);
  if (format.numel() != 1 || format.item<std::int64_t>() != kFormatVersion) {
    throw Corrupt(context, fmt::format("{} has checkpoint format {}, this braid reads {} (format 1 carried no "
                                       "checksums and cannot be verified: start without --resume)",
                                       path, format.numel() == 1 ? format.item<std::int64_t>() : -1, kFormatVersion));
  }
  return read_checksums_table(archive, context, path);
}

// Everything but the checks of the format: position, loss scale, GradSync's snapshot, model and
// optimizer.
RunState restore(::torch::serialize::InputArchive& archive, const CheckedReader& reader, Communicator& comm,
                         DistributedDataParallel& ddp, ::torch::optim::Optimizer& optimizer,
                         const std::string& fingerprint) {
  const std::string& path = reader.path;
  ::torch::Tensor stored_fingerprint = reader.read(archive, "fingerprint");
  if (string_of(stored_fingerprint) != fingerprint) {
    throw InvalidArgument(reader.context, fmt::format("{} was written by another configuration:\n  checkpoint: {}\n  "
                                                      "this run:   {}\nresume with the same settings, or use another "
                                                      "--checkpoint-dir",
                                                      path, string_of(stored_fingerprint), fingerprint));
  }
  ::torch::Tensor pos = reader.read(archive, "position");
  auto p = pos.accessor<std::int64_t, 1>();
  if (pos.numel() != 5 || p[4] != comm.size()) {
    throw InvalidArgument(reader.context, fmt::format("{} holds the residuals of {} ranks; this run has {}", path,
                                                      pos.numel() == 5 ? p[4] : -1, comm.size()));
  }
  GradSyncSnapshot snapshot;
  snapshot.step = p[3];
  ::torch::Tensor order = reader.read(archive, "bucket_order");
  for (std::int64_t i = 0; i < order.numel(); ++i) snapshot.bucket_order.push_back(static_cast<int>(order[i].item<std::int64_t>()));
  ::torch::Tensor residuals = reader.read(archive, fmt::format("residuals_rank{}", comm.rank()));
  auto* bytes = static_cast<const std::byte*>(residuals.data_ptr());
  snapshot.compression_state.assign(bytes, bytes + residuals.numel());
  ::torch::serialize::InputArchive model, optim;
  archive.read("model", model);
  read_module_state(ddp.module(), model, reader);
  ::torch::Tensor blob = reader.read(archive, "optimizer_state");
  optim.load_from(static_cast<const char*>(blob.data_ptr()), static_cast<std::size_t>(blob.numel()));
  optimizer.load(optim);
  ddp.grad_sync().restore(snapshot);
  RunState state{.position = {.step = p[0], .epoch = p[1], .batch_in_epoch = p[2]}};
  ::torch::Tensor probe;  // written by fp16 runs only (their fingerprint says fp16)
  if (archive.try_read(kLossScalerKey, probe)) {
    state.loss_scaler = loss_scaler_state(reader.read(archive, kLossScalerKey), reader);
  }
  return state;
}

}  // namespace

std::optional<RunState> load_checkpoint(Communicator& comm, const std::string& dir, DistributedDataParallel& ddp,
                                        ::torch::optim::Optimizer& optimizer, const std::string& fingerprint) {
  ErrorContext context{.rank = comm.rank(), .op = "load_checkpoint"};
  std::string path = checkpoint_path(dir);
  bool exists = std::filesystem::exists(path);
  // Rank 0 wrote it: when rank 0 has none, nobody resumes.
  std::uint8_t rank0_has = exists ? 1 : 0;
  broadcast(comm, &rank0_has, 1, DType::kU8, 0);
  if (!rank0_has) return std::nullopt;

  // Every rank reads and checks the whole file it uses; the first failing rank's reason (the
  // damaged tensor, say) then reaches every rank.
  std::exception_ptr failure;
  RunState state;
  try {
    if (!exists) throw InvalidArgument(context, fmt::format("{} exists on rank 0 but not here: the checkpoint "
                                                            "directory must be shared by every rank", path));
    ::torch::serialize::InputArchive archive;
    archive.load_from(path);
    ChecksumTable table = read_checksums(archive, context, path);
    state = restore(archive, CheckedReader{table, context, path}, comm, ddp, optimizer, fingerprint);
  } catch (const Error&) {
    failure = std::current_exception();
  } catch (const c10::Error& e) {  // a damaged or foreign archive
    failure = std::make_exception_ptr(Corrupt(context, fmt::format("cannot read {}: {}", path, e.what_without_backtrace())));
  }
  rethrow_first_failure(comm, failure, "load_checkpoint");
  return state;
}

}  // namespace braid::torch
