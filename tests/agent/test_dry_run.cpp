#include <catch2/catch.hpp>

#include "dry_run.h"

using namespace gj;

TEST_CASE("shell quoting", "[dry_run]") {
  const std::pair<const char*, const char*> cases[] = {
      {"plain", "plain"},
      {"/app/train.py", "/app/train.py"},
      {"h:4,w:8", "h:4,w:8"},
      {"", "''"},
      {"a b", "'a b'"},
      {"it's", "'it'\\''s'"},
      {"$HOME", "'$HOME'"},
      {"-o BatchMode=yes", "'-o BatchMode=yes'"},
      {"a\nb", "'a\nb'"},
  };
  for (const auto& [in, want] : cases) {
    INFO(in);
    CHECK(shell_quote(in) == want);
  }
  CHECK(shell_join({"mpiexec", "-x", "A B"}) == "mpiexec -x 'A B'");
}

TEST_CASE("json strings escape quotes, backslashes and control characters", "[dry_run]") {
  CHECK(json_string("a\"b\\c\n\t\x01") == "\"a\\\"b\\\\c\\n\\t\\u0001\"");
}

TEST_CASE("secrets are redacted in argv", "[dry_run]") {
  const std::vector<std::string> argv = {"mpiexec", "-x", "HF_TOKEN=hf_123", "-x", "MODE=fast", "-genv",
                                         "DB_PASSWORD", "hunter2", "-genv", "A", "b", "/app/t", "--api-key=k"};
  CHECK(redacted_argv(argv) == std::vector<std::string>{"mpiexec", "-x", "HF_TOKEN=<redacted>", "-x", "MODE=fast",
                                                        "-genv", "DB_PASSWORD", "<redacted>", "-genv", "A", "b",
                                                        "/app/t", "--api-key=<redacted>"});
}

TEST_CASE("master dry-run text: MPI_HOSTS/MPI_NP lines as the example prints, then the command", "[dry_run]") {
  LaunchPlan plan;
  plan.hosts = {{"m.job", 2}, {"w.job", 2}};
  plan.np = 4;
  plan.warnings = {"careful"};
  MpiexecCommand cmd;
  cmd.argv = {"mpiexec", "--host", "m.job:2,w.job:2", "-x", "API_TOKEN=abc", "/app/my script"};
  cmd.env = {{"HYDRA_LAUNCHER_EXTRA_ARGS", "-p 22"}};
  const std::string text = master_dry_run_text({plan, cmd, MpiFlavour::Mpich, "from --mpi/GJ_MPI", false});
  CHECK(text.rfind("MPI_HOSTS=m.job:2,w.job:2\nMPI_NP=4\n", 0) == 0);
  CHECK_THAT(text, Catch::Contains("# warning: careful\n"));
  CHECK_THAT(text, Catch::Contains("# hosts: on the command line\n"));
  CHECK_THAT(text, Catch::EndsWith("'HYDRA_LAUNCHER_EXTRA_ARGS=-p 22' mpiexec --host m.job:2,w.job:2 -x "
                                   "'API_TOKEN=<redacted>' '/app/my script'\n"));
  CHECK(text.find("abc") == std::string::npos);

  cmd.hostfile = Hostfile{"/run/gj/hostfile", "m.job:2\n"};
  const std::string json = master_dry_run_json({plan, cmd, MpiFlavour::Mpich, "x", false});
  CHECK_THAT(json, Catch::StartsWith("{\"role\":\"master\""));
  CHECK_THAT(json, Catch::Contains("\"hosts\":[{\"host\":\"m.job\",\"slots\":2,\"omp_num_threads\":null},"
                                   "{\"host\":\"w.job\",\"slots\":2,\"omp_num_threads\":null}]"));
  CHECK_THAT(json, Catch::Contains("\"np\":4"));
  CHECK_THAT(json, Catch::Contains("\"hostfile\":\"/run/gj/hostfile\""));
  CHECK(json.find("abc") == std::string::npos);
}
