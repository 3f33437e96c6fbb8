#include "horovod_alias.h"

#include <algorithm>

#include "agent_error.h"
#include "exit_codes.h"
#include "quote.h"
#include "text.h"

#ifndef GJ_VERSION
#define GJ_VERSION "0.0.0"
#endif

namespace gj {
namespace {

// Python 3.8+, nothing imported but the standard library: find_spec of a top-level name runs
// no package code. A folder whose __init__.py carries the alias's marker is no real Horovod.
constexpr const char* kProbe = R"PY(import importlib.util as u, os
def origin(name):
    try:
        spec = u.find_spec(name)
    except Exception:
        return ""
    return (spec.origin or "") if spec else ""
g, h, v = origin("gj"), origin("horovod"), ""
if h:
    try:
        with open(h, encoding="utf-8", errors="replace") as f:
            if "_GJ_HOROVOD_ALIAS = True" in f.read():
                h = ""
    except OSError:
        pass
if h:
    try:
        import importlib.metadata as m
        v = m.version("horovod")
    except Exception:
        pass
a = os.path.join(os.path.dirname(g), "horovod_alias") if g else ""
if a and not os.path.isfile(os.path.join(a, "horovod", "__init__.py")):
    print("gj-no-alias=" + os.path.dirname(g))
    a = ""
print("gj=" + a)
print("horovod=" + (os.path.dirname(h) if h else ""))
print("horovod_version=" + v)
)PY";

const char* choice_word(HorovodAlias c) {
  switch (c) {
    case HorovodAlias::Gj: return "gj";
    case HorovodAlias::Horovod: return "horovod";
    case HorovodAlias::On: return "1";
    case HorovodAlias::Off: break;
  }
  return "0";
}

}  // namespace

std::vector<std::string> horovod_alias_probe_argv(const std::string& python) { return {python, "-c", kProbe}; }

HorovodAliasProbe parse_horovod_alias_probe(const std::string& python, const std::string& output) {
  HorovodAliasProbe p;
  bool seen_gj = false, seen_horovod = false;
  for (const auto& line : split(output, '\n')) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "gj") p.alias_dir = value, seen_gj = true;
    else if (key == "gj-no-alias") p.gj_without_alias = value;
    else if (key == "horovod") p.horovod_dir = value, seen_horovod = true;
    else if (key == "horovod_version") p.horovod_version = value;
  }
  if (!seen_gj || !seen_horovod)
    throw AgentError{exit_code::kBadEnvironment,
                     "--horovod-alias/GJ_HOROVOD_ALIAS: asking " + quoted_value(python) +
                         " where gj and horovod are gave " + quoted_value(output.substr(0, 200)) +
                         ", not the expected lines; check that --python/GJ_PYTHON is a Python 3.8+ interpreter"};
  return p;
}

void add_horovod_alias(LaunchPlan& plan, HorovodAlias choice, const HorovodAliasProbe& probe, const EnvMap& env,
                       const std::string& python) {
  const std::string gj_version = GJ_VERSION;
  if (choice == HorovodAlias::Off) return;
  const std::string horovod =
      "Horovod" + (probe.horovod_version.empty() ? "" : " " + probe.horovod_version) + " (" + probe.horovod_dir + ")";
  if (!probe.horovod_dir.empty() && choice == HorovodAlias::Horovod) {
    plan.notes.push_back("horovod alias: off, " + horovod + " is installed in " + python +
                         " and GJ_HOROVOD_ALIAS=horovod chose it");
    return;
  }
  if (probe.alias_dir.empty())
    throw AgentError{exit_code::kBadEnvironment,
                     "--horovod-alias/GJ_HOROVOD_ALIAS: " +
                         (probe.gj_without_alias.empty()
                              ? quoted_value(python) + " cannot import gj; install gj into it (or put it on PYTHONPATH)"
                              : "the gj package of " + quoted_value(python) + " (" + probe.gj_without_alias +
                                    ") has no horovod_alias folder; install gj " + gj_version + " into it") +
                         ", or turn the alias off"};
  if (!probe.horovod_dir.empty() && choice == HorovodAlias::On)
    throw AgentError{exit_code::kBadEnvironment,
                     "--horovod-alias/GJ_HOROVOD_ALIAS=1: " + quoted_value(python) + " has both " + horovod +
                         " and gj's horovod alias (" + probe.alias_dir +
                         "); say which `import horovod` is: GJ_HOROVOD_ALIAS=gj (gj " + gj_version +
                         ") or GJ_HOROVOD_ALIAS=horovod (the installed Horovod)"};
  // After the alias: the ranks' PYTHONPATH as it would have been (an --export PYTHONPATH=VALUE,
  // else the master's own).
  std::optional<std::string> rest = env_value(env, "PYTHONPATH");
  for (const auto& v : plan.exports)
    if (v.name == "PYTHONPATH" && v.value) rest = v.value;
  std::string path = probe.alias_dir;
  if (rest && !rest->empty()) path += ":" + *rest;
  plan.exports.erase(std::remove_if(plan.exports.begin(), plan.exports.end(),
                                    [](const ForwardedVar& v) {
                                      return v.name == "PYTHONPATH" || v.name == "GJ_HOROVOD_ALIAS";
                                    }),
                     plan.exports.end());
  plan.exports.push_back({"PYTHONPATH", path});
  plan.exports.push_back({"GJ_HOROVOD_ALIAS", choice_word(choice)});
  plan.notes.push_back("horovod alias: `import horovod...` is gj (" + probe.alias_dir + " first in PYTHONPATH)" +
                       (probe.horovod_dir.empty() ? "" : "; it shadows " + horovod + " (GJ_HOROVOD_ALIAS=gj)"));
}

}  // namespace gj
