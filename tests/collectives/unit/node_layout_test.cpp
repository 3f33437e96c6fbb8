// The hierarchical path's node plan (mpi/node_layout.h): which ranks share a node, the node
// order of the cross-node steps, per-node counts.
#include <catch2/catch.hpp>

#include <vector>

#include "mpi/node_layout.h"

using gj::NodeLayout;

TEST_CASE("node_layout: the platform's CPU case, 1 rank on the master and 2 per worker", "[hierarchy]") {
  const NodeLayout l = gj::node_layout({0, 1, 1, 3, 3});
  CHECK(l.nodes == 3);
  CHECK(l.node_of == std::vector<int>{0, 1, 1, 2, 2});
  CHECK(l.order == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(l.node_first == std::vector<int>{0, 1, 3, 5});
  CHECK(l.index_in_node == std::vector<int>{0, 0, 1, 0, 1});
  CHECK(l.contiguous);
  CHECK(l.largest_node == 2);
  CHECK(l.leader_of(2) == 3);
  CHECK(gj::hierarchy_pays(l));
}

TEST_CASE("node_layout: ranks dealt round-robin over nodes are grouped by node", "[hierarchy]") {
  // --map-by node: ranks 0, 2, 4 on one node, 1, 3 on the other.
  const NodeLayout l = gj::node_layout({0, 1, 0, 1, 0});
  CHECK(l.nodes == 2);
  CHECK(l.order == std::vector<int>{0, 2, 4, 1, 3});
  CHECK(l.node_first == std::vector<int>{0, 3, 5});
  CHECK(l.index_in_node == std::vector<int>{0, 0, 1, 1, 2});
  CHECK_FALSE(l.contiguous);
  CHECK(l.leader_of(1) == 1);
  const std::size_t counts[] = {1, 2, 3, 4, 5};
  const gj::NodeCounts c = gj::node_counts(l, counts);
  CHECK(c.count == std::vector<std::size_t>{9, 6});
  CHECK(c.first == std::vector<std::size_t>{0, 9, 15});
  // Node order 0, 2, 4, 1, 3: blocks of 1, 3, 5, 2, 4 elements.
  CHECK(gj::node_ordered_offsets(l, counts) == std::vector<std::size_t>{0, 9, 1, 11, 4});
}

TEST_CASE("hierarchy_pays: only with several nodes and a node of two ranks or more", "[hierarchy]") {
  CHECK_FALSE(gj::hierarchy_pays(gj::node_layout({0, 0, 0})));  // one node: the engine alone
  CHECK_FALSE(gj::hierarchy_pays(gj::node_layout({0, 1, 2})));  // one rank per node: flat MPI
  CHECK_FALSE(gj::hierarchy_pays(gj::node_layout({0})));
  CHECK(gj::hierarchy_pays(gj::node_layout({0, 0, 2})));
}
