// Library messages on stderr, filtered by GJ_COLL_LOG_LEVEL.
#pragma once

#include <string>

#include "config.h"

namespace gj {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

void log(const Config& config, LogLevel level, int rank, const std::string& message);

}  // namespace gj
