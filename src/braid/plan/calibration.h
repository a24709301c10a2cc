// Fitting the cost model to measurements (braid-bench --json rows): alpha and beta of one
// (operation, algorithm) by least squares on the model T = a(n) alpha + b(n) S beta
// (+ c(n) S gamma with gamma given).
//
// The residuals are relative, (predicted - measured) / measured, because the sizes of a sweep
// span five orders of magnitude: plain least squares would fit the 256 MiB point and ignore
// the latency-bound small sizes. A negative alpha or beta (noise) is clamped to zero and the
// other refitted alone.
//
// An implementation changes algorithm with the message size (braid's tuner does), and a host's
// caches make small messages cheaper per byte, so one (alpha, beta) rarely fits a whole sweep.
// fit_segments splits the sizes into up to `max_segments` contiguous ranges with one fit each,
// choosing the split that minimises the total squared relative error (a table keyed by size
// range, as STYLE.md's "selection is data").
//
// A fit's own residuals say how well a few numbers describe the samples they were chosen for;
// `evaluate` scores a fitted model on other measurements (a later run, another world size), the
// held-out check that says whether it predicts.
#pragma once

#include <vector>

#include "braid/plan/cost_model.h"

namespace braid::plan {

struct Sample {
  double bytes = 0;
  int ranks = 2;
  double seconds = 0;
};

struct Fit {
  double min_bytes = 0, max_bytes = 0;  // the size range of the samples it was fitted on
  double alpha = 0;                     // seconds
  double beta = 0;                      // seconds per byte
  double bandwidth() const { return beta > 0 ? 1 / beta : 0; }
};

struct Prediction {
  Sample sample;
  double predicted = 0;
  double relative_error = 0;  // (predicted - measured) / measured
};

struct Calibration {
  Op op = Op::kAllreduce;
  Algorithm algorithm = Algorithm::kRing;
  double gamma = 0;
  std::vector<Fit> segments;  // sorted by size, covering the samples
  std::vector<Prediction> predictions;
  double rms_relative_error = 0;
  double max_relative_error = 0;  // absolute value

  // Seconds for `bytes` on `ranks` with the segment whose range holds `bytes` (the nearest one
  // outside every range).
  double predict(double bytes, int ranks) const;
};

// REQUIRES: at least 2 samples with distinct sizes per segment, every sample ranks >= 2 and
// seconds > 0 (InvalidArgument otherwise).
Calibration fit_cost_model(const std::vector<Sample>& samples, Op op, Algorithm algorithm, double gamma = 0);
Calibration fit_segments(const std::vector<Sample>& samples, Op op, Algorithm algorithm, int max_segments,
                         double gamma = 0);

// `model` with its predictions, rms and max relative error recomputed on `samples` (sorted by
// size); its op, algorithm, gamma and segments are kept. REQUIRES: model has a segment, samples
// non-empty with ranks >= 2 and seconds > 0 (InvalidArgument otherwise).
Calibration evaluate(Calibration model, const std::vector<Sample>& samples);

}  // namespace braid::plan
