// toroid_python_function: the Python package's repeated CPU call (runtime.Partition's lean run)
// as a builtin function of CPython, made by the library: (plan, inputs) -> the outputs list. A
// builtin call (METH_FASTCALL) costs the caller ~0.1 µs where the same C function through
// ctypes.PyDLL cost ~0.7 (its argument conversion and libffi; bench/RESULTS.md 37f); before
// either, plain ctypes built two pointer arrays in Python and converted ten arguments (~6.5 µs
// against 2-3 for Inductor's whole compiled call, 24b). The CPython functions used are the stable
// ABI's, looked up in the running process (libtoroid is built without Python's headers; run on
// CPython 3.11 and 3.12); where one is missing, toroid_python_call_available() says 0 and the
// package keeps the ctypes call.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "toroid/c_api.h"

namespace toroid::capi {
void set_last_error(std::string message);  // capi.cpp
}

namespace {

using PyObj = void;  // PyObject*, opaque here
using Ssize = std::ptrdiff_t;  // Py_ssize_t

struct PythonApi {
  Ssize (*list_size)(PyObj*) = nullptr;
  PyObj* (*list_get_item)(PyObj*, Ssize) = nullptr;  // borrowed
  int (*list_append)(PyObj*, PyObj*) = nullptr;
  PyObj* (*tuple_get_item)(PyObj*, Ssize) = nullptr;  // borrowed
  Ssize (*tuple_size)(PyObj*) = nullptr;
  PyObj* (*call_object)(PyObj*, PyObj*) = nullptr;  // new reference, or null with an exception set
  PyObj* (*call_function_obj_args)(PyObj*, ...) = nullptr;  // the same, arguments up to a null
  void* (*long_as_void_ptr)(PyObj*) = nullptr;
  PyObj* (*err_occurred)() = nullptr;
  void (*decref)(PyObj*) = nullptr;
  void* (*save_thread)() = nullptr;
  void (*restore_thread)(void*) = nullptr;
  PyObj* (*list_new)(Ssize) = nullptr;
  PyObj* (*decode_utf8)(const char*, Ssize, const char*) = nullptr;
  void (*err_set_object)(PyObj*, PyObj*) = nullptr;
  PyObj* (*cfunction_new_ex)(void*, PyObj*, PyObj*) = nullptr;
  bool ok = false;

  PythonApi() {
    bool all = true;
    auto get = [&all](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(RTLD_DEFAULT, name));
      all = all && fn;
    };
    get(list_size, "PyList_Size");
    get(list_get_item, "PyList_GetItem");
    get(list_append, "PyList_Append");
    get(tuple_get_item, "PyTuple_GetItem");
    get(tuple_size, "PyTuple_Size");
    get(call_object, "PyObject_CallObject");
    get(call_function_obj_args, "PyObject_CallFunctionObjArgs");
    get(long_as_void_ptr, "PyLong_AsVoidPtr");
    get(err_occurred, "PyErr_Occurred");
    get(decref, "Py_DecRef");
    get(save_thread, "PyEval_SaveThread");
    get(restore_thread, "PyEval_RestoreThread");
    get(list_new, "PyList_New");
    get(decode_utf8, "PyUnicode_DecodeUTF8");
    get(err_set_object, "PyErr_SetObject");
    get(cfunction_new_ex, "PyCFunction_NewEx");
    ok = all;
  }
};

const PythonApi& python() {
  static const PythonApi api;
  return api;
}

// What runtime.Partition builds once per call signature (its fields in this order).
enum PlanField : Ssize {
  kModule,      // int: the toroid_module*
  kHeaders,     // int: the inputs' toroid_tensor array (the data pointers are this call's)
  kOutputs,     // int: the outputs' toroid_tensor array
  kAllocate,    // callable(sizes, strides, dtype) -> a new CPU tensor
  kSpecs,       // tuple: per output, the (sizes, strides, dtype) tuple kAllocate takes
  kDataPtr,     // callable(tensor) -> its data pointer as an int (torch.Tensor.data_ptr)
  kDataPtrFn,   // int: the address of a C function tensor -> data pointer, or 0 (then kDataPtr)
  kPlanFields
};

using DataPtrFn = void* (*)(PyObj*);

// A tensor's data pointer: `fn`'s where the package found torch's C function, else the
// `method` callable's (torch.Tensor.data_ptr); null with a Python exception set where it raised.
void* data_of(const PythonApi& py, PyObj* tensor, DataPtrFn fn, PyObj* method) {
  if (fn) return fn(tensor);
  PyObj* v = py.call_function_obj_args(method, tensor, nullptr);
  if (!v) return nullptr;
  void* p = py.long_as_void_ptr(v);
  py.decref(v);
  return p;
}

