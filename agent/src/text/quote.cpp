#include "quote.h"

#include <cstdio>

#include "session_env.h"

namespace gj {
namespace {

// Escapes at most `limit` bytes of `value` into `out`; returns how many it took. Without
// `quotes` (one_line) only control bytes are escaped.
std::size_t append_escaped(std::string& out, std::string_view value, std::size_t limit = kQuotedMaxChars,
                           bool quotes = true) {
  const std::size_t shown = value.size() > limit ? limit : value.size();
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (!quotes && c >= 0x20) {  // UTF-8 text in our own messages stays readable
      out += static_cast<char>(c);
      continue;
    }
    if (const char* e = short_escape(static_cast<char>(c))) {
      out += e;
    } else if (c < 0x20 || c >= 0x7f) {
      // Non-ASCII too: a cut UTF-8 sequence or U+2028 (a line break to some log viewers).
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return shown;
}

std::string length_note(std::size_t shown, std::size_t size) {
  return shown < size ? "... (" + std::to_string(size) + " bytes)" : "";
}

}  // namespace

const char* short_escape(char c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return nullptr;
  }
}

std::string quoted_value(std::string_view value) {
  std::string out = "\"";
  const std::size_t shown = append_escaped(out, value);
  return out + "\"" + length_note(shown, value.size());
}

std::string escaped_value(std::string_view value) {
  std::string out;
  const std::size_t shown = append_escaped(out, value);
  return out + length_note(shown, value.size());
}

std::string quoted_setting(std::string_view name, std::string_view value) {
  std::string out;
  const std::size_t shown = append_escaped(out, name);
  out += length_note(shown, name.size());
  if (is_secret_name(name)) return out + "=<redacted>";
  return out + "=" + quoted_value(value);
}

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  append_escaped(out, message, message.size(), false);
  return out;
}

}  // namespace gj
