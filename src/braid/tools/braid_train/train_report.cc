#include "braid/tools/braid_train/train_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace braid::train {
namespace {

std::string megabytes(std::uint64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); }

std::string quality(const EpochFigures& e, bool classification) {
  if (classification) return fmt::format("test accuracy {:.2f}%", 100 * e.test_accuracy);
  return fmt::format("val loss {:.4f} (perplexity {:.2f})", e.test_loss, std::exp(e.test_loss));
}

double throughput(const EpochFigures& e) { return e.samples_per_second() * static_cast<double>(e.tokens_per_sample); }

}  // namespace

// " bytes/step dp 1.2 MB, pp 0.5 MB, tp 3.4 MB (tp 12% of step time)" for mesh runs.
std::string axis_part(const EpochFigures& e) {
  if (e.axis_bytes_per_step.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [axis, bytes] : e.axis_bytes_per_step) parts.push_back(fmt::format("{} {:.2f} MB", axis, bytes / 1e6));
  std::string out = fmt::format("  per step {}", fmt::join(parts, ", "));
  if (e.axis_bytes_per_step.count("tp") && e.axis_bytes_per_step.at("tp") > 0) {
    out += fmt::format(" (tp collectives {:.0f}% of step time)", 100 * e.tp_share());
  }
  return out;
}

std::string epoch_line(const EpochFigures& e, bool classification) {
  return fmt::format("epoch {}: train loss {:.4f}  {}  {:.0f} {}/s  communication {:.0f}% of step time (exposed {:.0f}%)  "
                     "{} on the wire (rank 0)  compression {:.1f}x",
                     e.epoch, e.train_loss, quality(e, classification), throughput(e),
                     classification ? "samples" : "tokens", 100 * e.communication_share(), 100 * e.exposed_share(),
                     megabytes(e.wire_bytes), e.compression_ratio()) +
         axis_part(e);
}

std::string summary_table(const RunSummary& s, bool classification) {
  std::string out = fmt::format("\nbraid-train {}: {} ranks x {} thread(s), {} parameters, compress {}, overlap {}{}\n",
                                s.model, s.world, s.threads, s.parameters, s.compress, s.overlap ? "on" : "off",
                                s.resumed ? ", resumed from a checkpoint" : "");
  out += fmt::format("{:>5} {:>6} {:>10} {:>11} {:>12} {:>7} {:>8} {:>10} {:>6}\n", "epoch", "steps", "train loss",
                     classification ? "test acc %" : "val loss", classification ? "samples/s" : "tokens/s", "comm %",
                     "exposed%", "wire MB", "ratio");
  for (const EpochFigures& e : s.epochs) {
    out += fmt::format("{:>5} {:>6} {:>10.4f} {:>11.2f} {:>12.0f} {:>7.1f} {:>8.1f} {:>10.1f} {:>6.1f}\n", e.epoch,
                       e.steps, e.train_loss, classification ? 100 * e.test_accuracy : e.test_loss, throughput(e),
                       100 * e.communication_share(), 100 * e.exposed_share(), static_cast<double>(e.wire_bytes) / 1e6,
                       e.compression_ratio());
  }
  out += fmt::format("{} optimizer steps; final parameters identical on every rank (crc32c {:08x}); BLAS: {}\n",
                     s.steps, s.parameter_digest, s.blas);
  out += fmt::format("model states {} per rank (rank 0: {} parameters, gradients, optimizer state{}){}\n",
                     megabytes(static_cast<std::uint64_t>(s.model_state.total())), s.parameter_dtype,
                     s.model_state.master > 0 ? ", fp32 master shards" : "",
                     s.zero_stage > 0 ? fmt::format("; ZeRO stage {}{}", s.zero_stage,
                                                    s.zero_pp.empty() ? "" : " with ZeRO++ " + s.zero_pp)
                                      : "");
  if (s.moe) out += moe_summary(*s.moe);
  return out;
}

