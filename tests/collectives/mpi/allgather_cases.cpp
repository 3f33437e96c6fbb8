// Allgather (equal counts) and allgather-v (per-rank counts, zero on some ranks): every
// dtype, the data-movement ones included, in and out of place; results checked bytewise,
// and nothing written past recvbuff.
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "harness.h"
#include "scaled_values.h"

namespace gjt {
namespace {

constexpr std::size_t kGuard = 16;

// Rank r's element i, as bytes: any bit pattern (NaNs included) must move unchanged.
unsigned char byte_of(int r, std::size_t i) { return static_cast<unsigned char>(r * 37 + i * 11 + 3); }

void run_one(Ctx& ctx, gjDataType_t d, const std::vector<std::size_t>& counts, bool equal, bool in_place) {
  const std::size_t esz = elem_size(d);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::size_t offset = 0;
  for (int r = 0; r < ctx.rank; ++r) offset += counts[static_cast<std::size_t>(r)];
  std::vector<unsigned char> want(total * esz + kGuard, 0x5a);
  std::size_t at = 0;
  for (int r = 0; r < ctx.size; ++r) {
    for (std::size_t b = 0; b < counts[static_cast<std::size_t>(r)] * esz; ++b) want[at++] = byte_of(r, b);
  }
  std::vector<unsigned char> recv(want.size(), 0x5a);
  const std::size_t mine = counts[static_cast<std::size_t>(ctx.rank)];
  std::vector<unsigned char> send(mine * esz);
  for (std::size_t b = 0; b < send.size(); ++b) send[b] = byte_of(ctx.rank, b);
  const void* sendbuff = send.data();
  if (in_place) {
    if (!send.empty()) std::memcpy(recv.data() + offset * esz, send.data(), send.size());
    sendbuff = recv.data() + offset * esz;
  }
  std::string shape;
  for (std::size_t c : counts) shape += (shape.empty() ? "" : ",") + std::to_string(c);
  const std::string name = std::string(equal ? "allgather" : "allgatherv") + " dtype=" + dname(d) + " counts=" +
                           shape + " in_place=" + (in_place ? "1" : "0");
  const gjResult_t rc = equal ? gjAllGather(mine ? sendbuff : nullptr, total ? recv.data() : nullptr, mine, d,
                                            ctx.comm, nullptr)
                              : gjAllGatherV(mine ? sendbuff : nullptr, total ? recv.data() : nullptr,
                                             counts.data(), d, ctx.comm, nullptr);
  if (rc != gjSuccess) {
    ctx.fail(kAllgather, name + ": returned " + gjGetErrorString(rc) + ": " + gjGetLastError(ctx.comm));
    return;
  }
  const std::size_t bad = first_difference(recv.data(), want.data(), total, esz);
  if (bad < total) ctx.fail(kAllgather, name + ": first wrong element " + std::to_string(bad));
  if (std::memcmp(recv.data() + total * esz, want.data() + total * esz, kGuard) != 0) {
    ctx.fail(kAllgather, name + ": wrote past the end of recvbuff");
  }
}

}  // namespace

void run_allgather_cases(Ctx& ctx) {
  const int n = ctx.size;
  for (gjDataType_t d : kAllDtypes) {
    for (bool in_place : {false, true}) {
      for (std::size_t c : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1025}, std::size_t{70001}}) {
        run_one(ctx, d, std::vector<std::size_t>(static_cast<std::size_t>(n), c), true, in_place);
      }
      // Per-rank counts: growing, zero on odd ranks, all on the last rank.
      std::vector<std::size_t> growing, odd_zero, last_only(static_cast<std::size_t>(n), 0);
      for (int r = 0; r < n; ++r) {
        growing.push_back(static_cast<std::size_t>(r) * 300 + 1);
        odd_zero.push_back(r % 2 ? 0 : 513 + static_cast<std::size_t>(r));
      }
      last_only.back() = 4099;
      for (const auto& counts : {growing, odd_zero, last_only}) run_one(ctx, d, counts, false, in_place);
    }
  }
}

}  // namespace gjt
