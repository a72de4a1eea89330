// Kernels whose written parameters the PTX analysis must find exactly (ptx-mutations.test).
struct Args {
  float* out;
  const float* in;
};

extern "C" __global__ void plain_store(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * 2.0f;
}

extern "C" __global__ void atomic_count(const int* x, int* counter, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(counter, x[i]);
}

extern "C" __global__ void offset_store(const float* x, float* out, int n, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float* shifted = out + offset;
  if (i < n) shifted[i] = x[i];
}

extern "C" __global__ void loop_store(float* a, const float* b, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) a[i] += b[i];
}

__device__ __noinline__ void put(float* p, float v) { *p = v; }

extern "C" __global__ void call_store(const float* x, float* y) {
  int i = threadIdx.x;
  put(y + i, x[i]);
}

extern "C" __global__ void read_only(const float* x, const float* y, int n) {
  int i = threadIdx.x;
  if (i < n && x[i] + y[i] == 12345.0f) __trap();
}

extern "C" __global__ void two_of_four(const float* a, float* b, const float* c, float* d, int n) {
  int i = threadIdx.x;
  if (i < n) {
    b[i] = a[i];
    d[i] = c[i];
  }
}

extern "C" __global__ void inline_ptx(float* out, const float* x) {
  int i = threadIdx.x;
  float v = x[i];
  asm volatile("st.global.f32 [%0], %1;" ::"l"(out + i), "f"(v));
}

extern "C" __global__ void through_loaded_pointer(float** table, const float* x) {
  int i = threadIdx.x;
  table[0][i] = x[i];
}

extern "C" __global__ void by_value(Args a, int n) {
  int i = threadIdx.x;
  if (i < n) a.out[i] = a.in[i];
}
