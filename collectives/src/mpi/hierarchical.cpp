// Two-level collectives (hierarchical.h). Every step is a collective of one level: the node's
// shared-memory engine or MPI on the node communicator (all ranks of a node), MPI among the
// leaders (one per node). The cross-node links carry each byte once per node instead of once
// per rank.
#include "mpi/hierarchical.h"


#include <algorithm>
#include <climits>
#include <vector>

#include "dtype.h"
#include "error.h"
#include "host/reduce.h"
#include "mpi/leader_ring.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_types.h"
#include "mpi_base/mpi_wait.h"
#include "mpi/node_layout.h"
#include "peer/liveness.h"

namespace gj {
namespace {

constexpr std::size_t kMaxMpiCount = std::size_t{1} << 30;  // MPI counts are int: pieces

// The node step reduces with the sum for avg: the division (float: folded into the input
// factor; integer: after the last step) belongs to the whole communicator.
gjRedOp_t node_op(gjRedOp_t op) { return op == gjAvg ? gjSum : op; }

std::vector<int> as_ints(const std::vector<std::size_t>& v, std::size_t scale = 1) {
  std::vector<int> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int>(v[i] * scale);
  return out;
}

class TwoLevel final : public Hierarchy {
 public:
  TwoLevel(MPI_Comm comm, MPI_Comm node, MPI_Comm leaders, NodeLayout layout, std::unique_ptr<shm::ShmAllreduce> shm)
      : comm_(comm), node_(node), leaders_(leaders), layout_(std::move(layout)), shm_(std::move(shm)) {
    mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    my_node_ = layout_.node_of[static_cast<std::size_t>(rank_)];
    node_size_ = layout_.node_size(my_node_);
  }
  ~TwoLevel() override {
    shm_.reset();
    if (leaders_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_);
    MPI_Comm_free(&node_);
  }

  void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                 Scale scale) override {
    node_reduce(send, recv, count, dtype, op, scale);
    const std::size_t es = dtype_size(dtype);
    if (leader() && count * es >= kLeaderRingMinBytes) {
      ring_allreduce(recv, count, dtype, node_op(op), leaders_, ring_scratch_);
    } else if (leader()) {
      for (std::size_t off = 0; off < count; off += kMaxMpiCount) {
        const std::size_t n = std::min(kMaxMpiCount, count - off);
        run_polled(
            [&](MPI_Request* r) {
              return MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(recv) + off * es, static_cast<int>(n),
                                    types_.datatype(dtype), types_.op(dtype, node_op(op)), leaders_, r);
            },
            [&] { return what("MPI_Iallreduce(node leaders)", n, dtype); });
      }
    }
    node_bcast(recv, count * es, 0);
    finish(recv, count, dtype, op, scale);
  }

  void broadcast(void* buf, std::size_t bytes, int root) override {
    const int root_node = layout_.node_of[static_cast<std::size_t>(root)];
    // The root's node first (from the root), then the leaders (from the root's node's leader),
    // then every other node (from its leader).
    if (my_node_ == root_node) node_bcast(buf, bytes, layout_.index_in_node[static_cast<std::size_t>(root)]);
    if (leader()) pieces(buf, bytes, root_node, leaders_, "MPI_Ibcast(node leaders)");
    if (my_node_ != root_node) node_bcast(buf, bytes, 0);
  }

