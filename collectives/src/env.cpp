#include "env.h"

#include <cstring>

extern char** environ;

namespace gj {

std::map<std::string, std::string> snapshot_coll_env() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr || std::strncmp(*e, "GJ_COLL_", 8) != 0) continue;
    env.emplace(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

}  // namespace gj
