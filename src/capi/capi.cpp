// The C ABI (include/toroid/toroid.h) over driver::CompiledModule. Caller tensors are wrapped
// without copying (a HostStorage adopting the caller's pointer, released by nobody); outputs
// carry a heap-allocated reference to their storage in `owner`.
#include "toroid/toroid.h"

#include <exception>
#include <memory>
#include <string>

#include "toroid/driver/compile.h"
#include "toroid/interp/interpreter.h"
#include "toroid/support/error.h"
#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/driver.h"
#endif

struct toroid_module {
  std::unique_ptr<toroid::driver::CompiledModule> module;
  int num_inputs = 0, num_outputs = 0;
};

namespace {

using toroid::ops::HostStorage;
using toroid::ops::HostTensor;
using toroid::ops::RtValue;

thread_local std::string last_error;

struct NotOwned : HostStorage::Releaser {
  void release(std::byte*, size_t) noexcept override {}
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

RtValue wrap_input(const toroid_tensor& t, const toroid::Value* v, int index) {
  std::string what = "input " + std::to_string(index);
  if (t.ndim < 0) {
    switch (v->type()) {
      case toroid::ValueType::Bool: return RtValue::boolean(t.scalar != 0);
      case toroid::ValueType::Int: return RtValue::integer(static_cast<int64_t>(t.scalar));
      default: return RtValue::floating(t.scalar);
    }
  }
  if (t.ndim > TOROID_MAX_DIMS) toroid::user_error(what + ": " + std::to_string(t.ndim) + " dims (at most 16)");
  if (t.dtype < 0 || t.dtype >= toroid::kNumDTypes) toroid::user_error(what + ": unknown dtype code " + std::to_string(t.dtype));
  if (!t.data) toroid::user_error(what + ": null data pointer");
  auto dtype = static_cast<toroid::DType>(t.dtype);
  std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim), strides(t.strides, t.strides + t.ndim);
  int64_t extent = t.offset + 1;
  for (int d = 0; d < t.ndim; ++d) {
    if (sizes[d] < 0 || strides[d] < 0) toroid::user_error(what + ": negative size or stride in dim " + std::to_string(d));
    if (sizes[d] == 0) extent = 0;
  }
  if (extent > 0)
    for (int d = 0; d < t.ndim; ++d) extent += (sizes[d] - 1) * strides[d];
  size_t nbytes = static_cast<size_t>(std::max<int64_t>(extent, 0)) * toroid::dtype_size(dtype);
  auto storage = std::make_shared<HostStorage>(static_cast<std::byte*>(t.data), nbytes, std::make_shared<NotOwned>());
  return HostTensor::from_storage(storage, dtype, sizes, strides, t.offset);
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
}

}  // namespace

extern "C" {

const char* toroid_last_error(void) { return last_error.c_str(); }
const char* toroid_version(void) { return "0.1.0"; }

int toroid_cuda_available(void) {
#ifdef TOROID_WITH_CUDA
  return toroid::runtime::cuda::available() ? 1 : 0;
#else
  return 0;
#endif
}

int toroid_compile(const char* text, const char* filename, const char* device, toroid_module** out) {
  return guarded([&] {
    if (!text || !out) toroid::user_error("toroid_compile: null text or result pointer");
    std::string dev = device ? device : "cpu";
    toroid::driver::CompileOptions o;
    if (dev == "cuda") o.target = toroid::driver::Target::Cuda;
    else if (dev != "cpu") toroid::user_error("toroid_compile: device must be \"cpu\" or \"cuda\", got \"" + dev + "\"");
    auto m = std::make_unique<toroid_module>();
    m->module = toroid::driver::CompiledModule::compile(text, filename ? filename : "<toroid_compile>", o);
    m->num_inputs = static_cast<int>(toroid::interp::graph_inputs(m->module->graph()).size());
    m->num_outputs = static_cast<int>(m->module->graph().output_node()->inputs().size());
    *out = m.release();
  });
}

void toroid_module_free(toroid_module* m) { delete m; }
int toroid_num_inputs(const toroid_module* m) { return m ? m->num_inputs : -1; }
int toroid_num_outputs(const toroid_module* m) { return m ? m->num_outputs : -1; }
double toroid_compile_ms(const toroid_module* m) { return m ? m->module->compile_ms() : 0.0; }
int toroid_cache_hit(const toroid_module* m) {
  return m && (m->module->reused() || m->module->current().stats.cache_hit) ? 1 : 0;
}

int toroid_run(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs, int num_outputs,
               void* stream) {
  return guarded([&] {
    if (!m) toroid::user_error("toroid_run: null module");
    if (num_inputs != m->num_inputs)
      toroid::user_error("toroid_run: the graph takes " + std::to_string(m->num_inputs) + " inputs, got " +
                         std::to_string(num_inputs));
    if (num_outputs != m->num_outputs)
      toroid::user_error("toroid_run: the graph has " + std::to_string(m->num_outputs) + " outputs, got room for " +
                         std::to_string(num_outputs));
    std::vector<const toroid::Value*> values = toroid::interp::graph_inputs(m->module->graph());
    std::vector<RtValue> in;
    for (int i = 0; i < num_inputs; ++i) in.push_back(wrap_input(inputs[i], values[static_cast<size_t>(i)], i));
    // The C ABI's NULL stream is CUDA's legacy default stream (PyTorch's cuda_stream 0), which
    // the driver API names CU_STREAM_LEGACY; the driver layer's nullptr means toroid's own.
    void* cu_stream = stream ? stream : reinterpret_cast<void*>(uintptr_t{1});
    std::vector<RtValue> out = m->module->options().target == toroid::driver::Target::Cuda
                                   ? m->module->run_device(in, nullptr, cu_stream)
                                   : m->module->run(in);
    for (int i = 0; i < num_outputs; ++i) fill_output(out.at(static_cast<size_t>(i)), &outputs[i]);
  });
}

void toroid_tensor_release(toroid_tensor* t) {
  if (!t || !t->owner) return;
  delete static_cast<std::shared_ptr<HostStorage>*>(t->owner);
  t->owner = nullptr;
  t->data = nullptr;
}

}  // extern "C"
