#include "mpi/node_layout.h"

#include <map>

namespace gj {

NodeLayout node_layout(const std::vector<int>& node_key) {
  NodeLayout l;
  const int size = static_cast<int>(node_key.size());
  l.node_of.assign(node_key.size(), 0);
  l.index_in_node.assign(node_key.size(), 0);
  std::map<int, int> index_of_key;  // key -> node index, in order of first appearance
  std::vector<std::vector<int>> members;
  for (int r = 0; r < size; ++r) {
    auto [it, fresh] = index_of_key.emplace(node_key[static_cast<std::size_t>(r)], static_cast<int>(members.size()));
    if (fresh) members.emplace_back();
    auto& m = members[static_cast<std::size_t>(it->second)];
    l.node_of[static_cast<std::size_t>(r)] = it->second;
    l.index_in_node[static_cast<std::size_t>(r)] = static_cast<int>(m.size());
    m.push_back(r);
  }
  l.nodes = static_cast<int>(members.size());
  for (const auto& m : members) {
    l.node_first.push_back(static_cast<int>(l.order.size()));
    l.order.insert(l.order.end(), m.begin(), m.end());
    if (static_cast<int>(m.size()) > l.largest_node) l.largest_node = static_cast<int>(m.size());
  }
  l.node_first.push_back(size);
  for (int i = 0; i < size; ++i) l.contiguous = l.contiguous && l.order[static_cast<std::size_t>(i)] == i;
  return l;
}

NodeCounts node_counts(const NodeLayout& layout, const std::size_t* rank_counts) {
  NodeCounts c;
  c.count.assign(static_cast<std::size_t>(layout.nodes), 0);
  for (std::size_t r = 0; r < layout.node_of.size(); ++r) {
    c.count[static_cast<std::size_t>(layout.node_of[r])] += rank_counts[r];
  }
  std::size_t at = 0;
  for (std::size_t n : c.count) {
    c.first.push_back(at);
    at += n;
  }
  c.first.push_back(at);
  return c;
}

std::vector<std::size_t> node_ordered_offsets(const NodeLayout& layout, const std::size_t* rank_counts) {
  std::vector<std::size_t> offset(layout.order.size(), 0);
  std::size_t at = 0;
  for (int r : layout.order) {
    offset[static_cast<std::size_t>(r)] = at;
    at += rank_counts[r];
  }
  return offset;
}

}  // namespace gj