nlohmann::json to_json(const RunSummary& s, const TrainConfig& c) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochFigures& e : s.epochs) {
    epochs.push_back({{"epoch", e.epoch},
                      {"steps", e.steps},
                      {"samples", e.samples},
                      {"train_loss", e.train_loss},
                      {"test_loss", e.test_loss},
                      {"test_accuracy", e.test_accuracy},
                      {"seconds", e.seconds},
                      {"step_seconds", e.step_seconds},
                      {"samples_per_second", e.samples_per_second()},
                      {"tokens_per_second", throughput(e)},
                      {"communication_share", e.communication_share()},
                      {"exposed_share", e.exposed_share()},
                      {"communication_seconds", e.communication_seconds},
                      {"exposed_seconds", e.exposed_seconds},
                      {"wire_bytes", e.wire_bytes},
                      {"dense_wire_bytes", e.dense_wire_bytes},
                      {"compression_ratio", e.compression_ratio()},
                      {"axis_bytes_per_step", e.axis_bytes_per_step},
                      {"tp_seconds", e.tp_seconds},
                      {"tp_share", e.tp_share()},
                      {"zero_wire", {{"gradients", e.zero_wire.gradients},
                                     {"parameters", e.zero_wire.parameters},
                                     {"fp32_each", e.zero_wire.fp32_each},
                                     {"gradient_transport", e.zero_wire.gradient_transport}}}});
  }
  nlohmann::json report = {{"model", s.model},
          {"world", s.world},
          {"threads", s.threads},
          {"parameters", s.parameters},
          {"compress", s.compress},
          {"overlap", s.overlap},
          {"batch", c.batch},
          {"accumulate", c.accumulate},
          {"optimizer", c.optimizer},
          {"lr", c.learning_rate()},
          {"blas", s.blas},
          {"data", s.data},
          {"steps", s.steps},
          {"resumed", s.resumed},
          {"parameter_digest", fmt::format("{:08x}", s.parameter_digest)},
          {"mesh", {{"dp", s.world / (c.pp * c.tp)}, {"pp", c.pp}, {"tp", c.tp}, {"sp", c.sequence_parallel}}},
          {"step_losses", s.step_losses},
          {"zero_stage", s.zero_stage},
          {"zero_pp", s.zero_pp},
          {"precision", s.precision},
          {"parameter_dtype", s.parameter_dtype},
          {"loss_scale", s.loss_scale},
          {"skipped_steps", s.skipped_steps},
          {"model_state_bytes", s.model_state.total()},
          {"model_state", {{"parameters", s.model_state.parameters},
                           {"gradients", s.model_state.gradients},
                           {"master", s.model_state.master},
                           {"optimizer_state", s.model_state.optimizer_state},
                           {"communication_buffers", s.model_state.communication_buffers},
                           {"peak_gradients", s.model_state.peak_gradients}}},
          {"epochs", epochs}};
  if (s.gathers) {
    const RunSummary::Gathers& g = *s.gathers;
    report["gathers"] = {{"units", g.units}, {"max_gathered_units", g.cap}, {"max_gathered", g.max_gathered},
                         {"peak_gathered_bytes", g.peak_gathered_bytes}, {"allgathers", g.allgathers},
                         {"reduce_scatters", g.reduce_scatters},
                         {"storage_bytes_after_step", g.storage_bytes_after_step}, {"pool_bytes", g.pool_bytes},
                         {"host_allgathers", g.host_allgathers}};
  }
  if (!s.elastic_events.empty()) {
    nlohmann::json events = nlohmann::json::array();
    for (const RunSummary::ElasticEvent& e : s.elastic_events) {
      events.push_back({{"generation", e.generation}, {"lost", e.lost}, {"joined", e.joined},
                        {"world_after", e.world_after},
                        {"noticed_at_step", e.noticed_at_step}, {"resume_step", e.resume_step},
                        {"steps_lost", e.steps_lost}, {"recover_seconds", e.recover_seconds}});
    }
    report["elastic_events"] = events;
  }
  if (s.moe) report["moe"] = moe_json(*s.moe);
  return report;
}

std::string comparison_table(const std::vector<nlohmann::json>& runs, const std::vector<std::string>& names) {
  std::string out = fmt::format("{:<28} {:>9} {:>8} {:>12} {:>11} {:>7} {:>8} {:>9} {:>6}\n", "run", "compress",
                                "overlap", "throughput/s", "quality", "comm %", "exposed%", "wire MB", "ratio");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json& run = runs[i];
    if (!run.contains("epochs") || run["epochs"].empty()) continue;
    const nlohmann::json& last = run["epochs"].back();
    bool classification = last.value("test_accuracy", -1.0) >= 0;
    std::string quality = classification ? fmt::format("{:.2f}% acc", 100 * last.value("test_accuracy", 0.0))
                                         : fmt::format("{:.3f} loss", last.value("test_loss", 0.0));
    out += fmt::format("{:<28} {:>9} {:>8} {:>12.0f} {:>11} {:>7.1f} {:>8.1f} {:>9.1f} {:>6.1f}\n", names[i],
                       run.value("compress", "?"), run.value("overlap", true) ? "on" : "off",
                       last.value(classification ? "samples_per_second" : "tokens_per_second", 0.0), quality,
                       100 * last.value("communication_share", 0.0), 100 * last.value("exposed_share", 0.0),
                       last.value("wire_bytes", 0.0) / 1e6, last.value("compression_ratio", 1.0));
  }
  return out;
}

}  // namespace braid::train
