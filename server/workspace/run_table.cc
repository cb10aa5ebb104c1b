// RunTable and the one "is it over" (server/workspace/run_table.h).
#include "server/workspace/run_table.h"

#include "server/workspace/errors.h"

namespace air::server {

RunState state_of(const api::RunInfo& r) { return run_state_from_string(r.state).value_or(RunState::kFailed); }
RunState state_of(const api::AttemptInfo& a) { return run_state_from_string(a.state).value_or(RunState::kFailed); }
bool over(const api::RunInfo& r) { return is_terminal(state_of(r)); }
bool over(const api::AttemptInfo& a) { return is_terminal(state_of(a)); }
void set_state(api::RunInfo& r, RunState s) { r.state = to_string(s); }
void set_state(api::AttemptInfo& a, RunState s) { a.state = to_string(s); }

RunRecord& RunTable::add(RunRecord r) {
  const std::string id = r.info.run_id;
  if (!r.info.idempotency_key.empty()) idempotency_[r.info.idempotency_key] = id;
  if (!over(r.info)) active_.insert(id);
  RunRecord& stored = runs_[id];
  stored = std::move(r);
  return stored;
}

RunRecord* RunTable::get(const std::string& id) {
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : &it->second;
}

const RunRecord* RunTable::get(const std::string& id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : &it->second;
}

RunRecord& RunTable::find(const std::string& id) {
  if (RunRecord* r = get(id)) return *r;
  throw HttpError(404, "NOT_FOUND", "run " + id + " not found");
}

const RunRecord& RunTable::find(const std::string& id) const {
  if (const RunRecord* r = get(id)) return *r;
  throw HttpError(404, "NOT_FOUND", "run " + id + " not found");
}

const RunRecord* RunTable::by_idempotency_key(const std::string& key) const {
  auto it = idempotency_.find(key);
  return it == idempotency_.end() ? nullptr : get(it->second);
}

std::vector<const RunRecord*> RunTable::active() const {
  std::vector<const RunRecord*> out;
  out.reserve(active_.size());
  for (const std::string& id : active_) {
    const RunRecord* r = get(id);
    if (r != nullptr && !over(r->info)) out.push_back(r);
  }
  return out;
}

std::vector<RunRecord*> RunTable::active() {
  std::vector<RunRecord*> out;
  for (const RunRecord* r : std::as_const(*this).active()) out.push_back(const_cast<RunRecord*>(r));
  return out;
}

std::vector<RunRecord*> RunTable::prune_active() {
  std::vector<RunRecord*> out;
  for (auto it = active_.begin(); it != active_.end();) {
    RunRecord* r = get(*it);
    if (r == nullptr || over(r->info)) {
      it = active_.erase(it);
    } else {
      out.push_back(r);
      ++it;
    }
  }
  return out;
}

}  // namespace air::server
