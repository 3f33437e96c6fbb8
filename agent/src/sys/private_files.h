// Files and directories that only root may read or write: the state dir, copied keys, the
// generated sshd_config. Every failure is a LaunchError (kSetupFailed) naming the path and fix.
#pragma once

#include <string>
#include <sys/types.h>

namespace gj {

// Creates `path` 0700 (parents 0755 when missing) or accepts an existing one. Refuses a
// symlink, a non-directory, another owner, a dir writable by group/others, and a parent that
// is writable by group/others (sshd's StrictModes would refuse keys below it). `what` names
// the setting in messages (e.g. "GJ_STATE_DIR").
void ensure_private_dir(const std::string& path, const std::string& what);

// sshd's privilege separation directory: created root-owned 0755 when missing.
void ensure_privsep_dir(const std::string& path);

// Writes content to path atomically (temporary file + rename) with the given mode.
void write_private_file(const std::string& path, const std::string& content, mode_t mode = 0600);

// Copies src (following symlinks: Kubernetes secret files are symlinks into ..data/) to dst
// with mode 0600. Sources larger than 1 MiB are refused.
void copy_private_file(const std::string& src, const std::string& dst);

// True when path exists as a regular file (not following symlinks).
bool is_regular_file(const std::string& path);

}  // namespace gj
