// The opt-in `horovod` alias (gj-mpirun --horovod-alias, GJ_HOROVOD_ALIAS): every rank's Python
// imports horovod.torch, horovod.tensorflow, horovod.tensorflow.keras and horovod.keras as gj's
// modules, through a PYTHONPATH entry to the alias folder the gj package ships
// (gj/horovod_alias/horovod/__init__.py, collectives/python). The master asks the job's
// interpreter once where gj is and whether a real Horovod is installed (the probe, run by
// roles.cpp); this file turns the answer into the ranks' exports or a refusal. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "env_map.h"
#include "plan.h"
#include "settings.h"

namespace gj {

// [python, -c, <probe>]: prints `gj=<alias folder>` (empty: no gj; `gj-no-alias=<gj folder>`
// for a gj without the folder), `horovod=<folder of an installed Horovod>` (empty: none; the
// alias itself is not one) and `horovod_version=<version>`; imports neither gj nor horovod.
std::vector<std::string> horovod_alias_probe_argv(const std::string& python);

struct HorovodAliasProbe {
  std::string alias_dir;        // gj/horovod_alias; empty: not found
  std::string gj_without_alias; // a gj package without the folder (an older gj)
  std::string horovod_dir;      // an installed Horovod; empty: none
  std::string horovod_version;  // from its distribution metadata; empty: unknown
};

// Throws AgentError (kBadEnvironment) when the output is not the probe's.
HorovodAliasProbe parse_horovod_alias_probe(const std::string& python, const std::string& output);

// Adds PYTHONPATH=<alias folder>[:<an --export PYTHONPATH=VALUE's value, else the master's
// PYTHONPATH>] and GJ_HOROVOD_ALIAS=<choice> to plan.exports (replacing a PYTHONPATH export
// already there) and a note; with
// HorovodAlias::Horovod and a Horovod installed, only a note (the installed one runs). Throws
// AgentError (kBadEnvironment): no gj in the interpreter, or a Horovod installed and the choice
// On (one line naming both and how to choose).
void add_horovod_alias(LaunchPlan& plan, HorovodAlias choice, const HorovodAliasProbe& probe, const EnvMap& env,
                       const std::string& python);

}  // namespace gj
