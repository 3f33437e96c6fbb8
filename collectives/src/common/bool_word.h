// The one rule for boolean settings, shared by gj-mpirun (GJ_NO_WAIT, GJ_SSH_CHECK, ... and their
// flags) and libgj_collectives (GJ_COLL_SHM, GJ_COLL_CHECK): 1, true, yes, on mean true; 0, false,
// no, off mean false; letter case does not matter; anything else (empty, "2", "tru", " 1") is
// not a boolean. Header-only, so the static agent and the shared library use one definition
// without linking each other. Each caller words its own error (it knows the variable's name).
#pragma once

#include <optional>
#include <string_view>

namespace gj {

// true/false for a boolean word, nullopt for anything else.
inline std::optional<bool> bool_word(std::string_view value) {
  constexpr std::string_view kTrue[] = {"1", "true", "yes", "on"};
  constexpr std::string_view kFalse[] = {"0", "false", "no", "off"};
  auto same_ignoring_case = [](std::string_view a, std::string_view word) {
    if (a.size() != word.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const char c = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
      if (c != word[i]) return false;
    }
    return true;
  };
  for (std::string_view w : kTrue)
    if (same_ignoring_case(value, w)) return true;
  for (std::string_view w : kFalse)
    if (same_ignoring_case(value, w)) return false;
  return std::nullopt;
}

}  // namespace gj
