#include "value_parsers.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "agent_error.h"
#include "sys/quote.h"
#include "exit_codes.h"

namespace gj {
namespace {

[[noreturn]] void reject(const std::string& name, const std::string& value, const std::string& why,
                         const std::string& fix) {
  throw AgentError{exit_code::kBadEnvironment, quoted_setting(name, value) + " " + why + "; " + fix};
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Digits only; false when the value does not fit in int64.
bool digits_to_int64(const std::string& digits, std::int64_t& out) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t v = 0;
  for (char c : digits) {
    const int d = c - '0';
    if (v > (kMax - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::int64_t parse_count(const std::string& name, const std::string& value) {
  const std::string fix = "set it to a whole number >= 0";
  if (value.empty()) reject(name, value, "is empty", fix);
  if (value[0] == '-' && all_digits(value.substr(1))) reject(name, value, "is negative", fix);
  if (!all_digits(value)) reject(name, value, "is not a non-negative integer", fix);
  std::int64_t v = 0;
  if (!digits_to_int64(value, v)) reject(name, value, "is too large (overflows a 64-bit integer)", fix);
  return v;
}

std::int64_t parse_cpu_quantity(const std::string& name, const std::string& value) {
  const std::string fix = "use a Kubernetes CPU quantity such as \"4\", \"2.5\" or \"4000m\"";
  if (value.empty()) reject(name, value, "is empty", fix);
  if (value[0] == '-') reject(name, value, "is negative", fix);
  std::string number = value;
  bool milli = false;
  if (number.back() == 'm') {
    milli = true;
    number.pop_back();
  }
  const auto dot = number.find('.');
  const std::string whole = number.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : number.substr(dot + 1);
  const auto digits_or_empty = [](const std::string& d) { return d.empty() || all_digits(d); };
  const bool well_formed = (!whole.empty() || !frac.empty()) && digits_or_empty(whole) && digits_or_empty(frac);
  if (!well_formed) reject(name, value, "is not a CPU quantity", fix);
  std::int64_t v = 0;
  if (!whole.empty() && !digits_to_int64(whole, v)) reject(name, value, "is too large (overflows a 64-bit integer)", fix);
  return milli ? v / 1000 : v;  // the fraction only matters below one CPU: floored away
}

bool parse_bool(const std::string& name, const std::string& value) {
  const std::string v = lower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  reject(name, value, "is not a boolean", "use 1/0, true/false, yes/no or on/off");
}

int parse_port(const std::string& name, const std::string& value) {
  const std::int64_t v = parse_count(name, value);
  if (v < 1 || v > 65535) reject(name, value, "is not a TCP port", "use a port between 1 and 65535");
  return static_cast<int>(v);
}

}  // namespace gj
