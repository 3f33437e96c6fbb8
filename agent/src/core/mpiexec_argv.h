// Pure: LaunchPlan -> the mpiexec command for one MPI flavour. One function per flavour;
// build_mpiexec_command() picks. Hosts go on the command line (Open MPI 5 ignores Open MPI 4's
// OMPI_MCA_orte_* variables), or in a hostfile when the host argument would near the kernel's
// 128 KiB limit for one argv string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "defaults.h"
#include "job_spec.h"
#include "mpi_flavour.h"
#include "plan.h"

namespace gj {

// Above this many bytes the host list goes into a hostfile (MAX_ARG_STRLEN is 128 KiB).
inline constexpr std::size_t kHostArgLimit = 96 * 1024;

// ssh that never prompts: batch mode, no host-key questions, bounded connect, our port, and
// the copied (mode 0600) client keys.
struct SshOptions {
  int port = defaults::kSshPort;
  std::int64_t connect_timeout_s = defaults::kSshConnectTimeoutS;
  std::vector<std::string> identity_files;
};
std::vector<std::string> ssh_client_args(const SshOptions& ssh);

struct MpiexecRequest {
  MpiFlavour flavour = MpiFlavour::OpenMpi4;
  std::string mpiexec = "mpiexec";
  SshOptions ssh;
  HostfileMode hostfile_mode = HostfileMode::Auto;
  std::string hostfile_path;  // where the hostfile goes when one is used
  // This pod's name as the other pods resolve it. Hydra's proxies connect back to the launching
  // node by its gethostname(), a pod's short name that other pods cannot resolve: hydra
  // flavours pass this as -localhost. Empty: not passed.
  std::string launcher_host;
};

struct Hostfile {
  std::string path;
  std::string content;
};

struct MpiexecCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // set in mpiexec's environment before exec
  std::optional<Hostfile> hostfile;                      // to write before exec when set
};

MpiexecCommand openmpi4_command(const LaunchPlan& plan, const MpiexecRequest& req);
MpiexecCommand openmpi5_command(const LaunchPlan& plan, const MpiexecRequest& req);
MpiexecCommand mpich_command(const LaunchPlan& plan, const MpiexecRequest& req);
MpiexecCommand intel_command(const LaunchPlan& plan, const MpiexecRequest& req);
MpiexecCommand build_mpiexec_command(const LaunchPlan& plan, const MpiexecRequest& req);

// Why the kernel would refuse to exec this command (E2BIG): one word over MAX_ARG_STRLEN (128 KiB),
// or argv + environment over 2 MiB (a common ARG_MAX share); "" when it fits. The dry run and
// the real run both check it, so the dry run fails where the exec would.
std::string exec_size_problem(const MpiexecCommand& cmd, std::size_t environment_bytes);

// Whether this plan passes its hosts in a hostfile under this mode.
bool use_hostfile(const LaunchPlan& plan, HostfileMode mode);

}  // namespace gj
