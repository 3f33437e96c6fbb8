// The line format of the rank socket (the library <-> its rank wrapper, docs/collectives.md
// "Failure") and of the job monitor's connection (rank wrapper <-> master, docs/agent.md "Rank
// failures"): one message per line, ASCII. First word: the verb; then key=value fields without
// spaces; a last field `reason=` runs to the end of the line. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gj {

struct MonitorLine {
  std::string verb;
  std::map<std::string, std::string> fields;
  std::optional<std::string> reason;

  std::optional<std::string> get(const std::string& key) const;
  // The field as a whole number; nullopt when absent or not one.
  std::optional<std::int64_t> number(const std::string& key) const;
};

// nullopt for an empty line or one whose first word holds '='.
std::optional<MonitorLine> parse_monitor_line(const std::string& line);

// Field values lose spaces and control characters (made '_'); the reason loses newlines. No
// trailing newline.
std::string format_monitor_line(const std::string& verb, const std::vector<std::pair<std::string, std::string>>& fields,
                                const std::optional<std::string>& reason = std::nullopt);

// Splits complete lines off the front of `buffer` (each without its '\n'); a partial last line
// stays. A line longer than max_line is cut (the rest up to its newline dropped).
std::vector<std::string> take_lines(std::string& buffer, std::size_t max_line = 4096);

}  // namespace gj
