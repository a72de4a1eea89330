#include "toroid/runtime/cuda/executor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "call_keys.h"
#include "toroid/runtime/cuda/cublaslt.h"
#include "toroid/runtime/attention_call.h"
#include "toroid/runtime/cuda/device_kernels.h"
#include "toroid/runtime/control_flow.h"
#include "toroid/runtime/cuda/cudnn.h"
#include "toroid/runtime/output_binding.h"
#include "toroid/runtime/reference_call.h"
#include "toroid/runtime/run_slots.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::runtime::cuda {

using codegen::CudaKernel;
using codegen::wrapper::Line;
using codegen::wrapper::TensorRef;
using ops::HostStorage;
using ops::HostTensor;
using ops::RtValue;

namespace {

// Keeps device memory alive for as long as the HostStorage that adopted its pointer.
struct DeviceReleaser : HostStorage::Releaser {
  DeviceMemory memory;  // null for workspace memory, which the caller owns
  explicit DeviceReleaser(DeviceMemory m) : memory(std::move(m)) {}
  void release(std::byte*, size_t) noexcept override {}
};

std::shared_ptr<HostStorage> adopt(void* ptr, size_t nbytes, DeviceMemory owner) {
  return std::make_shared<HostStorage>(static_cast<std::byte*>(ptr), nbytes,
                                       std::make_shared<DeviceReleaser>(std::move(owner)));
}

constexpr size_t kWorkspaceAlign = 256;
size_t align_up(size_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

constexpr int64_t kI32Limit = (int64_t(1) << 31) - 1;

// Launch shapes. A row kernel's block has about `row_groups` vector groups of its row per thread
// (a power of two from 32 to `row_max_threads` threads, at most 512, the row kernels' launch
// bound: long rows get more groups per thread rather than larger blocks), and at most the
// kernel's row slots, so that the row takes its slot path (a kernel compiled for a block size
// gets it); a block per row, unless `row_blocks_per_sm` caps the grid (its blocks then loop over
// the rows). A flat kernel runs `flat_threads`-thread blocks, at most `blocks_per_sm` of them per
// multiprocessor, each thread looping over its groups.
// Overridable for tuning with $TOROID_CUDA_ROW_GROUPS, $TOROID_CUDA_ROW_MAX_THREADS,
// $TOROID_CUDA_ROW_BLOCKS_PER_SM, $TOROID_CUDA_FLAT_THREADS, $TOROID_CUDA_BLOCKS_PER_SM.
struct LaunchTuning {
  int64_t row_groups = 4, row_max_threads = 512, flat_threads = 256, blocks_per_sm = 8;
  std::optional<int64_t> row_blocks_per_sm;  // unset: a block per row
  LaunchTuning() {
    auto env = [](const char* name, int64_t& v) { v = env_count(name).value_or(v); };
    env("TOROID_CUDA_ROW_GROUPS", row_groups);
    env("TOROID_CUDA_ROW_MAX_THREADS", row_max_threads);
    row_blocks_per_sm = env_count("TOROID_CUDA_ROW_BLOCKS_PER_SM");
    env("TOROID_CUDA_FLAT_THREADS", flat_threads);
    env("TOROID_CUDA_BLOCKS_PER_SM", blocks_per_sm);
  }
};
const LaunchTuning& tuning() {
  static const LaunchTuning t;
  return t;
}

// The stream toroid captures CUDA graphs on for work meant for `user` (which may be a stream
// that cannot be captured, as the legacy one): one per user stream. The library workspaces a
// capture binds are the user stream's (the graph replays there, in order with that stream's
// other work), so graphs that replay on different streams at once never share one. Never
// destroyed: graphs keep referring to them.
Stream capture_stream(Stream user) {
  static std::mutex mutex;
  static std::map<Stream, Stream> streams;
  std::lock_guard<std::mutex> lock(mutex);
  Stream& s = streams[user];
  if (!s) s = create_stream();
  return s;
}

bool same_values(const sym::Binding& a, const sym::Binding& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [e, v] : a) {
    auto it = b.find(e);
    if (it == b.end() || it->second.type != v.type || it->second.i != v.i ||
        std::bit_cast<uint64_t>(it->second.f) != std::bit_cast<uint64_t>(v.f))
      return false;
  }
  return true;
}

// A user kernel's module: its cubin where this device runs it (no JIT compile), else its PTX.
std::unique_ptr<Module> load_user_module(const codegen::wrapper::UserKernel& k) {
  std::string what = "user kernel '" + k.name + "'";
  if (!k.cubin.empty()) {
    try {
      return std::make_unique<Module>(k.cubin, what + " (cubin)");
    } catch (const UserError& e) {
      TOROID_LOG("cuda", what + ": its cubin does not load on this device, so its PTX is: " + std::string(e.what()));
    }
  }
  return std::make_unique<Module>(k.ptx, what);
}

}  // namespace

std::shared_ptr<HostStorage> device_storage(size_t nbytes, Stream s) {
  DeviceMemory m = DeviceAllocator::global().allocate(std::max<size_t>(nbytes, 1), s);
  void* p = m->ptr;
  return adopt(p, nbytes, std::move(m));
}

HostTensor device_tensor(DeviceMemory memory, DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                         int64_t offset) {
  size_t n = memory->nbytes;
  void* p = memory->ptr;
  return HostTensor::from_storage(adopt(p, n, std::move(memory)), dtype, std::move(sizes), std::move(strides), offset);
}

RtValue to_device(const RtValue& host, Stream s) {
  if (!host.is_tensor()) return host;
  const HostTensor& t = host.tensor();
  auto storage = device_storage(t.storage()->nbytes(), s);
  copy_to_device(storage->data(), t.storage()->data(), t.storage()->nbytes(), s);
  return HostTensor::from_storage(storage, t.dtype(), t.sizes(), t.strides(), t.offset());
}

RtValue to_host(const RtValue& device, Stream s) {
  if (!device.is_tensor()) return device;
  const HostTensor& t = device.tensor();
  auto storage = std::make_shared<HostStorage>(t.storage()->nbytes(), false);
  copy_to_host(storage->data(), t.storage()->data(), t.storage()->nbytes(), s);
  return HostTensor::from_storage(storage, t.dtype(), t.sizes(), t.strides(), t.offset());
}

std::vector<CubinRequest> cubin_requests(const codegen::wrapper::WrapperProgram& w, bool both_widths) {
  std::vector<CubinRequest> out;
  for (const codegen::wrapper::WrapperProgram* p : codegen::wrapper::nested_programs(w))
    for (const CudaKernel& k : p->cuda_kernels) {
      out.push_back({codegen::cuda::cuda_translation_unit(k, !k.has_i32), k.name});
      if (both_widths && k.has_i32) out.push_back({codegen::cuda::cuda_translation_unit(k, true), k.name + "_i64"});
    }
  return out;
}

std::vector<CubinRequest> device_kernel_requests(const codegen::wrapper::WrapperProgram& w, int arch) {
  std::vector<CubinRequest> out;
  for (const codegen::wrapper::WrapperProgram* p : codegen::wrapper::nested_programs(w))
    for (const Line& l : p->lines) {
      if (l.kind != Line::Kind::FallbackCall || !l.device_kernel || l.library != loop::LibraryCall::Attention) continue;
      const std::vector<codegen::wrapper::CallArg>& args = l.call.args;
      if (args.size() < 3 || args[0].kind != codegen::wrapper::CallArg::Kind::Tensor ||
          args[2].kind != codegen::wrapper::CallArg::Kind::Tensor)
        continue;
      const codegen::wrapper::TensorRef &q = args[0].tensor, &v = args[2].tensor;
      if (q.sizes.empty() || v.sizes.empty()) continue;
      std::optional<int64_t> e = q.sizes.back().as_int(), ev = v.sizes.back().as_int();
      if (!e || !ev) continue;
      if (auto k = attention_kernel_for(q.dtype, *e, *ev, arch)) out.push_back(std::move(*k));
    }
  return out;
}

// A scalar as the bytes of a kernel parameter of PTX type `type` (little-endian, in the low
// bytes of the word); `fail` reports a value the type cannot hold.
static uint64_t pack_scalar(const sym::Scalar& v, const std::string& type, const std::function<void(const std::string&)>& fail) {
  bool is_float = v.type == sym::Type::Float;
  uint64_t word = 0;
  auto bits = [&](auto x) {
    std::memcpy(&word, &x, sizeof(x));
    return word;
  };
  if (type == ".f32") return bits(static_cast<float>(is_float ? v.f : static_cast<double>(v.i)));
  if (type == ".f64") return bits(is_float ? v.f : static_cast<double>(v.i));
  if (is_float) fail("a float (" + std::to_string(v.f) + ") passed where the kernel takes an integer (" + type + ")");
  int width = type.size() > 2 ? std::atoi(type.c_str() + 2) : 0;
  if (width == 64) return bits(v.i);
  if (width != 8 && width != 16 && width != 32) fail("a scalar passed where the kernel takes " + type);
  bool is_signed = type[1] == 's';
  int64_t lo = is_signed ? -(int64_t(1) << (width - 1)) : 0, hi = is_signed ? (int64_t(1) << (width - 1)) - 1 : (int64_t(1) << width) - 1;
  if (type[1] == 'b') lo = -(int64_t(1) << (width - 1));  // untyped bits: either reading
  if (v.i < lo || v.i > hi) fail(std::to_string(v.i) + " does not fit the kernel's " + type);
  if (width == 32) return bits(static_cast<uint32_t>(v.i));
  if (width == 16) return bits(static_cast<uint16_t>(v.i));
  return bits(static_cast<uint8_t>(v.i));
}

