// How OpenSSH 9.2's sshd reads a config line back (servconf.c process_server_config_line_depth
// and misc.c argv_split), re-implemented from the OpenSSH sources so the fuzz target can check
// that what gj-mpirun renders means exactly what it intended. Kept separate from the code under
// test on purpose.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gj::fuzz::sshd {

struct Line {
  std::string keyword;
  std::vector<std::string> args;
};

// argv_split(s, .., terminate_on_comment=1). nullopt where sshd reports "invalid quotes".
inline std::optional<std::vector<std::string>> argv_split(const std::string& s) {
  std::vector<std::string> argv;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == '\t') {
      ++i;
      continue;
    }
    if (s[i] == '#') break;
    std::string arg;
    char quote = 0;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '\\') {
        const char n = i + 1 < s.size() ? s[i + 1] : '\0';
        if (n == '\'' || n == '"' || n == '\\' || (quote == 0 && n == ' ')) ++i;
        arg += s[i];
      } else if (quote == 0 && (c == ' ' || c == '\t')) {
        break;
      } else if (quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else if (quote != 0 && c == quote) {
        quote = 0;
      } else {
        arg += c;
      }
    }
    if (i >= s.size() && quote != 0) return std::nullopt;
    argv.push_back(arg);
  }
  return argv;
}

// One config line (without its '\n'): nullopt for blank and comment lines. sshd strips
// trailing whitespace (" \t\r\n\f"), takes the keyword up to the first blank or '=', then
// splits the rest with argv_split. A line whose quotes do not close is an error: returned as
// keyword "<invalid quotes>".
inline std::optional<Line> parse_line(std::string line) {
  while (!line.empty() && std::string(" \t\r\n\f").find(line.back()) != std::string::npos) line.pop_back();
  std::size_t i = line.find_first_not_of(" \t\r\n");
  if (i == std::string::npos || line[i] == '#') return std::nullopt;
  const std::size_t end = line.find_first_of(" \t\r\n=", i);
  Line out;
  out.keyword = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
  if (end == std::string::npos) return out;
  std::size_t rest = line.find_first_not_of(" \t\r\n", end);
  if (rest != std::string::npos && line[rest] == '=') rest = line.find_first_not_of(" \t\r\n", rest + 1);
  if (rest == std::string::npos) return out;
  auto args = argv_split(line.substr(rest));
  if (!args) {
    out.keyword = "<invalid quotes>";
    return out;
  }
  out.args = std::move(*args);
  return out;
}

}  // namespace gj::fuzz::sshd
