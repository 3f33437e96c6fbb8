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
// Runs fn(comm, arg) under the registry's lock when comm is live (a concurrent remove waits,
// so comm is not destroyed meanwhile); returns whether it ran. For the rare paths that touch
// a communicator a caller may be destroying (the last-error text).
bool with_live(gjComm* comm, void (*fn)(gjComm*, void*), void* arg);
std::size_t live_count();

}  // namespace gj::registry
