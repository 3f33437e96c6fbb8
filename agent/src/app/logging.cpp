#include "logging.h"

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>

#include "quote.h"  // one_line

namespace gj {
namespace {

// stderr, every message on one line: whatever a message embeds (a script argument, a child's
// output, strerror), its control bytes are escaped here, so no log line can be forged.
class OneLineStderrSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text = one_line(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg escaped = msg;
    escaped.payload = text;
    spdlog::memory_buf_t line;
    formatter_->format(escaped, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

void setup_logging(const std::string& who, const std::string& level) {
  auto logger = spdlog::get("gj-mpirun");
  if (!logger) {
    logger = std::make_shared<spdlog::logger>("gj-mpirun", std::make_shared<OneLineStderrSink>());
    spdlog::register_logger(logger);
    spdlog::set_default_logger(logger);
  }
  // `who` holds the pod name, an outside value (main escapes it like every value): control
  // bytes are escaped once more here, and '%' would be a pattern flag.
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
