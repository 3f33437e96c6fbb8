// spdlog to stderr with a prefix naming the role and host: "[gj-mpirun master@job-master-0 info] ...".
#pragma once

#include <string>

namespace gj {

// who: "master@pod", "worker@pod" or "" before the role is known. level: trace..off.
void setup_logging(const std::string& who, const std::string& level);

}  // namespace gj
