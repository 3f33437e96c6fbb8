// Shared pieces of the fuzz targets: the invariant check that aborts (so libFuzzer and the
// corpus replay driver both report it), input decoding, and independent oracles. The oracles
// are written here from the specification, not taken from the code under test, so a bug in
// the agent's own validator cannot hide itself.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gj::fuzz {

// Shows the offending value with control bytes escaped, so the report is one readable line.
inline std::string printable(std::string_view s, std::size_t limit = 300) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > limit) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

[[noreturn]] inline void fail(const char* invariant, std::string_view detail) {
  std::fprintf(stderr, "INVARIANT VIOLATED: %s: %s\n", invariant, printable(detail).c_str());
  std::fflush(stderr);
  std::abort();
}

#define GJ_FUZZ_CHECK(cond, detail)        \
  do {                                     \
    if (!(cond)) ::gj::fuzz::fail(#cond, (detail)); \
  } while (0)

// RFC 1035/1123 host name, as the platform contract requires of every host we hand to ssh or
// mpiexec: <= 253 chars, dot-separated labels of 1..63 [A-Za-z0-9-], no label starting or
// ending with '-'. A name can therefore never look like an option or carry shell syntax.
inline bool is_valid_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label_len = 0;
  char prev = '.';
  for (const char c : name) {
    if (c == '.') {
      if (label_len == 0 || prev == '-') return false;
      label_len = 0;
    } else {
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && c != '-') return false;
      if (c == '-' && label_len == 0) return false;
      if (++label_len > 63) return false;
    }
    prev = c;
  }
  return label_len > 0 && prev != '-';
}

// Characters a POSIX shell or sshd_config tokenizer treats specially, plus every control byte.
inline bool has_shell_or_control_char(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return true;
    if (std::string_view(" \"'`$;&|<>()\\*?[]{}!#~").find(ch) != std::string_view::npos) return true;
  }
  return false;
}

inline int hex_digit(char h) {
  if (h >= '0' && h <= '9') return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  if (h >= 'A' && h <= 'F') return h - 'A' + 10;
  return -1;
}

// Splits on '\n' (keeping empty fields, so "a\n\nb" has three) and decodes C escapes in each
// field: \n \t \r \0 \\ \xNN. Seeds stay readable text while the fuzzer can still reach every
// byte value, newlines inside values included.
inline std::string decode_escapes(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case '\\': out += '\\'; break;
      case 'x': {
        const int hi = i + 1 < s.size() ? hex_digit(s[i + 1]) : -1;
        const int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
        if (hi >= 0 && lo >= 0) {
          out += static_cast<char>(hi * 16 + lo);
          i += 2;
        } else {
          out += "\\x";
        }
        break;
      }
      default: out += '\\'; out += e; break;
    }
  }
  return out;
}

inline std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = s.find('\n', start);
    out.push_back(decode_escapes(s.substr(start, nl == std::string_view::npos ? nl : nl - start)));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

// "NAME=VALUE" lines -> pairs (a line without '=' becomes NAME with an empty value; the first
// '=' splits, as the kernel's environ does).
inline std::vector<std::pair<std::string, std::string>> parse_env_lines(std::string_view s) {
  std::vector<std::pair<std::string, std::string>> env;
  for (auto& line : split_lines(s)) {
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      env.emplace_back(line, "");
    } else {
      env.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
  }
  return env;
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace gj::fuzz
