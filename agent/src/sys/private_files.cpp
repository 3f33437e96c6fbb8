#include "private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "exit_codes.h"
#include "internal.h"
#include "agent_error.h"
#include "quote.h"

namespace gj {
namespace {

[[noreturn]] void fail(const std::string& message) { throw LaunchError{exit_code::kSetupFailed, message}; }

std::string err(int e) { return std::strerror(e); }

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void make_parents(const std::string& path) {
  std::string parent = parent_of(path);
  if (parent == path || parent == "/" || parent == ".") return;
  struct stat st{};
  if (::stat(parent.c_str(), &st) == 0) return;
  make_parents(parent);
  if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + quoted_value(parent) + " failed: " + err(errno));
}

// A state directory we may keep keys in: a real directory, ours, not group/world-writable.
void check_private_dir(const struct stat& st, const std::string& shown) {
  if (S_ISLNK(st.st_mode)) fail(shown + " is a symlink; refusing to write keys through it; use a real directory");
  if (!S_ISDIR(st.st_mode)) fail(shown + " exists and is not a directory; remove it or choose another path");
  if (st.st_uid != ::geteuid())
    fail(shown + " is owned by uid " + std::to_string(st.st_uid) + ", not by us (uid " + std::to_string(::geteuid()) +
         "); use a directory we own");
  if ((st.st_mode & 022) != 0)
    fail(shown + " is writable by group/others (mode " + mode_text(st.st_mode) +
         "); refusing; chmod 0700 it or choose another path");
}

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write " + path + " failed: " + err(errno));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

bool is_regular_file(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void ensure_private_dir(const std::string& path, const std::string& what) {
  const std::string shown = quoted_setting(what, path);
  if (path.empty() || path[0] != '/') fail(shown + " is not an absolute path; give an absolute directory");
  // Everything is checked before anything is created, so a refused path leaves no trace.
  struct stat st{};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) fail("lstat " + shown + " failed: " + err(errno));
  if (exists) check_private_dir(st, shown);
  // sshd (StrictModes) checks every directory above the authorized_keys file; missing ones we
  // create below, owned by us and not group/world-writable.
  for (std::string dir = parent_of(path);; dir = parent_of(dir)) {
    struct stat ps{};
    if (::stat(dir.c_str(), &ps) != 0) {
      if (errno != ENOENT) fail("stat " + quoted_value(dir) + " failed: " + err(errno));
    } else if ((ps.st_mode & 022) != 0 || (ps.st_uid != 0 && ps.st_uid != ::geteuid())) {
      fail(shown + ": its parent " + quoted_value(dir) + " is writable by group/others or owned by another user (mode " +
           mode_text(ps.st_mode) + "); sshd's StrictModes would refuse keys below it; use a directory under /run");
    }
    if (dir == "/" || dir == ".") break;
  }
  if (!exists) {
    make_parents(path);
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) fail("mkdir " + shown + " failed: " + err(errno));
    if (::lstat(path.c_str(), &st) != 0) fail("lstat " + shown + " failed: " + err(errno));
    check_private_dir(st, shown);  // EEXIST: someone else's entry may have appeared meanwhile
  }
  if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) != 0)
    fail("chmod 0700 " + quoted_value(path) + " failed: " + err(errno));
}

void ensure_privsep_dir(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) fail("sshd privilege separation path " + path + " exists and is not a directory; remove it");
    return;
  }
  make_parents(path);
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + path + " (sshd privilege separation dir) failed: " + err(errno));
}

void write_private_file(const std::string& path, const std::string& content, mode_t mode) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) fail("open " + tmp + " failed: " + err(errno));
  try {
    write_all(fd, content, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::fchmod(fd, mode) != 0) {  // the umask may have narrowed or (never) widened it
    int e = errno;
    ::close(fd);
    fail("fchmod " + tmp + " failed: " + err(e));
  }
  if (::close(fd) != 0) fail("close " + tmp + " failed: " + err(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename " + tmp + " -> " + path + " failed: " + err(errno));
}

void copy_private_file(const std::string& src, const std::string& dst) {
  // Large authorized_keys files (thousands of keys, certificates) are real; 16 MiB is far above.
  constexpr off_t kMax = 16 << 20;
  // O_NONBLOCK: a FIFO must be refused by the check below, not block the open waiting for a writer.
  int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("open " + src + " failed: " + err(errno) + "; is the ssh secret mounted (GJ_SSH_DIR)?");
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMax) {
    ::close(fd);
    fail(src + " is not a regular file of at most 16 MiB; check the mounted ssh secret");
  }
  std::string data;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      fail("read " + src + " failed: " + err(e));
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  write_private_file(dst, data, 0600);
}

}  // namespace gj
