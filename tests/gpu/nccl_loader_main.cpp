// Runs the NCCL search of this process's environment (nccl_search.h) and prints its outcome:
//   "loaded: <path> version <x.y.z>" (exit 0) or "failed: <one-line message>" (exit 1).
// nccl_loader_order.sh runs it with fake libnccl.so.2 files in each place in turn.
#include <cstdio>

#include "config.h"
#include "env.h"
#include "nccl_loader.h"

int main() {
  // The library's own snapshot of the settings (config.h, NcclEnv), as a communicator takes it.
  const gj::nccl::Library& lib = gj::nccl::library(gj::parse_config(gj::snapshot_coll_env()).nccl);
  if (!lib.ok) {
    std::printf("failed: %s\n", lib.error.c_str());
    return 1;
  }
  std::printf("loaded: %s version %s\n", lib.path.c_str(), gj::nccl::version_string(lib.version).c_str());
  return 0;
}
