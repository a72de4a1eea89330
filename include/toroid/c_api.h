/* toroid's C ABI: compile a .tir graph once, run it many times on CPU or CUDA tensors owned by the
 * caller (a framework such as PyTorch: the Python package binds this with ctypes). docs/c_api.md
 * is the guide.
 *
 * Stability: only C types cross this boundary. TOROID_ABI_VERSION is raised whenever a function's
 * signature or a struct's layout changes incompatibly; toroid_abi_version() returns the value the
 * library was built with, so a caller can check it matches the header it was compiled against.
 * Structs that may grow (toroid_compile_options) start with their size, set by the caller.
 *
 * Every function that returns int returns 0 on success; on failure it returns non-zero and
 * toroid_last_error() returns the message (thread-local, valid until the next failing call on the
 * thread). Nothing throws or aborts across this boundary. */
#ifndef TOROID_C_API_H
#define TOROID_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOROID_ABI_VERSION 2
#define TOROID_MAX_DIMS 16

/* dtypes, by their .tir names' order: b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64 c64 c128 */
typedef enum {
  TOROID_BOOL = 0, TOROID_UINT8, TOROID_INT8, TOROID_INT16, TOROID_INT32, TOROID_INT64,
  TOROID_FLOAT16, TOROID_BFLOAT16, TOROID_FLOAT32, TOROID_FLOAT64, TOROID_COMPLEX64, TOROID_COMPLEX128
} toroid_dtype;

/* A strided tensor: element (i0, ..., in) at data + (offset + sum ik * strides[k]) * element size.
 * For outputs of toroid_run, `owner` keeps toroid's memory alive until toroid_tensor_release.
 * For scalars (ndim = -1), `scalar` holds the value (as double; ints exactly up to 2^53). */
typedef struct {
  void* data;
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[TOROID_MAX_DIMS];
  int64_t strides[TOROID_MAX_DIMS];
  int64_t offset;
  double scalar;
  void* owner;
} toroid_tensor;

typedef struct toroid_module toroid_module;

const char* toroid_last_error(void);
const char* toroid_version(void);
/* TOROID_ABI_VERSION of the library. */
int toroid_abi_version(void);
/* 1 when CUDA kernels can run here (a driver and a GPU); else 0. */
int toroid_cuda_available(void);
/* 1 when the operator registry knows `name` (an ATen overload such as "aten.add.Tensor") and can
 * run it: a meta function for its result types and a kernel or decomposition; else 0. */
int toroid_op_supported(const char* name);
/* The same, for kernels on `device` ("cpu" or "cuda"): 1 only when the op compiles to generated
 * code or a library call (OpenBLAS, oneDNN, cuBLASLt, cuDNN) for some dtype, not only to its
 * reference kernel (slow on the CPU; on host copies on CUDA). Which dtypes have a library call is
 * known at compile time: reference_kernels = 0 in the compile options makes the rest errors.
 * -1 (with toroid_last_error) for an unknown device. */
int toroid_op_supported_on(const char* name, const char* device);

/* Which parameters each kernel of a user kernel's IR writes and reads (docs/user_kernels.md).
 * `kind`: "cuda" (CUDA C++, compiled to PTX for compute_`arch` with NVRTC; arch 0: 90), "ptx" or
 * "ttir" (Triton). On success *json points at a JSON array, valid until this thread's next call:
 * one object per kernel, {"kernel": name, "params": [{"name", "type", "written", "read"}],
 * "notes": [why the analysis was conservative]}. Nonzero with toroid_last_error on text that
 * does not compile or parse. */
int toroid_analyze_kernel(const char* text, const char* kind, int arch, const char** json);

/* Compile options. Set struct_size = sizeof(toroid_compile_options); fields past a caller's
 * struct_size (an older header) take their defaults. toroid_compile_options_init fills defaults. */
