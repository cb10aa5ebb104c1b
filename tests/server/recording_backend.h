// A workspace backend for tests of the API routes: it starts nothing and records each node launch (the
// agent it "started" is pid 4242 and always alive), so a test sees what a run would have started.
#pragma once
#include <vector>

#include "server/workspace/workspace.h"

namespace air::server {

class RecordingBackend : public Backend {
 public:
  explicit RecordingBackend(std::vector<NodeLaunch>& started) : started_(started) {}
  int total_gpus() const override { return 0; }
  int start_node(const NodeLaunch& l) override {
    started_.push_back(l);
    return 4242;
  }
  bool agent_alive(int) override { return true; }

 private:
  std::vector<NodeLaunch>& started_;
};

}  // namespace air::server
