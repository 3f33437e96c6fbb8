#include "mpi_flavour.h"

#include <cctype>

namespace gj {
namespace {

// The major version right after `marker` ("(Open MPI) 5.0.3" -> 5); -1 when absent.
int major_after(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return -1;
  std::size_t i = at + marker.size();
  while (i < text.size() && text[i] == ' ') ++i;
  int major = -1;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
    major = (major < 0 ? 0 : major * 10) + (text[i] - '0');
    ++i;
  }
  return major;
}

// "4.0.2" from hydra's "    Version:                                 4.0.2" line; "" when absent.
std::string hydra_version(const std::string& text) {
  const std::string marker = "Version:";
  const auto at = text.find(marker);
  if (at == std::string::npos) return "";
  std::size_t i = at + marker.size();
  while (i < text.size() && text[i] == ' ') ++i;
  const std::size_t start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) != 0 || text[i] == '.')) ++i;
  return text.substr(start, i - start);
}

}  // namespace

const char* to_string(MpiFlavour f) {
  switch (f) {
    case MpiFlavour::OpenMpi4: return "openmpi4";
    case MpiFlavour::OpenMpi5: return "openmpi5";
    case MpiFlavour::Mpich: return "mpich";
    case MpiFlavour::Intel: return "intel";
  }
  return "?";
}

std::optional<MpiFlavour> flavour_from_name(const std::string& name) {
  if (name == "openmpi" || name == "openmpi4") return MpiFlavour::OpenMpi4;
  if (name == "openmpi5") return MpiFlavour::OpenMpi5;
  if (name == "mpich") return MpiFlavour::Mpich;
  if (name == "intel") return MpiFlavour::Intel;
  return std::nullopt;
}

std::optional<MpiFlavour> detect_flavour(const std::string& out) {
  // Intel first: Intel MPI is hydra-based and its output may mention HYDRA too.
  if (out.find("Intel(R) MPI Library") != std::string::npos) return MpiFlavour::Intel;
  for (const char* marker : {"(Open MPI)", "(OpenRTE)"}) {
    const int major = major_after(out, marker);
    if (major >= 5) return MpiFlavour::OpenMpi5;
    if (major >= 0) return MpiFlavour::OpenMpi4;
  }
  // Only a version banner names the flavour: a failing launcher's error text mentions "Open MPI"
  // too (Open MPI 5 without HOME: "opal_init failed ... Open MPI developer").
  if (out.find("HYDRA build details") != std::string::npos) return MpiFlavour::Mpich;
  return std::nullopt;
}

std::string known_mpi_defect(const std::string& out) {
  if (detect_flavour(out) != MpiFlavour::Mpich || out.find("ch4:ucx") == std::string::npos) return "";
  const std::string version = hydra_version(out);
  const int major = major_after(version, "");
  const auto dot = version.find('.');
  const int minor = dot == std::string::npos ? -1 : major_after(version.substr(dot + 1), "");
  if (major < 0 || minor < 0 || major > 4 || (major == 4 && minor >= 2)) return "";
  return "MPICH " + version + " with ch4:ucx can deadlock in MPI_Finalize over UCX's TCP transport (fixed in MPICH 4.2): " +
         "a job whose ranks all finished may never exit; use Open MPI, MPICH >= 4.2 or an RDMA transport " +
         "(scripts/mpich-finalize-check.sh tests an image; docs/multihost.md)";
}

}  // namespace gj
