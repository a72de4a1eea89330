// The C ABI (include/toroid/c_api.h) over driver::CompiledModule, and nothing below it. Caller tensors are wrapped
// without copying (a HostStorage adopting the caller's pointer, released by nobody); outputs of
// toroid_run carry a heap-allocated reference to their storage in `owner`.
#include "toroid/c_api.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "toroid/driver/compile.h"
#include "toroid/driver/user_kernels.h"
#include "toroid/driver/package.h"
#include "toroid/graph/inputs.h"
#include "toroid/support/error.h"

struct toroid_package {
  std::unique_ptr<toroid::driver::Package> package;
  int num_outputs = 0;
};

struct toroid_module {
  std::unique_ptr<toroid::driver::CompiledModule> module;
  int num_inputs = 0, num_outputs = 0;
  // The inputs of the signature's last call, wrapped: a later call re-points their storages at its
  // own data instead of wrapping each input again (a tensor and a storage per input per call).
  // Taken by one call at a time (try_lock; a busy one wraps afresh).
  struct Wrapped {
    std::mutex mu;
    std::vector<toroid::ops::RtValue> in;
  };
  // What a call with given input headers (all but their data pointers) binds, runs and returns:
  // the same for every call with those headers, so repeated calls skip binding, the guards and
  // the outputs' metadata. Bounded; cleared when full.
  struct Signature {
    std::string key;  // the headers' bytes that decide it (signature_of), checked on a hash's hit
    std::shared_ptr<Wrapped> wrapped;
    toroid::sym::Binding binding;
    toroid::driver::Specialization* spec = nullptr;
    std::vector<toroid_output_info> infos;
  };
  std::mutex signatures_mu;
  std::unordered_map<uint64_t, Signature> signatures;  // by signature_hash
};

namespace {

using toroid::user_error;
using toroid::ops::HostStorage;
using toroid::ops::HostTensor;
using toroid::ops::RtValue;

thread_local std::string last_error;

struct NotOwned : HostStorage::Releaser {
  void release(std::byte*, size_t) noexcept override {}
  // One for every caller tensor: it holds nothing.
  static const std::shared_ptr<NotOwned>& shared() {
    static const auto* one = new std::shared_ptr<NotOwned>(std::make_shared<NotOwned>());
    return *one;
  }
};

template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const toroid::UserError& e) {
    last_error = e.what();
  } catch (const toroid::InternalError& e) {
    last_error = std::string("internal error: ") + e.what();
  } catch (const std::exception& e) {
    last_error = e.what();
  }
  return 1;
}

// The graph's outputs as a run returns them: the output node's arguments with lists
// flattened (None and scalar expressions count, as in interpret()).
int count_outputs(const std::vector<toroid::Argument>& args) {
  int n = 0;
  for (const toroid::Argument& a : args) n += a.is_list() ? count_outputs(a.list()) : 1;
  return n;
}

bool is_cuda(const toroid_module* m) { return m->module->options().target.is_cuda(); }

// Elements from a caller's tensor's first element to one past its last (checked, as
// runtime::view_extent).
int64_t extent(const int64_t* sizes, const int64_t* strides, int ndim, const std::string& what) {
  auto n = static_cast<size_t>(std::max(ndim, 0));
  return toroid::runtime::view_extent({sizes, n}, {strides, n}, what);
}

// A tensor's bytes from its first element (its extent times the element size), checked.
size_t extent_bytes(const toroid_tensor& t, size_t element_size, const std::string& what) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(extent(t.sizes, t.strides, t.ndim, what)), element_size, &bytes))
    user_error(what + ": the tensor's bytes overflow the address space");
  return bytes;
}

// The byte offset of a tensor's first element, checked.
size_t offset_bytes(const toroid_tensor& t, size_t element_size, const std::string& what) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(t.offset), element_size, &bytes))
    user_error(what + ": offset " + std::to_string(t.offset) + " overflows the address space");
  return bytes;
}

// A scalar input for an int argument: a whole number in int64's range (a cast of anything else
// is undefined behaviour).
int64_t int_scalar(double v, const std::string& what) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || v != std::trunc(v))
    user_error(what + ": " + std::to_string(v) + " is not an int64 value");
  return static_cast<int64_t>(v);
}

