// Which mpiexec we are driving. Detected from `mpiexec --version` (pure parser over its text)
// or named by --mpi / GJ_MPI.
#pragma once

#include <optional>
#include <string>

namespace gj {

enum class MpiFlavour { OpenMpi4, OpenMpi5, Mpich, Intel };

const char* to_string(MpiFlavour f);

// "openmpi" (= Open MPI 4 syntax), "openmpi4", "openmpi5", "mpich", "intel"; nullopt otherwise.
std::optional<MpiFlavour> flavour_from_name(const std::string& name);

// Recognises Open MPI ("mpiexec (OpenRTE) 4.1.4", "mpirun (Open MPI) 5.0.3"), MPICH's hydra
// ("HYDRA build details:") and Intel MPI ("Intel(R) MPI Library"). nullopt when unknown.
std::optional<MpiFlavour> detect_flavour(const std::string& version_output);

// A known defect of the detected mpiexec's MPI that the job's log should name, or "" when none:
// MPICH before 4.2 built with ch4:ucx can deadlock in MPI_Finalize over UCX's TCP transport (it
// flushes every endpoint, which needs the peer's progress, before its PMI barrier; fixed upstream
// in 4.2). Read from hydra's "Version:" and "Configure options:" lines.
std::string known_mpi_defect(const std::string& version_output);

}  // namespace gj