  bool allgatherv(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype) override {
    const std::size_t es = dtype_size(dtype);
    const NodeCounts nodes = node_counts(layout_, counts);
    const std::size_t total = nodes.first.back() * es;
    if (total > static_cast<std::size_t>(INT_MAX)) return false;
    const std::vector<std::size_t> staged_at = node_ordered_offsets(layout_, counts);
    std::size_t at = 0;  // this rank's block in recv (rank order)
    for (int q = 0; q < rank_; ++q) at += counts[q] * es;
    auto* out = static_cast<char*>(recv);
    const bool in_place = send == out + at;
    // Node order is rank order when every node holds consecutive ranks (the usual mapping):
    // then recv itself is the staging area.
    char* stage = layout_.contiguous ? out : scratch(stage_, total);
    const std::size_t mine = counts[rank_] * es;
    char* node_block = stage + nodes.first[static_cast<std::size_t>(my_node_)] * es;
    if (node_size_ == 1) {
      if (!(layout_.contiguous && in_place) && mine > 0) host::copy(node_block, send, mine);
    } else {
      std::vector<int> n(static_cast<std::size_t>(node_size_)), d(n.size());
      for (int i = 0; i < node_size_; ++i) {
        const int r = layout_.order[static_cast<std::size_t>(layout_.node_first[my_node_] + i)];
        n[static_cast<std::size_t>(i)] = static_cast<int>(counts[r] * es);
        d[static_cast<std::size_t>(i)] = static_cast<int>((staged_at[static_cast<std::size_t>(r)] -
                                                           nodes.first[static_cast<std::size_t>(my_node_)]) * es);
      }
      const void* sendbuf = leader() && layout_.contiguous && in_place ? MPI_IN_PLACE : send;
      MPI_Request req = MPI_REQUEST_NULL;
      const int rc = MPI_Igatherv(sendbuf, static_cast<int>(mine), MPI_BYTE, node_block, n.data(), d.data(),
                                  MPI_BYTE, 0, node_, &req);
      if (rc != MPI_SUCCESS) mpi_check(rc, what("MPI_Igatherv(node)", counts[rank_], dtype));
      wait_yielding(req, "MPI_Igatherv(node)");
    }
    if (leader()) {
      const std::vector<int> n = as_ints(nodes.count, es);
      std::vector<int> d = as_ints(nodes.first, es);
      run_polled(
          [&](MPI_Request* r) {
            return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, stage, n.data(), d.data(), MPI_BYTE, leaders_, r);
          },
          [&] { return what("MPI_Iallgatherv(node leaders)", counts[rank_], dtype); });
    }
    node_bcast(stage, total, 0);
    if (!layout_.contiguous) {
      std::size_t displ = 0;
      for (int q = 0; q < size_; ++q) {
        const std::size_t b = counts[q] * es;
        if (b > 0) host::copy(out + displ, stage + staged_at[static_cast<std::size_t>(q)] * es, b);
        displ += b;
      }
    }
    return true;
  }

  bool reduce_scatter(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype, gjRedOp_t op,
                      Scale scale) override {
    const std::size_t es = dtype_size(dtype);
    const NodeCounts nodes = node_counts(layout_, counts);
    const std::size_t total = nodes.first.back();
    if (total * es > static_cast<std::size_t>(INT_MAX)) return false;
    // 1. The node's sum of the whole input, in node order, on every rank of the node.
    char* stage = scratch(stage_, total * es);
    if (layout_.contiguous) {
      node_reduce(send, stage, total, dtype, op, scale);
    } else {
      const std::vector<std::size_t> staged_at = node_ordered_offsets(layout_, counts);
      const auto* in = static_cast<const char*>(send);
      std::size_t displ = 0;
      for (int q = 0; q < size_; ++q) {
        const std::size_t b = counts[q] * es;
        if (b > 0) host::copy(stage + staged_at[static_cast<std::size_t>(q)] * es, in + displ, b);
        displ += b;
      }
      node_reduce(stage, stage, total, dtype, op, scale);
    }
    // 2. The leaders reduce-scatter by node: each gets its node's run of slices.
    const std::size_t node_elems = nodes.count[static_cast<std::size_t>(my_node_)];
    char* part = leader() ? scratch(part_, node_elems * es) : nullptr;  // only the leader's is read
    if (leader()) {
      const std::vector<int> n = as_ints(nodes.count);
      run_polled(
          [&](MPI_Request* r) {
            return MPI_Ireduce_scatter(stage, part, n.data(), types_.datatype(dtype), types_.op(dtype, node_op(op)),
                                       leaders_, r);
          },
          [&] { return what("MPI_Ireduce_scatter(node leaders)", node_elems, dtype); });
    }
    // 3. The leader hands every rank of its node its slice.
    const std::size_t mine = counts[rank_];
    if (node_size_ == 1) {
      if (mine > 0) host::copy(recv, part, mine * es);
    } else {
      std::vector<int> n(static_cast<std::size_t>(node_size_)), d(n.size());
      int displ = 0;
      for (int i = 0; i < node_size_; ++i) {
        const int r = layout_.order[static_cast<std::size_t>(layout_.node_first[my_node_] + i)];
        n[static_cast<std::size_t>(i)] = static_cast<int>(counts[r] * es);
        d[static_cast<std::size_t>(i)] = displ;
        displ += n[static_cast<std::size_t>(i)];
      }
      node_bcast(nullptr, 0, 0);  // the engine's wait for the leader, out of its exchange
      MPI_Request req = MPI_REQUEST_NULL;
      const int rc = MPI_Iscatterv(part, n.data(), d.data(), MPI_BYTE, recv, static_cast<int>(mine * es), MPI_BYTE,
                                   0, node_, &req);
      if (rc != MPI_SUCCESS) mpi_check(rc, what("MPI_Iscatterv(node)", mine, dtype));
      wait_yielding(req, "MPI_Iscatterv(node)");
    }
    if (mine > 0) finish(recv, mine, dtype, op, scale);
    return true;
  }

  std::string describe() const override {
    int smallest = size_;
    for (int n = 0; n < layout_.nodes; ++n) smallest = std::min(smallest, layout_.node_size(n));
    const std::string ranks = smallest == layout_.largest_node
                                  ? std::to_string(smallest)
                                  : std::to_string(smallest) + "-" + std::to_string(layout_.largest_node);
    const std::string here = shm_ ? std::string("shared memory (") + shm_->wait_name() + " waits) within this node"
                                  : std::string("this node's one rank");
    return "hierarchical: " + std::to_string(layout_.nodes) + " nodes of " + ranks + " ranks, " + here +
           " + MPI between node leaders";
  }

 private:
  bool leader() const { return leaders_ != MPI_COMM_NULL; }

  // recv = this node's reduction of send (count elements): every rank's contribution times
  // the input factor (prescale; float avg's 1/size of the whole communicator folded in).
  void node_reduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op, Scale scale) {
    const double in = op == gjAvg && is_floating(dtype) ? scale.pre / size_ : scale.pre;
    if (shm_) {
      shm_->allreduce(send, recv, count, dtype, node_op(op), in, 1.0);
    } else if (in != 1.0) {
      host::scale(recv, send, count, dtype, in);
    } else if (send != recv) {
      host::copy(recv, send, count * dtype_size(dtype));
    }
  }

  // After the last step: integer avg's truncating division by the whole size, then postscale.
  void finish(void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op, Scale scale) const {
    if (op == gjAvg && !is_floating(dtype)) host::divide(recv, count, dtype, size_);
    if (scale.post != 1.0) host::scale(recv, recv, count, dtype, scale.post);
  }

  // Within the node the ranks wait for their leader, which waits for the other nodes: the
  // shared-memory engine's broadcast, whose waits nap (or sleep) once long, so that where ranks
  // share CPUs (pods on one machine, a CPU limit below the rank count) the leader runs instead
  // of its node's ranks polling MPI.
  void node_bcast(void* buf, std::size_t bytes, int root) {
    if (shm_) shm_->broadcast(buf, bytes, root);
  }

  // For node steps that stay MPI calls: every rank of the node has arrived, so the wait is
  // short; a lost rank fails it (mpi_wait.h).
  static void wait_yielding(MPI_Request& req, const char* call) {
    const int rc = wait_polled(req);
    if (rc != MPI_SUCCESS) mpi_check(rc, std::string("MPI_Test(") + call + ")");
  }

  static void pieces(void* buf, std::size_t bytes, int root, MPI_Comm comm, const char* call) {
    for (std::size_t off = 0; off < bytes; off += kMaxMpiCount) {
      const std::size_t n = std::min(kMaxMpiCount, bytes - off);
      run_polled(
          [&](MPI_Request* r) {
            return MPI_Ibcast(static_cast<char*>(buf) + off, static_cast<int>(n), MPI_BYTE, root, comm, r);
          },
          [&] { return std::string(call) + "(bytes=" + std::to_string(n) + ", root=" + std::to_string(root) + ")"; });
    }
  }

  static std::string what(const char* call, std::size_t count, gjDataType_t dtype) {
    return std::string(call) + "(count=" + std::to_string(count) + ", dtype=" + dtype_name(dtype) + ")";
  }

  static char* scratch(std::vector<char>& v, std::size_t bytes) {
    if (v.size() < bytes) v.resize(bytes);
    return v.data();
  }

  MPI_Comm comm_;
  MPI_Comm node_;
  MPI_Comm leaders_;
  NodeLayout layout_;
  std::unique_ptr<shm::ShmAllreduce> shm_;  // null on a node of one rank
  MpiTypes types_;
  int rank_ = 0;
  int size_ = 1;
  int my_node_ = 0;
  int node_size_ = 1;
  std::vector<char> stage_;
  std::vector<char> part_;
  std::vector<unsigned char> ring_scratch_;
};

}  // namespace