struct CudaExecutor::Impl {
  const codegen::wrapper::WrapperProgram& w;
  const ShapeEnv& env;
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<Function> fn_i32, fn_i64;
  std::vector<std::unique_ptr<Module>> user_modules;  // by WrapperProgram::user_kernels
  std::vector<Function> user_fns;
  std::vector<size_t> user_shared_allowed;  // dynamic shared bytes each may take so far
  // The error records, consecutive in one device array (so one copy reads them all): one for
  // each loaded module whose kernel checks gather positions (its t_index_error pointer is set to
  // it; a kernel whose 64-bit entry was compiled later has two), and one for each index_put
  // device-kernel line ({1, rows, index} for an index out of range).
  struct ErrorRecord {
    size_t kernel;
    void* global;                // the record (in record_array)
    const Line* line = nullptr;  // an index_put line's record
  };
  DeviceMemory record_array;
  size_t record_capacity = 0;
  std::vector<ErrorRecord> error_records;
  // Deferred checks: each run's copies of the error records, oldest first, and spares to reuse.
  struct PendingCheck {
    PinnedBuffer records;
    Event copied;
    size_t count;  // records copied
    explicit PendingCheck(size_t n) : records(n * kRecordBytes), count(n) {}
  };
  NvrtcOptions nvrtc;  // for the 64-bit entry points compiled when a launch first needs one
  static constexpr size_t kRecordBytes = 3 * sizeof(uint64_t);  // {site, size, value}
  static constexpr size_t kMaxPending = 4;
  std::deque<std::unique_ptr<PendingCheck>> pending, spare_checks;
  std::vector<std::shared_ptr<HostStorage>> constants;

  // Per run.
  Stream stream = nullptr;
  RunSlots rs;
  sym::Binding binding;
  std::vector<int64_t> syms;
  size_t line = 0;  // the line running (for lifecycle messages)
  std::vector<int64_t> workspace_offsets;  // by buffer id, in workspace mode
  std::optional<sym::Binding> layout_binding;  // the sizes workspace_offsets is for
  std::vector<bool> layout_given;              // and the slots in caller memory
  // Changes whenever the sizes may have (a run with other symbol values, or a line that binds
  // symbols mid-run): launch plans made at another epoch are made again.
  uint64_t binding_epoch = 1;
  sym::Binding epoch_binding;        // the binding a run started with at this epoch
  bool bound_mid_run = false;        // the last run bound symbols after it started
  size_t layout_need = 0;
  char* workspace = nullptr;
  std::vector<std::vector<std::unique_ptr<Impl>>> children;  // by line: its programs'

  CallKeys keys{w};  // CUDA graphs over the partitions, per call key
  bool graphs_declined = false;  // the reason was logged
  bool has_alloc_lines = false;
  // allocations_in_outputs's answer for binding_epoch: whether every alloc line lands in the
  // caller's outputs, and which outputs those are.
  uint64_t allocs_checked_epoch = 0;
  bool allocs_fit_outputs = false;
  std::vector<size_t> holding_outputs;
  bool capturing = false;       // lines are being recorded, not run
  Stream replay_stream = nullptr;  // while capturing: the stream the graph replays on
  bool capture_unsafe = false;  // the capture took memory the replays could not count on
  bool host_ran = false;        // the partition running did work on the host

  // Takes this program's cubins from `next` on, then its nested programs' (nested_programs order).
  Impl(const codegen::wrapper::WrapperProgram& prog, const std::vector<Cubin>& cubins, size_t& next,
       const NvrtcOptions& options)
      : w(prog), env(*prog.env), nvrtc(options) {
    TOROID_CHECK(next + w.cuda_kernels.size() <= cubins.size(), "one cubin per kernel");
    allocate_records();
    for (size_t i = 0; i < w.cuda_kernels.size(); ++i) {
      const CudaKernel& k = w.cuda_kernels[i];
      modules.push_back(std::make_unique<Module>(cubins[next++].image, k.name));
      fn_i32.push_back(k.has_i32 ? modules.back()->function(codegen::cuda::entry_symbol(k, false)) : nullptr);
      fn_i64.push_back(k.has_i32 ? nullptr : modules.back()->function(codegen::cuda::entry_symbol(k, true)));
      if (!k.index_sites.empty()) add_module_record(i, *modules.back());
    }
    for (const codegen::wrapper::UserKernel& k : w.user_kernels) {
      TOROID_CHECK(!k.ptx.empty(), "user kernel " + k.name + " reached the executor without its PTX");
      user_modules.push_back(load_user_module(k));
      user_fns.push_back(user_modules.back()->function(k.entry));
    }
    user_shared_allowed.assign(w.user_kernels.size(), 48 * 1024);
    constants.resize(w.slots.size());
    for (const codegen::wrapper::ConstantSlot& c : w.constants) upload_constant(c);
    rs.fill = [this](HostStorage& m, unsigned char byte) { memset_bytes(m.data(), byte, m.nbytes(), stream); };
    rs.init(w);
    for (const Line& l : w.lines) {
      has_alloc_lines = has_alloc_lines || l.kind == Line::Kind::Alloc || l.kind == Line::Kind::PoolAlloc;
      children.emplace_back();
      for (const auto& p : l.programs) children.back().push_back(std::make_unique<Impl>(*p, cubins, next, options));
      if (line_has_record(l)) error_records.push_back({0, next_record(), &l});
    }
    if (record_capacity) synchronize(nullptr);  // the zeroed records and the modules' pointers
  }

  static bool line_has_record(const Line& l) {
    return l.kind == Line::Kind::FallbackCall && l.device_kernel &&
           (l.library == loop::LibraryCall::IndexPut || l.library == loop::LibraryCall::Scatter ||
            l.library == loop::LibraryCall::ScatterAdd || l.library == loop::LibraryCall::ScatterReduce ||
            l.library == loop::LibraryCall::IndexAdd);
  }

  // The record array, zeroed: room for two modules of each kernel that checks positions (its
  // 32- and 64-bit entries) and each line's record. Written before any launch reads it.
  void allocate_records() {
    for (const CudaKernel& k : w.cuda_kernels) record_capacity += k.index_sites.empty() ? 0 : 2;
    for (const Line& l : w.lines) record_capacity += line_has_record(l) ? 1 : 0;
    if (!record_capacity) return;
    record_array = DeviceAllocator::global().allocate(record_capacity * kRecordBytes, nullptr);
    memset_zero(record_array->ptr, record_capacity * kRecordBytes, nullptr);
  }

  void* next_record() {
    TOROID_CHECK(error_records.size() < record_capacity, "an error record beyond the array's room");
    return static_cast<char*>(record_array->ptr) + error_records.size() * kRecordBytes;
  }

  // Points the module's t_index_error at its record (once, when loaded), queued on toroid's
  // stream: the caller synchronizes it before any launch (one wait for all of a program's).
  void add_module_record(size_t kernel, Module& m) {
    void* record = next_record();
    size_t nbytes = 0;
    void* pointer = m.global("t_index_error", &nbytes);
    // Kernels of an older toroid keep their record in the module itself (24 bytes, not a pointer).
    if (nbytes != sizeof record)
      user_error("kernel " + w.cuda_kernels[kernel].name + " was compiled by an older toroid (its t_index_error is " +
                 std::to_string(nbytes) + " bytes, not a pointer): compile or package it again");
    copy_to_device(pointer, &record, sizeof record, nullptr);
    error_records.push_back({kernel, record});
  }

  // The error record of an index_put or scatter line (null: the line has none).
  uint64_t* line_record(const Line& l) const {
    for (const ErrorRecord& r : error_records)
      if (r.line == &l) return static_cast<uint64_t*>(r.global);
    return nullptr;
  }

  // One element of a device tensor, read after the work queued before it (the one sync).
  sym::Scalar read_element(const HostTensor& t) {
    HostStorage host(static_cast<size_t>(t.element_size()), false);
    copy_to_host(host.data(), t.data(), static_cast<size_t>(t.element_size()), stream);
    auto view = std::shared_ptr<HostStorage>(&host, [](HostStorage*) {});
    return element_value(HostTensor::from_storage(view, t.dtype(), t.sizes(), t.strides(), 0));
  }

  ControlHooks control_hooks() {
    ControlHooks h;
    h.view = [this](const TensorRef& r) { return view(r); };
    h.read = [this](const HostTensor& t) { return read_element(t); };
    h.run = [this](size_t index, const std::vector<RtValue>& inputs,
                   const std::vector<std::shared_ptr<HostStorage>>& outputs, bool merge, int64_t* peak) {
      Impl& c = *children.at(line).at(index);
      RunOptions o;
      o.stream = stream;
      o.outputs = outputs;
      std::vector<RtValue> out = c.run(inputs, binding, nullptr, o);
      *peak += c.rs.peak;
      if (merge)
        for (const auto& [s, v] : c.binding) binding.emplace(s, v);
      return out;
    };
    h.allocate = [this](size_t n) { return device_storage(n, stream); };
    h.copy = [this](const HostTensor& dst, const HostTensor& src) {
      if (dst.sizes() != src.sizes() || dst.strides() != src.strides() || dst.dtype() != src.dtype())
        TOROID_INTERNAL_ERROR("control flow: a carried value changed its layout");
      size_t n = static_cast<size_t>(view_extent(src.sizes(), src.strides(), "carried value")) *
                 static_cast<size_t>(src.element_size());
      if (n > 0) copy_device_to_device(dst.data(), src.data(), n, stream);
    };
    return h;
  }

  // An error in a deferred check nobody collected is not dropped silently.
  ~Impl() {
    try {
      collect_deferred_checks(true);
    } catch (const std::exception& e) {
      std::cerr << "toroid: warning: " << e.what() << "\n";
    }
  }

