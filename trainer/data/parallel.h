// parallel_for over [0, n) in blocks on every core (or `threads`); the calling thread works too. Used by
// the record readers and the tokenization pass. fn(i) must not throw.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace air::train {

template <typename Fn>
void parallel_for(size_t n, const Fn& fn, size_t threads = 0, size_t block = 64) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads ? threads : hw, (n + block - 1) / block);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t begin; (begin = next.fetch_add(block)) < n;)
      for (size_t i = begin; i < std::min(n, begin + block); ++i) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace air::train
