// RunTable and the one "is it over" (server/workspace/run_table.h).
#include "server/workspace/run_table.h"

#include "server/workspace/errors.h"

namespace air::server {

RunState state_of(const RunRecord& r) { return r.state; }
RunState state_of(const RunRecord& r, const api::AttemptInfo& a) { return r.attempt_state(a.number); }
bool over(const RunRecord& r) { return is_terminal(r.state); }
bool over(const RunRecord& r, const api::AttemptInfo& a) { return is_terminal(state_of(r, a)); }
void set_state(RunRecord& r, RunState s) { r.state = s; }
void set_state(RunRecord& r, const api::AttemptInfo& a, RunState s) { r.set_attempt_state(a.number, s); }

RunRecord& RunTable::add(RunRecord r) {
  const std::string id = r.info.run_id;
  if (!r.info.idempotency_key.empty()) idempotency_[r.info.idempotency_key] = id;
  if (!over(r)) active_.insert(id);
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
    if (r != nullptr && !over(*r)) out.push_back(r);
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
    if (r == nullptr || over(*r)) {
      it = active_.erase(it);
    } else {
      out.push_back(r);
      ++it;
    }
  }
  return out;
}

}  // namespace air::server