  void upload_constant(const codegen::wrapper::ConstantSlot& c) {
    const std::vector<uint8_t>& data = *c.data;
    auto storage = device_storage(data.size(), nullptr);
    if (!data.empty()) copy_to_device(storage->data(), data.data(), data.size(), nullptr);
    constants[static_cast<size_t>(c.slot)] = storage;
  }

  int64_t eval(SymExpr e) const {
    std::optional<sym::Scalar> v = env.evaluate(e, binding);
    if (!v) user_error("cannot evaluate " + e.str() + " for this call (unbound symbol)");
    return v->i;
  }
  std::vector<int64_t> eval(const std::vector<SymExpr>& v) const {
    std::vector<int64_t> out;
    for (SymExpr e : v) out.push_back(eval(e));
    return out;
  }

  void allocate(int id, int64_t nbytes) {
    auto& slot = rs.slots[static_cast<size_t>(id)];
    if (const auto& mine = rs.bound[static_cast<size_t>(id)]) {
      slot = mine;
    } else if (workspace && workspace_offsets.at(static_cast<size_t>(id)) >= 0) {
      // Results a call allocates itself (a fallback's, a device kernel's of data-dependent size)
      // have no place in the workspace's layout: they come from the caching allocator.
      slot = adopt(workspace + workspace_offsets.at(static_cast<size_t>(id)), static_cast<size_t>(nbytes), nullptr);
    } else {
      slot = device_storage(static_cast<size_t>(nbytes), stream);
      capture_unsafe = capture_unsafe || capturing;  // memory this call alone holds
    }
    // A launch that allocates its own result: replays skip the launch, so the slot would be empty.
    if (capturing && w.lines.at(line).kind != Line::Kind::Alloc) capture_unsafe = true;
    rs.count(id, nbytes);
  }

  // The workspace layout of this run's allocations: first fit over the blocks that Free lines
  // released (a Reuse takes its buffer's block), else the end. Slots in caller memory (`given`,
  // by slot) take no place in it.
  size_t layout_workspace(const sym::Binding& at, const std::vector<bool>& given, std::vector<int64_t>* offsets) const {
    offsets->assign(w.slots.size(), -1);
    std::multimap<size_t, size_t> free_blocks;  // size -> offset
    std::vector<size_t> sizes(w.slots.size(), 0);
    size_t end = 0;
    for (const Line& l : w.lines) {
      size_t id = l.slot >= 0 ? static_cast<size_t>(l.slot) : 0;
      if (l.kind == Line::Kind::Alloc && l.pool >= 0) continue;  // its pool's memory (allocated when the run binds its size)
      if ((l.kind == Line::Kind::Alloc || l.kind == Line::Kind::Reuse) && id < given.size() && given[id]) continue;
      if (l.kind == Line::Kind::Alloc) {
        std::optional<sym::Scalar> v = env.evaluate(l.nbytes, at);
        if (!v) user_error("workspace mode needs every size before the run, but " + l.nbytes.str() + " is data-dependent");
        size_t n = align_up(static_cast<size_t>(std::max<int64_t>(v->i, 1)));
        auto it = free_blocks.lower_bound(n);
        if (it != free_blocks.end()) {
          (*offsets)[id] = static_cast<int64_t>(it->second);
          sizes[id] = it->first;
          free_blocks.erase(it);
        } else {
          (*offsets)[id] = static_cast<int64_t>(end);
          sizes[id] = n;
          end += n;
        }
      } else if (l.kind == Line::Kind::Reuse) {
        (*offsets)[id] = (*offsets)[static_cast<size_t>(l.from)];
        sizes[id] = sizes[static_cast<size_t>(l.from)];
      } else if (l.kind == Line::Kind::Free && !rs.reused[id] && (*offsets)[id] >= 0) {
        free_blocks.emplace(sizes[id], static_cast<size_t>((*offsets)[id]));
      }
    }
    return end;
  }

  // An op without a device implementation: its reference kernel on host copies of its operands;
  // results go to their slots (allocated here unless an Alloc line did).
  void run_on_host(const codegen::wrapper::ReferenceCall& c) {
    host_ran = true;
    // Keys capture only partitions whose first call ran no host work, with the same sizes.
    TOROID_CHECK(!capturing, "a host reference kernel while capturing a CUDA graph (" + c.op_name + ")");
    std::unordered_map<const HostStorage*, std::shared_ptr<HostStorage>> copies;
    std::vector<RtValue> out = run_reference(c, env, binding, [&](const TensorRef& r) -> RtValue {
      HostTensor d = view(r);
      auto& host = copies[d.storage().get()];
      if (!host) {
        host = std::make_shared<HostStorage>(d.storage()->nbytes(), false);
        copy_to_host(host->data(), d.storage()->data(), d.storage()->nbytes(), stream);
      }
      return HostTensor::from_storage(host, d.dtype(), d.sizes(), d.strides(), d.offset());
    });
    for (const codegen::wrapper::ReferenceCall::Result& r : c.results) {
      const HostTensor& t = out.at(r.index).tensor();
      rs.produced_sizes(c, r, t.sizes(), env, binding);
      auto& slot = rs.slots[static_cast<size_t>(r.ref.slot)];
      if (!slot) allocate(r.ref.slot, eval(r.nbytes));
      auto staging = std::make_shared<HostStorage>(slot->nbytes(), true);
      HostTensor dst = HostTensor::from_storage(staging, r.ref.dtype, t.sizes(), eval(r.ref.strides), eval(r.ref.offset));
      ops::copy_into(c.op_name, dst, t);
      copy_to_device(slot->data(), staging->data(), staging->nbytes(), stream);
      synchronize(stream);  // the staging copy dies here
    }
  }

  HostTensor view(const codegen::wrapper::TensorRef& r) const { return rs.view(r, line, env, binding); }

  // A fallback line whose library kernel runs on the device; the host's reference kernel where
  // that kernel cannot take the operands.
  void run_device_kernel(const Line& l) {
    bool done = false;
    switch (l.library) {
      case loop::LibraryCall::Nonzero: done = nonzero_on_device(l); break;
      case loop::LibraryCall::Cumsum:
      case loop::LibraryCall::Cumprod: done = scan_on_device(l); break;
      case loop::LibraryCall::IndexPut: done = index_put_on_device(l); break;
      case loop::LibraryCall::Scatter:
      case loop::LibraryCall::ScatterAdd: done = scatter_on_device(l); break;
      case loop::LibraryCall::ScatterReduce: done = scatter_reduce_on_device(l); break;
      case loop::LibraryCall::IndexAdd: done = index_add_on_device(l); break;
      case loop::LibraryCall::Sort:
      case loop::LibraryCall::Topk: done = sort_on_device(l); break;
      case loop::LibraryCall::Attention: done = attention_on_device(l); break;
      default: break;
    }
    if (!done) {
      TOROID_LOG("fallback", l.call.op_name + ": the device kernel cannot take these operands; the host runs it");
      run_on_host(l.call);
      return;
    }
    // Results as large as their operands: their sizes are the graph's, bound already.
    for (const codegen::wrapper::ReferenceCall::Result& r : l.call.results)
      if (rs.produced[static_cast<size_t>(r.ref.slot)].empty()) rs.produced_sizes(l.call, r, eval(r.ref.sizes), env, binding);
  }

  // The result's slot, allocated if no line did, as a view.
  HostTensor result_view(const codegen::wrapper::ReferenceCall::Result& r) {
    if (!rs.slots[static_cast<size_t>(r.ref.slot)]) allocate(r.ref.slot, eval(r.nbytes));
    return view(r.ref);
  }

  // `t` itself when contiguous, else a contiguous copy in memory that `keep` holds (the device
  // kernels read contiguous operands). An operand of more than 8 dims: none (the host runs it).
  std::optional<HostTensor> contiguous(const HostTensor& t, std::vector<std::shared_ptr<HostStorage>>& keep) {
    if (t.is_contiguous()) return t;
    if (t.sizes().size() > kMaxNonzeroDims) return std::nullopt;
    auto storage = device_storage(static_cast<size_t>(std::max<int64_t>(t.numel(), 1) * t.element_size()), stream);
    copy_contiguous(t.data(), static_cast<int>(t.element_size()), t.sizes(), t.strides(), storage->data(), stream);
    keep.push_back(storage);
    return HostTensor::from_storage(storage, t.dtype(), t.sizes(), contiguous_strides(t.sizes()), 0);
  }

  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
    std::vector<int64_t> s(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * std::max<int64_t>(sizes[d], 1);
    return s;
  }

  // A dim argument wrapped into [0, rank); none when out of range (the reference kernel then
  // reports it).
  std::optional<int64_t> dim_arg(const codegen::wrapper::CallArg& a, int64_t rank) const {
    int64_t d = eval(a.scalar);
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return std::nullopt;
    return d;
  }

  // The copy of `self` that index_put, scatter and index_add update: into their contiguous
  // result, unless it is self's memory already.
  void copy_into_result(const HostTensor& self, const HostTensor& out) {
    size_t nbytes = static_cast<size_t>(self.numel() * self.element_size());
    if (nbytes == 0 || out.data() == self.data()) return;
    if (self.is_contiguous()) copy_device_to_device(out.data(), self.data(), nbytes, stream);
    else copy_contiguous(self.data(), static_cast<int>(self.element_size()), self.sizes(), self.strides(), out.data(), stream);
  }

