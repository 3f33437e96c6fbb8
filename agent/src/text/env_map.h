// The process environment, copied once by main(); the planning core reads only this map.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gj {

using EnvMap = std::map<std::string, std::string>;

// A variable's value; nullopt when it is absent or empty (an empty value means unset, as for
// every variable gj-mpirun reads).
inline std::optional<std::string> env_value(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// The environment block a program is started with ("NAME=value" entries, as execve takes them):
// `env` with `overrides` set on top.
inline std::vector<std::string> environment_block(EnvMap env,
                                                  const std::vector<std::pair<std::string, std::string>>& overrides) {
  for (const auto& [name, value] : overrides) env[name] = value;
  std::vector<std::string> block;
  block.reserve(env.size());
  for (const auto& [name, value] : env) block.push_back(name + "=" + value);
  return block;
}

}  // namespace gj
