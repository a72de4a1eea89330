// Combo kernels: runs of independent flat kernels become one launch (a Combo step), so that
// an optimizer step over a hundred small parameters is one launch with a few blocks per
// parameter, not a hundred launches of a few blocks each.
#include <unordered_set>

#include "toroid/sched/schedule.h"
#include "toroid/support/log.h"

namespace toroid::sched {

namespace {

struct Access {
  std::unordered_set<const loop::Buffer*> reads, writes;  // storages
};

Access access_of(const Kernel& k) {
  Access a;
  for (const Member& m : k.members) {
    a.writes.insert(m.buffer->storage);
    for (loop::Expr l : loop::loads(m.buffer->body)) a.reads.insert(l.buffer()->storage);
  }
  return a;
}

bool meets(const std::unordered_set<const loop::Buffer*>& a, const std::unordered_set<const loop::Buffer*>& b) {
  for (const loop::Buffer* x : a)
    if (b.count(x)) return true;
  return false;
}

}  // namespace

bool is_flat(const Kernel& k) {
  for (const Member& m : k.members)
    if (!m.inner || m.buffer->kind != loop::BufferKind::Pointwise) return false;
  return !k.members.empty();
}

void combine_kernels(Schedule& schedule) {
  std::vector<Step> out;
  std::vector<Kernel*> run;
  Access run_access;  // what the run's kernels read and write, together
  auto flush = [&] {
    if (run.size() == 1) out.push_back(Step{Step::Kind::Kernel, run[0], nullptr, {}});
    if (run.size() > 1) {
      std::string names;
      for (Kernel* k : run) names += " " + k->name;
      TOROID_LOG("fusion", "combo of" + names);
      out.push_back(Step{Step::Kind::Combo, nullptr, nullptr, run});
    }
    run.clear();
    run_access = {};
  };
  for (const Step& step : schedule.steps) {
    if (step.kind != Step::Kind::Kernel || !is_flat(*step.kernel)) {
      flush();
      out.push_back(step);
      continue;
    }
    Access a = access_of(*step.kernel);
    // In one launch the parts run in any order: a part may not read what another writes, nor
    // write what another reads or writes.
    bool independent = !meets(a.reads, run_access.writes) && !meets(a.writes, run_access.writes) &&
                       !meets(a.writes, run_access.reads);
    if (!independent || run.size() >= kMaxComboParts) flush();
    run.push_back(step.kernel);
    run_access.reads.insert(a.reads.begin(), a.reads.end());
    run_access.writes.insert(a.writes.begin(), a.writes.end());
  }
  flush();
  schedule.steps = std::move(out);
}

}  // namespace toroid::sched
