#include "shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>

#include "error.h"
#include "mpi_base/mpi_check.h"

namespace gj::shm {
namespace {

constexpr int kNameMax = 64;

struct Announcement {  // rank 0 -> all, by MPI_Bcast
  char name[kNameMax];
  std::uint64_t token;
  int ok;
};

void check_mpi(int rc, const char* call) { mpi_check(rc, std::string("gj::shm::Segment: ") + call); }

std::string errno_text(const char* call, const std::string& what) {
  return std::string(call) + "(" + what + ") failed: " + std::strerror(errno);
}

std::string unique_name(std::uint64_t token) {
  static std::atomic<unsigned> counter{0};
  char buf[kNameMax];
  std::snprintf(buf, sizeof buf, "/gj-shm-%d-%u-%016llx", static_cast<int>(getpid()), counter++,
                static_cast<unsigned long long>(token));
  return buf;
}

std::uint64_t random_token() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd() ^ static_cast<std::uint64_t>(getpid());
}

// Maps fd (bytes long) read-write, pages pre-faulted. Returns nullptr and sets why on failure.
void* map_fd(int fd, std::size_t bytes, const std::string& name, std::string& why) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    why = errno_text("mmap", name);
    return nullptr;
  }
  return p;
}

void* create_on_root(const Announcement& a, std::size_t bytes, std::string& why) {
  const int fd = shm_open(a.name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    why = errno_text("shm_open", a.name);
    return nullptr;
  }
  void* p = nullptr;
  // posix_fallocate returns the error instead of setting errno.
  if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    why = std::string("posix_fallocate(") + a.name + ", " + std::to_string(bytes) +
          " bytes) failed: " + std::strerror(rc) + " (is /dev/shm large enough? set GJ_COLL_SHM=0 to skip)";
  } else {
    p = map_fd(fd, bytes, a.name, why);
  }
  close(fd);
  if (p != nullptr) std::memcpy(p, &a.token, sizeof a.token);
  return p;
}

void* open_on_peer(const Announcement& a, std::size_t bytes, std::string& why) {
  const int fd = shm_open(a.name, O_RDWR, 0);
  if (fd < 0) {
    why = errno_text("shm_open", a.name) + " (ranks that look local but do not share /dev/shm?)";
    return nullptr;
  }
  struct stat st {};
  void* p = nullptr;
  if (fstat(fd, &st) != 0) {
    why = errno_text("fstat", a.name);
  } else if (static_cast<std::size_t>(st.st_size) != bytes) {
    why = std::string("shared segment ") + a.name + " has " + std::to_string(st.st_size) + " bytes, expected " +
          std::to_string(bytes) + " (a different segment with the same name?)";
  } else {
    p = map_fd(fd, bytes, a.name, why);
  }
  close(fd);
  if (p != nullptr) {
    std::uint64_t seen = 0;
    std::memcpy(&seen, p, sizeof seen);
    if (seen != a.token) {
      why = std::string("shared segment ") + a.name + " carries another token (not the segment rank 0 created)";
      munmap(p, bytes);
      p = nullptr;
    }
  }
  return p;
}

}  // namespace

std::unique_ptr<Segment> Segment::map_shared(MPI_Comm comm, std::size_t bytes, std::string* why_not) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");

  Announcement a{};
  std::string why;
  void* p = nullptr;
  if (rank == 0) {
    a.token = random_token();
    const std::string name = unique_name(a.token);
    std::snprintf(a.name, sizeof a.name, "%s", name.c_str());
    p = create_on_root(a, bytes, why);
    a.ok = p != nullptr ? 1 : 0;
  }
  check_mpi(MPI_Bcast(&a, sizeof a, MPI_BYTE, 0, comm), "MPI_Bcast");
  if (rank != 0) {
    if (a.ok) p = open_on_peer(a, bytes, why);
    else why = "rank 0 could not create the shared segment";
  }

  // Everyone has mapped (or failed) once this returns: the name is no longer needed.
  int ok = p != nullptr ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (rank == 0 && a.ok) shm_unlink(a.name);

  if (!ok) {
    if (p != nullptr) munmap(p, bytes);
    if (why.empty()) why = "another rank could not map the shared segment";
    if (why_not != nullptr) *why_not = why;
    return nullptr;
  }
  return std::make_unique<Segment>(p, bytes);
}

Segment::~Segment() { munmap(base_, bytes_); }

}  // namespace gj::shm
