// Where libnccl.so.2 is looked for and what a failed search says (nccl_search.h). The real
// dlopen of fake libraries in each place: nccl_loader_order.sh.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "nccl/nccl_search.h"

using namespace gj::nccl;

namespace {

std::vector<std::string> files(const std::vector<Candidate>& c) {
  std::vector<std::string> out;
  for (const Candidate& x : c) out.push_back(x.file);
  return out;
}

}  // namespace

TEST_CASE("plan_search: GJ_NCCL_LIBRARY is the only place when set") {
  SearchInputs in;
  in.explicit_set = true;
  in.explicit_path = "/opt/nccl/libnccl.so.2";
  in.site_dirs = {"/venv/site-packages"};
  const auto c = plan_search(in);
  REQUIRE(c.size() == 1);
  CHECK(c[0].where == "GJ_NCCL_LIBRARY");
  CHECK(c[0].file == "/opt/nccl/libnccl.so.2");
}

TEST_CASE("plan_search: loader, then site folders in order, then the CUDA toolkit") {
  SearchInputs in;
  in.site_dirs = {"/pp/", "/venv/lib/python3.12/site-packages"};
  in.cuda_home = "/opt/cuda/";
  CHECK(files(plan_search(in)) == std::vector<std::string>{
                                      "libnccl.so.2",
                                      "/pp/nvidia/nccl/lib/libnccl.so.2",
                                      "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
                                      "/opt/cuda/lib64/libnccl.so.2",
                                      "/opt/cuda/lib/libnccl.so.2"});
  CHECK(plan_search(SearchInputs{}).back().file == "/usr/local/cuda/lib/libnccl.so.2");
}

TEST_CASE("site_patterns: PYTHONPATH, VIRTUAL_ENV, CONDA_PREFIX, PATH's environments, ~/.local, system") {
  CHECK(site_patterns("/a:/b/", "/venv", "/conda/", "/venv/bin:/usr/bin", "/root") ==
        std::vector<std::string>{"/a", "/b/", "/venv/lib/python3*/site-packages", "/conda/lib/python3*/site-packages",
                                 "/venv/bin/../lib/python3*/site-packages", "/usr/bin/../lib/python3*/site-packages",
                                 "/root/.local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
                                 "/usr/lib/python3/dist-packages"});
  CHECK(site_patterns("", "", "", "", "").size() == 2);
}

TEST_CASE("version_string") {
  CHECK(version_string(22809) == "2.28.9");
  CHECK(version_string(21400) == "2.14.0");
  CHECK(version_string(2708) == "2.7.8");  // the code before 2.9
}

TEST_CASE("describe_failed_search: one line, every place with its failure, then the fix") {
  const std::vector<Attempt> a = {
      {{"the loader's search (LD_LIBRARY_PATH, ldconfig)", "libnccl.so.2"}, "libnccl.so.2: cannot open shared object file"},
      {{"Python site folder", "/venv/nvidia/nccl/lib/libnccl.so.2"}, "version 2.12.0 is older than 2.14.0"},
      {{"CUDA toolkit", "/usr/local/cuda/lib64/libnccl.so.2"}, "no such file"}};
  const std::string m = describe_failed_search(a);
  CHECK(m.find('\n') == std::string::npos);
  CHECK(m.rfind("no usable NCCL (libnccl.so.2 >= 2.14.0) found; tried the loader's search", 0) == 0);
  CHECK(m.find("/venv/nvidia/nccl/lib/libnccl.so.2: version 2.12.0 is older than 2.14.0") != std::string::npos);
  CHECK(m.find("CUDA toolkit /usr/local/cuda/lib64/libnccl.so.2: no such file") != std::string::npos);
  CHECK(m.find("Fix: pip install nvidia-nccl-cu13") != std::string::npos);
  CHECK(m.find("GJ_NCCL_LIBRARY=/path/to/libnccl.so.2") != std::string::npos);

  const std::string e = describe_failed_search({{{"GJ_NCCL_LIBRARY", ""}, "empty path"}});
  CHECK(e.find("GJ_NCCL_LIBRARY \"\": empty path") != std::string::npos);
  CHECK(e.find("Fix: point GJ_NCCL_LIBRARY at an existing libnccl.so.2") != std::string::npos);
}
