#include "logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace gj {

void setup_logging(const std::string& who, const std::string& level) {
  auto logger = spdlog::get("gj-mpirun");
  if (!logger) {
    logger = spdlog::stderr_logger_st("gj-mpirun");
    spdlog::set_default_logger(logger);
  }
  const std::string name = who.empty() ? "gj-mpirun" : "gj-mpirun " + who;
  logger->set_pattern("[" + name + " %l] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
}

}  // namespace gj
