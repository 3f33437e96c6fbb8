// A rank's NCCL debug file (NCCL_DEBUG_FILE, which the rank environment points into gj's folder
// on GPU jobs: rank_env.h) read back as the one line the master's transport report takes
// (nccl_transport.h). For the rank wrapper, after NCCL wrote its INIT/NET lines (they come at
// communicator set-up; the rank's end is a safe time to read them).
#pragma once

#include <optional>
#include <string>

namespace gj {

// "gj-nccl net=IB dev=mlx5_0:1/IB via=NET/IB,P2P version=2.18.5+cuda12.2" from the file's first
// 1 MiB; nullopt when the file does not exist or NCCL wrote no INIT/NET line into it (no NCCL
// communicator in this rank).
std::optional<std::string> nccl_summary_of_file(const std::string& path);

}  // namespace gj
