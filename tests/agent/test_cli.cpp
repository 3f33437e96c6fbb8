#include <catch2/catch.hpp>

#include "cli.h"
#include "exit_codes.h"
#include "job_spec.h"
#include "test_support.h"

using namespace gj;
using Args = std::vector<std::string>;

TEST_CASE("script and arguments pass through unchanged", "[cli]") {
  const CommandLine c = parse_command_line({"--dry-run", "/app/train.py", "--epochs", "3", "--", "-x", "--dry-run"});
  CHECK(c.dry_run);
  CHECK(c.has_script);
  CHECK(c.invocation.script == "/app/train.py");
  CHECK(c.invocation.script_args == Args{"--epochs", "3", "--", "-x", "--dry-run"});
  CHECK(c.invocation.mpi_args.empty());
}

TEST_CASE("mpiexec arguments: --mpi-arg and everything before --", "[cli]") {
  const CommandLine c = parse_command_line(
      {"--mpi-arg=--bind-to", "--mpi-arg=none", "--report-bindings", "-x", "A", "--", "/app/t", "a"});
  CHECK(c.invocation.mpi_args == Args{"--bind-to", "none", "--report-bindings", "-x", "A"});
  CHECK(c.invocation.script == "/app/t");
  CHECK(c.invocation.script_args == Args{"a"});
  const CommandLine sep_only = parse_command_line({"--", "/app/t", "--", "b"});
  CHECK(sep_only.invocation.mpi_args.empty());
  CHECK(sep_only.invocation.script_args == Args{"--", "b"});
}

TEST_CASE("flags override their variables without going through the environment", "[cli]") {
  const CommandLine c = parse_command_line({"--mpi", "mpich", "--ready-timeout=20", "--no-wait", "--ssh-check",
                                            "--supervise", "--export", "A", "--export=B=1", "--python", "py3",
                                            "--hosts-file", "/h", "--log-level", "debug", "/app/t"});
  const EnvMap env = {{"GJ_MPI", "intel"}, {"GJ_EXPORT", "Z"}, {"KEEP", "1"}};
  const AgentSettings s = resolve_settings(env, c.flags);
  CHECK(s.mpi == MpiFlavour::Mpich);
  CHECK(s.ready_timeout_s == 20);
  CHECK(s.no_wait);
  CHECK(s.ssh_check);
  CHECK(s.supervise == Supervise::On);
  CHECK(s.exports == Args{"Z", "A", "B=1"});
  CHECK(s.python == "py3");
  CHECK(s.hosts_file == "/h");
  CHECK(s.log_level == "debug");
  CHECK(c.flags.count("KEEP") == 0);
  CHECK(resolve_settings({}, parse_command_line({"--no-supervise", "x"}).flags).supervise == Supervise::Off);
  CHECK_FALSE(resolve_settings({}, parse_command_line({"--no-default-exports", "x"}).flags).default_exports);
  // A flag's value is never split on commas nor joined with others (it is one setting value).
  CHECK(resolve_settings({}, parse_command_line({"--master-host", "a,b", "x"}).flags).master_host == "a,b");
}

TEST_CASE("help, version, and usage errors", "[cli]") {
  CHECK(parse_command_line({"--help"}).action == CommandLine::Action::Help);
  CHECK(parse_command_line({"-h"}).action == CommandLine::Action::Help);
  CHECK(parse_command_line({"--version"}).action == CommandLine::Action::Version);
  CHECK_FALSE(parse_command_line({}).has_script);
  const std::pair<Args, const char*> bad[] = {
      {{"--bind-to", "none", "/app/t"}, "\"--bind-to\" is not a gj-mpirun option; to pass mpiexec arguments end them with `--`"},
      {{"--json", "/app/t"}, "--json only applies with --dry-run"},
      {{"--supervise", "--no-supervise", "/app/t"}, "contradict"},
      {{"--export", "A,B", "/app/t"}, "--export \"A,B\" contains a comma"},
      {{"--export", "MY_TOKEN=p,w", "/app/t"}, "--export \"MY_TOKEN\"=... contains a comma"},
      {{"--mpi"}, "command line:"},
  };
  for (const auto& c : bad) {
    const Args& args = c.first;  // not a structured binding: lambdas cannot capture one in C++17
    INFO(args.front());
    test::require_agent_error([&] { parse_command_line(args); }, exit_code::kUsage, c.second);
  }
}

TEST_CASE("--help lists every option and every variable read", "[cli]") {
  const std::string help = help_text();
  for (const auto& d : settings_table()) {
    INFO(d.variable);
    CHECK_THAT(help, Catch::Contains(d.variable));
    for (const auto& f : d.flags) CHECK_THAT(help, Catch::Contains(f.name));
  }
  for (const char* flag : {"--dry-run", "--json", "--version", "--mpi-arg", "--export", "--no-wait", "--ssh-check",
                           "--supervise", "--no-supervise", "--hosts-file", "--python", "--mpi"})
    CHECK_THAT(help, Catch::Contains(flag));
}

TEST_CASE("--help says what each negative switch does and shows each default", "[cli]") {
  const std::string help = help_text();
  const auto line_of = [&](const std::string& flag) {
    const auto at = help.find("\n  " + flag + " ");
    REQUIRE(at != std::string::npos);
    return help.substr(at + 1, help.find('\n', at + 1) - at - 1);
  };
  CHECK_THAT(line_of("--no-default-exports"), Catch::Contains("forward only what --export/GJ_EXPORT names"));
  CHECK_THAT(line_of("--no-default-exports"), Catch::Contains("(GJ_DEFAULT_EXPORTS=0; default GJ_DEFAULT_EXPORTS=1)"));
  CHECK_THAT(line_of("--no-rank-env"), Catch::StartsWith("  --no-rank-env                 run the command directly"));
  CHECK_THAT(line_of("--no-supervise"), Catch::Contains("exec mpiexec in place"));
  CHECK_THAT(line_of("--ssh-port <value>"), Catch::Contains("(GJ_SSH_PORT; default 22)"));
  for (const char* flag : {"--no-default-exports", "--no-rank-env", "--no-supervise", "--no-wait", "--no-sshd"})
    CHECK_THAT(line_of(flag), Catch::Contains("; default "));
}