typedef struct {
  size_t struct_size;
  const char* device;    /* "cpu" (default, also for NULL) or "cuda" */
  int32_t dynamic;       /* 1 (default): symbolic sizes stay symbolic, one compile serves every
                          * size the guards allow; 0: each new set of sizes compiles again, with
                          * the sizes as constants */
  const char* dump_dir;  /* NULL (default; then TOROID_DEBUG=1 decides) or a directory: each
                          * compile writes a debug directory <dump_dir>/<graph>.<n>/ there
                          * (graph after each pass, loop IR, Wrapper IR, kernels, memory plan,
                          * provenance, compile record, report.html; docs/debugging.md) */
  int32_t reference_kernels; /* 1 (default): a call with no compiled kernel or library call runs
                              * its op's exact reference kernel (slow; on CUDA on host copies);
                              * 0: compiling such a call fails, with the error located at its
                              * node (a frontend then runs that op itself) */
  int32_t deterministic; /* 0 (default); 1: results never vary between runs (as PyTorch's
                          * use_deterministic_algorithms): device kernels that combine with
                          * atomics (index_put and the scatters on CUDA) take their sorted form,
                          * each position's contributions combined in order */
  int32_t cuda_graphs;   /* 1 (default): a CUDA module's toroid_run_into calls with a
                          * workspace capture each partition of the program in a CUDA graph the
                          * second time they see the same stream, addresses and sizes, and
                          * replay it from then on; 0: every call launches each kernel */
  int32_t tf32_convolutions; /* 0 (default): f32 convolutions on CUDA multiply exactly (FMA); 1:
                              * cuDNN may round their operands to TF32 on tensor cores (PyTorch's
                              * torch.backends.cudnn.allow_tf32, on by default there) */
  int32_t tf32_matmuls;  /* 0 (default); 1: f32 matmuls on CUDA may use TF32 tensor cores
                          * (torch.backends.cuda.matmul.allow_tf32) */
  int32_t emulate_precision_casts; /* 0 (default): bf16/f16 values keep float precision between
                                    * a kernel's ops and round when stored (Inductor's default);
                                    * 1: they round after each op, as eager rounds them */
} toroid_compile_options;

void toroid_compile_options_init(toroid_compile_options* options);

/* `filename` names the text in error messages (may be NULL). `options` must not be NULL. */
int toroid_compile_with_options(const char* text, const char* filename, const toroid_compile_options* options,
                                toroid_module** out);
/* toroid_compile_with_options with defaults but for the device ("cpu" or "cuda"). */
int toroid_compile(const char* text, const char* filename, const char* device, toroid_module** out);
/* Frees a module (NULL: nothing). Handles are checked: freeing one twice, or calling any function
 * with a freed handle, is an error (toroid_last_error says so; the accessors return -1 or 0) and
 * never touches freed memory. Freeing a module while another thread runs it is the caller's bug. */
void toroid_module_free(toroid_module* m);
/* Inputs count the graph's `input`s, then its `param`s, in order. -1 for a NULL module. */
int toroid_num_inputs(const toroid_module* m);
int toroid_num_outputs(const toroid_module* m);

/* What one output will be for given input sizes. A tensor output (is_scalar = 0) has dtype, ndim,
 * sizes and strides; the caller allocates it (as torch.empty_strided(sizes, strides)) unless it
 * aliases: alias_input >= 0 means the output is a view of that input's memory, alias_output >= 0
 * a view of that (earlier) output's memory, and then `offset` is the view's element offset from
 * the aliased tensor's first element; the caller builds the view and passes no memory for it. A
 * scalar or None output (is_scalar = 1, or ndim = -1) has its value only after a run. */
typedef struct {
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[TOROID_MAX_DIMS];
  int64_t strides[TOROID_MAX_DIMS];
  int64_t offset;
  int32_t alias_input;
  int32_t alias_output;
  int32_t is_scalar;
  int32_t reserved;
} toroid_output_info;

/* Fills infos[0..num_outputs) and *workspace_bytes for inputs of these sizes and strides (their
 * data may be NULL; only metadata and scalar values are read). Compiles a new specialization
 * first when a guard of every earlier one fails for these sizes. *workspace_bytes is the scratch
 * memory toroid_run_into needs (0 on the CPU, which allocates its own); an output whose size
 * depends on data (nonzero) makes this call fail: use toroid_run for such graphs. */
int toroid_get_output_info(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_output_info* infos,
                           int num_outputs, size_t* workspace_bytes);

/* The most bytes a run on inputs of these sizes holds at once in the buffers it allocates
 * (intermediates and outputs; not the inputs or the graph's constants), as the compiled memory
 * plan estimates it: a run never holds more. Metadata only, as toroid_get_output_info; a program
 * whose sizes depend on data (nonzero) makes this call fail. */
int toroid_planned_peak_bytes(toroid_module* m, const toroid_tensor* inputs, int num_inputs, int64_t* bytes);

/* The device memory toroid's own caching allocator lends for CUDA runs (intermediates of a run
 * given no workspace, CUDA graphs' static buffers): bytes lent now, the most lent at once since
 * the last reset, bytes cached, and blocks taken from the driver or reused from the cache since
 * the process started. PyTorch's allocator does not see this memory: a caller measuring a step's
 * peak adds the two. A nonzero `reset_peak` then restarts the peak from the bytes lent now. */
typedef struct toroid_device_memory {
  int64_t lent_bytes, peak_lent_bytes, cached_bytes, fresh_blocks, reused_blocks;
} toroid_device_memory;
int toroid_device_memory_stats(toroid_device_memory* stats, int reset_peak);

/* Runs on the caller's tensors (host memory for "cpu", device memory for "cuda"), on `stream`
 * (a CUstream / cudaStream_t; NULL: the legacy default stream, as CUDA's stream 0). Fills
 * outputs[0..num_outputs). CUDA work is queued on the stream, not waited for. Outputs stay valid
 * until toroid_tensor_release (their memory may be reused by work queued on the same stream
 * afterwards, as with PyTorch's caching allocator). */