// A valid header's extent and offset in bytes, or nothing where either overflows (the callers
// then build the message: extent_bytes and offset_bytes, which throw).
std::optional<std::pair<size_t, size_t>> caller_bytes(const toroid_tensor& t, size_t element_size) {
  int64_t elements = 1;
  bool overflow = false, empty = false;
  for (int d = 0; d < t.ndim; ++d) {
    int64_t step = 0;
    overflow |= __builtin_mul_overflow(t.sizes[d] - 1, t.strides[d], &step) || __builtin_add_overflow(elements, step, &elements);
    empty |= t.sizes[d] == 0;
  }
  size_t nbytes = 0, offset = 0;
  if (overflow || __builtin_mul_overflow(static_cast<size_t>(empty ? 0 : elements), element_size, &nbytes) ||
      __builtin_mul_overflow(static_cast<size_t>(t.offset), element_size, &offset))
    return std::nullopt;
  return std::pair{nbytes, offset};
}

// Names a caller's tensor in messages ("toroid_run: input 2"); built only for a message, since a
// call with hundreds of inputs would spend more on the names than on the checks.
struct Naming {
  const char* fn;
  const char* kind;
  int index;
  operator std::string() const { return std::string(fn) + ": " + kind + " " + std::to_string(index); }
};

// A caller tensor's header, checked quickly: where every field is in range, nothing is built.
bool plain_tensor(const toroid_tensor& t, const void* data, bool need_data) {
  if (t.ndim > TOROID_MAX_DIMS || t.dtype < 0 || t.dtype >= toroid::kNumDTypes || t.offset < 0) return false;
  bool empty = false;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.sizes[d] < 0 || t.strides[d] < 0) return false;
    empty |= t.sizes[d] == 0;
  }
  return !need_data || data || empty;
}

// Checks a caller tensor's header; `what` names it in messages ("toroid_run: input 2"). A tensor
// with no elements may have a null data pointer (PyTorch gives empty tensors one).
void check_tensor(const toroid_tensor& t, const void* data, const std::string& what, bool need_data) {
  if (t.ndim > TOROID_MAX_DIMS)
    user_error(what + ": " + std::to_string(t.ndim) + " dims (at most " + std::to_string(TOROID_MAX_DIMS) + ")");
  if (t.dtype < 0 || t.dtype >= toroid::kNumDTypes) user_error(what + ": unknown dtype code " + std::to_string(t.dtype));
  if (t.offset < 0) user_error(what + ": negative offset " + std::to_string(t.offset));
  for (int d = 0; d < t.ndim; ++d)
    if (t.sizes[d] < 0 || t.strides[d] < 0) user_error(what + ": negative size or stride in dim " + std::to_string(d));
  if (need_data && !data && extent(t.sizes, t.strides, std::max(t.ndim, 0), what) > 0)
    user_error(what + ": null data pointer for a tensor with elements");
}

// The caller's tensor as a HostTensor whose storage starts at its first element (so the graph's
// offset-0 inputs see it at offset 0). Data may be NULL when only its metadata is needed.
RtValue wrap_input(const toroid_tensor& t, void* data, const toroid::Value* v, const Naming& name, bool need_data) {
  if (t.ndim < 0) {
    switch (v->type()) {
      case toroid::ValueType::Bool: return RtValue::boolean(t.scalar != 0);
      case toroid::ValueType::Int: return RtValue::integer(int_scalar(t.scalar, name));
      default: return RtValue::floating(t.scalar);
    }
  }
  if (!plain_tensor(t, data, need_data)) check_tensor(t, data, name, need_data);  // throws, naming the input
  auto dtype = static_cast<toroid::DType>(t.dtype);
  size_t es = static_cast<size_t>(toroid::dtype_size(dtype));
  std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim), strides(t.strides, t.strides + t.ndim);
  std::optional<std::pair<size_t, size_t>> bytes = caller_bytes(t, es);
  if (!bytes) {  // both throw, naming the input
    extent_bytes(t, es, name);
    offset_bytes(t, es, name);
  }
  auto [nbytes, offset] = *bytes;
  auto* base = data ? static_cast<std::byte*>(data) + offset : nullptr;
  auto storage = std::make_shared<HostStorage>(base, nbytes, NotOwned::shared());
  return HostTensor::from_storage(std::move(storage), dtype, std::move(sizes), std::move(strides), 0);
}

void check_input_array(const toroid_module* m, const char* fn, const toroid_tensor* inputs, int num_inputs) {
  if (num_inputs != m->num_inputs)
    user_error(std::string(fn) + ": the graph takes " + std::to_string(m->num_inputs) + " inputs (inputs, then params), got " +
               std::to_string(num_inputs));
  if (num_inputs > 0 && !inputs) user_error(std::string(fn) + ": null inputs array");
}

