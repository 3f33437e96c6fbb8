// Typed values from environment strings. Each parser names the variable and the value seen in
// its error, so callers never format messages themselves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gj {

// Decimal integer >= 0 that fits in int64 ("4"; not "", "-1", "two", "4.0", "1e3").
std::int64_t parse_count(const std::string& name, const std::string& value);

// A Kubernetes CPU quantity (the API server's grammar) floored to whole CPUs: "4" -> 4,
// "+4" -> 4, "2.5" -> 2, "4000m" -> 4, "500m" -> 0, "1e3" -> 1000, "4e-1" -> 0, "1k" -> 1000,
// "2Ki" -> 2048. Negative, empty, unknown suffixes and overflow are errors.
std::int64_t parse_cpu_quantity(const std::string& name, const std::string& value);

// 1/0, true/false, yes/no, on/off (any case).
bool parse_bool(const std::string& name, const std::string& value);

// TCP port 1..65535.
int parse_port(const std::string& name, const std::string& value);

// The non-empty fields of s between any of the separator characters ("a,,b" -> {"a", "b"}).
std::vector<std::string> split_fields(const std::string& s, std::string_view separators);

}  // namespace gj
