#include "shm/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 uapi; older headers lack the name
#endif

namespace gj::shm {

bool prefault_for_write(void* p, std::size_t bytes) {
  if (bytes < kPrefaultMinBytes) return false;
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const PageSpan s = whole_pages(reinterpret_cast<std::uintptr_t>(p), bytes, page);
  if (s.end == s.begin) return false;
  return madvise(reinterpret_cast<void*>(s.begin), s.end - s.begin, MADV_POPULATE_WRITE) == 0;
}

}  // namespace gj::shm
