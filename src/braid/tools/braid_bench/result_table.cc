#include "result_table.h"

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::bench {

namespace {

std::string format_cell(const Cell& cell, const Column& column) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return fmt::format("{:>{}}", *i, column.width);
  if (const auto* d = std::get_if<double>(&cell)) return fmt::format("{:>{}.{}f}", *d, column.width, column.precision);
  return fmt::format("{:>{}}", std::get<std::string>(cell), column.width);
}

nlohmann::json to_json(const Cell& cell) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  return std::get<std::string>(cell);
}

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InvalidArgument({.op = "braid-bench"}, fmt::format("cannot write '{}'", path));
  return out;
}

}  // namespace

ResultTable::ResultTable(std::string benchmark, std::vector<Column> columns)
    : benchmark_(std::move(benchmark)), columns_(std::move(columns)) {}

void ResultTable::print_comment(const std::string& line) const {
  std::printf("# %s\n", line.c_str());
  std::fflush(stdout);
}

void ResultTable::print_header() const {
  std::string line = "#";
  for (const auto& c : columns_) line += fmt::format(" {:>{}}", c.name, c.width);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void ResultTable::add_row(std::vector<Cell> row) {
  std::string line = " ";
  for (std::size_t i = 0; i < row.size() && i < columns_.size(); ++i) {
    line += ' ';
    line += format_cell(row[i], columns_[i]);
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  rows_.push_back(std::move(row));
}

void ResultTable::write_json(const std::string& path) const {
  nlohmann::json doc = {{"benchmark", benchmark_}, {"meta", meta_}, {"rows", nlohmann::json::array()}};
  for (const auto& row : rows_) {
    nlohmann::json object = nlohmann::json::object();
    for (std::size_t i = 0; i < row.size() && i < columns_.size(); ++i) object[columns_[i].name] = to_json(row[i]);
    doc["rows"].push_back(object);
  }
  open_output(path) << doc.dump(2) << "\n";
}

void ResultTable::write_csv(const std::string& path) const {
  std::ofstream out = open_output(path);
  for (std::size_t i = 0; i < columns_.size(); ++i) out << (i ? "," : "") << columns_[i].name;
  out << "\n";
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << to_json(row[i]).dump();
    out << "\n";
  }
}

}  // namespace braid::bench