// The lean run of `plan` on `inputs`, the outputs appended to `results`. Nonzero: a Python
// exception is set, or toroid_last_error says what failed.
int run_plan(const PythonApi& py, PyObj* plan, PyObj* inputs, PyObj* results) {
  if (py.tuple_size(plan) != kPlanFields) {
    toroid::capi::set_last_error("toroid_python_function: a plan of " + std::to_string(py.tuple_size(plan)) +
                                 " fields, not " + std::to_string(static_cast<int>(kPlanFields)));
    return 1;
  }
  auto* module = static_cast<toroid_module*>(py.long_as_void_ptr(py.tuple_get_item(plan, kModule)));
  auto* headers = static_cast<const toroid_tensor*>(py.long_as_void_ptr(py.tuple_get_item(plan, kHeaders)));
  auto* outputs = static_cast<toroid_tensor*>(py.long_as_void_ptr(py.tuple_get_item(plan, kOutputs)));
  PyObj* allocate = py.tuple_get_item(plan, kAllocate);
  PyObj* specs = py.tuple_get_item(plan, kSpecs);
  PyObj* data_ptr = py.tuple_get_item(plan, kDataPtr);
  auto fn = reinterpret_cast<DataPtrFn>(py.long_as_void_ptr(py.tuple_get_item(plan, kDataPtrFn)));
  if (py.err_occurred()) return 1;  // a malformed plan: the exception is raised
  Ssize n_in = py.list_size(inputs), n_out = py.tuple_size(specs);
  if (n_in < 0 || n_out < 0) return 1;
  // Small calls keep their pointers on the stack; an optimizer step's hundreds of inputs do not.
  constexpr Ssize kInline = 64;
  const void* on_stack[kInline];
  std::vector<const void*> on_heap;
  const void** in_data = on_stack;
  if (n_in + n_out > kInline) {
    on_heap.resize(static_cast<size_t>(n_in + n_out));
    in_data = on_heap.data();
  }
  const void** out_data = in_data + n_in;
  for (Ssize i = 0; i < n_in; ++i) {
    in_data[i] = data_of(py, py.list_get_item(inputs, i), fn, data_ptr);
    if (!fn && py.err_occurred()) return 1;  // (an empty tensor's pointer may be null)
  }
  for (Ssize i = 0; i < n_out; ++i) {
    PyObj* t = py.call_object(allocate, py.tuple_get_item(specs, i));
    if (!t) return 1;
    int appended = py.list_append(results, t);
    py.decref(t);  // the list holds it
    if (appended != 0) return 1;
    out_data[i] = data_of(py, t, fn, data_ptr);
    if (!fn && py.err_occurred()) return 1;
  }
  // The run without the GIL, as ctypes' CDLL calls run.
  void* thread = py.save_thread();
  int rc = toroid_run_into_data(module, headers, in_data, static_cast<int>(n_in), outputs, out_data,
                                static_cast<int>(n_out), nullptr, 0, nullptr);
  py.restore_thread(thread);
  return rc;
}

// METH_FASTCALL's calling convention: (self, args, nargs); `self` is the exception type a
// library error raises (the package's ToroidError).
PyObj* run_builtin(PyObj* error_type, PyObj* const* args, Ssize nargs) {
  const PythonApi& py = python();
  if (nargs != 2) {
    toroid::capi::set_last_error("toroid_python_function: takes (plan, inputs), got " + std::to_string(nargs) + " arguments");
  } else if (PyObj* results = py.list_new(0)) {
    if (run_plan(py, args[0], args[1], results) == 0) return results;
    py.decref(results);
    if (py.err_occurred()) return nullptr;
  } else {
    return nullptr;
  }
  const char* message = toroid_last_error();
  if (PyObj* text = py.decode_utf8(message, static_cast<Ssize>(std::strlen(message)), "replace")) {
    py.err_set_object(error_type, text);
    py.decref(text);
  }
  return nullptr;
}

// PyMethodDef's layout (the stable ABI's).
struct MethodDef {
  const char* name;
  PyObj* (*meth)(PyObj*, PyObj* const*, Ssize);
  int flags;
  const char* doc;
};
constexpr int kMethFastcall = 0x0080;
MethodDef run_def = {"toroid_lean_run", run_builtin, kMethFastcall,
                     "(plan, inputs) -> outputs: a repeated CPU call of toroid's Python package"};

}  // namespace

extern "C" {

int toroid_python_call_available(void) { return python().ok ? 1 : 0; }

void* toroid_python_function(void* error_type) {
  const PythonApi& py = python();
  if (!py.ok) {
    toroid::capi::set_last_error("toroid_python_function: this process has no CPython API (use toroid_run_into_data)");
    return nullptr;
  }
  return py.cfunction_new_ex(&run_def, error_type, nullptr);
}

}  // extern "C"