std::unique_ptr<Hierarchy> Hierarchy::create(MPI_Comm comm, const shm::ShmOptions& options, std::string* why_not) {
  const auto check = [](int rc, const char* call) { mpi_check(rc, std::string("gj::Hierarchy::create: ") + call); };
  int rank = 0, size = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  // Nodes from the MPI shared-memory split, ordered by rank: node rank 0 is the node's lowest rank.
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int node_rank = 0, lowest = rank;
  check(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank(node)");
  check(MPI_Bcast(&lowest, 1, MPI_INT, 0, node), "MPI_Bcast(node's lowest rank)");
  std::vector<int> keys(static_cast<std::size_t>(size));
  check(MPI_Allgather(&lowest, 1, MPI_INT, keys.data(), 1, MPI_INT, comm), "MPI_Allgather(node keys)");
  NodeLayout layout = node_layout(keys);
  if (!hierarchy_pays(layout)) {  // the same layout on every rank, so the same answer
    MPI_Comm_free(&node);
    if (why_not != nullptr) {
      *why_not = layout.nodes < 2 ? "all ranks on one node" : "one rank per node (" + std::to_string(layout.nodes) + " nodes)";
    }
    return nullptr;
  }
  // The leaders' communicator orders them by rank, which is node order (nodes are numbered by
  // their lowest rank).
  MPI_Comm leaders = MPI_COMM_NULL;
  check(MPI_Comm_split(comm, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders), "MPI_Comm_split(node leaders)");
  std::unique_ptr<shm::ShmAllreduce> shm;
  std::string reason;
  int ok = 1;
  if (layout.node_size(layout.node_of[static_cast<std::size_t>(rank)]) > 1) {
    shm = shm::ShmAllreduce::create(node, options, &reason);
    ok = shm ? 1 : 0;
    // Collective over the node (every rank of it is here); the node engine's waits then see a
    // peer on this node die even without a rank monitor.
    if (shm) shm->watch_peers(peer::Liveness::create(node));
  }
  check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(engines ready)");
  if (ok == 0) {
    shm.reset();
    if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
    MPI_Comm_free(&node);
    if (why_not != nullptr) {
      *why_not = "the shared-memory engine could not be set up on " +
                 (reason.empty() ? std::string("another node") : "this node: " + reason);
    }
    return nullptr;
  }
  return std::make_unique<TwoLevel>(comm, node, leaders, std::move(layout), std::move(shm));
}

}  // namespace gj
