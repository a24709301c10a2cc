#include "braid/plan/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

[[noreturn]] void fail(const std::string& what) { throw InvalidArgument({.op = "braid-plan calibrate"}, what); }

CostCoefficients coefficients_of(Op op, Algorithm algorithm, int ranks) {
  std::optional<CostCoefficients> c = cost_coefficients(op, algorithm, ranks);
  if (!c) {
    fail(fmt::format("the cost model has no single-link formula for {} with algorithm {}; calibrate it as "
                     "ring, tree, recursive_doubling or rabenseifner",
                     op_kind_name(op), algorithm_name(algorithm)));
  }
  return *c;
}

double model_time(const CostCoefficients& c, const Fit& f, double bytes, double gamma) {
  return c.messages * f.alpha + c.bytes_factor * bytes * f.beta + c.reduce_factor * bytes * gamma;
}

// Least squares on relative residuals: minimise sum ((a_i alpha + b_i beta + g_i) / t_i - 1)^2.
Fit fit_range(const std::vector<Sample>& s, std::size_t begin, std::size_t end, Op op, Algorithm algorithm,
              double gamma) {
  double saa = 0, sab = 0, sbb = 0, sar = 0, sbr = 0;
  for (std::size_t i = begin; i < end; ++i) {
    CostCoefficients c = coefficients_of(op, algorithm, s[i].ranks);
    const double a = c.messages / s[i].seconds;
    const double b = c.bytes_factor * s[i].bytes / s[i].seconds;
    const double r = 1 - c.reduce_factor * s[i].bytes * gamma / s[i].seconds;
    saa += a * a, sab += a * b, sbb += b * b, sar += a * r, sbr += b * r;
  }
  Fit f{s[begin].bytes, s[end - 1].bytes, 0, 0};
  const double det = saa * sbb - sab * sab;
  if (std::fabs(det) > 1e-12 * std::max(saa * sbb, 1e-300)) {
    f.alpha = (sar * sbb - sbr * sab) / det;
    f.beta = (saa * sbr - sab * sar) / det;
  }
  if (f.alpha < 0 || f.beta <= 0 || std::fabs(det) <= 1e-12 * std::max(saa * sbb, 1e-300)) {
    // Clamp: the better of bandwidth alone and latency alone.
    Fit only_beta = f, only_alpha = f;
    only_beta.alpha = 0, only_beta.beta = sbb > 0 ? std::max(0.0, sbr / sbb) : 0;
    only_alpha.beta = 0, only_alpha.alpha = saa > 0 ? std::max(0.0, sar / saa) : 0;
    auto cost = [&](const Fit& fit) {
      double sum = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const double p = model_time(coefficients_of(op, algorithm, s[i].ranks), fit, s[i].bytes, gamma);
        sum += (p / s[i].seconds - 1) * (p / s[i].seconds - 1);
      }
      return sum;
    };
    f = cost(only_beta) <= cost(only_alpha) ? only_beta : only_alpha;
  }
  return f;
}

double squared_error(const std::vector<Sample>& s, std::size_t begin, std::size_t end, const Fit& f, Op op,
                     Algorithm algorithm, double gamma) {
  double sum = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const double p = model_time(coefficients_of(op, algorithm, s[i].ranks), f, s[i].bytes, gamma);
    sum += (p / s[i].seconds - 1) * (p / s[i].seconds - 1);
  }
  return sum;
}

std::vector<Sample> checked_sorted(std::vector<Sample> samples) {
  for (const Sample& s : samples) {
    if (s.ranks < 2) fail(fmt::format("a sample has ranks = {}; calibration needs ranks >= 2", s.ranks));
    if (!(s.seconds > 0) || !std::isfinite(s.seconds)) fail(fmt::format("a sample has time {} s; it must be > 0", s.seconds));
    if (!(s.bytes >= 0) || !std::isfinite(s.bytes)) fail(fmt::format("a sample has size {}; it must be >= 0", s.bytes));
  }
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.bytes < b.bytes; });
  return samples;
}

void finish(Calibration& cal, const std::vector<Sample>& samples) {
  double sum = 0;
  for (const Sample& s : samples) {
    const double p = cal.predict(s.bytes, s.ranks);
    const double rel = (p - s.seconds) / s.seconds;
    cal.predictions.push_back({s, p, rel});
    sum += rel * rel;
    cal.max_relative_error = std::max(cal.max_relative_error, std::fabs(rel));
  }
  cal.rms_relative_error = samples.empty() ? 0 : std::sqrt(sum / samples.size());
}

}  // namespace

double Calibration::predict(double bytes, int ranks) const {
  if (segments.empty()) fail("the calibration has no fitted segment");
  const Fit* chosen = &segments.front();
  for (const Fit& f : segments) {
    if (bytes >= f.min_bytes) chosen = &f;
  }
  return model_time(coefficients_of(op, algorithm, ranks), *chosen, bytes, gamma);
}

Calibration fit_cost_model(const std::vector<Sample>& samples, Op op, Algorithm algorithm, double gamma) {
  return fit_segments(samples, op, algorithm, 1, gamma);
}

Calibration fit_segments(const std::vector<Sample>& input, Op op, Algorithm algorithm, int max_segments,
                         double gamma) {
  require_range("segments", max_segments, 1, 8);
  std::vector<Sample> s = checked_sorted(input);
  const std::size_t n = s.size();
  if (n < 2 || s.front().bytes == s.back().bytes) fail("calibration needs samples of at least two message sizes");
  constexpr std::size_t kMinPoints = 3;  // a segment of two points fits exactly and says nothing
  const std::size_t k_max = std::min<std::size_t>(max_segments, std::max<std::size_t>(1, n / kMinPoints));
  // best[k][i]: least error covering s[0, i) with k segments; split[k][i]: start of the last one.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(k_max + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> split(k_max + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= k_max; ++k) {
    for (std::size_t end = 1; end <= n; ++end) {
      for (std::size_t begin = 0; begin < end; ++begin) {
        if (best[k - 1][begin] == inf) continue;
        if (k_max > 1 && end - begin < kMinPoints && !(k == 1 && begin == 0 && end == n)) continue;
        if (s[begin].bytes == s[end - 1].bytes && end - begin > 1 && k_max > 1) continue;
        // A segment must not split samples of one size between two fits.
        if (end < n && s[end].bytes == s[end - 1].bytes) continue;
        Fit f = fit_range(s, begin, end, op, algorithm, gamma);
        const double e = best[k - 1][begin] + squared_error(s, begin, end, f, op, algorithm, gamma);
        if (e < best[k][end]) best[k][end] = e, split[k][end] = begin;
      }
    }
  }
  std::size_t k_best = 1;
  for (std::size_t k = 1; k <= k_max; ++k) {
    // A further segment must earn its keep: at least a 20% smaller error.
    if (best[k][n] < 0.8 * best[k_best][n]) k_best = k;
  }
  Calibration cal{op, algorithm, gamma, {}, {}, 0, 0};
  for (std::size_t k = k_best, end = n; k > 0; --k) {
    const std::size_t begin = split[k][end];
    cal.segments.insert(cal.segments.begin(), fit_range(s, begin, end, op, algorithm, gamma));
    end = begin;
  }
  finish(cal, s);
  return cal;
}

Calibration evaluate(Calibration model, const std::vector<Sample>& samples) {
  if (model.segments.empty()) fail("the model to evaluate has no fitted segment");
  if (samples.empty()) fail("no samples to evaluate the model on");
  model.predictions.clear();
  model.rms_relative_error = model.max_relative_error = 0;
  finish(model, checked_sorted(samples));
  return model;
}

}  // namespace braid::plan
