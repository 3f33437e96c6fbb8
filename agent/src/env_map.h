// The process environment, copied once by main(); the planning core reads only this map.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace gj {

using EnvMap = std::map<std::string, std::string>;

// A variable's value; nullopt when it is absent or empty (an empty value means unset, as for
// every variable gj-mpirun reads).
inline std::optional<std::string> env_value(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

}  // namespace gj