std::vector<RtValue> wrap_inputs(toroid_module* m, const char* fn, const toroid_tensor* inputs, const void* const* data,
                                 int num_inputs, bool need_data) {
  check_input_array(m, fn, inputs, num_inputs);
  const std::vector<const toroid::Value*>& values = m->module->input_values();
  std::vector<RtValue> in;
  in.reserve(static_cast<size_t>(num_inputs));
  for (int i = 0; i < num_inputs; ++i)
    in.push_back(wrap_input(inputs[i], const_cast<void*>(data ? data[i] : inputs[i].data), values[static_cast<size_t>(i)],
                            {fn, "input", i}, need_data));
  return in;
}

// Module handles: every live one is in a table. A freed module's shell stays allocated (its
// compiled state is released), so its address is never handed out again and a stale handle
// (freed twice, or used after toroid_module_free) is always recognised, not a use after free.
struct Handles {
  std::mutex mu;
  std::unordered_set<const toroid_module*> live;
  std::vector<std::unique_ptr<toroid_module>> freed;
  std::unordered_set<const void*> owners;  // toroid_tensor.owner of outputs not yet released
  // Packages as modules: a freed one's shell stays, so a stale handle is never a new package.
  std::unordered_set<const toroid_package*> packages;
  std::vector<std::unique_ptr<toroid_package>> freed_packages;
};
Handles& handles() {
  static Handles* h = new Handles();  // never destroyed: calls may come from exit handlers
  return *h;
}
bool is_live(const toroid_module* m) {
  std::lock_guard<std::mutex> lock(handles().mu);
  return handles().live.count(m) != 0;
}
// The module behind a handle: a UserError for NULL, a freed handle or a pointer that never was one.
void check_handle(const toroid_module* m, const std::string& fn) {
  if (!m) user_error(fn + ": null module");
  if (!is_live(m)) user_error(fn + ": not a live module (freed already, or not from toroid_compile)");
}

void check_module(const toroid_module* m, const char* fn, int num_outputs, const void* outputs) {
  check_handle(m, fn);
  if (num_outputs != m->num_outputs)
    user_error(std::string(fn) + ": the graph has " + std::to_string(m->num_outputs) + " outputs, got room for " +
               std::to_string(num_outputs));
  if (num_outputs > 0 && !outputs) user_error(std::string(fn) + ": null outputs array");
}

void fill_output(const RtValue& v, toroid_tensor* out) {
  *out = toroid_tensor{};
  if (!v.is_tensor()) {
    out->ndim = -1;
    out->scalar = v.is_none() ? 0.0 : v.to_double();
    return;
  }
  const HostTensor& t = v.tensor();
  out->data = t.storage()->data();
  out->dtype = static_cast<int32_t>(t.dtype());
  out->ndim = static_cast<int32_t>(t.sizes().size());
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    out->sizes[d] = t.sizes()[d];
    out->strides[d] = t.strides()[d];
  }
  out->offset = t.offset();
  out->owner = new std::shared_ptr<HostStorage>(t.storage());
  {
    std::lock_guard<std::mutex> lock(handles().mu);
    handles().owners.insert(out->owner);
  }
}

// Sizes, strides and aliasing of each output of `s` under `b` (toroid_get_output_info's rules,
// from the program's output plan).
std::vector<toroid_output_info> describe_outputs(const toroid::driver::Specialization& s, const toroid::sym::Binding& b) {
  std::vector<toroid_output_info> out;
  std::vector<toroid::runtime::OutputLayout> layouts = s.output_layouts(b);
  for (size_t i = 0; i < layouts.size(); ++i) {
    const toroid::runtime::OutputLayout& l = layouts[i];
    toroid_output_info info{};
    info.alias_input = l.alias_input;
    info.alias_output = l.alias_output;
    if (l.is_scalar) {
      info.is_scalar = 1;
      info.ndim = -1;
      out.push_back(info);
      continue;
    }
    if (l.sizes.size() > TOROID_MAX_DIMS) user_error("output " + std::to_string(i) + ": more than 16 dims");
    info.dtype = static_cast<int32_t>(l.dtype);
    info.ndim = static_cast<int32_t>(l.sizes.size());
    std::copy(l.sizes.begin(), l.sizes.end(), info.sizes);
    std::copy(l.strides.begin(), l.strides.end(), info.strides);
    info.offset = l.offset;
    out.push_back(info);
  }
  return out;
}

