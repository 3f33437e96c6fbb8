#include "value_parsers.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "agent_error.h"
#include "bool_word.h"
#include "quote.h"
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
  // Kubernetes' quantity grammar: [+-] digits [. digits] then a binary-SI suffix (Ki Mi Gi Ti Pi
  // Ei), a decimal-SI suffix (n u m k M G T P E) or a decimal exponent (e/E [+-] digits).
  const std::string fix = "use a Kubernetes CPU quantity such as \"4\", \"2.5\", \"4000m\" or \"1e3\"";
  if (value.empty()) reject(name, value, "is empty", fix);
  std::size_t i = 0;
  if (value[0] == '+' || value[0] == '-') ++i;
  const bool negative = value[0] == '-';
  std::string whole, fraction;  // the digits before and after the point, as written
  bool dot = false;
  for (; i < value.size(); ++i) {
    const char c = value[i];
    if (c >= '0' && c <= '9') (dot ? fraction : whole) += c;
    else if (c == '.' && !dot) dot = true;
    else break;
  }
  if (whole.empty() && fraction.empty()) reject(name, value, "is not a CPU quantity", fix);
  const std::string suffix = value.substr(i);
  int exponent10 = 0;  // value = whole.fraction * 10^exponent10 * 1024^binary
  int binary = 0;
  static const std::pair<const char*, int> kDecimal[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3},
                                                         {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static const std::pair<const char*, int> kBinary[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3}, {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  bool known = false;
  for (const auto& [sfx, e] : kDecimal)
    if (suffix == sfx) known = true, exponent10 = e;
  for (const auto& [sfx, b] : kBinary)
    if (suffix == sfx) known = true, binary = b;
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::size_t j = 1;
    const bool neg = suffix[j] == '-';
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    const std::string exp_digits = suffix.substr(j);
    if (all_digits(exp_digits) && exp_digits.size() <= 3) {
      known = true;
      exponent10 = (neg ? -1 : 1) * std::stoi(exp_digits);
    }
  }
  if (!known) reject(name, value, "is not a CPU quantity", fix);
  const bool zero = (whole + fraction).find_first_not_of('0') == std::string::npos;
  if (negative && !zero) reject(name, value, "is negative", fix);
  if (zero) return 0;
  // Exactly: move the point by the exponent, then floor((whole + 0.fraction) * 1024^binary),
  // however many digits either part has (a small value may be written with many).
  if (exponent10 > 0) {
    fraction.resize(std::max<std::size_t>(fraction.size(), static_cast<std::size_t>(exponent10)), '0');
    whole += fraction.substr(0, static_cast<std::size_t>(exponent10));
    fraction.erase(0, static_cast<std::size_t>(exponent10));
  } else if (exponent10 < 0) {
    const auto shift = static_cast<std::size_t>(-exponent10);
    if (whole.size() < shift) whole.insert(0, shift - whole.size(), '0');
    fraction.insert(0, whole.substr(whole.size() - shift));
    whole.erase(whole.size() - shift);
  }
  whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size()));
  const auto too_large = [&] { reject(name, value, "is too large (overflows a 64-bit integer)", fix); };
  if (whole.size() > 19) too_large();
  __extension__ using Wide = __int128;  // exact products of 19 digits and 1024^6
  Wide scale = 1;
  for (int b = 0; b < binary; ++b) scale *= 1024;
  Wide v = 0;
  for (char c : whole) v = v * 10 + (c - '0');
  v *= scale;
  // floor(0.fraction * scale): long multiplication from the last digit; the final carry is the
  // whole part of the product.
  Wide carry = 0;
  for (auto it = fraction.rbegin(); it != fraction.rend(); ++it) carry = ((*it - '0') * scale + carry) / 10;
  v += carry;
  if (v > std::numeric_limits<std::int64_t>::max()) too_large();
  return static_cast<std::int64_t>(v);
}

bool parse_bool(const std::string& name, const std::string& value) {
  if (const auto b = bool_word(value)) return *b;
  reject(name, value, "is not a boolean", "use 1/0, true/false, yes/no or on/off");
}

std::vector<std::string> split_fields(const std::string& s, std::string_view separators) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (separators.find(c) != std::string_view::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

int parse_port(const std::string& name, const std::string& value) {
  const std::int64_t v = parse_count(name, value);
  if (v < 1 || v > 65535) reject(name, value, "is not a TCP port", "use a port between 1 and 65535");
  return static_cast<int>(v);
}

}  // namespace gj
