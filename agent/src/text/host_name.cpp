#include "host_name.h"

#include <cctype>

namespace gj {
namespace {

bool label_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-'; }

std::string printable(char c) {
  if (c == ' ') return "a space";
  if (c == '\t') return "a tab";
  if (std::isprint(static_cast<unsigned char>(c)) == 0) return "a control character";
  return std::string("'") + c + "'";
}

}  // namespace

std::string dns_name_problem(std::string_view name) {
  if (name.empty()) return "empty";
  if (name.size() > 253) return "longer than 253 characters";
  std::size_t label_start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      const std::size_t len = i - label_start;
      if (len == 0) return "empty label";
      if (len > 63) return "a label is longer than 63 characters";
      if (name[label_start] == '-') return "a label starts with '-'";
      if (name[i - 1] == '-') return "a label ends with '-'";
      label_start = i + 1;
    } else if (i == label_start && name[i] == '-') {
      return "a label starts with '-'";
    } else if (!label_char(name[i])) {
      return "contains " + printable(name[i]) + " at position " + std::to_string(i + 1);
    }
  }
  return "";
}

bool is_valid_host_name(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return dns_name_problem(name).empty();
}

}  // namespace gj
