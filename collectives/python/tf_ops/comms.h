// The communicators gj.tensorflow's ops run on: process set id -> the gjComm_t the Python side
// (gj.common.process_sets) created, registered from Python through gj_tf_set_comm (ctypes on
// this same library) whenever an op of that set is made. A graph holds only the id, so a set
// re-created after shutdown()/init() is found under its id; a destroyed one fails in the
// library (its handle registry refuses a dead handle) rather than being dereferenced.
#ifndef GJ_TF_OPS_COMMS_H_
#define GJ_TF_OPS_COMMS_H_

#include <cstdint>
#include <string>

#include "gj/collectives.h"

namespace gj_tf {

struct Comm {
  gjComm_t handle = nullptr;
  int rank = 0;
  int size = 0;
};

// The set's communicator, or false with *why saying what is missing.
bool comm_of(int64_t process_set_id, Comm* out, std::string* why);

// "<call> failed: <the library's error string>: <its last error for comm>", what Python's
// gj._lib.check raises for the same code.
std::string library_error(const char* call, gjResult_t code, gjComm_t comm);

}  // namespace gj_tf

extern "C" {
// 0 on success; a handle of NULL forgets the id (remove_process_set, shutdown).
int gj_tf_set_comm(int64_t process_set_id, void* handle);
}

#endif
