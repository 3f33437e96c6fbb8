#include "logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "quote.h"  // one_line

namespace gj {

void setup_logging(const std::string& who, const std::string& level) {
  auto logger = spdlog::get("gj-mpirun");
  if (!logger) {
    logger = spdlog::stderr_logger_st("gj-mpirun");
    spdlog::set_default_logger(logger);
  }
  // `who` holds the pod name, an outside value: control bytes (a newline would forge log lines,
  // ESC would reach the terminal) are escaped as in every message. '%' would be a pattern flag.
  std::string safe;
  for (char c : one_line(who)) {
    if (c == '%') safe += "%%";
    else if (c == '\x7f') safe += "\\x7f";
    else safe += c;
  }
  const std::string name = who.empty() ? "gj-mpirun" : "gj-mpirun " + safe;
  logger->set_pattern("[" + name + " %l] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
}

}  // namespace gj