// The caller's memory for output i (null for aliases and scalars), checked against `info`.
std::shared_ptr<HostStorage> wrap_output(const toroid_tensor& t, void* data, const toroid_output_info& info, int i) {
  if (info.is_scalar || info.alias_input >= 0 || info.alias_output >= 0) return nullptr;
  bool as_described = plain_tensor(t, data, true) && t.dtype == info.dtype && t.ndim == info.ndim;
  for (int d = 0; as_described && d < t.ndim; ++d)
    as_described = t.sizes[d] == info.sizes[d] && (t.sizes[d] <= 1 || t.strides[d] == info.strides[d]);
  size_t es = as_described ? static_cast<size_t>(toroid::dtype_size(static_cast<toroid::DType>(t.dtype))) : 0;
  if (as_described) {  // the common case, with no message built
    if (std::optional<std::pair<size_t, size_t>> bytes = caller_bytes(t, es)) {
      auto [nbytes, offset] = *bytes;
      return std::make_shared<HostStorage>(data ? static_cast<std::byte*>(data) + offset : nullptr, nbytes, NotOwned::shared());
    }
  }
  std::string what = "toroid_run_into: output " + std::to_string(i);
  check_tensor(t, data, what, true);
  if (t.dtype != info.dtype)
    user_error(what + ": dtype code " + std::to_string(t.dtype) + ", expected " + std::to_string(info.dtype));
  if (t.ndim != info.ndim) user_error(what + ": " + std::to_string(t.ndim) + " dims, expected " + std::to_string(info.ndim));
  for (int d = 0; d < t.ndim; ++d) {
    if (t.sizes[d] != info.sizes[d])
      user_error(what + ": size " + std::to_string(t.sizes[d]) + " in dim " + std::to_string(d) + ", expected " +
                 std::to_string(info.sizes[d]));
    if (t.sizes[d] > 1 && t.strides[d] != info.strides[d])
      user_error(what + ": stride " + std::to_string(t.strides[d]) + " in dim " + std::to_string(d) + ", expected " +
                 std::to_string(info.strides[d]));
  }
  es = static_cast<size_t>(toroid::dtype_size(static_cast<toroid::DType>(t.dtype)));
  auto* base = data ? static_cast<std::byte*>(data) + offset_bytes(t, es, what) : nullptr;
  return std::make_shared<HostStorage>(base, extent_bytes(t, es, what), NotOwned::shared());
}

// The inputs of a call, the specialization that runs them (compiled first if needed), its
// symbols' values and the outputs' metadata.
struct Call {
  std::vector<RtValue> in;
  std::shared_ptr<toroid_module::Wrapped> reused;  // when set, its inputs (locked) are this call's
  // A signature's Wrapped this call made from `in` (its storages shared): locked like `reused`, so
  // that another call re-points them only after this one ends (the unlock orders the two).
  std::shared_ptr<toroid_module::Wrapped> shared;
  std::unique_lock<std::mutex> reused_lock;  // reused's or shared's, to the end of the call
  const std::vector<RtValue>& inputs() const { return reused ? reused->in : in; }
  toroid::sym::Binding binding;
  toroid::driver::Specialization* spec = nullptr;
  std::vector<toroid_output_info> infos;
};

// The bytes of the input headers that decide a call's binding: everything but the data pointers
// and owners, handed to `put` piece by piece (built into a key once, compared and hashed in
// place on every call: no key is built per call).
template <class Put>
void visit_signature(const toroid_tensor* inputs, int num_inputs, Put&& put) {
  for (int i = 0; i < num_inputs; ++i) {
    const toroid_tensor& t = inputs[i];
    int ndim = std::clamp(t.ndim, -1, TOROID_MAX_DIMS);
    put(&t.dtype, sizeof t.dtype);
    put(&t.ndim, sizeof t.ndim);
    if (ndim < 0) {
      put(&t.scalar, sizeof t.scalar);
      continue;
    }
    put(t.sizes, sizeof(int64_t) * static_cast<size_t>(ndim));
    put(t.strides, sizeof(int64_t) * static_cast<size_t>(ndim));
    put(&t.offset, sizeof t.offset);
  }
}

std::string signature_of(const toroid_tensor* inputs, int num_inputs) {
  std::string key;
  visit_signature(inputs, num_inputs, [&](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); });
  return key;
}

uint64_t signature_hash(const toroid_tensor* inputs, int num_inputs) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(num_inputs);
  visit_signature(inputs, num_inputs, [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (; n > 0; b += std::min<size_t>(n, 8), n -= std::min<size_t>(n, 8)) {
      uint64_t w = 0;
      std::memcpy(&w, b, std::min<size_t>(n, 8));
      h = (h ^ w) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
  });
  return h;
}

bool same_signature(const std::string& key, const toroid_tensor* inputs, int num_inputs) {
  size_t at = 0;
  bool same = true;
  visit_signature(inputs, num_inputs, [&](const void* p, size_t n) {
    same = same && at + n <= key.size() && std::memcmp(key.data() + at, p, n) == 0;
    at += n;
  });
  return same && at == key.size();
}

