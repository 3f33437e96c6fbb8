// An installed-package consumer in C++ (static library): averaged gradients.
#include <gj/collectives.hpp>

#include <cstdio>
#include <vector>

int main() {
  try {
    int ok = 0;
    {
      gj::Communicator comm = gj::Communicator::world();
      std::vector<double> grad(5, comm.size() * (comm.rank() + 1.0));
      comm.allreduce(grad, gjAvg);
      ok = grad[4] == comm.size() * (comm.size() + 1) / 2.0;
    }
    gj::finalize();
    return ok ? 0 : 3;
  } catch (const gj::CollectivesError& e) {
    std::fprintf(stderr, "%s (code %d)\n", e.what(), static_cast<int>(e.code()));
    return 1;
  }
}
