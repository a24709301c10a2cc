// braid-train: data-parallel training of real models over braid (the project's main job).
//   braid-run -n 4 braid-train --model cnn --epochs 2 --compress int8 --json int8.json
//   braid-run -n 2 braid-train --model gpt --steps 200 --optimizer adam --compress powersgd:4
//   braid-train compare none.json int8.json     # the runs' last epochs side by side
// Every rank parses the same command line, so a bad flag fails on every rank at once.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/elastic_trainer.h"
#include "braid/tools/braid_train/output_paths.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"
#include "braid/tools/braid_train/trainer.h"
#include "braid/tools/common/tool_main.h"

namespace {

int compare(const std::vector<std::string>& files) {
  std::vector<nlohmann::json> runs;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) throw braid::InvalidArgument({.op = "braid-train compare"}, file + ": cannot read");
    try {
      runs.push_back(nlohmann::json::parse(in));
    } catch (const nlohmann::json::exception& e) {
      throw braid::Corrupt({.op = "braid-train compare"}, file + ": not braid-train JSON: " + e.what());
    }
  }
  std::vector<std::string> names;
  for (const std::string& file : files) names.push_back(std::filesystem::path(file).stem().string());
  std::fputs(braid::train::comparison_table(runs, names).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"braid-train: data-parallel training (Fashion-MNIST mlp/cnn, character-level gpt on fortunes) over "
               "braid.\nRun under a launcher: braid-run -n 4 braid-train --model cnn --epochs 2 --compress int8"};
  braid::train::TrainConfig config;
  braid::train::add_train_flags(app, config);
  std::vector<std::string> compare_files;
  CLI::App* compare_cmd = app.add_subcommand("compare", "print several runs' --json files side by side");
  compare_cmd->add_option("files", compare_files, "braid-train --json outputs")->required()->check(CLI::ExistingFile);
  // LibTorch's c10::Error and the like are std::exceptions: the guard reports them as failures.
  return braid::tools::run_tool("braid-train", app, argc, argv, [&] {
    if (compare_cmd->parsed()) return compare(compare_files);
    braid::train::restart_with_better_blas_core(argv);  // returns when there is nothing better, or no way
    // --elastic joins through braid-run --elastic's store (elastic_trainer.h), not Communicator::init.
    if (config.elastic) {
      braid::train::train_elastic(config);
      return 0;
    }
    braid::Communicator comm = braid::Communicator::init();
    // Refused before the first step; InvalidArgument is the command line's fault and exits 2.
    braid::train::validate(config, comm.size());
    braid::train::check_output_paths(comm, config);
    braid::train::train(comm, config);
    return 0;
  });
}
