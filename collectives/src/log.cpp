#include "log.h"

#include <cstdio>

namespace gj {
namespace {

const char* label(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warn";
    case LogLevel::Info: return "info";
    default: return "debug";
  }
}

}  // namespace

void log(const Config& config, LogLevel level, int rank, const std::string& message) {
  if (level > config.log_level) return;
  std::fprintf(stderr, "gj-coll[%d] %s: %s\n", rank, label(level), message.c_str());
}

}  // namespace gj
