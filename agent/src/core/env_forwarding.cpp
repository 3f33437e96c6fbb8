#include "text.h"
#include "env_forwarding.h"

#include <algorithm>
#include <cctype>

#include "agent_error.h"
#include "quote.h"
#include "exit_codes.h"

namespace gj {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) != 0) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
}

void add(std::vector<ForwardedVar>& vars, ForwardedVar v) {
  const auto it = std::find_if(vars.begin(), vars.end(), [&](const ForwardedVar& x) { return x.name == v.name; });
  if (it != vars.end()) {
    *it = std::move(v);  // an explicit request overrides the default entry
  } else {
    vars.push_back(std::move(v));
  }
}

// Expands one request; returns false when nothing on the master matched it. A pattern skips the
// master's variables whose names are not identifiers (Kubernetes allows '.' and '-' in them):
// mpiexec -x and the ranks' shells could not carry them; each skip is a warning naming it.
bool expand(const EnvMap& env, const std::string& request, std::vector<ForwardedVar>& out,
            std::vector<std::string>& warnings) {
  const auto origin = [&] { return "--export/GJ_EXPORT entry " + quoted_value(request); };  // never NAME=VALUE
  const auto eq = request.find('=');
  if (eq != std::string::npos) {
    const std::string name = request.substr(0, eq);
    // Only the name: the value may be a secret, and a malformed name says nothing about it.
    if (!is_identifier(name))
      throw AgentError{exit_code::kBadEnvironment, "--export/GJ_EXPORT entry NAME=VALUE has an invalid name " +
                                                       quoted_value(name) + "; use NAME, NAME=VALUE or PREFIX*"};
    add(out, ForwardedVar{name, request.substr(eq + 1)});
    return true;
  }
  if (!request.empty() && request.back() == '*') {
    const std::string prefix = request.substr(0, request.size() - 1);
    if (!prefix.empty() && !is_identifier(prefix))
      throw AgentError{exit_code::kBadEnvironment, origin() + " is not a valid prefix pattern; use PREFIX*"};
    bool any = false;
    for (auto it = env.lower_bound(prefix); it != env.end() && starts_with(it->first, prefix); ++it) {
      if (!is_identifier(it->first)) {
        warnings.push_back("--export " + request + ": the master's variable " + quoted_value(it->first) +
                           " is not a valid name for the ranks' environment; not forwarded");
        continue;
      }
      add(out, ForwardedVar{it->first, std::nullopt});
      any = true;
    }
    return any;
  }
  if (!is_identifier(request))
    throw AgentError{exit_code::kBadEnvironment, origin() + " is not a variable name; use NAME, NAME=VALUE or PREFIX*"};
  if (env.count(request) == 0) return false;
  add(out, ForwardedVar{request, std::nullopt});
  return true;
}

}  // namespace

const std::vector<std::string>& default_exports() {
  // Job-wide knobs that must agree on every rank (NCCL_ALGO/PROTO mismatches hang
  // collectives) or that users set once expecting every rank to see them. Per-node settings
  // (NCCL_IB_*, NCCL_SOCKET_IFNAME, CUDA_VISIBLE_DEVICES, PATH, LD_LIBRARY_PATH) are NOT
  // here: each worker's sshd session already carries that node's own values, and the
  // master's would overwrite them.
  static const std::vector<std::string> kDefaults = {
      "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONFAULTHANDLER",
      "NCCL_DEBUG",      "NCCL_DEBUG_SUBSYS", "NCCL_ALGO",     "NCCL_PROTO",
      "TORCH_DISTRIBUTED_DEBUG", "HOROVOD_*",
      "TF_USE_LEGACY_KERAS",  // Keras 2 or 3: one rank on the other traces a different step
      "GJ_COLL_*",   // this project's collectives library: settings every rank must share
      "GJ_TORCH_*",  // gj.torch: bucket sizes decide the collective sequence, so they must agree
  };
  return kDefaults;
}

std::string display_assignment(const std::string& name, const std::string& value) {
  return name + "=" + loggable_value(name, value);
}

ExportSelection select_exports(const EnvMap& env, const std::vector<std::string>& requests, bool with_defaults) {
  ExportSelection sel;
  if (with_defaults)
    for (const auto& d : default_exports()) expand(env, d, sel.vars, sel.warnings);
  for (const auto& r : requests)
    if (!expand(env, r, sel.vars, sel.warnings))
      sel.warnings.push_back("--export " + r + ": no such variable on the master; nothing forwarded for it");
  return sel;
}

}  // namespace gj
