/* toroid's C ABI: compile a .tir graph once, run it many times on CPU or CUDA tensors owned by the
 * caller (a framework such as PyTorch: the Python package binds this with ctypes).
 *
 * Every function returns 0 on success; on failure it returns non-zero and toroid_last_error()
 * returns the message (thread-local, valid until the next call on the thread). Nothing throws or
 * aborts across this boundary. */
#ifndef TOROID_TOROID_H
#define TOROID_TOROID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOROID_MAX_DIMS 16

/* dtypes, by their .tir names' order: b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64 c64 c128 */
typedef enum {
  TOROID_BOOL = 0, TOROID_UINT8, TOROID_INT8, TOROID_INT16, TOROID_INT32, TOROID_INT64,
  TOROID_FLOAT16, TOROID_BFLOAT16, TOROID_FLOAT32, TOROID_FLOAT64, TOROID_COMPLEX64, TOROID_COMPLEX128
} toroid_dtype;

/* A strided tensor: element (i0, ..., in) at data + (offset + sum ik * strides[k]) * element size.
 * For outputs, `owner` keeps toroid's memory alive until toroid_tensor_release. For scalars
 * (ndim = -1), `scalar` holds the value (as double; ints exactly up to 2^53). */
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
/* 1 when CUDA kernels can run here (a driver and a GPU); else 0. */
int toroid_cuda_available(void);

/* device: "cpu" or "cuda". `filename` names the text in error messages (may be NULL). */
int toroid_compile(const char* text, const char* filename, const char* device, toroid_module** out);
void toroid_module_free(toroid_module* m);
int toroid_num_inputs(const toroid_module* m);
int toroid_num_outputs(const toroid_module* m);

/* Runs on the caller's tensors (host memory for "cpu", device memory for "cuda"), on `stream`
 * (a CUstream / cudaStream_t; NULL: the legacy default stream, as CUDA's stream 0). Fills
 * outputs[0..num_outputs). CUDA work is queued on the stream, not waited for. Outputs stay valid
 * until toroid_tensor_release (their memory may be reused by work queued on the same stream
 * afterwards, as with PyTorch's caching allocator). */
int toroid_run(toroid_module* m, const toroid_tensor* inputs, int num_inputs, toroid_tensor* outputs,
               int num_outputs, void* stream);
void toroid_tensor_release(toroid_tensor* t);

/* Milliseconds toroid_compile took for this module (the whole pipeline, kernels included), and
 * whether it came from a cache: the in-memory one of recently compiled graphs, or every kernel
 * from the on-disk kernel cache. */
double toroid_compile_ms(const toroid_module* m);
int toroid_cache_hit(const toroid_module* m);

#ifdef __cplusplus
}
#endif

#endif