// Re-points the wrapped inputs of a signature (headers byte-identical to these but for data) at
// this call's data; false (nothing changed) when another call holds them, a storage is shared
// beyond the wrapper, or a tensor with elements has no data (wrapping afresh reports it).
bool repoint_inputs(toroid_module::Wrapped& w, std::unique_lock<std::mutex>& lock, const toroid_tensor* inputs,
                    const void* const* data, bool need_data) {
  std::unique_lock<std::mutex> l(w.mu, std::try_to_lock);
  if (!l) return false;
  for (size_t i = 0; i < w.in.size(); ++i) {
    if (!w.in[i].is_tensor()) continue;
    const std::shared_ptr<HostStorage>& s = w.in[i].tensor().storage();
    const void* p = data ? data[i] : inputs[i].data;
    if (s.use_count() != 1 || (need_data && !p && s->nbytes() > 0)) return false;
  }
  for (size_t i = 0; i < w.in.size(); ++i) {
    if (!w.in[i].is_tensor()) continue;
    const toroid_tensor& t = inputs[i];
    auto* p = static_cast<std::byte*>(const_cast<void*>(data ? data[i] : t.data));
    size_t es = static_cast<size_t>(toroid::dtype_size(static_cast<toroid::DType>(t.dtype)));
    w.in[i].tensor().storage()->repoint(p ? p + static_cast<size_t>(t.offset) * es : nullptr);
  }
  lock = std::move(l);
  return true;
}

Call prepare(toroid_module* m, const char* fn, const toroid_tensor* inputs, const void* const* data, int num_inputs,
             int num_outputs, const void* outputs, bool need_data) {
  constexpr size_t kMaxSignatures = 64;
  check_module(m, fn, num_outputs, outputs);
  check_input_array(m, fn, inputs, num_inputs);  // before signature_of reads them
  Call c;
  uint64_t hash = signature_hash(inputs, num_inputs);
  std::shared_ptr<toroid_module::Wrapped> wrapped;
  {
    std::lock_guard<std::mutex> lock(m->signatures_mu);
    if (auto it = m->signatures.find(hash); it != m->signatures.end() && same_signature(it->second.key, inputs, num_inputs)) {
      c.binding = it->second.binding;
      c.spec = it->second.spec;
      c.infos = it->second.infos;
      wrapped = it->second.wrapped;
    }
  }
  if (c.spec) {
    if (!need_data) return c;  // metadata only: the inputs are not needed
    if (wrapped && repoint_inputs(*wrapped, c.reused_lock, inputs, data, need_data)) {
      c.reused = std::move(wrapped);
      return c;
    }
    c.in = wrap_inputs(m, fn, inputs, data, num_inputs, need_data);
    if (!wrapped && need_data) {  // first seen without data (toroid_get_output_info): kept from now on
      auto w = std::make_shared<toroid_module::Wrapped>();
      c.reused_lock = std::unique_lock<std::mutex>(w->mu);
      w->in = c.in;
      c.shared = w;
      std::lock_guard<std::mutex> lock(m->signatures_mu);
      if (auto it = m->signatures.find(hash); it != m->signatures.end() && !it->second.wrapped &&
                                               same_signature(it->second.key, inputs, num_inputs))
        it->second.wrapped = std::move(w);
    }
    return c;
  }
  c.in = wrap_inputs(m, fn, inputs, data, num_inputs, need_data);
  c.spec = &m->module->specialize(c.in, &c.binding);
  c.infos = describe_outputs(*c.spec, c.binding);
  auto w = std::make_shared<toroid_module::Wrapped>();
  if (need_data) {  // shares this call's storages: locked until it ends
    c.reused_lock = std::unique_lock<std::mutex>(w->mu);
    w->in = c.in;
    c.shared = w;
  }
  std::lock_guard<std::mutex> lock(m->signatures_mu);
  if (m->signatures.size() >= kMaxSignatures) m->signatures.clear();
  // A hash shared with another signature (never seen yet) replaces it: correct, if slower.
  m->signatures[hash] = toroid_module::Signature{signature_of(inputs, num_inputs), need_data ? w : nullptr, c.binding,
                                                 c.spec, c.infos};
  return c;
}

// The C ABI's NULL stream is CUDA's legacy default stream (PyTorch's cuda_stream 0), which the
// driver API names CU_STREAM_LEGACY; the driver layer's nullptr means toroid's own.
void* cu_stream(void* stream) { return stream ? stream : reinterpret_cast<void*>(uintptr_t{1}); }

