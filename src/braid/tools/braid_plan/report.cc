#include "report.h"

#include <algorithm>

#include <fmt/format.h>

#include "braid/plan/units.h"

namespace braid::plan::cli {

std::string format_value(const Estimate& e) {
  switch (e.unit) {
    case Unit::kBytes: return format_bytes(e.value);
    case Unit::kSeconds: return format_seconds(e.value);
    case Unit::kRatio: return fmt::format("{:.4f} ({:.2f}%)", e.value, 100 * e.value);
    case Unit::kFlops: return format_flops(e.value);
    case Unit::kBytesPerSecond: return format_rate(e.value);
    case Unit::kCount: break;
  }
  return num(e.value);
}

namespace {

void render_table(const Table& table, std::string& out) {
  std::vector<std::size_t> width(table.columns.size(), 0);
  for (std::size_t c = 0; c < table.columns.size(); ++c) width[c] = table.columns[c].size();
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text = " ";
    for (std::size_t c = 0; c < cells.size() && c < width.size(); ++c) {
      text += fmt::format(" {:>{}}", cells[c], width[c]);
    }
    out += text + "\n";
  };
  out += "\n" + table.heading + "\n";
  line(table.columns);
  for (const auto& row : table.rows) line(row);
}

}  // namespace

std::string render_text(const Report& report, bool explain) {
  std::string out;
  if (report.tables_first) {
    for (const Table& table : report.tables) render_table(table, out);
  }
  for (const Section& section : report.sections) {
    out += "\n" + section.heading + "\n";
    std::size_t name_width = 0;
    for (const Estimate& e : section.items) name_width = std::max(name_width, e.name.size());
    for (const Estimate& e : section.items) {
      out += fmt::format("  {:<{}}  {}\n", e.name, name_width, format_value(e));
      if (explain) {
        out += fmt::format("  {:<{}}    = {}\n", "", name_width, e.formula);
        out += fmt::format("  {:<{}}    = {}\n", "", name_width, e.substituted);
      }
    }
  }
  if (!report.tables_first) {
    for (const Table& table : report.tables) render_table(table, out);
  }
  if (!report.findings.empty()) out += "\nchecks\n";
  for (const Finding& f : report.findings) {
    out += fmt::format("  {:<7} {}: {}\n", severity_name(f.severity), f.rule, f.message);
  }
  if (!report.notes.empty()) out += "\n";
  for (const std::string& note : report.notes) out += "note: " + note + "\n";
  if (!out.empty() && out.front() == '\n') out.erase(0, 1);
  return out;
}

nlohmann::json render_json(const Report& report) {
  nlohmann::json doc = {{"command", report.command}, {"inputs", report.inputs}};
  nlohmann::json sections = nlohmann::json::array();
  for (const Section& s : report.sections) {
    nlohmann::json items = nlohmann::json::array();
    for (const Estimate& e : s.items) {
      items.push_back({{"name", e.name}, {"value", e.value}, {"unit", unit_name(e.unit)}, {"formula", e.formula},
                       {"substituted", e.substituted}});
    }
    sections.push_back({{"heading", s.heading}, {"results", items}});
  }
  doc["sections"] = sections;
  nlohmann::json tables = nlohmann::json::array();
  for (const Table& t : report.tables) tables.push_back({{"heading", t.heading}, {"rows", t.json_rows}});
  doc["tables"] = tables;
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : report.findings) {
    findings.push_back({{"rule", f.rule}, {"severity", severity_name(f.severity)}, {"message", f.message}});
  }
  doc["findings"] = findings;
  doc["notes"] = report.notes;
  return doc;
}

}  // namespace braid::plan::cli
