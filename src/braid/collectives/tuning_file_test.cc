// Tuning files: a table survives the write/read round trip, and every kind of malformed file
// raises InvalidArgument naming the file and what is wrong with it.
#include "braid/collectives/tuning_file.h"

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

TuningTable sample_table() {
  return {{{.op = OpKind::kAllreduce, .algorithm = "recursive_doubling", .min_bytes = 0, .max_bytes = 16383,
            .min_world = 4, .max_world = 4, .min_hosts = 1, .max_hosts = 1},
           {.op = OpKind::kAllreduce, .algorithm = "ring", .min_bytes = 16384, .min_world = 4, .max_world = 4},
           {.op = OpKind::kAllgather, .algorithm = "bruck", .max_bytes = 4096, .min_hosts = 2},
           {.op = OpKind::kBroadcast, .algorithm = "chain", .min_bytes = 1u << 20, .min_world = 3}}};
}

TEST(TuningFileTest, RoundTripKeepsEveryRule) {
  std::string text = tuning_json(sample_table(), R"({"hostname": "box", "world": 4})");
  TuningTable back = parse_tuning_json(text, "sample.json");
  EXPECT_EQ(back.rules, sample_table().rules);
  EXPECT_NE(text.find("\"hostname\": \"box\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"max_bytes\": null"), std::string::npos) << text;  // open bounds are null
}

TEST(TuningFileTest, LoadsFromDisk) {
  std::string path = ::testing::TempDir() + "/braid_tuning_file_test.json";
  std::ofstream(path) << tuning_json(sample_table());
  EXPECT_EQ(load_tuning_file(path).rules, sample_table().rules);
  std::remove(path.c_str());
}

TEST(TuningFileTest, AbsentBoundsAreOpenAndHeaderIsOptional) {
  TuningTable table = parse_tuning_json(R"({"rules": [{"op": "scatter", "algorithm": "linear"}]})", "min.json");
  ASSERT_EQ(table.rules.size(), 1u);
  EXPECT_EQ(table.rules[0], (TuningRule{.op = OpKind::kScatter, .algorithm = "linear"}));
  EXPECT_TRUE(parse_tuning_json(R"({"rules": []})", "empty.json").rules.empty());
}

// The message of parsing `text`, which must fail with InvalidArgument.
std::string error_of(const std::string& text) {
  try {
    parse_tuning_json(text, "bad.json");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return {};
}

std::string rule_file(const std::string& rule) { return R"({"version": 1, "rules": [)" + rule + "]}"; }

TEST(TuningFileTest, MalformedFilesNameTheFileAndTheProblem) {
  struct Case {
    std::string text;
    std::string expected;  // a part of the message
  };
  const Case cases[] = {
      {"{", "not valid JSON"},
      {R"({"rules": [], "version": 1e999})", "not valid JSON"},  // a number past a double (tuning_file_fuzz)
      {"[]", "top level must be a JSON object"},
      {R"({"version": 1})", "missing \"rules\""},
      {R"({"rules": {}})", "missing \"rules\""},
      {R"({"version": 2, "rules": []})", "version 2 is not supported"},
      {R"({"format": "nccl", "rules": []})", "format must be"},
      {R"({"rules": [], "extra": 1})", "unknown key 'extra'"},
      {R"({"metadata": [], "rules": []})", "metadata must be an object"},
      {rule_file("3"), "rules[0]: a rule must be an object"},
      {rule_file(R"({"algorithm": "ring"})"), "rules[0]: missing \"op\""},
      {rule_file(R"({"op": "allreduce"})"), "rules[0]: missing \"algorithm\""},
      {rule_file(R"({"op": 4, "algorithm": "ring"})"), "op must be a string"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring"}, {"op": "barrier", "algorithm": "pairwise"})"),
       "rules[1]: unknown op 'barrier'"},
      {rule_file(R"({"op": "alltoall", "algorithm": "pairwise"}, {"op": "alltoallv", "algorithm": "pairwise", "min_bytes": 1024})"),
       "rules[1]: alltoallv rules cannot bound bytes"},
      {rule_file(R"({"op": "allreduce", "algorithm": "fastest"})"), "unknown allreduce algorithm 'fastest' (available: ring"},
      {rule_file(R"({"op": "allgather", "algorithm": "tree"})"), "unknown allgather algorithm 'tree'"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "min_bytes": 10, "max_bytes": 9})"),
       "min_bytes 10 is larger than max_bytes 9"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "min_world": 5, "max_world": 4})"),
       "min_world 5 is larger than max_world 4"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "min_hosts": 3, "max_hosts": 2})"),
       "min_hosts 3 is larger than max_hosts 2"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "min_bytes": -1})"), "min_bytes must be an integer"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "max_bytes": 1.5})"), "max_bytes must be an integer"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "max_bytes": "1M"})"), "max_bytes must be an integer"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "max_world": 4294967296})"), "max_world must be an integer"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "min_world": 0})"), "must be at least 1"},
      {rule_file(R"({"op": "allreduce", "algorithm": "ring", "max_byte": 10})"), "rules[0]: unknown key 'max_byte'"},
  };
  for (const Case& c : cases) {
    std::string message = error_of(c.text);
    EXPECT_NE(message.find("tuning file 'bad.json'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << "for " << c.text << "\ngot: " << message;
  }
}

TEST(TuningFileTest, MissingFileNamesThePath) {
  try {
    load_tuning_file("/nonexistent/braid/tuning.json");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/braid/tuning.json"), std::string::npos) << e.what();
  }
}

// A directory opens like a file and reads as nothing: it used to be reported as "not valid JSON".
TEST(TuningFileTest, DirectoryIsNamedAsADirectory) {
  const std::string dir = ::testing::TempDir();
  try {
    load_tuning_file(dir);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.detail().find("cannot read tuning file '" + dir + "': it is a directory"), std::string::npos)
        << e.detail();
  }
}

TEST(TuningFileTest, MetadataMustBeAnObject) {
  EXPECT_THROW(tuning_json(sample_table(), "[1, 2]"), InvalidArgument);
  EXPECT_THROW(tuning_json(sample_table(), "{"), InvalidArgument);
}

}  // namespace
}  // namespace braid