int toroid_run(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs,
               int num_outputs, void* stream);

/* Runs writing every tensor output into the caller's memory: outputs[i] is described as
 * toroid_get_output_info says (same dtype, sizes, and strides where the size is > 1; its own offset);
 * an aliasing output's entry is ignored (data may be NULL). Where a program computes an output
 * in place of a larger buffer it is copied into the caller's memory at the end; otherwise it is
 * computed there directly. Scalar outputs get their `scalar`. `workspace` (device memory of
 * `workspace_bytes` bytes, at least what toroid_get_output_info said; may be NULL) holds every
 * intermediate of a CUDA run; without one toroid's caching allocator is used. No `owner` is set. */
int toroid_run_into(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs,
                    int num_outputs, void* workspace, size_t workspace_bytes, void* stream);
/* toroid_run_into with the data pointers apart from the headers: input i's data is
 * input_data[i] and output i's is output_data[i] (the headers' `data` is not read; either array
 * may be NULL, and then the headers' is). A caller that runs the same signature again and again
 * keeps one array of headers and fills only a pointer array per call: with hundreds of inputs
 * (an optimizer step) rewriting each header costs more than the run. */
int toroid_run_into_data(toroid_module* m, const toroid_tensor* inputs, const void* const* input_data,
                         int num_inputs, toroid_tensor* outputs, const void* const* output_data, int num_outputs,
                         void* workspace, size_t workspace_bytes, void* stream);
/* For toroid's Python package (python/toroid/runtime.py): a builtin function of the running
 * CPython (a new reference, made with the GIL held, e.g. through ctypes.PyDLL) that runs
 * toroid_run_into_data for a repeated CPU call: fn(plan, inputs) with inputs a list of torch
 * tensors returns the list of outputs, each allocated by a Python callable, in one C call (the
 * run itself releases the GIL). `plan` is a tuple (module, input headers, output headers,
 * allocate, per-output (sizes, strides, dtype) tuples, data_ptr callable, address of a C
 * data-pointer function or 0). A library error raises `error_type` with toroid_last_error's
 * text; a Python exception of the allocation propagates. NULL where this process has no CPython
 * API. toroid_python_call_available: whether this process has the CPython functions it uses
 * (the stable ABI's, found at run time). */
int toroid_python_call_available(void);
void* toroid_python_function(void* error_type);
/* Releases an output of toroid_run (its `owner`; NULL owner: nothing). Releasing a copy of a
 * tensor whose owner was released already is detected and ignored (toroid_last_error says so). */
void toroid_tensor_release(toroid_tensor* t);

/* CUDA runs never make the host wait for the GPU, so an out of range gather position (an
 * embedding index past the table, say) is found after the run: it is reported, as this call's
 * error, by the first later run of the module that finds the faulty run finished, or by
 * toroid_check_errors, which waits for the module's earlier runs. CPU runs report it at once. */
int toroid_check_errors(toroid_module* m);

/* Milliseconds toroid_compile took for this module (the whole pipeline, kernels included);
 * whether it came from a cache (the in-memory one of recently compiled graphs, or every kernel
 * from the on-disk kernel cache); and how many specializations (compiles) it holds. */
double toroid_compile_ms(const toroid_module* m);
int toroid_cache_hit(const toroid_module* m);
int toroid_num_specializations(const toroid_module* m);

/* AOT packages (docs/aot.md): a graph with its parameters and compiled kernels in one file, run
 * with no compiler. toroid_package_write compiles `text` with `options` (device, dynamic, numerics
 * flags; nothing is loaded, so a CUDA package needs NVRTC but no GPU) and writes it with
 * `params`, the graph's `param` nodes' values in their order (host memory, copied). */
typedef struct toroid_package toroid_package;
int toroid_package_write(const char* text, const char* filename, const toroid_compile_options* options,
                         const toroid_tensor* params, int num_params, const char* path);
/* Loads a package: its kernels must fit this toroid version and, for CPU kernels (built with
 * -march=native), this CPU's instruction set; a CUDA package's parameters go to the GPU once. */
int toroid_package_load(const char* path, toroid_package** out);
void toroid_package_free(toroid_package* p);
/* The graph's `input` nodes (its parameters come from the package), and its outputs. */
int toroid_package_num_inputs(const toroid_package* p);
int toroid_package_num_outputs(const toroid_package* p);
/* Host tensors in; host tensors out, owned as toroid_run's (release each with
 * toroid_tensor_release). A CUDA package copies inputs to the GPU and the outputs back. */
int toroid_package_run(toroid_package* p, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs,
                       int num_outputs);

#ifdef __cplusplus
}
#endif

#endif
