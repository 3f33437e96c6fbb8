// Data-parallel training with gj collectives: every rank trains the same MLP on its own shard
// of synthetic data; rank 0's initial parameters are broadcast, gradients are averaged with
// one grouped allreduce per step, and every rank applies the same SGD update.
//
// Run:  mpiexec -np 2 ./train            or, in a pod, as the script of gj-mpirun.
// Exit: 0 ok, 1 weights differ across ranks, 2 usage, 3 loss did not fall, 4 library error.
//
// It uses the C++ wrapper gj/collectives.hpp (RAII communicator, typed calls, exceptions); the
// C ABI gj/collectives.h underneath works the same from C.
#include <gj/collectives.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dataset.hpp"
#include "mlp.hpp"

namespace {

constexpr int kExitWeightsDiffer = 1;
constexpr int kExitUsage = 2;
constexpr int kExitLossDidNotFall = 3;
constexpr int kExitLibraryError = 4;

struct Options {
  int steps = 300;
  float lr = 0.5f;
  std::size_t samples = 256;  // per rank
  std::size_t dim = 8;
  std::size_t hidden = 16;
  std::uint64_t seed = 1;
  bool broadcast = true;  // --no-broadcast shows what the final check catches
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

long parse_long(const std::string& flag, const char* text, long min) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < min) {
    throw UsageError(flag + "=\"" + text + "\" is not an integer >= " + std::to_string(min));
  }
  return v;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--steps") {
      o.steps = static_cast<int>(parse_long(a, value(), 1));
    } else if (a == "--samples") {
      o.samples = static_cast<std::size_t>(parse_long(a, value(), 1));
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(parse_long(a, value(), 0));
    } else if (a == "--lr") {
      const char* v = value();
      char* end = nullptr;
      o.lr = std::strtof(v, &end);
      if (end == v || *end != '\0' || !(o.lr > 0.0f)) {
        throw UsageError(a + "=\"" + v + "\" is not a positive number");
      }
    } else if (a == "--no-broadcast") {
      o.broadcast = false;
    } else {
      throw UsageError("unknown argument \"" + a +
                       "\"; use --steps N --lr X --samples N --seed N --no-broadcast");
    }
  }
  return o;
}

// Collective helpers: each is one library call (or two) on the parameter tensors.
void broadcast_from_rank0(train::Tensors& params, gj::Communicator& comm) {
  for (std::vector<float>* t : params.all()) comm.broadcast(*t, 0);
}

void reduce_in_place(train::Tensors& tensors, gjRedOp_t op, gj::Communicator& comm) {
  std::vector<std::pair<float*, std::size_t>> group;
  for (std::vector<float>* t : tensors.all()) group.emplace_back(t->data(), t->size());
  comm.grouped_allreduce(group, op);  // all tensors in one fused collective
}

double mean_over_ranks(double local, gj::Communicator& comm) {
  comm.allreduce(&local, 1, gjAvg);
  return local;
}

bool same_hash_everywhere(const train::Tensors& params, gj::Communicator& comm) {
  const std::uint64_t h = train::bit_hash(params);
  std::int64_t lo = 0;
  std::memcpy(&lo, &h, sizeof lo);
  std::int64_t hi = lo;
  comm.allreduce(&lo, 1, gjMin);
  comm.allreduce(&hi, 1, gjMax);
  return lo == hi;
}

// Bitwise equality of every weight on every rank: the hash, and each element's min == max ==
// this rank's value. Prints the first differing element.
bool identical_on_all_ranks(const train::Tensors& params, gj::Communicator& comm) {
  const bool same = same_hash_everywhere(params, comm);
  train::Tensors lo = params;
  train::Tensors hi = params;
  reduce_in_place(lo, gjMin, comm);
  reduce_in_place(hi, gjMax, comm);
  const char* names[] = {"w1", "b1", "w2", "b2"};
  const auto p = params.all();
  const auto l = lo.all();
  const auto h = hi.all();
  for (std::size_t t = 0; t < p.size(); ++t) {
    for (std::size_t i = 0; i < p[t]->size(); ++i) {
      const float v = (*p[t])[i];
      if (std::memcmp(&v, &(*l[t])[i], sizeof v) != 0 || std::memcmp(&v, &(*h[t])[i], sizeof v) != 0) {
        std::fprintf(stderr, "rank %d: %s[%zu] = %.9g but min over ranks %.9g, max %.9g\n", comm.rank(),
                     names[t], i, static_cast<double>(v), static_cast<double>((*l[t])[i]),
                     static_cast<double>((*h[t])[i]));
        return false;
      }
    }
  }
  return same;
}

int run(const Options& o) {
  gj::Communicator comm = gj::Communicator::world();  // initializes MPI if needed
  const int rank = comm.rank();
  const int size = comm.size();

  const train::Dataset data = train::make_shard(o.seed, rank, o.samples, o.dim);
  // Different on every rank on purpose: only the broadcast makes the replicas agree.
  train::Tensors params = train::random_init(o.dim, o.hidden, o.seed * 1000003u + static_cast<std::uint64_t>(rank));
  const bool agreed_before = same_hash_everywhere(params, comm);
  if (o.broadcast) broadcast_from_rank0(params, comm);
  if (rank == 0) {
    std::printf("train: %d ranks, %zu samples per rank, %d steps, lr %g; initial parameters %s "
                "across ranks, %s\n",
                size, o.samples, o.steps, static_cast<double>(o.lr),
                agreed_before ? "equal" : "differ", o.broadcast ? "broadcast from rank 0" : "NOT broadcast");
  }

  double first_loss = 0.0;
  double last_loss = 0.0;
  for (int step = 0; step < o.steps; ++step) {
    train::LossAndGrad lg = train::loss_and_grad(params, data);
    reduce_in_place(lg.grad, gjAvg, comm);  // equal shards: mean of means = global mean
    train::sgd_step(params, lg.grad, o.lr);
    last_loss = mean_over_ranks(lg.loss, comm);
    if (step == 0) first_loss = last_loss;
    if (rank == 0 && (step % 50 == 0 || step == o.steps - 1)) {
      std::printf("step %4d  loss %.6f\n", step, last_loss);
    }
  }

  const bool identical = identical_on_all_ranks(params, comm);
  comm.destroy();
  gj::finalize();

  if (!identical) {
    std::fprintf(stderr, "rank %d: FAIL: weights differ across ranks after training\n", rank);
    return kExitWeightsDiffer;
  }
  if (!(last_loss < 0.5 * first_loss)) {
    std::fprintf(stderr, "rank %d: FAIL: loss %.6f -> %.6f did not fall below half; try more --steps\n",
                 rank, first_loss, last_loss);
    return kExitLossDidNotFall;
  }
  if (rank == 0) {
    std::printf("OK: weights bitwise identical on all %d ranks (hash %016" PRIx64 "), loss %.6f -> %.6f\n",
                size, train::bit_hash(params), first_loss, last_loss);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "train: %s\n", e.what());
    return kExitUsage;
  } catch (const gj::CollectivesError& e) {
    std::fprintf(stderr, "train: gj collectives failed: %s: %s\n", gjGetErrorString(e.code()), e.what());
    return kExitLibraryError;
  }
}