// The driver's options for a caller's (checked: size, device).
toroid::driver::CompileOptions driver_options(const toroid_compile_options* options) {
  if (!options) user_error("toroid_compile_with_options: null options (use toroid_compile_options_init)");
  if (options->struct_size < sizeof(size_t) || options->struct_size > sizeof(toroid_compile_options))
    user_error("toroid_compile_with_options: struct_size " + std::to_string(options->struct_size) +
               " is not a toroid_compile_options of this library (at most " +
               std::to_string(sizeof(toroid_compile_options)) + " bytes; set it to sizeof)");
  // Fields past the caller's struct_size keep their defaults.
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  std::memcpy(&o, options, options->struct_size);
  std::string dev = o.device ? o.device : "cpu";
  toroid::driver::CompileOptions co;
  if (dev == "cuda") co.target = toroid::Target::cuda();
  else if (dev != "cpu") user_error("toroid_compile: device must be \"cpu\" or \"cuda\", got \"" + dev + "\"");
  co.dynamic = o.dynamic != 0;
  co.reference_kernels = o.reference_kernels != 0;
  co.deterministic = o.deterministic != 0;
  co.cuda_graphs = o.cuda_graphs != 0;
  co.tf32_convolutions = o.tf32_convolutions != 0;
  co.tf32_matmuls = o.tf32_matmuls != 0;
  co.emulate_precision_casts = o.emulate_precision_casts != 0;
  if (o.dump_dir) co.dump_dir = o.dump_dir;
  return co;
}

bool is_live(const toroid_package* p) {
  std::lock_guard<std::mutex> lock(handles().mu);
  return handles().packages.count(p) != 0;
}
}  // namespace

namespace toroid::capi {
void set_last_error(std::string message) { last_error = std::move(message); }
}  // namespace toroid::capi

