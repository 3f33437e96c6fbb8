// Broadcast from every root, every dtype (data-movement ones too), several sizes; non-roots start with a sentinel.
#include <cstring>
#include <string>
#include <vector>

#include "elements.h"
#include "harness.h"

namespace gjt {
namespace {

double pattern(int root, std::size_t i) { return static_cast<double>((i * 3 + static_cast<std::size_t>(root)) % 97); }

}  // namespace

void run_broadcast_cases(Ctx& ctx) {
  const std::size_t sizes[] = {0, 1, 7, 1023, 65537, std::size_t{1} << 20};
  for (int root = 0; root < ctx.size; ++root) {
    for (gjDataType_t d : kAllDtypes) {
      const std::size_t esz = elem_size(d);
      for (std::size_t count : sizes) {
        std::vector<unsigned char> want(count * esz + 16, 0x5a);
        for (std::size_t i = 0; i < count; ++i) encode(d, pattern(root, i), &want[i * esz]);
        std::vector<unsigned char> buf = ctx.rank == root ? want : std::vector<unsigned char>(want.size(), 0x5a);
        const std::string name = std::string("broadcast dtype=") + dname(d) + " root=" + std::to_string(root) +
                                 " count=" + std::to_string(count);
        const gjResult_t rc = gjBroadcast(count ? buf.data() : nullptr, count, d, root, ctx.comm, nullptr);
        if (rc != gjSuccess) {
          ctx.fail(kBroadcast, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
          continue;
        }
        if (buf != want) {
          std::size_t bad = 0;
          while (bad < buf.size() && buf[bad] == want[bad]) ++bad;
          ctx.fail(kBroadcast, name + ": first wrong byte " + std::to_string(bad) + " (element " +
                                   std::to_string(bad / esz) + ")");
        }
      }
    }
  }
}

}  // namespace gjt
