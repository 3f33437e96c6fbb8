#include "monitor_line.h"

#include <cstdlib>

namespace gj {

std::optional<std::string> MonitorLine::get(const std::string& key) const {
  const auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int64_t> MonitorLine::number(const std::string& key) const {
  const auto v = get(key);
  if (!v || v->empty() || v->size() > 19) return std::nullopt;
  std::size_t i = (*v)[0] == '-' ? 1 : 0;
  if (i == v->size()) return std::nullopt;
  for (std::size_t j = i; j < v->size(); ++j)
    if ((*v)[j] < '0' || (*v)[j] > '9') return std::nullopt;
  return std::strtoll(v->c_str(), nullptr, 10);
}

std::optional<MonitorLine> parse_monitor_line(const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  MonitorLine out;
  std::size_t pos = 0;
  bool first = true;
  while (pos < line.size()) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    if (pos >= line.size()) break;
    if (line.compare(pos, 7, "reason=") == 0 && !first) {
      out.reason = line.substr(pos + 7);
      break;
    }
    const auto end = line.find(' ', pos);
    const std::string word = line.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? line.size() : end;
    if (first) {
      if (word.find('=') != std::string::npos) return std::nullopt;
      out.verb = word;
      first = false;
      continue;
    }
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // not a field: ignored, as an unknown key is
    out.fields[word.substr(0, eq)] = word.substr(eq + 1);
  }
  if (out.verb.empty()) return std::nullopt;
  return out;
}

namespace {
std::string field_text(const std::string& v) {
  std::string out = v;
  for (char& c : out)
    if (c == ' ' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  return out;
}
}  // namespace

std::string format_monitor_line(const std::string& verb, const std::vector<std::pair<std::string, std::string>>& fields,
                                const std::optional<std::string>& reason) {
  std::string out = verb;
  for (const auto& [k, v] : fields) out += " " + k + "=" + field_text(v);
  if (reason) {
    std::string r = *reason;
    for (char& c : r)
      if (c == '\n' || c == '\r') c = ' ';
    out += " reason=" + r;
  }
  return out;
}

std::vector<std::string> take_lines(std::string& buffer, std::size_t max_line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto nl = buffer.find('\n', start);
    if (nl == std::string::npos) break;
    out.push_back(buffer.substr(start, std::min(nl - start, max_line)));
    start = nl + 1;
  }
  buffer.erase(0, start);
  // A line longer than max_line without its newline yet: keep its start only, so a program
  // that writes megabytes without a newline cannot grow the buffer.
  if (buffer.size() > max_line * 2) buffer.resize(max_line);
  return out;
}

}  // namespace gj