extern "C" {

const char* toroid_last_error(void) { return last_error.c_str(); }
const char* toroid_version(void) { return TOROID_VERSION_STRING; }
int toroid_abi_version(void) { return TOROID_ABI_VERSION; }

int toroid_cuda_available(void) { return toroid::driver::cuda_available() ? 1 : 0; }

int toroid_device_memory_stats(toroid_device_memory* stats, int reset_peak) {
  return guarded([&] {
    if (!stats) user_error("toroid_device_memory_stats: null stats");
    toroid::driver::DeviceMemoryStats s = toroid::driver::device_memory_stats(reset_peak != 0);
    *stats = {s.lent_bytes, s.peak_lent_bytes, s.cached_bytes, s.fresh_blocks, s.reused_blocks};
  });
}

int toroid_op_supported(const char* name) {
  if (!name) return 0;
  try {
    return toroid::driver::op_supported(name) ? 1 : 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 0;
  }
}

int toroid_op_supported_on(const char* name, const char* device) {
  std::string d = device ? device : "";
  if (d != "cpu" && d != "cuda") {
    last_error = "toroid_op_supported_on: unknown device '" + d + "' (cpu or cuda)";
    return -1;
  }
  if (!name) return 0;
  try {
    return toroid::driver::op_lowered(name, d == "cuda" ? toroid::Device::cuda(0) : toroid::Device::cpu()) ? 1 : 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 0;
  }
}

int toroid_analyze_kernel(const char* text, const char* kind, int arch, const char** json) {
  thread_local std::string result;
  return guarded([&] {
    if (!text || !kind || !json) user_error("toroid_analyze_kernel: null text, kind or result pointer");
    result = toroid::driver::analyze_kernel_json(text, kind, arch);
    *json = result.c_str();
  });
}

void toroid_compile_options_init(toroid_compile_options* options) {
  if (!options) return;
  *options = toroid_compile_options{};
  options->struct_size = sizeof(toroid_compile_options);
  options->device = "cpu";
  options->dynamic = 1;
  options->reference_kernels = 1;
  options->cuda_graphs = 1;
}

int toroid_compile_with_options(const char* text, const char* filename, const toroid_compile_options* options,
                                toroid_module** out) {
  return guarded([&] {
    if (!text || !out) user_error("toroid_compile: null text or result pointer");
    toroid::driver::CompileOptions co = driver_options(options);
    auto m = std::make_unique<toroid_module>();
    m->module = toroid::driver::CompiledModule::compile(text, filename ? filename : "<toroid_compile>", co);
    m->num_inputs = static_cast<int>(toroid::graph_inputs(m->module->graph()).size());
    const toroid::Node* output = m->module->graph().output_node();
    m->num_outputs = output ? count_outputs(output->args()) : 0;
    std::lock_guard<std::mutex> lock(handles().mu);
    handles().live.insert(m.get());
    *out = m.release();
  });
}

int toroid_compile(const char* text, const char* filename, const char* device, toroid_module** out) {
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  o.device = device;
  return toroid_compile_with_options(text, filename, &o, out);
}

void toroid_module_free(toroid_module* m) {
  if (!m) return;
  std::unique_ptr<toroid::driver::CompiledModule> state;
  {
    std::lock_guard<std::mutex> lock(handles().mu);
    if (!handles().live.erase(m)) {
      last_error = "toroid_module_free: not a live module (freed already, or not from toroid_compile)";
      return;
    }
    state = std::move(m->module);
    handles().freed.emplace_back(m);
  }
}
int toroid_num_inputs(const toroid_module* m) { return is_live(m) ? m->num_inputs : -1; }
int toroid_num_outputs(const toroid_module* m) { return is_live(m) ? m->num_outputs : -1; }
double toroid_compile_ms(const toroid_module* m) { return is_live(m) ? m->module->compile_ms() : 0.0; }
int toroid_cache_hit(const toroid_module* m) {
  return is_live(m) && (m->module->reused() || m->module->current().stats.cache_hit) ? 1 : 0;
}
int toroid_check_errors(toroid_module* m) {
  return guarded([&] {
    check_handle(m, "toroid_check_errors");
    m->module->check_device_errors();
  });
}

int toroid_num_specializations(const toroid_module* m) {
  return is_live(m) ? static_cast<int>(m->module->num_specializations()) : -1;
}

int toroid_get_output_info(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_output_info* infos,
                           int num_outputs, size_t* workspace_bytes) {
  return guarded([&] {
    Call c = prepare(m, "toroid_get_output_info", inputs, nullptr, num_inputs, num_outputs, infos, false);
    size_t ws = c.spec->workspace_bytes(c.binding);
    std::copy(c.infos.begin(), c.infos.end(), infos);
    if (workspace_bytes) *workspace_bytes = ws;
  });
}

int toroid_planned_peak_bytes(toroid_module* m, const toroid_tensor* inputs, int num_inputs, int64_t* bytes) {
  return guarded([&] {
    check_handle(m, "toroid_planned_peak_bytes");
    if (!bytes) user_error("toroid_planned_peak_bytes: null bytes");
    std::vector<RtValue> in = wrap_inputs(m, "toroid_planned_peak_bytes", inputs, nullptr, num_inputs, false);
    toroid::sym::Binding binding;
    const toroid::driver::Specialization& s = m->module->specialize(in, &binding);
    *bytes = s.planned_peak_bytes(binding);
  });
}

int toroid_run(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs, int num_outputs,
               void* stream) {
  return guarded([&] {
    check_module(m, "toroid_run", num_outputs, outputs);
    std::vector<RtValue> in = wrap_inputs(m, "toroid_run", inputs, nullptr, num_inputs, true);
    std::vector<RtValue> out =
        is_cuda(m) ? m->module->run_device(in, nullptr, cu_stream(stream)) : m->module->run(in);
    for (int i = 0; i < num_outputs; ++i) fill_output(out.at(static_cast<size_t>(i)), &outputs[i]);
  });
}

int toroid_run_into(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs,
                    int num_outputs, void* workspace, size_t workspace_bytes, void* stream) {
  return toroid_run_into_data(m, inputs, nullptr, num_inputs, outputs, nullptr, num_outputs, workspace, workspace_bytes,
                              stream);
}

int toroid_run_into_data(toroid_module* m, const toroid_tensor* inputs, const void* const* input_data, int num_inputs,
                         toroid_tensor* outputs, const void* const* output_data, int num_outputs, void* workspace,
                         size_t workspace_bytes, void* stream) {
  return guarded([&] {
    Call c = prepare(m, "toroid_run_into", inputs, input_data, num_inputs, num_outputs, outputs, true);
    std::vector<std::shared_ptr<HostStorage>> mine;
    mine.reserve(static_cast<size_t>(num_outputs));
    for (int i = 0; i < num_outputs; ++i)
      mine.push_back(wrap_output(outputs[i], const_cast<void*>(output_data ? output_data[i] : outputs[i].data),
                                 c.infos[static_cast<size_t>(i)], i));
    if (workspace && !is_cuda(m)) user_error("toroid_run_into: a CPU module takes no workspace (pass NULL)");
    toroid::runtime::RunOptions o;
    o.stream = is_cuda(m) ? cu_stream(stream) : nullptr;
    o.workspace = workspace;
    o.workspace_bytes = workspace_bytes;
    o.outputs = std::move(mine);
    o.deferred_checks = true;
    std::vector<RtValue> out = m->module->run_specialized(*c.spec, c.inputs(), std::move(c.binding), o);
    for (int i = 0; i < num_outputs; ++i) {
      const RtValue& v = out.at(static_cast<size_t>(i));
      if (v.is_tensor()) continue;  // tensors are in the caller's memory, or alias an input or output
      outputs[i].ndim = -1;
      outputs[i].scalar = v.is_none() ? 0.0 : v.to_double();
    }
  });
}

void toroid_tensor_release(toroid_tensor* t) {
  if (!t || !t->owner) return;
  {
    std::lock_guard<std::mutex> lock(handles().mu);
    if (!handles().owners.erase(t->owner)) {  // a copy of a tensor released already
      last_error = "toroid_tensor_release: not a live output (released already through a copy?)";
      return;
    }
  }
  delete static_cast<std::shared_ptr<HostStorage>*>(t->owner);
  t->owner = nullptr;
  t->data = nullptr;
}

int toroid_package_write(const char* text, const char* filename, const toroid_compile_options* options,
                         const toroid_tensor* params, int num_params, const char* path) {
  return guarded([&] {
    if (!text || !path) user_error("toroid_package_write: null text or path");
    if (num_params < 0 || (num_params > 0 && !params)) user_error("toroid_package_write: null params array");
    toroid::driver::CompileOptions co = driver_options(options);
    std::vector<HostTensor> ps;
    for (int i = 0; i < num_params; ++i) {
      const toroid_tensor& t = params[i];
      if (t.ndim < 0) user_error("toroid_package_write: parameter " + std::to_string(i) + " is a scalar, not a tensor");
      // A tensor's wrapping reads no graph value (only a scalar's does).
      ps.push_back(wrap_input(t, t.data, nullptr, {"toroid_package_write", "parameter", i}, true).tensor());
    }
    toroid::driver::write_package(path, text, filename ? filename : "<toroid_package_write>", co, ps);
  });
}

int toroid_package_load(const char* path, toroid_package** out) {
  return guarded([&] {
    if (!path || !out) user_error("toroid_package_load: null path or result pointer");
    auto p = std::make_unique<toroid_package>();
    p->package = toroid::driver::Package::load(path);
    const toroid::Node* output = p->package->module().graph().output_node();
    p->num_outputs = output ? count_outputs(output->args()) : 0;
    std::lock_guard<std::mutex> lock(handles().mu);
    handles().packages.insert(p.get());
    *out = p.release();
  });
}

void toroid_package_free(toroid_package* p) {
  if (!p) return;
  std::unique_ptr<toroid::driver::Package> state;
  std::lock_guard<std::mutex> lock(handles().mu);
  if (!handles().packages.erase(p)) {
    last_error = "toroid_package_free: not a live package (freed already, or not from toroid_package_load)";
    return;
  }
  state = std::move(p->package);
  handles().freed_packages.emplace_back(p);
}

int toroid_package_num_inputs(const toroid_package* p) {
  return is_live(p) ? static_cast<int>(p->package->num_inputs()) : -1;
}
int toroid_package_num_outputs(const toroid_package* p) { return is_live(p) ? p->num_outputs : -1; }

int toroid_package_run(toroid_package* p, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs,
                       int num_outputs) {
  return guarded([&] {
    if (!p || !is_live(p)) user_error("toroid_package_run: not a live package (freed already, or NULL)");
    auto n = static_cast<int>(p->package->num_inputs());
    if (num_inputs != n)
      user_error("toroid_package_run: the package takes " + std::to_string(n) + " inputs (its parameters are packaged), got " +
                 std::to_string(num_inputs));
    if (num_inputs > 0 && !inputs) user_error("toroid_package_run: null inputs array");
    if (num_outputs != p->num_outputs)
      user_error("toroid_package_run: the graph has " + std::to_string(p->num_outputs) + " outputs, got room for " +
                 std::to_string(num_outputs));
    if (num_outputs > 0 && !outputs) user_error("toroid_package_run: null outputs array");
    const std::vector<const toroid::Value*>& values = p->package->module().input_values();
    std::vector<RtValue> in;
    for (int i = 0; i < num_inputs; ++i)
      in.push_back(wrap_input(inputs[i], inputs[i].data, values[static_cast<size_t>(i)], {"toroid_package_run", "input", i},
                              true));
    std::vector<RtValue> out = p->package->run(in);
    for (int i = 0; i < num_outputs; ++i) fill_output(out.at(static_cast<size_t>(i)), &outputs[i]);
  });
}

}  // extern "C"
