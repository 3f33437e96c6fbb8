// The set of live communicator handles, so a destroyed or never-created handle is detected
// (gjInvalidUsage) instead of dereferenced.
#pragma once

#include <cstddef>

struct gjComm;

namespace gj::registry {

void add(gjComm* comm);
// False when comm was not live.
bool remove(gjComm* comm);
bool is_live(const gjComm* comm);
std::size_t live_count();

}  // namespace gj::registry
