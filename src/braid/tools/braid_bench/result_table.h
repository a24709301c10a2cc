// The rows braid-bench prints as it goes (one line per message size, nccl-tests style), and
// the same rows as JSON or CSV for plotting, calibration and comparisons.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace braid::bench {

using Cell = std::variant<std::int64_t, double, std::string>;

struct Column {
  std::string name;   // also the JSON / CSV key
  int width = 12;
  int precision = 2;  // digits after the point, for doubles
};

class ResultTable {
 public:
  ResultTable(std::string benchmark, std::vector<Column> columns);

  // Facts about the run (machine, transport, peer figures) written with the rows.
  void set_meta(const std::string& key, nlohmann::json value) { meta_[key] = std::move(value); }
  void print_comment(const std::string& line) const;  // "# ..." on stdout
  void print_header() const;
  // Records a row and prints it at once, so long sweeps show progress.
  void add_row(std::vector<Cell> row);

  void write_json(const std::string& path) const;
  void write_csv(const std::string& path) const;

 private:
  std::string benchmark_;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  nlohmann::json meta_ = nlohmann::json::object();
};

}  // namespace braid::bench
