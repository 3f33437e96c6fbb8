// Pure planning for the hierarchical host path (mpi/hierarchical.h): which ranks share a node,
// the node order every cross-node step uses, and per-node counts. No MPI, no I/O.
#pragma once

#include <cstddef>
#include <vector>

namespace gj {

struct NodeLayout {
  int nodes = 0;
  std::vector<int> node_of;     // rank -> node index; nodes are numbered in order of their lowest rank
  std::vector<int> order;       // every rank, grouped by node (node 0 first), rank order within a node
  std::vector<int> node_first;  // node -> position in `order` of its first rank; node_first[nodes] = size
  std::vector<int> index_in_node;  // rank -> its position among its node's ranks (its node-local rank)
  bool contiguous = true;       // order is 0, 1, ..., size-1: every node holds a run of consecutive ranks
  int largest_node = 0;         // ranks on the most populated node

  int node_size(int node) const { return node_first[node + 1] - node_first[node]; }
  int leader_of(int node) const { return order[node_first[node]]; }  // its lowest rank
};

// node_key[r]: any value equal for exactly the ranks on r's node (the hierarchy passes each
// node's lowest rank). Throws nothing; an empty key gives an empty layout.
NodeLayout node_layout(const std::vector<int>& node_key);

// Whether the two-level path can save anything: ranks on at least two nodes, and some node with
// two ranks or more (one rank per node is the flat path with extra steps).
inline bool hierarchy_pays(const NodeLayout& layout) { return layout.nodes >= 2 && layout.largest_node >= 2; }

// Per-rank counts -> per-node sums (node order) and where each node's run starts in the
// node-ordered concatenation (size nodes + 1, the last entry the total).
struct NodeCounts {
  std::vector<std::size_t> count;
  std::vector<std::size_t> first;
};
NodeCounts node_counts(const NodeLayout& layout, const std::size_t* rank_counts);

// Where rank r's block starts in the node-ordered concatenation of blocks of rank_counts.
std::vector<std::size_t> node_ordered_offsets(const NodeLayout& layout, const std::size_t* rank_counts);

}  // namespace gj