  // src's elements (times `alpha`) into `out` along `dim` at the positions the int64 index
  // names, read with `index_sizes` and `index_strides`: stored, or combined by `op` (the
  // sorted form on a deterministic line, where `mean` divides by the contributions).
  void launch_scatter(const Line& l, const HostTensor& out, const HostTensor& idx, std::vector<int64_t> index_sizes,
                      std::vector<int64_t> index_strides, const HostTensor& src, int64_t dim, ScatterOp op,
                      double alpha = 1.0, int32_t* count = nullptr, bool mean = false, bool include_self = false) {
    ScatterArgs a;
    a.out = out.data();
    a.dtype = out.dtype();
    a.out_sizes = out.sizes();
    a.out_strides = out.strides();
    a.index = reinterpret_cast<const int64_t*>(idx.data());
    a.index_sizes = std::move(index_sizes);
    a.index_strides = std::move(index_strides);
    a.src = src.data();
    a.src_strides = src.strides();
    a.dim = dim;
    a.op = op;
    a.alpha = alpha;
    a.count = count;
    a.record = line_record(l);
    if (l.deterministic) scatter_deterministic(a, mean, include_self, stream);
    else scatter_elements(a, stream);
  }

  static bool tensor_arg(const codegen::wrapper::CallArg& a) {
    return a.kind == codegen::wrapper::CallArg::Kind::Tensor && a.tensor.slot >= 0;
  }

