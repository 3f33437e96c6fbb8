// The README's option table is written by hand for readers; this keeps it in step with
// settings_table(), the one source of every flag, variable and default.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "settings.h"

using namespace gj;

namespace {

struct Row {
  std::string option, variable, default_text;
};

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      const auto b = cur.find_first_not_of(' ');
      const auto e = cur.find_last_not_of(' ');
      out.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return out;
}

// Rows of the table under "### Options" in README.md.
std::vector<Row> readme_option_rows() {
  std::ifstream in(GJ_SOURCE_DIR "/README.md");
  REQUIRE(in);
  std::vector<Row> rows;
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) in_section = line == "### Options";
    if (!in_section || line.rfind("| ", 0) != 0 || line.rfind("| option", 0) == 0) continue;
    const auto c = cells(line);
    if (c.size() >= 3) rows.push_back({c[0], c[1], c[2]});
  }
  return rows;
}

}  // namespace

TEST_CASE("the README's option table matches settings_table()", "[cli][docs]") {
  const std::vector<Row> rows = readme_option_rows();
  REQUIRE(rows.size() > 10);
  for (const Setting& s : settings_table()) {
    if (s.platform()) continue;
    INFO(s.variable);
    const std::string var = std::string("`") + s.variable + "`";
    const Row* found = nullptr;
    for (const auto& r : rows)
      if (r.variable.rfind(var, 0) == 0) found = &r;
    REQUIRE(found != nullptr);
    for (const auto& f : s.flags) CHECK_THAT(found->option, Catch::Contains(std::string("`") + f.name));
    if (s.flags.empty()) CHECK(found->option.empty());
    const std::string want = s.shown_default().empty() ? "" : "`" + s.shown_default() + "`";
    CHECK(found->default_text == want);
  }
  for (const auto& r : rows) {
    if (r.variable.empty()) continue;
    INFO(r.variable);
    const auto end = r.variable.find('`', 1);
    REQUIRE(end != std::string::npos);
    CHECK_NOTHROW(setting(r.variable.substr(1, end - 1)));
  }
}
