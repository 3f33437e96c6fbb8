#include "warnings.h"

#include <cstdio>
#include <utility>

namespace gj {
namespace {

WarningSink& warning_sink() {
  static WarningSink sink = [](const std::string& line) {
    std::fprintf(stderr, "gj-mpirun: warning: %s\n", line.c_str());
  };
  return sink;
}

}  // namespace

void set_warning_sink(WarningSink sink) {
  if (sink) warning_sink() = std::move(sink);
}

void warn(const std::string& line) { warning_sink()(line); }

}  // namespace gj
