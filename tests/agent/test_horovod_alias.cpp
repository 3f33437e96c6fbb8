// The horovod alias (horovod_alias.h): the probe's answer turned into the ranks' exports or a
// refusal, and GJ_HOROVOD_ALIAS's words.
#include <catch2/catch.hpp>

#include "exit_codes.h"
#include "horovod_alias.h"
#include "settings.h"
#include "test_support.h"

using namespace gj;

namespace {

HorovodAliasProbe probe(const std::string& horovod_dir = "", const std::string& version = "") {
  return parse_horovod_alias_probe("python3", "gj=/site/gj/horovod_alias\nhorovod=" + horovod_dir +
                                                  "\nhorovod_version=" + version + "\n");
}

std::optional<std::string> exported(const LaunchPlan& plan, const std::string& name) {
  std::optional<std::string> out;
  int seen = 0;
  for (const auto& v : plan.exports)
    if (v.name == name) out = v.value.value_or("<from env>"), ++seen;
  REQUIRE(seen <= 1);
  return out;
}

}  // namespace

TEST_CASE("GJ_HOROVOD_ALIAS: off by default, a boolean, or which one wins", "[horovod_alias]") {
  const auto alias = [](const EnvMap& env) { return resolve_settings_of(env, {"GJ_HOROVOD_ALIAS"}).horovod_alias; };
  CHECK(alias({}) == HorovodAlias::Off);
  CHECK(alias({{"GJ_HOROVOD_ALIAS", "1"}}) == HorovodAlias::On);
  CHECK(alias({{"GJ_HOROVOD_ALIAS", "yes"}}) == HorovodAlias::On);
  CHECK(alias({{"GJ_HOROVOD_ALIAS", "off"}}) == HorovodAlias::Off);
  CHECK(alias({{"GJ_HOROVOD_ALIAS", "gj"}}) == HorovodAlias::Gj);
  CHECK(alias({{"GJ_HOROVOD_ALIAS", "horovod"}}) == HorovodAlias::Horovod);
  test::require_agent_error([&] { alias({{"GJ_HOROVOD_ALIAS", "maybe"}}); }, exit_code::kBadEnvironment,
                            "GJ_HOROVOD_ALIAS");
}

TEST_CASE("the alias folder goes first in the ranks' PYTHONPATH, the master's entries after it", "[horovod_alias]") {
  LaunchPlan plan;
  plan.exports.push_back({"PYTHONPATH", std::nullopt});  // --export PYTHONPATH: replaced, not doubled
  add_horovod_alias(plan, HorovodAlias::On, probe(), {{"PYTHONPATH", "/code:/lib"}}, "python3");
  CHECK(exported(plan, "PYTHONPATH") == "/site/gj/horovod_alias:/code:/lib");
  CHECK(exported(plan, "GJ_HOROVOD_ALIAS") == "1");
  LaunchPlan given;  // --export PYTHONPATH=VALUE: that value follows the alias
  given.exports.push_back({"PYTHONPATH", "/mine"});
  add_horovod_alias(given, HorovodAlias::On, probe(), {{"PYTHONPATH", "/code"}}, "python3");
  CHECK(exported(given, "PYTHONPATH") == "/site/gj/horovod_alias:/mine");
  LaunchPlan bare;
  add_horovod_alias(bare, HorovodAlias::Gj, probe(), {}, "python3");
  CHECK(exported(bare, "PYTHONPATH") == "/site/gj/horovod_alias");
  CHECK(exported(bare, "GJ_HOROVOD_ALIAS") == "gj");
  LaunchPlan off;
  add_horovod_alias(off, HorovodAlias::Off, probe(), {}, "python3");
  CHECK(off.exports.empty());
}

TEST_CASE("a real Horovod beside the alias: refused unless GJ_HOROVOD_ALIAS says which wins", "[horovod_alias]") {
  const auto installed = probe("/site/horovod", "0.28.1");
  LaunchPlan plan;
  test::require_agent_error([&] { add_horovod_alias(plan, HorovodAlias::On, installed, {}, "/usr/bin/python3"); },
                            exit_code::kBadEnvironment,
                            "\"/usr/bin/python3\" has both Horovod 0.28.1 (/site/horovod) and gj's horovod alias "
                            "(/site/gj/horovod_alias); say which `import horovod` is: GJ_HOROVOD_ALIAS=gj");
  add_horovod_alias(plan, HorovodAlias::Gj, installed, {}, "python3");
  CHECK(exported(plan, "PYTHONPATH") == "/site/gj/horovod_alias");
  CHECK(plan.notes.back().find("shadows Horovod 0.28.1 (/site/horovod)") != std::string::npos);
  LaunchPlan theirs;
  add_horovod_alias(theirs, HorovodAlias::Horovod, installed, {}, "python3");
  CHECK(theirs.exports.empty());
  CHECK(theirs.notes.back().find("GJ_HOROVOD_ALIAS=horovod chose it") != std::string::npos);
  LaunchPlan none;  // horovod wins only where there is one: else gj
  add_horovod_alias(none, HorovodAlias::Horovod, probe(), {}, "python3");
  CHECK(exported(none, "PYTHONPATH") == "/site/gj/horovod_alias");
}

TEST_CASE("no gj in the job's interpreter, or a gj without the alias, or not the probe's answer", "[horovod_alias]") {
  LaunchPlan plan;
  test::require_agent_error(
      [&] { add_horovod_alias(plan, HorovodAlias::On, parse_horovod_alias_probe("py", "gj=\nhorovod=\n"), {}, "py"); },
      exit_code::kBadEnvironment, "\"py\" cannot import gj");
  test::require_agent_error(
      [&] {
        add_horovod_alias(plan, HorovodAlias::On,
                          parse_horovod_alias_probe("py", "gj-no-alias=/old/gj\ngj=\nhorovod=\n"), {}, "py");
      },
      exit_code::kBadEnvironment, "(/old/gj) has no horovod_alias folder");
  test::require_agent_error([&] { parse_horovod_alias_probe("py", "SyntaxError: invalid syntax\n"); },
                            exit_code::kBadEnvironment, "not the expected lines");
}

TEST_CASE("the probe is the job's interpreter with a program that imports neither gj nor horovod", "[horovod_alias]") {
  const auto argv = horovod_alias_probe_argv("/opt/venv/bin/python");
  REQUIRE(argv.size() == 3);
  CHECK(argv[0] == "/opt/venv/bin/python");
  CHECK(argv[1] == "-c");
  CHECK(argv[2].find("import gj") == std::string::npos);
  CHECK(argv[2].find("import horovod") == std::string::npos);
  CHECK(argv[2].find("_GJ_HOROVOD_ALIAS = True") != std::string::npos);  // the alias's own marker
}
