// Library messages on stderr, filtered by GJ_COLL_LOG_LEVEL.
#pragma once

#include <string>

#include "config.h"

namespace gj {

void log(const Config& config, LogLevel level, int rank, const std::string& message);

}  // namespace gj
