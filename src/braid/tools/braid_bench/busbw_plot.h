// `braid-bench <op> --plot out.png`: busbw (GB/s) against message size (log2 axis), one line
// per algorithm, and the memcpy bandwidth measured in the same run as a horizontal reference
// (the physical limit on one host, DESIGN.md). gnuplot draws it (Debian gnuplot-nox); the
// data (out.dat) and the script (out.gp) stay next to the image, so that it can be redrawn or
// restyled with `cd DIR && gnuplot out.gp` without running the benchmark again.
#pragma once

#include <string>

#include "algorithm_sweep.h"

namespace braid::bench {

struct PlotFiles {
  std::string directory;  // where gnuplot runs; the script names the others relative to it
  std::string png, dat, gp;  // file names within `directory`
};

// out.png -> {dir, out.png, out.dat, out.gp}; a name without .png gets .dat / .gp appended.
PlotFiles plot_files_for(const std::string& png_path);

struct PlotLabels {
  int ranks = 1;
  std::string dtype;
  double busbw_factor = 1;  // nccl-tests' factor of the operation
  double memcpy_gbs = 0;
};

// The data file: size, then busbw per algorithm (NaN where it did not run). Pure.
std::string plot_data(const AlgorithmSweep& sweep, const PlotLabels& labels);
// The gnuplot script (pngcairo where available, else png). Pure.
std::string plot_script(const AlgorithmSweep& sweep, const PlotLabels& labels, const PlotFiles& files);

// Whether a gnuplot binary can be run (found on PATH).
bool gnuplot_available();
// The error to raise when it is missing.
std::string gnuplot_missing_message();

// Writes the data and the script and runs gnuplot. InvalidArgument when gnuplot is missing,
// fails, or leaves no image. Called on rank 0 only.
void draw_busbw_plot(const AlgorithmSweep& sweep, const PlotLabels& labels, const std::string& png_path);

}  // namespace braid::bench
