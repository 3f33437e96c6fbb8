// The one place the library reads the process environment (at communicator init).
#pragma once

#include <map>
#include <string>

namespace gj {

// Every GJ_COLL_* variable currently set, and the few others the NCCL backend reads (config.h,
// NcclEnv), for parse_config.
std::map<std::string, std::string> snapshot_coll_env();

}  // namespace gj
