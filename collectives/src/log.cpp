#include "log.h"

#include <cstdio>

namespace gj {
namespace {

LogLevel threshold(const std::string& name) {
  if (name == "error") return LogLevel::Error;
  if (name == "info") return LogLevel::Info;
  if (name == "debug") return LogLevel::Debug;
  return LogLevel::Warn;
}

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
  if (level > threshold(config.log_level)) return;
  std::fprintf(stderr, "gj-coll[%d] %s: %s\n", rank, label(level), message.c_str());
}

}  // namespace gj
