// What a braid-plan subcommand produces, independent of how it is shown: sections of
// Estimates, tables (layouts, calibration residuals), rule findings and notes. One Report is
// printed as a human-readable table, with --explain as formulas with the numbers substituted,
// or with --json as one JSON document.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "braid/plan/estimate.h"
#include "braid/plan/rules.h"

namespace braid::plan::cli {

struct Section {
  std::string heading;
  Estimates items;
};

struct Table {
  std::string heading;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // as printed
  nlohmann::json json_rows = nlohmann::json::array();  // the same rows with numbers as numbers
};

struct Report {
  std::string command;
  nlohmann::json inputs = nlohmann::json::object();
  std::vector<Section> sections;
  std::vector<Table> tables;
  std::vector<Finding> findings;
  std::vector<std::string> notes;
  bool tables_first = false;  // the table is the answer (advise), the sections its detail
};

// An Estimate's value in its unit for people: "245.00 GB (228.17 GiB)", "81.70 ms", "27.27%".
std::string format_value(const Estimate& estimate);

std::string render_text(const Report& report, bool explain);
nlohmann::json render_json(const Report& report);

}  // namespace braid::plan::cli
