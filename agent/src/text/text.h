// Small string helpers every agent source uses (one copy, not one per file). Pure, header-only,
// part of the text library's include directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gj {

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Without leading and trailing spaces, tabs, CRs and newlines.
inline std::string trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i != 0) out += sep;
    out += parts[i];
  }
  return out;
}

// Every field between separators, empty ones included ("a,,b" -> a, "", b; "" -> one empty field).
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace gj
