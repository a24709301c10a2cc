#include "busbw_plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"

extern char** environ;

namespace braid::bench {

namespace {

// A gnuplot single-quoted string: a quote inside is written twice.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out || !(out << text) || !out.flush()) {
    throw InvalidArgument({.op = "braid-bench"}, fmt::format("cannot write '{}'", path));
  }
}

bool ran_anywhere(const std::vector<double>& seconds) {
  return std::any_of(seconds.begin(), seconds.end(), [](double t) { return !std::isnan(t); });
}

// Log2 sizes labelled with binary prefixes (1kiB, 4MiB), busbw from 0.
std::string axes(const AlgorithmSweep& sweep) {
  std::string s = "set xlabel 'message size (bytes)'\nset ylabel 'busbw (GB/s)'\n"
                  "set logscale x 2\nset format x '%.0b%BB'\nset yrange [0:*]\nset grid\nset key left top\n"
                  "set datafile missing 'NaN'\n";
  std::uint64_t smallest = 0, largest = 0;
  for (std::uint64_t bytes : sweep.bytes) {
    if (bytes > 0 && smallest == 0) smallest = bytes;
    largest = std::max(largest, bytes);
  }
  if (smallest > 0 && largest > smallest) s += fmt::format("set xrange [{}:{}]\n", smallest, largest);
  return s;
}

// One line per algorithm that ran at some size, then the memcpy reference.
std::string plot_command(const AlgorithmSweep& sweep, const PlotFiles& files) {
  std::string s = "plot ";
  bool first = true;
  for (std::size_t a = 0; a < sweep.algorithms.size(); ++a) {
    if (!ran_anywhere(sweep.seconds[a])) continue;  // a line without points only clutters the key
    s += fmt::format("{} using 1:{} with linespoints linewidth 2 title {}, \\\n     ",
                     first ? quoted(files.dat) : "''", a + 2, quoted(sweep.algorithms[a]));
    first = false;
  }
  return s + "memcpy with lines dashtype 2 linecolor rgb 'black' title sprintf('memcpy (1 thread) %.1f GB/s', memcpy)\n";
}

std::string in_directory(const PlotFiles& files, const std::string& name) { return files.directory + "/" + name; }

// Runs `gnuplot args...` in `directory` (stdout to /dev/null when quiet); its exit status, or
// -1 when it could not be started (not installed). posix_spawn rather than fork: the
// communicator's threads are running.
int run_gnuplot(const std::vector<std::string>& args, const std::string& directory, bool quiet) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, directory.c_str());
  if (quiet) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> storage{"gnuplot"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // glibc reports a missing binary as exit status 127 of the child rather than ENOENT.
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 127 ? -1 : WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace

PlotFiles plot_files_for(const std::string& png_path) {
  PlotFiles files;
  const auto slash = png_path.rfind('/');
  files.directory = slash == std::string::npos ? "." : (slash == 0 ? "/" : png_path.substr(0, slash));
  files.png = slash == std::string::npos ? png_path : png_path.substr(slash + 1);
  const bool has_png = files.png.size() > 4 && files.png.ends_with(".png");
  const std::string stem = has_png ? files.png.substr(0, files.png.size() - 4) : files.png;
  files.dat = stem + ".dat";
  files.gp = stem + ".gp";
  return files;
}

std::string plot_data(const AlgorithmSweep& sweep, const PlotLabels& labels) {
  std::string text = "# braid-bench " + sweep.name + ": busbw (GB/s) per algorithm; NaN = not run\n# bytes";
  for (const std::string& name : sweep.algorithms) text += " " + name;
  text += "\n";
  for (std::size_t s = 0; s < sweep.bytes.size(); ++s) {
    text += std::to_string(sweep.bytes[s]);
    for (const auto& per_size : sweep.seconds) {
      const double seconds = per_size[s];
      const bool ran = !std::isnan(seconds) && seconds > 0;
      text += ran ? fmt::format(" {:.4f}", static_cast<double>(sweep.bytes[s]) / seconds / 1e9 * labels.busbw_factor)
                  : std::string(" NaN");
    }
    text += "\n";
  }
  return text;
}

std::string plot_script(const AlgorithmSweep& sweep, const PlotLabels& labels, const PlotFiles& files) {
  std::string s = fmt::format("# braid-bench {} --plot: busbw against message size. Redraw: cd {} && gnuplot {}\n",
                              sweep.name, files.directory, files.gp);
  s += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
       "  set terminal pngcairo size 1100,700 noenhanced\n"
       "} else {\n"
       "  set terminal png size 1100,700 noenhanced\n"
       "}\n";
  s += "set output " + quoted(files.png) + "\n";
  s += "set title " + quoted(fmt::format("braid-bench {}: {} ranks, {} (busbw = algbw * {:.3f})", sweep.name,
                                         labels.ranks, labels.dtype, labels.busbw_factor)) + "\n";
  s += axes(sweep);
  s += fmt::format("memcpy = {:.3f}\n", labels.memcpy_gbs);
  return s + plot_command(sweep, files);
}

bool gnuplot_available() { return run_gnuplot({"--version"}, "", /*quiet=*/true) == 0; }

std::string gnuplot_missing_message() {
  return "--plot needs gnuplot, which was not found on PATH: install it (Debian: apt-get install gnuplot-nox)";
}

void draw_busbw_plot(const AlgorithmSweep& sweep, const PlotLabels& labels, const std::string& png_path) {
  const PlotFiles files = plot_files_for(png_path);
  write_file(in_directory(files, files.dat), plot_data(sweep, labels));
  write_file(in_directory(files, files.gp), plot_script(sweep, labels, files));
  const int status = run_gnuplot({files.gp}, files.directory, /*quiet=*/false);
  if (status < 0) throw InvalidArgument({.op = "braid-bench"}, gnuplot_missing_message());
  if (status != 0) {
    throw InvalidArgument({.op = "braid-bench"},
                          fmt::format("gnuplot {} failed (exit status {})", in_directory(files, files.gp), status));
  }
  struct stat info {};
  if (::stat(in_directory(files, files.png).c_str(), &info) != 0 || info.st_size == 0) {
    throw InvalidArgument({.op = "braid-bench"}, fmt::format("gnuplot left no image at {}", png_path));
  }
}

}  // namespace braid::bench