  // cumsum / cumprod(self, dim, dtype) of a contiguous tensor into a contiguous result.
  bool scan_on_device(const Line& l) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    if (c.args.size() < 2 || !tensor_arg(c.args[0]) || c.results.size() != 1) return false;
    std::vector<std::shared_ptr<HostStorage>> keep;
    std::optional<HostTensor> xc = contiguous(view(c.args[0].tensor), keep);
    if (!xc || !scan_supported(xc->dtype(), c.results[0].ref.dtype)) return false;
    const HostTensor& x = *xc;
    int64_t rank = static_cast<int64_t>(x.sizes().size());
    std::optional<int64_t> wrapped = rank == 0 ? std::optional<int64_t>(0) : dim_arg(c.args[1], rank);
    if (!wrapped) return false;
    int64_t dim = *wrapped;
    HostTensor out = result_view(c.results[0]);
    if (!out.is_contiguous() || out.sizes() != x.sizes()) return false;
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < dim ? outer : d == dim ? len : inner) *= x.sizes()[static_cast<size_t>(d)];
    scan(l.library == loop::LibraryCall::Cumprod, x.data(), x.dtype(), out.data(), out.dtype(), outer, len, inner, stream);
    return true;
  }

  // A one-element device tensor holding `value` in `dtype`, read with all strides 0 as the src
  // of a scatter (scatter.value, scatter_reduce's identity).
  HostTensor scalar_src(DType dtype, double real, int64_t integer, size_t rank,
                        std::vector<std::shared_ptr<HostStorage>>& keep) {
    HostTensor h = HostTensor::zeros(dtype, {1});
    if (is_floating(dtype)) h.set_double(0, real);
    else h.set_int(0, integer);
    HostTensor d = to_device(RtValue(h), stream).tensor();
    keep.push_back(d.storage());
    return HostTensor::from_storage(d.storage(), dtype, std::vector<int64_t>(rank, 1), std::vector<int64_t>(rank, 0), 0);
  }

  // The operands the scatters share (self, dim, index; src at args[3], a scalar with `value`),
  // checked against what the kernel takes; the result as a contiguous copy of self.
  struct ScatterOperands {
    HostTensor self, idx, src, out;
    int64_t dim = 0;
  };
  std::optional<ScatterOperands> scatter_operands(const Line& l, bool value,
                                                  std::vector<std::shared_ptr<HostStorage>>& keep) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    if (c.args.size() < 4 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[2]) || c.results.size() != 1 ||
        (!value && !tensor_arg(c.args[3])) || (value && c.args[3].kind != codegen::wrapper::CallArg::Kind::Scalar))
      return std::nullopt;
    ScatterOperands o;
    o.self = view(c.args[0].tensor);
    o.idx = view(c.args[2].tensor);
    size_t rank = o.self.sizes().size();
    if (value) {
      SymExpr v = c.args[3].scalar;
      bool real = v.is_float();
      o.src = scalar_src(o.self.dtype(), eval_double(v), real ? static_cast<int64_t>(eval_double(v)) : eval(v), rank, keep);
    } else {
      o.src = view(c.args[3].tensor);
    }
    if (rank == 0 || rank > kMaxNonzeroDims || o.idx.dtype() != DType::Int64 || o.src.dtype() != o.self.dtype() ||
        !index_put_supported(o.self.dtype()) || o.idx.sizes().size() != rank || o.src.sizes().size() != rank)
      return std::nullopt;
    std::optional<int64_t> dim = dim_arg(c.args[1], static_cast<int64_t>(rank));
    if (!dim) return std::nullopt;
    o.dim = *dim;
    for (size_t d = 0; d < rank; ++d)
      if ((!value && o.idx.sizes()[d] > o.src.sizes()[d]) ||
          (static_cast<int64_t>(d) != o.dim && o.idx.sizes()[d] > o.self.sizes()[d]))
        return std::nullopt;
    o.out = result_view(c.results[0]);
    if (!o.out.is_contiguous() || o.out.sizes() != o.self.sizes()) return std::nullopt;
    copy_into_result(o.self, o.out);
    return o;
  }

  // scatter.src / scatter.value / scatter_add(self, dim, index, src): a contiguous copy of self,
  // then the elements of src (or the value) the index names (index and src at any strides).
  bool scatter_on_device(const Line& l) {
    std::vector<std::shared_ptr<HostStorage>> keep;
    bool value = l.call.args.size() >= 4 && l.call.args[3].kind == codegen::wrapper::CallArg::Kind::Scalar;
    std::optional<ScatterOperands> o = scatter_operands(l, value, keep);
    if (!o) return false;
    launch_scatter(l, o->out, o->idx, o->idx.sizes(), o->idx.strides(), o->src, o->dim,
                   l.library == loop::LibraryCall::ScatterAdd ? ScatterOp::Add : ScatterOp::Store);
    return true;
  }

  // scatter_reduce.two(self, dim, index, src, reduce, include_self): without include_self the
  // positions the index names first take the reduction's identity; then src combines into them
  // (mean: a sum and a count, then a division).
  bool scatter_reduce_on_device(const Line& l) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    if (c.args.size() < 6 || c.args[4].kind != codegen::wrapper::CallArg::Kind::Constant) return false;
    const std::string& reduce = c.args[4].constant.str();
    ScatterOp op = reduce == "sum" || reduce == "mean" ? ScatterOp::Add
                   : reduce == "prod"                  ? ScatterOp::Mul
                   : reduce == "amax"                  ? ScatterOp::Max
                   : reduce == "amin"                  ? ScatterOp::Min
                                                       : ScatterOp::Store;
    if (op == ScatterOp::Store) return false;  // the reference kernel names the bad reduction
    std::vector<std::shared_ptr<HostStorage>> keep;
    std::optional<ScatterOperands> o = scatter_operands(l, false, keep);
    if (!o) return false;
    bool include_self = eval(c.args[5].scalar) != 0;
    if (!include_self) {
      DType t = o->self.dtype();
      bool max = op == ScatterOp::Max;
      double inf = std::numeric_limits<double>::infinity();
      int64_t lo = t == DType::Int32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
      int64_t hi = t == DType::Int32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
      bool extreme = op == ScatterOp::Max || op == ScatterOp::Min;
      double real = extreme ? (max ? -inf : inf) : op == ScatterOp::Mul ? 1.0 : 0.0;
      int64_t integer = extreme ? (max ? lo : hi) : op == ScatterOp::Mul ? 1 : 0;
      HostTensor id = scalar_src(t, real, integer, o->self.sizes().size(), keep);
      launch_scatter(l, o->out, o->idx, o->idx.sizes(), o->idx.strides(), id, o->dim, ScatterOp::Store);
    }
    if (l.deterministic) {
      launch_scatter(l, o->out, o->idx, o->idx.sizes(), o->idx.strides(), o->src, o->dim, op, 1.0, nullptr,
                     reduce == "mean", include_self);
      return true;
    }
    std::shared_ptr<HostStorage> count;
    if (reduce == "mean") {
      count = device_storage(static_cast<size_t>(std::max<int64_t>(o->out.numel(), 1)) * sizeof(int32_t), stream);
      memset_zero(count->data(), count->nbytes(), stream);
    }
    int32_t* counts = count ? reinterpret_cast<int32_t*>(count->data()) : nullptr;
    launch_scatter(l, o->out, o->idx, o->idx.sizes(), o->idx.strides(), o->src, o->dim, op, 1.0, counts);
    if (counts) scatter_mean(o->out.data(), o->out.dtype(), o->out.numel(), counts, include_self, stream);
    return true;
  }

  // index_add(self, dim, index, source, alpha): scatter_add of alpha * source with the index
  // read at each element's coordinate along dim (stride 0 along the others).
  bool index_add_on_device(const Line& l) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    if (c.args.size() < 5 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[2]) || !tensor_arg(c.args[3]) ||
        c.results.size() != 1)
      return false;
    HostTensor self = view(c.args[0].tensor), idx = view(c.args[2].tensor), src = view(c.args[3].tensor);
    int64_t rank = static_cast<int64_t>(self.sizes().size());
    if (rank == 0 || rank > static_cast<int64_t>(kMaxNonzeroDims) || idx.dtype() != DType::Int64 ||
        idx.sizes().size() > 1 || src.dtype() != self.dtype() || !index_put_supported(self.dtype()) ||
        src.sizes().size() != self.sizes().size())
      return false;
    std::optional<int64_t> dim = dim_arg(c.args[1], rank);
    if (!dim || idx.numel() != src.sizes()[static_cast<size_t>(*dim)]) return false;
    for (int64_t d = 0; d < rank; ++d)
      if (d != *dim && src.sizes()[static_cast<size_t>(d)] != self.sizes()[static_cast<size_t>(d)]) return false;
    // An integer tensor takes an integral alpha (the reference kernel reports another).
    double alpha = eval_double(c.args[4].scalar);
    if (!is_floating(self.dtype()) && alpha != static_cast<double>(static_cast<int64_t>(alpha))) return false;
    HostTensor out = result_view(c.results[0]);
    if (!out.is_contiguous() || out.sizes() != self.sizes()) return false;
    copy_into_result(self, out);
    std::vector<int64_t> index_strides(static_cast<size_t>(rank), 0);
    index_strides[static_cast<size_t>(*dim)] = idx.sizes().empty() ? 0 : idx.strides()[0];
    launch_scatter(l, out, idx, src.sizes(), std::move(index_strides), src, *dim, ScatterOp::Add, alpha);
    return true;
  }

  // sort(self, dim, descending) / topk(self, k, dim, largest, sorted) of a contiguous tensor
  // into contiguous results (topk's k values in sorted order also for sorted=False).
  bool sort_on_device(const Line& l) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    bool topk = l.library == loop::LibraryCall::Topk;
    if (c.args.size() < (topk ? 4u : 3u) || !tensor_arg(c.args[0]) || c.results.size() != 2) return false;
    std::vector<std::shared_ptr<HostStorage>> keep;
    std::optional<HostTensor> xc = contiguous(view(c.args[0].tensor), keep);
    if (!xc || !sort_supported(xc->dtype())) return false;
    const HostTensor& x = *xc;
    int64_t rank = static_cast<int64_t>(x.sizes().size());
    std::optional<int64_t> wrapped = rank == 0 ? std::optional<int64_t>(0) : dim_arg(c.args[topk ? 2 : 1], rank);
    if (!wrapped) return false;
    int64_t dim = *wrapped, outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < dim ? outer : d == dim ? len : inner) *= x.sizes()[static_cast<size_t>(d)];
    int64_t k = topk ? eval(c.args[1].scalar) : len;
    if (k < 0 || k > len) return false;  // the reference kernel reports it
    bool descending = eval(c.args[topk ? 3 : 2].scalar) != 0;
    HostTensor values = result_view(c.results[0]), indices = result_view(c.results[1]);
    std::vector<int64_t> want = x.sizes();
    if (rank > 0) want[static_cast<size_t>(dim)] = k;
    if (!values.is_contiguous() || !indices.is_contiguous() || values.sizes() != want || indices.sizes() != want ||
        indices.dtype() != DType::Int64 || values.dtype() != x.dtype())
      return false;
    sort_lines(x.data(), x.dtype(), outer, len, inner, k, descending, values.data(),
               reinterpret_cast<int64_t*>(indices.data()), stream);
    return true;
  }

  // scaled_dot_product_attention with at most two batch dims (runtime/attention_call.h).
  bool attention_on_device(const Line& l) {
    std::optional<AttentionOperands> o = attention_operands(
        l.call, [this](const codegen::wrapper::TensorRef& r) { return view(r); },
        [this](const codegen::wrapper::ReferenceCall::Result& r) { return result_view(r); },
        [this](SymExpr e) { return eval_double(e); });
    if (!o) return false;
    AttentionCall a;
    a.dtype = o->q.dtype();
    a.q = o->q.data();
    a.k = o->k.data();
    a.v = o->v.data();
    a.out = o->out.data();
    if (o->mask) {
      a.mask = o->mask->data();
      a.mask_bool = o->mask->dtype() == DType::Bool;
      a.mask_dtype = o->mask->dtype();
    }
    std::copy_n(o->q_strides, 4, a.q_strides);
    std::copy_n(o->k_strides, 4, a.k_strides);
    std::copy_n(o->v_strides, 4, a.v_strides);
    std::copy_n(o->mask_strides, 4, a.mask_strides);
    std::copy_n(o->out_strides, 4, a.out_strides);
    a.batch = o->batch;
    a.heads = o->heads;
    a.L = o->L;
    a.S = o->S;
    a.E = o->E;
    a.Ev = o->Ev;
    a.group = o->group;
    a.scale = o->scale;
    a.causal = o->causal;
    if (!attention_supported(a)) return false;
    attention(a, stream);
    return true;
  }

  // index_put(self, [idx], values, accumulate) with one int64 index over dim 0 and values laid
  // out as idx's shape followed by a row of self (index and values made contiguous first).
  bool index_put_on_device(const Line& l) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    if (c.args.size() < 4 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[2]) || c.results.size() != 1) return false;
    const codegen::wrapper::CallArg& list = c.args[1];
    if (list.kind != codegen::wrapper::CallArg::Kind::List || list.list.size() != 1 || !tensor_arg(list.list[0]))
      return false;
    HostTensor self = view(c.args[0].tensor);
    if (self.sizes().empty() || self.sizes().size() > kMaxNonzeroDims || !index_put_supported(self.dtype()))
      return false;
    std::vector<std::shared_ptr<HostStorage>> keep;
    std::optional<HostTensor> ic = contiguous(view(list.list[0].tensor), keep);
    std::optional<HostTensor> vc = contiguous(view(c.args[2].tensor), keep);
    if (!ic || !vc || ic->dtype() != DType::Int64 || vc->dtype() != self.dtype()) return false;
    const HostTensor &idx = *ic, &values = *vc;
    int64_t rows = self.sizes()[0], row = rows ? self.numel() / rows : 0, n = idx.numel();
    if (values.numel() != n * row) return false;  // broadcast values: the reference kernel
    HostTensor out = result_view(c.results[0]);
    if (!out.is_contiguous() || out.sizes() != self.sizes()) return false;
    copy_into_result(self, out);
    bool accumulate = eval(c.args[3].scalar) != 0;
    if (l.deterministic) {
      index_put_rows_deterministic(out.data(), self.dtype(), rows, row, reinterpret_cast<const int64_t*>(idx.data()), n,
                                   values.data(), accumulate, line_record(l), stream);
      return true;
    }
    // An index out of range is recorded, and reported with the run's other checks (deferred
    // when the run's are): the host does not wait here.
    index_put_rows(out.data(), self.dtype(), rows, row, reinterpret_cast<const int64_t*>(idx.data()), n, values.data(),
                   accumulate, line_record(l), stream);
    return true;
  }

  bool nonzero_on_device(const Line& l) {
    const codegen::wrapper::ReferenceCall& c = l.call;
    if (c.args.empty() || c.args[0].kind != codegen::wrapper::CallArg::Kind::Tensor || c.results.size() != 1) return false;
    std::vector<std::shared_ptr<HostStorage>> keep;
    std::optional<HostTensor> xc = contiguous(view(c.args[0].tensor), keep);
    if (!xc || is_complex(xc->dtype())) return false;
    const HostTensor& x = *xc;
    // The kernel writes the [count, rank] result with strides [1, count], as PyTorch lays it out.
    const codegen::wrapper::ReferenceCall::Result& r = c.results[0];
    size_t rank = x.sizes().size();
    if (r.ref.sizes.size() != 2 || r.ref.strides[0] != SymExpr::integer(1) ||
        (rank > 1 && r.ref.strides[1] != r.ref.sizes[0]))
      return false;
    NonzeroInput in;
    in.data = x.data();
    in.numel = x.numel();
    in.esize = static_cast<int>(x.element_size());
    in.sizes = x.sizes();
    if (is_floating(x.dtype())) in.sign_mask = uint64_t(1) << (8 * in.esize - 1);
    int64_t count = count_nonzero(in, stream);
    rs.produced_sizes(c, r, {count, static_cast<int64_t>(rank)}, env, binding);
    if (!rs.slots[static_cast<size_t>(r.ref.slot)]) allocate(r.ref.slot, eval(r.nbytes));
    HostTensor out = view(r.ref);
    nonzero_coordinates(in, count, reinterpret_cast<int64_t*>(out.data()), stream);
    return true;
  }
  double eval_double(SymExpr e) const { return eval_real(env, binding, e); }

  // The line's library call through cuBLASLt or cuDNN when the layouts allow it; else its op's
  // reference kernel on the host.
  void run_extern(const Line& l) {
    bool done = loop::is_convolution(l.library) ? try_convolution(l) : try_matmul(l);
    if (!done) run_on_host(l.call);
  }

  // A convolution or one of its backward passes through cuDNN when it takes the operands (else
  // false: the host runs it). Forward: (input, weight, bias) -> y; backward input: (grad_output,
  // weight) -> dx; backward weight: (grad_output, input) -> dw.
  bool try_convolution(const Line& l) {
    HostTensor out = view(l.result);
    HostTensor a = view(l.operands[0]), b = view(l.operands[1]);
    ConvArgs c;
    c.pass = l.library == loop::LibraryCall::ConvolutionBackwardInput    ? ConvPass::BackwardData
             : l.library == loop::LibraryCall::ConvolutionBackwardWeight ? ConvPass::BackwardFilter
                                                                         : ConvPass::Forward;
    const HostTensor& x = c.pass == ConvPass::Forward ? a : c.pass == ConvPass::BackwardData ? out : b;
    const HostTensor& wt = c.pass == ConvPass::Forward ? b : c.pass == ConvPass::BackwardData ? b : out;
    const HostTensor& y = c.pass == ConvPass::Forward ? out : a;
    if (x.dtype() != out.dtype() || wt.dtype() != out.dtype() || y.dtype() != out.dtype()) return false;
    if (x.numel() == 0 || wt.numel() == 0 || y.numel() == 0) return false;  // cuDNN takes no empty dims
    auto at = [](const HostTensor& t) -> void* {
      return const_cast<std::byte*>(t.storage()->data() + t.offset() * t.element_size());
    };
    c.dtype = out.dtype();
    c.x_sizes = x.sizes();
    c.x_strides = x.strides();
    c.w_sizes = wt.sizes();
    c.w_strides = wt.strides();
    c.y_sizes = y.sizes();
    c.y_strides = y.strides();
    c.stride = eval(l.params.stride);
    c.padding = eval(l.params.padding);
    c.dilation = eval(l.params.dilation);
    c.groups = eval(l.params.groups);
    c.x = at(x);
    c.w = at(wt);
    c.y = at(y);
    c.tf32 = l.params.tf32;
    if (c.pass == ConvPass::Forward && l.operands[2].slot >= 0) {
      HostTensor bias = view(l.operands[2]);
      if (bias.dtype() != out.dtype() || bias.sizes().size() != 1 || (bias.sizes()[0] > 1 && bias.strides()[0] != 1))
        return false;
      c.bias = at(bias);
    }
    return convolution_supported(c, nullptr) && convolution(c, stream, capturing ? replay_stream : nullptr);
  }

  static MatrixRef matrix(const HostTensor& x, bool batched) {
    size_t r = batched ? 1 : 0;
    MatrixRef m;
    m.ptr = x.storage()->data() + x.offset() * x.element_size();
    m.rows = x.sizes()[r];
    m.cols = x.sizes()[r + 1];
    m.row_stride = x.strides()[r];
    m.col_stride = x.strides()[r + 1];
    if (m.cols == 1) m.col_stride = 1;
    if (m.rows == 1) m.row_stride = std::max<int64_t>(m.cols, 1);
    m.batch_stride = batched ? (x.sizes()[0] == 1 ? 0 : x.strides()[0]) : 0;
    return m;
  }

  bool try_matmul(const Line& l) {
    HostTensor out = view(l.result);
    DType d = out.dtype();
    if (d != DType::Float32 && d != DType::BFloat16 && d != DType::Float16 && d != DType::Float64) return false;
    bool batched = l.library == loop::LibraryCall::Bmm;
    bool addmm = l.library == loop::LibraryCall::Addmm;
    const HostTensor a = view(l.operands[addmm ? 1 : 0]);
    const HostTensor b = view(l.operands[addmm ? 2 : 1]);
    MatmulArgs m;
    m.dtype = d;
    m.a = matrix(a, batched);
    m.b = matrix(b, batched);
    m.tf32 = l.params.tf32;
    m.batch = batched ? out.sizes()[0] : 1;
    if (m.a.cols == 0) return false;  // a product over nothing: the host writes zeros (or the bias)
    int64_t rows = out.sizes()[batched ? 1 : 0], cols = out.sizes()[batched ? 2 : 1];
    // The output: row-major contiguous per batch entry.
    if (out.strides()[batched ? 2 : 1] != 1 && cols > 1) return false;
    if (out.strides()[batched ? 1 : 0] != cols && rows > 1) return false;
    m.c = out.storage()->data() + out.offset() * out.element_size();
    m.c_batch_stride = batched ? out.strides()[0] : 0;
    if (addmm) {
      const HostTensor self = view(l.operands[0]);
      double beta = eval_double(l.params.beta);
      m.alpha = static_cast<float>(eval_double(l.params.alpha));
      // A bias over the columns: a contiguous [n] or [1, n] vector.
      bool bias = beta == 1.0 && self.dtype() == d && !self.sizes().empty() && self.sizes().back() == cols &&
                  (self.sizes().size() == 1 || (self.sizes().size() == 2 && self.sizes()[0] == 1)) &&
                  (cols == 1 || self.strides().back() == 1);
      if (!bias) return false;
      m.bias = self.storage()->data() + self.offset() * self.element_size();
      if (l.params.epilogue == loop::Epilogue::Gelu) m.epilogue = Epilogue::Gelu;
      if (l.params.epilogue == loop::Epilogue::Relu) m.epilogue = Epilogue::Relu;
    }
    if (!matmul_layout_ok(m.a) || !matmul_layout_ok(m.b)) return false;
    if (rows == 0 || cols == 0) return true;
    matmul(m, stream, capturing ? replay_stream : nullptr);
    return true;
  }

  // What a kernel line's launch takes from the sizes alone, kept while they stay the same
  // (binding_epoch): its rows and elements, symbol arguments and launch shape.
  struct LaunchPlan {
    uint64_t epoch = 0;  // 0: never made
    int64_t rows = 0, elements = 0;
    int64_t largest = 0;  // the largest index from the sizes and symbols (storages add theirs)
    int64_t reach = 0;    // the threads' spread: grid x block x vector width
    LaunchDims dims;
    std::vector<int64_t> sym_values;
    std::vector<unsigned> part_blocks;  // a combo kernel's blocks per part
  };
  std::vector<LaunchPlan> launch_plans;  // by line

  void rebound() {
    ++binding_epoch;
    bound_mid_run = true;
  }

  const LaunchPlan& launch_plan(const CudaKernel& k) {
    if (launch_plans.size() != w.lines.size()) launch_plans.resize(w.lines.size());
    LaunchPlan& p = launch_plans[line];
    if (p.epoch == binding_epoch) return p;
    p.rows = eval(k.rows);
    p.elements = eval(k.elements);
    p.largest = std::max(p.rows, p.elements);
    p.sym_values.clear();
    for (size_t slot : k.sym_slots) {
      auto it = binding.find(w.symbols[slot]);
      if (it == binding.end())  // never guess a size: no input (or earlier fallback) bound it
        user_error("kernel " + k.name + " needs symbol " + w.symbols[slot].str() +
                   ", which no input's size or scalar value determines");
      p.sym_values.push_back(symbol_word(it->second));
      if (it->second.type != sym::Type::Float) p.largest = std::max(p.largest, std::abs(p.sym_values.back()));
    }
    const DeviceInfo& dev = device();
    const int64_t V = k.vector_width;
    const LaunchTuning& tune = tuning();
    int64_t groups = (p.elements + V - 1) / V;
    p.dims = LaunchDims{};
    p.dims.waits_on_stream = true;  // every generated entry begins with t_wait_on_stream()
    if (!k.parts.empty()) {
      combo_dims(k, p);
    } else if (k.shape == CudaKernel::Shape::Flat) {
      int64_t threads = std::clamp<int64_t>(tune.flat_threads, 32, 1024);
      p.dims.block_x = static_cast<unsigned>(threads);
      p.dims.grid_x = static_cast<unsigned>(
          std::clamp<int64_t>((groups + threads - 1) / threads, 1, int64_t(dev.sm_count) * tune.blocks_per_sm));
    } else {
      int64_t threads = 32;  // a power of two: the block reductions rely on it
      int64_t most = std::clamp<int64_t>(tune.row_max_threads, 32, 512);
      int64_t per_thread = std::max<int64_t>(k.row_slots > 0 ? std::min<int64_t>(tune.row_groups, k.row_slots) : tune.row_groups, 1);
      while (threads * per_thread < groups && threads < most) threads *= 2;
      if (k.row_threads > 0) threads = k.row_threads;  // compiled in
      p.dims.block_x = static_cast<unsigned>(threads);
      // Rows of a warp or less compiled to share blocks: as many a block as keep two blocks per
      // multiprocessor at least (few rows keep a block each; a block may then be less than a
      // warp, its segment's lanes all it names).
      int64_t rows_per_block = k.rows_per_block;
      while (rows_per_block > 1 && p.rows < rows_per_block * int64_t(dev.sm_count) * 2) rows_per_block /= 2;
      p.dims.block_y = static_cast<unsigned>(rows_per_block);
      // A block per row (or per rows_per_block rows): the hardware hands rows to multiprocessors
      // as blocks finish, so their load, reduction and store phases overlap (a fixed grid
      // looping over rows reached 85-92% of the copy bandwidth where a block per row reaches
      // 89-98%: RESULTS 17a).
      int64_t blocks = tune.row_blocks_per_sm ? int64_t(dev.sm_count) * *tune.row_blocks_per_sm
                                              : int64_t(std::numeric_limits<int32_t>::max());
      p.dims.grid_x = static_cast<unsigned>(std::clamp<int64_t>((p.rows + rows_per_block - 1) / rows_per_block, 1, blocks));
    }
    // How far past the data an index may run: a flat loop's last stride; a row kernel's row
    // index by the grid, and a group index by a block's slots (and one more group) past its row.
    if (k.parts.empty())
      p.reach = k.shape == CudaKernel::Shape::Rows
                    ? int64_t(p.dims.grid_x) * p.dims.block_y + (std::max(k.row_slots, 1) + 1) * int64_t(p.dims.block_x) * V
                    : int64_t(p.dims.grid_x) * p.dims.block_x * V;
    p.epoch = binding_epoch;
    return p;
  }

  // Each part of a combo gets the blocks it would get alone (flat: `flat_threads` per block);
  // an empty part gets none.
  void combo_dims(const CudaKernel& k, LaunchPlan& p) {
    const int64_t threads = std::clamp<int64_t>(tuning().flat_threads, 32, 1024);
    const int64_t most = int64_t(device().sm_count) * tuning().blocks_per_sm;
    p.part_blocks.clear();
    p.reach = 0;
    int64_t total = 0;
    for (const CudaKernel::Part& part : k.parts) {
      int64_t elements = eval(part.elements);
      p.largest = std::max(p.largest, elements);
      int64_t groups = (elements + part.vector_width - 1) / part.vector_width;
      int64_t blocks = std::min((groups + threads - 1) / threads, most);
      p.part_blocks.push_back(static_cast<unsigned>(blocks));
      p.reach = std::max(p.reach, blocks * threads * part.vector_width);
      total += blocks;
    }
    p.rows = p.elements = total;  // no launch when every part is empty
    p.dims.block_x = static_cast<unsigned>(threads);
    p.dims.grid_x = static_cast<unsigned>(std::max<int64_t>(total, 1));
  }

  void launch_kernel(const Line& l) {
    size_t ki = static_cast<size_t>(l.kernel);
    const CudaKernel& k = w.cuda_kernels[ki];
    const LaunchPlan& p = launch_plan(k);
    if (p.rows == 0 || (k.shape == CudaKernel::Shape::Flat && p.elements == 0)) return;
    // Up to kMaxArgs parameters without a heap allocation.
    constexpr size_t kMaxArgs = 32;
    std::array<void*, kMaxArgs> ptr_buf;
    std::array<int64_t, kMaxArgs> sym_buf;
    std::array<void*, 3 * kMaxArgs> arg_buf;
    std::vector<void*> ptr_heap, arg_heap;
    std::vector<int64_t> sym_heap;
    bool small = k.args.size() <= kMaxArgs && p.sym_values.size() <= kMaxArgs && p.part_blocks.size() <= kMaxArgs;
    if (!small) {
      ptr_heap.resize(k.args.size());
      sym_heap.resize(p.sym_values.size());
      arg_heap.resize(k.args.size() + p.sym_values.size() + p.part_blocks.size());
    }
    void** ptrs = small ? ptr_buf.data() : ptr_heap.data();
    int64_t* syms_out = small ? sym_buf.data() : sym_heap.data();
    void** args = small ? arg_buf.data() : arg_heap.data();
    int64_t largest = p.largest;
    size_t n = 0;
    for (int slot : k.args) {
      const auto& s = rs.memory(slot, line);
      ptrs[n] = s->data();
      args[n] = &ptrs[n];
      ++n;
      size_t es = dtype_size(w.slots[static_cast<size_t>(slot)].dtype);
      largest = std::max(largest, static_cast<int64_t>(s->nbytes() / std::max<size_t>(es, 1)));
    }
    for (size_t i = 0; i < p.sym_values.size(); ++i) {
      syms_out[i] = p.sym_values[i];
      args[n++] = &syms_out[i];
    }
    // The launch copies the parameters' values: the plan outlives it.
    for (const unsigned& blocks : p.part_blocks) args[n++] = const_cast<unsigned*>(&blocks);
    bool i32 = k.has_i32 && largest + p.reach < kI32Limit;
    launch(i32 ? fn_i32[ki] : wide_entry(ki), p.dims, args, stream, k.name.c_str());
  }

  // A user kernel's launch: its parameters packed as the PTX declares them (8 bytes each at
  // most), the grid and block from the sizes of this call.
  void launch_user_kernel(const Line& l) {
    const codegen::wrapper::UserLaunch& u = l.launch;
    size_t ki = static_cast<size_t>(u.kernel);
    const codegen::wrapper::UserKernel& k = w.user_kernels.at(ki);
    auto fail = [&](const std::string& m) { user_error("user kernel '" + k.name + "': " + m, l.call.loc); };
    std::vector<int64_t> grid = eval(u.grid), block = eval(u.block);
    auto dim = [&](const std::vector<int64_t>& v, size_t i, const char* what) {
      int64_t x = i < v.size() ? v[i] : 1;
      if (x < 0 || x > int64_t(UINT32_MAX)) fail(std::string(what) + " dimension " + std::to_string(i) + " is " + std::to_string(x));
      return static_cast<unsigned>(x);
    };
    LaunchDims dims;
    dims.grid_x = dim(grid, 0, "grid");
    dims.grid_y = dim(grid, 1, "grid");
    dims.grid_z = dim(grid, 2, "grid");
    dims.block_x = dim(block, 0, "block");
    dims.block_y = dim(block, 1, "block");
    dims.block_z = dim(block, 2, "block");
    if (dims.grid_x == 0 || dims.grid_y == 0 || dims.grid_z == 0) return;  // no program to run (an empty tensor)
    int64_t shared = eval(u.shared);
    if (shared < 0) fail("shared memory of " + std::to_string(shared) + " bytes");
    dims.shared_bytes = static_cast<unsigned>(shared);
    if (static_cast<size_t>(shared) > user_shared_allowed[ki]) {
      allow_dynamic_shared(user_fns[ki], static_cast<size_t>(shared), k.name.c_str());
      user_shared_allowed[ki] = static_cast<size_t>(shared);
    }
    std::vector<uint64_t> words(k.param_types.size(), 0);
    for (size_t p = 0; p < words.size(); ++p) {
      size_t i = u.order.empty() ? p : static_cast<size_t>(u.order[p]);  // tensors, then scalars
      if (i < u.tensors.size()) {
        HostTensor t = view(u.tensors[i]);
        auto address = reinterpret_cast<uintptr_t>(t.data());
        if (address % 16 != 0 && std::find(u.aligned.begin(), u.aligned.end(), static_cast<int>(i)) != u.aligned.end())
          fail("tensor " + std::to_string(i) + " is at an address that is not 16-byte aligned (" +
               std::to_string(address % 16) + " bytes past), but the kernel was compiled assuming it is");
        words[p] = address;
        continue;
      }
      SymExpr e = u.scalars.at(i - u.tensors.size());
      std::optional<sym::Scalar> v = env.evaluate(e, binding);
      if (!v) fail("cannot evaluate scalar argument " + e.str() + " for this call");
      words[p] = pack_scalar(*v, k.param_types[p], [&](const std::string& m) { fail("parameter " + std::to_string(p) + ": " + m); });
    }
    std::vector<void*> args;
    for (uint64_t& word : words) args.push_back(&word);
    launch(user_fns[ki], dims, args.data(), stream, k.entry.c_str());
  }

  // Kernel ki's 64-bit entry point, compiled (through the cubin cache) and loaded on first use.
  Function wide_entry(size_t ki) {
    if (fn_i64[ki]) return fn_i64[ki];
    const CudaKernel& k = w.cuda_kernels[ki];
    std::vector<Cubin> c = compile_cubins({{codegen::cuda::cuda_translation_unit(k, true), k.name + "_i64"}}, nvrtc);
    modules.push_back(std::make_unique<Module>(c.at(0).image, k.name + "_i64"));
    fn_i64[ki] = modules.back()->function(codegen::cuda::entry_symbol(k, true));
    if (!k.index_sites.empty()) {
      add_module_record(ki, *modules.back());
      synchronize(nullptr);
      spare_checks.clear();  // sized for fewer records
    }
    return fn_i64[ki];
  }

  bool checks_positions() const { return !error_records.empty(); }

  // A recorded out of range gather position or zero divisor (record r): a UserError at its op. The device
  // record is cleared first, so the error is reported once.
  void report(size_t r, const uint64_t* rec, Stream s, const char* when) {
    if (rec[0] == 0) return;
    memset_zero(error_records[r].global, kRecordBytes, s);
    if (const Line* l = error_records[r].line)
      user_error(l->call.op_name + ": index " + std::to_string(static_cast<int64_t>(rec[2])) +
                     " is out of bounds for a dimension of size " + std::to_string(static_cast<int64_t>(rec[1])) + when,
                 l->call.loc);
    const CudaKernel& k = w.cuda_kernels[error_records[r].kernel];
    if (rec[0] > k.index_sites.size()) return;
    const auto& site = k.index_sites[rec[0] - 1];
    user_error(codegen::site_error(site, static_cast<int64_t>(rec[1]), static_cast<int64_t>(rec[2])) + when, site.loc);
  }

  // Waits for this run and reports the first out of range position any kernel recorded.
  void check_index_errors() {
    std::vector<uint64_t> recs(error_records.size() * 3);
    copy_to_host(recs.data(), record_array->ptr, recs.size() * sizeof(uint64_t), stream);
    for (size_t r = 0; r < error_records.size(); ++r) report(r, &recs[r * 3], stream, "");
  }

  // Queues copies of the records behind this run's kernels.
  void defer_index_check() {
    std::unique_ptr<PendingCheck> c;
    if (!spare_checks.empty()) {
      c = std::move(spare_checks.front());
      spare_checks.pop_front();
    } else {
      c = std::make_unique<PendingCheck>(error_records.size());
    }
    copy_to_pinned_host(c->records, 0, record_array->ptr, c->count * kRecordBytes, stream);
    c->copied.record(stream);
    pending.push_back(std::move(c));
  }

  // Reports errors from finished deferred checks; with `wait`, from all of them. Keeps at most
  // kMaxPending in flight (waiting for the oldest), so the host runs only a few runs ahead.
  void collect_deferred_checks(bool wait) {
    while (!pending.empty()) {
      PendingCheck& c = *pending.front();
      if (!wait && pending.size() <= kMaxPending && !c.copied.done()) break;
      c.copied.synchronize();
      std::vector<uint64_t> recs(c.count * 3);
      std::memcpy(recs.data(), c.records.data(), recs.size() * sizeof(uint64_t));
      std::memset(c.records.data(), 0, c.records.size());
      if (c.count == error_records.size()) spare_checks.push_back(std::move(pending.front()));
      pending.pop_front();
      for (size_t r = 0; r < recs.size() / 3; ++r) {
        if (recs[r * 3] == 0) continue;
        pending.clear();  // later runs' records repeat or follow this error; it is reported once
        report(r, &recs[r * 3], stream, " (found after an earlier run on the GPU had finished; that run's outputs are wrong)");
      }
    }
  }

  void run_line(const Line& l, const std::vector<RtValue>& inputs, std::vector<RtValue>& out) {
    switch (l.kind) {
      case Line::Kind::Comment: break;
      case Line::Kind::Alloc:
        if (l.pool >= 0) rs.place_in_pool(l, eval(l.offset), eval(l.nbytes), line);
        else allocate(l.slot, eval(l.nbytes));
        break;
      case Line::Kind::Reuse: rs.reuse(l, eval(l.nbytes)); break;
      case Line::Kind::Free: rs.free(l, line); break;
      case Line::Kind::PoolAlloc: {
        // Sized by data, so never in a workspace: from the caching allocator.
        int64_t n = eval(l.nbytes);
        rs.pool_alloc(l, device_storage(static_cast<size_t>(n), stream), n);
        break;
      }
      case Line::Kind::PoolFree: rs.pool_free(l, line); break;
      case Line::Kind::KernelCall: launch_kernel(l); break;
      case Line::Kind::ExternCall: run_extern(l); break;
      case Line::Kind::UserKernel: launch_user_kernel(l); break;
      case Line::Kind::FallbackCall:
        if (l.device_kernel) run_device_kernel(l);
        else run_on_host(l.call);
        rs.end_call(binding);
        rebound();  // results sized by the data bind their symbols
        break;
      case Line::Kind::SymbolDefs:
        bind_symbol_defs(l, rs.produced, env, binding);
        rebound();
        break;
      case Line::Kind::ScalarRead:
        bind_scalar_read(l, read_element(view(l.operands.at(0))), env, binding);
        rebound();
        break;
      case Line::Kind::Assert: check_assert(l, env, binding); break;
      case Line::Kind::Cond:
      case Line::Kind::While:
        rs.peak = std::max(rs.peak, rs.live + run_control(w, l, control_hooks(), binding));
        rebound();
        break;
      case Line::Kind::Return:
        out = collect_outputs(w, binding, inputs, [this](const TensorRef& r) { return RtValue(view(r)); });
        break;
    }
  }

  // Whether a call without a workspace computes every alloc line in the outputs it was given
  // (a program that needs no scratch: the caller passes none), so a capture allocates nothing.
  bool allocations_in_outputs(const RunOptions& o) {
    // No caller memory (toroid_run, whose outputs may have sizes only the run knows): nothing to hold them.
    if (o.outputs.empty()) return false;
    if (allocs_checked_epoch != binding_epoch) {
      std::vector<bool> given = slots_in_caller_memory(w, binding);
      std::vector<int64_t> offsets;
      allocs_fit_outputs = layout_workspace(binding, given, &offsets) == 0;
      holding_outputs.clear();
      const std::vector<codegen::wrapper::OutputPlan>& plan = w.outputs();
      for (size_t i = 0; i < plan.size(); ++i)
        if (plan[i].kind == codegen::wrapper::OutputPlan::Kind::Tensor && plan[i].tensor.slot >= 0 &&
            given[static_cast<size_t>(plan[i].tensor.slot)])
          holding_outputs.push_back(i);
      allocs_checked_epoch = binding_epoch;
    }
    if (!allocs_fit_outputs) return false;
    for (size_t i : holding_outputs)
      if (i >= o.outputs.size() || !o.outputs[i]) return false;
    return true;
  }

  // The captured state of this call's key, made on its first call (null: this call runs without
  // graphs: no partition, memory that is not the workspace's, or a stream the caller captures).
  CapturedCall* captured_call(const std::vector<RtValue>& inputs, const RunOptions& o) {
    if (w.partitions.empty() || (has_alloc_lines && !workspace && !allocations_in_outputs(o)) || is_capturing(stream)) {
      if (!graphs_declined) {
        graphs_declined = true;
        TOROID_LOG("cuda", "no CUDA graphs for " + w.graph_name + ": " +
                               (w.partitions.empty() ? "no partition" : is_capturing(stream) ? "the caller captures its stream" : "no workspace"));
      }
      return nullptr;
    }
    return &keys.find(inputs, o, workspace, stream, binding);
  }

  // Partition p of a call with graphs: replayed, captured (and launched), or run as usual.
  void run_partition(CapturedCall& call, size_t p, const std::vector<RtValue>& inputs, std::vector<RtValue>& out) {
    const codegen::wrapper::Partition& part = w.partitions[p];
    if (call.graphs[p]) {
      for (line = part.begin; line < part.end; ++line) {
        const Line& l = w.lines[line];
        if (l.kind == Line::Kind::Alloc || l.kind == Line::Kind::Reuse || l.kind == Line::Kind::Free) run_line(l, inputs, out);
      }
      launch_graph(*call.graphs[p], stream);
      return;
    }
    if (call.calls == 0 || !call.capturable[p]) {
      host_ran = false;
      for (line = part.begin; line < part.end; ++line) run_line(w.lines[line], inputs, out);
      if (host_ran) call.capturable[p] = 0;
      return;
    }
    Stream user = stream;
    stream = capture_stream(user);
    replay_stream = user;
    capturing = true;
    capture_unsafe = false;
    std::unique_ptr<GraphExec> graph;
    try {
      begin_capture(stream);
      for (line = part.begin; line < part.end; ++line) run_line(w.lines[line], inputs, out);
      capturing = false;
      graph = end_capture(stream);
    } catch (...) {
      if (capturing) abort_capture(stream);
      capturing = false;
      stream = user;
      throw;
    }
    stream = user;
    launch_graph(*graph, stream);  // this call's work
    if (capture_unsafe) {
      call.capturable[p] = 0;
      synchronize(stream);  // memory the capture took from the allocator is released after the run
      TOROID_LOG("cuda", "partition " + std::to_string(p) + " of " + w.graph_name + " allocates outside the workspace: not replayed");
      return;
    }
    TOROID_LOG("cuda", "captured partition " + std::to_string(p) + " of " + w.graph_name + " (" +
                           std::to_string(part.launches) + " launches)");
    call.graphs[p] = std::move(graph);
  }

  std::vector<RtValue> run(const std::vector<RtValue>& inputs, sym::Binding b, RunStats* stats,
                           const RunOptions& o) {
    collect_deferred_checks(false);
    binding = std::move(b);
    if (bound_mid_run || !same_values(epoch_binding, binding)) {
      ++binding_epoch;
      epoch_binding = binding;
    }
    bound_mid_run = false;
    stream = o.stream ? o.stream : default_stream();
    workspace = static_cast<char*>(o.workspace);
    CapturedCall* call = o.cuda_graphs ? captured_call(inputs, o) : nullptr;
    // Pooled keys: the moving inputs and every output go through the key's own buffers.
    std::vector<RtValue> staged;
    RunOptions pooled_options;
    const std::vector<RtValue>& run_inputs = call && keys.pooled() ? (staged = keys.stage_inputs(*call, inputs, stream)) : inputs;
    const RunOptions& ro = call && keys.pooled() ? (pooled_options = keys.stage_outputs(*call, o, stream)) : o;
    rs.start(w, run_inputs, constants, bind_outputs(w, ro.outputs, binding), binding);
    workspace = nullptr;
    if (ro.workspace) {
      // The layout depends on the sizes and the slots in caller memory: laid out again when
      // either changes (compared in place: no allocation per call).
      bool same_given = layout_given.size() == rs.bound.size();
      for (size_t i = 0; same_given && i < rs.bound.size(); ++i) same_given = layout_given[i] == (rs.bound[i] != nullptr);
      if (!layout_binding || !same_values(*layout_binding, binding) || !same_given) {
        layout_given.assign(rs.bound.size(), false);
        for (size_t i = 0; i < rs.bound.size(); ++i) layout_given[i] = rs.bound[i] != nullptr;
        layout_need = layout_workspace(binding, layout_given, &workspace_offsets);
        layout_binding = binding;
      }
      size_t need = layout_need;
      if (need > ro.workspace_bytes)
        user_error("the workspace has " + std::to_string(ro.workspace_bytes) + " bytes but these sizes need " +
                   std::to_string(need));
      workspace = static_cast<char*>(ro.workspace);
    }
    std::vector<RtValue> out;
    size_t next_partition = 0;
    for (line = 0; line < w.lines.size(); ++line) {
      if (call && next_partition < w.partitions.size() && w.partitions[next_partition].begin == line) {
        run_partition(*call, next_partition, run_inputs, out);
        line = w.partitions[next_partition++].end - 1;
        continue;
      }
      run_line(w.lines[line], run_inputs, out);
    }
    if (call) ++call->calls;
    if (checks_positions()) {
      if (o.deferred_checks) defer_index_check();
      else check_index_errors();
    }
    // The plan's peak is evaluated only where it is checked or reported.
    int64_t planned_peak = stats || rs.verify ? rs.check_peak(w, binding) : 0;
    if (stats) {
      stats->peak_bytes = rs.peak;
      stats->planned_peak_bytes = planned_peak;
    }
    rs.finish();
    return out;
  }
};

CudaExecutor::CudaExecutor(const codegen::wrapper::WrapperProgram& program, const std::vector<Cubin>& cubins,
                           const NvrtcOptions& options) {
  size_t next = 0;
  impl_ = std::make_unique<Impl>(program, cubins, next, options);
  TOROID_CHECK(next == cubins.size(), "one cubin per kernel");
}
CudaExecutor::~CudaExecutor() = default;

std::vector<RtValue> CudaExecutor::run(const std::vector<RtValue>& inputs, sym::Binding binding, RunStats* stats,
                                       const RunOptions& options) {
  return impl_->run(inputs, std::move(binding), stats, options);
}

void CudaExecutor::check_errors() { impl_->collect_deferred_checks(true); }

size_t CudaExecutor::workspace_bytes(const sym::Binding& binding, bool outputs_given) const {
  std::vector<int64_t> offsets;
  std::vector<bool> given = outputs_given ? slots_in_caller_memory(impl_->w, binding) : std::vector<bool>{};
  return impl_->layout_workspace(binding, given, &offsets);
}

}  // namespace toroid::runtime::cuda
