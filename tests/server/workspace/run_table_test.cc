// The run table at its own seam (server/workspace/run_table.h): the one "is it over" (over the record's state
// enums; text only where a record is read from the wire or the database), the active index a run enters at add
// and leaves only at prune_active, lookups, and idempotency keys.
#include <catch2/catch.hpp>

#include "server/workspace/run_table.h"
#include "server/workspace/workspace.h"

using namespace air::server;

namespace {

RunRecord run(const std::string& id, const std::string& state, const std::string& key = "") {
  RunRecord r;
  r.info.run_id = id;
  r.info.state = state;
  r.info.idempotency_key = key;
  r.read_states();  // as a record loaded from the database
  return r;
}

}  // namespace

TEST_CASE("run table: over() is true for exactly the terminal states, and unknown text counts as ended") {
  for (const char* s : {"SUCCEEDED", "FAILED", "CANCELED", "TIMED_OUT", "PREEMPTED", "NO_SUCH_STATE", ""}) {
    INFO(s);
    RunRecord r = run("r", "RUNNING");
    air::api::AttemptInfo a;
    a.number = 1;
    a.state = s;
    r.info.attempts.push_back(a);
    r.read_states();
    CHECK(over(r, a));
  }
  for (const char* s : {"PENDING", "RUNNING"}) {
    INFO(s);
    RunRecord r = run("r", "RUNNING");
    air::api::AttemptInfo a;
    a.number = 1;
    a.state = s;
    r.info.attempts.push_back(a);
    r.read_states();
    CHECK_FALSE(over(r, a));
    CHECK_FALSE(over(run("r", s)));
  }
  CHECK(state_of(run("r", "TIMED_OUT")) == air::RunState::kTimedOut);
  CHECK(state_of(run("r", "garbage")) == air::RunState::kFailed);
}

TEST_CASE("run table: a run is active from add until a prune finds it over, and never comes back") {
  RunTable t;
  t.add(run("b", "RUNNING"));
  t.add(run("a", "PENDING"));
  t.add(run("c", "SUCCEEDED"));  // loaded already over: never active
  CHECK(t.active_ids() == std::set<std::string>{"a", "b"});
  auto act = t.active();
  REQUIRE(act.size() == 2);
  CHECK(act[0]->info.run_id == "a");  // run id order
  CHECK(act[1]->info.run_id == "b");

  set_state(t.find("b"), air::RunState::kFailed);
  // active() already leaves it out; the index keeps it until the prune (poll_jobs walks the index).
  CHECK(t.active().size() == 1);
  CHECK(t.active_ids().count("b") == 1);
  auto left = t.prune_active();
  REQUIRE(left.size() == 1);
  CHECK(left[0]->info.run_id == "a");
  CHECK(t.active_ids() == std::set<std::string>{"a"});
  // A retry is a new attempt of a run not yet over: the run went PENDING again only if it never ended.
  set_state(t.find("a"), air::RunState::kRunning);
  CHECK(t.prune_active().size() == 1);
  CHECK(t.all().size() == 3);
}

TEST_CASE("run table: lookups, the 404 of an unknown run, and idempotency keys") {
  RunTable t;
  RunRecord& stored = t.add(run("r1", "PENDING", "key-1"));
  CHECK(&t.find("r1") == &stored);
  CHECK(t.get("nope") == nullptr);
  CHECK(t.contains("r1"));
  CHECK_FALSE(t.contains("nope"));
  try {
    t.find("nope");
    FAIL("an unknown run was found");
  } catch (const HttpError& e) {
    CHECK(e.status == 404);
    CHECK(std::string(e.what()) == "run nope not found");
  }
  REQUIRE(t.by_idempotency_key("key-1") != nullptr);
  CHECK(t.by_idempotency_key("key-1")->info.run_id == "r1");
  CHECK(t.by_idempotency_key("key-2") == nullptr);
}

TEST_CASE("run table: states are written through set_state, and a preempted attempt leaves its run active") {
  RunTable t;
  RunRecord& r = t.add(run("p", "PENDING"));
  set_state(r, air::RunState::kRunning);
  CHECK(r.wire().state == "RUNNING");
  air::api::AttemptInfo a;
  a.number = 1;
  r.info.attempts.push_back(a);
  set_state(r, a, air::RunState::kPreempted);
  CHECK(r.wire().attempts[0].state == "PREEMPTED");
  CHECK(over(r, a));
  set_state(r, air::RunState::kPending);  // queued again for its next attempt
  CHECK_FALSE(over(r));
  CHECK(t.prune_active().size() == 1);
  for (air::RunState s : {air::RunState::kSucceeded, air::RunState::kFailed, air::RunState::kCanceled,
                          air::RunState::kTimedOut}) {
    set_state(r, s);
    CHECK(state_of(r) == s);
    CHECK(over(r));
  }
  CHECK(t.prune_active().empty());
  CHECK(t.active_ids().empty());
}

TEST_CASE("run table: the state text on a record is not read, the wire and the database get the enums' names") {
  RunRecord r = run("w", "PENDING");
  air::api::AttemptInfo a;
  a.number = 1;
  r.info.attempts.push_back(a);
  set_state(r, a, air::RunState::kTimedOut);
  set_state(r, air::RunState::kTimedOut);
  r.info.state = "RUNNING";  // stale text: ignored
  CHECK(over(r));
  CHECK(r.wire().state == "TIMED_OUT");
  CHECK(r.wire().attempts[0].state == "TIMED_OUT");
  CHECK(r.attempt_state(2) == air::RunState::kFailed);  // an attempt with no state never reads as running
}
