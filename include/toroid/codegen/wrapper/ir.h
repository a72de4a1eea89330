// The Wrapper IR (after Inductor's): the whole host program that drives the kernels, as a list
// of lines over numbered storage slots. A line carries everything an executor needs: an alloc
// its byte count, a kernel call its kernel and slots, a library call its kernel (loop/library.h)
// and operand views, a fallback its op, arguments and result views, the return line the output
// plan. Executors read this header's types and nothing of the loop IR or the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "toroid/codegen/kernel.h"
#include "toroid/graph/types.h"
#include "toroid/loop/library.h"
#include "toroid/graph/target.h"
#include "toroid/ops/rt_value.h"
#include "toroid/support/error.h"
#include "toroid/sym/shape_env.h"

namespace toroid::ops {
struct OpEntry;
}

namespace toroid::codegen::wrapper {

// The memory of one buffer that owns its storage, by the buffer's id (its slot).
struct Slot {
  enum class Kind : uint8_t { Input, Constant, Intermediate, Unused };
  Kind kind = Kind::Unused;  // Unused: a buffer that writes another's storage
  std::string name;          // "buf3", "arg0"
  DType dtype = DType::Float32;
  Device device;
  SymExpr nbytes = SymExpr::integer(0);  // Intermediate: the bytes its buffer needs; donated Input: its extent's
  // Input: its caller gave up its memory (`input donated`), which buffers may take after its last
  // use. Set where the memory is provably the extent's bytes from the input's first element
  // (offset 0, no size that may be 0) and nothing writes it.
  bool donated = false;
};

// A tensor as a line names it: a view of the memory in slot `slot`; -1: absent (an optional
// operand given as None).
struct TensorRef {
  int slot = -1;
  DType dtype = DType::Float32;
  std::vector<SymExpr> sizes, strides;
  SymExpr offset = SymExpr::integer(0);
  std::string name;  // the slot's, for printing
};

// Graph input `index` (graph_inputs order) is slot `slot`; kernels read it at `offset`.
struct InputSlot {
  int slot = -1;
  int index = -1;
  SymExpr offset = SymExpr::integer(0);
};

// A constant, loaded into its slot (laid out by `layout`) when an executor is built.
struct ConstantSlot {
  int slot = -1;
  const std::vector<uint8_t>* data = nullptr;  // row-major contiguous, owned by the graph
  TensorRef layout;
  SourceLoc loc;
};

// One argument of a reference-kernel call, in its schema's order.
struct CallArg {
  enum class Kind : uint8_t { Constant, Scalar, Tensor, List };
  Kind kind = Kind::Constant;
  ops::RtValue constant;  // None, a string, dtype, device, layout or memory format
  SymExpr scalar;
  TensorRef tensor;
  std::vector<CallArg> list;
};

// An op's reference kernel on evaluated arguments; each tensor result is written (or adopted)
// into its slot, and binds the unbacked symbols of its sizes.
struct ReferenceCall {
  const ops::OpEntry* op = nullptr;
  std::string op_name;  // "aten.nonzero.default"
  SourceLoc loc;
  std::vector<CallArg> args;
  struct Result {
    unsigned index = 0;  // which result of the op
    TensorRef ref;       // its slot and the layout it is stored in
    SymExpr nbytes;      // the slot's bytes
  };
  std::vector<Result> results;
};

// What the program returns for one graph output.
struct OutputPlan {
  enum class Kind : uint8_t { Tensor, Input, Scalar, None };
  Kind kind = Kind::None;
  TensorRef tensor;  // Tensor: the view returned
  // Tensor: the graph input whose memory it views (-1: none) and that input's offset.
  // Input: the scalar input returned as it came.
  int input_index = -1;
  SymExpr input_offset = SymExpr::integer(0);
  SymExpr scalar;          // Scalar: its value
  bool bindable = false;   // Tensor: may be computed in the caller's memory (an intermediate slot,
                           // offset 0, the first output in it)
};

// A node of the graph the program was compiled from (after the passes), for provenance.
struct SourceNode {
  std::string value;  // its first result ("%y"), or "#<position>" for a call without results
  std::string op;     // "aten.relu.default"; "input", "param" or "constant" for those nodes
  std::string origin, stack;  // where it came from in the user's program (graph.h NodeOrigin)
  int line = 0;               // its line in the .tir text (0: unknown)
  // What runs it: "kernel", "library" or "fallback" (the lines that name it), else "input",
  // "param", "constant", "view" (index arithmetic in its readers) or "scalar".
  std::string runs_as;
  std::string why;          // "fallback": why no compiled kernel or library call runs it
  std::vector<int> inputs;  // the sources whose results it reads (indices into `sources`)
};

struct WrapperProgram;

// An unbacked symbol an op's result defines: dim `dim` of the tensor in slot `slot`.
struct SymbolDef {
  SymExpr symbol;
  int slot = -1;
  unsigned dim = 0;
};

// Memory for buffers whose sizes hold unbacked symbols, allocated once those are known (at its
// PoolAlloc line, after the lines that define them) and carved into blocks at symbolic offsets.
struct Pool {
  std::string name;  // "pool0"
  Device device;
  SymExpr nbytes = SymExpr::integer(0);
};

// A kernel the user wrote (higher_order.user_kernel_functional). The driver fills `ptx` (CUDA
// C++ compiled by NVRTC, or the PTX given) and `param_types` (each parameter's PTX type: ".u64",
// ".f32", ...) before an executor loads it.
struct UserKernel {
  std::string name;    // the call's name for it
  std::string kind;    // "cuda" (CUDA C++), "ptx", "cpp" (a C++ function for the CPU)
  std::string source;  // as the call gives it
  std::string entry;   // the symbol launched
  std::string ptx;
  std::vector<std::string> param_types;
  std::string cubin;  // the PTX compiled for one architecture: loaded first, the PTX if the device refuses it
};

// A UserKernel line's launch: kernel `kernel` of WrapperProgram::user_kernels on `grid` x
// `block` threads with `shared` bytes of dynamic shared memory; its parameters are `tensors`
// (device pointers to each view's first element) then `scalars`. It writes the tensors at the
// `written` positions (their memory: a clone, or the tensor itself where nothing reads it
// later), and assumes those at the `aligned` positions 16-byte aligned (checked before launch).
struct UserLaunch {
  int kernel = -1;
  std::vector<SymExpr> grid, block;
  SymExpr shared = SymExpr::integer(0);
  std::vector<TensorRef> tensors;
  std::vector<SymExpr> scalars;
  std::vector<int> written, aligned;
  // Parameter k of the kernel is entry order[k] of tensors-then-scalars (the identity when empty).
  std::vector<int> order;
};

// ScalarRead (item()): reads the one element of operands[0] (one device sync) and binds
// `scalar`, an unbacked symbol (or checks the value equals it). Assert: fails with `text` unless
// `scalar` holds. Cond: runs programs[0] (true) or programs[1] (false) on the operands, the
// predicate read from operands[0] (a tensor; `scalar` null) or evaluated from `scalar`; the
// branch writes the results' memory. While: runs programs[1] (body_fn) while programs[0]
// (cond_fn) returns true; the carried values alternate between the results' memory and a
// second set of the same sizes, so no iteration copies (one copy at the end when the last
// iteration wrote the second set). Operands after the carried ones are passed unchanged.
// SymbolDefs: binds the unbacked symbols the call before it produced (the sizes of its results;
// a symbol bound already is checked instead), after which kernels, allocations and views use
// them. PoolAlloc, PoolFree: pool `pool`'s memory (`nbytes`: its size); an Alloc with a pool
// places its buffer at `offset` in it.
struct Line {
  enum class Kind {
    Comment, Alloc, Reuse, Free, PoolAlloc, PoolFree, KernelCall, ExternCall, FallbackCall, UserKernel, SymbolDefs,
    ScalarRead, Assert, Cond, While, Return
  };
  Kind kind = Kind::Comment;
  int slot = -1;   // Alloc, Reuse, Free: the buffer's slot
  int from = -1;   // Reuse: the slot whose freed block it takes
  SymExpr nbytes;  // Alloc, Reuse: the buffer's bytes (a reused block may be larger); PoolAlloc: the pool's
  int pool = -1;   // Alloc (-1: its own memory), PoolAlloc, PoolFree: index into WrapperProgram::pools
  SymExpr offset;  // Alloc from a pool: where its block starts, in bytes
  std::vector<SymbolDef> defs;  // SymbolDefs
  // KernelCall: index into the target's kernel list; a CPU attention FallbackCall: its
  // generated kernel there (toroid_attention_<dtype>), which the executor calls with its operands.
  int kernel = -1;
  std::vector<int> args;  // KernelCall: the kernel's slots
  // ExternCall: the library kernel, what it writes, its operands in its own order and its
  // scalar arguments.
  loop::LibraryCall library = loop::LibraryCall::Mm;
  TensorRef result;
  std::vector<TensorRef> operands;
  loop::LibraryParams params;
  // FallbackCall; ExternCall: the same call as a reference kernel, for an executor whose
  // library cannot take these operands (the GPU's, on some layouts).
  ReferenceCall call;
  // FallbackCall: the device's library kernel `library` runs it (the executor may still take
  // the reference kernel for operands it cannot take).
  bool device_kernel = false;
  bool deterministic = false;  // ... in its form whose results never vary between runs
  std::vector<OutputPlan> outputs;  // Return
  std::string text;                 // Comment; Assert: the message
  SymExpr scalar;                   // ScalarRead, Assert, Cond (see above)
  std::vector<TensorRef> results;   // Cond, While
  std::vector<std::shared_ptr<WrapperProgram>> programs;  // Cond, While
  UserLaunch launch;                                      // UserKernel
  // KernelCall, ExternCall, FallbackCall: the graph nodes it computes (indices into
  // WrapperProgram::sources), fused or inlined ones included.
  std::vector<int> sources;
};

// A run of lines [begin, end) a device could replay as one captured graph: kernel, library and
// user-kernel launches with the allocations between them, none of which waits for the device,
// runs on the host, or allocates memory only the run can size (partition_program).
struct Partition {
  size_t begin = 0, end = 0;
  int launches = 0;
};

struct WrapperProgram {
  std::string graph_name;
  const ShapeEnv* env = nullptr;  // the graph's: every SymExpr here is over its symbols
  Target target;  // the loop program's: which kernels exist, which executor runs the lines
  std::vector<Slot> slots;
  std::vector<InputSlot> inputs;
  std::vector<ConstantSlot> constants;
  std::vector<Line> lines;  // the last is the Return line
  std::vector<CppKernel> kernels;          // Cpu
  std::vector<CudaKernel> cuda_kernels;  // Cuda
  std::vector<SymExpr> symbols;  // the kernels' `syms` array: symbol k is syms[k]
  std::vector<SourceNode> sources;  // every node of the graph, in order (provenance)
  bool writes_inputs = false;       // a buffer in a graph input's memory (a trailing copy_)
  std::vector<Pool> pools;          // the memory plan's (plan_memory)
  std::vector<UserKernel> user_kernels;  // what UserKernel lines launch
  std::vector<Partition> partitions;     // partition_program's, in line order
  // Unbacked symbols the graph's inputs bind where a run starts (a size of data-dependent extent
  // that another partition produced, an item() value passed in).
  std::vector<SymExpr> input_symbols;
  // The most bytes the lines hold at once (memory_estimate.cpp), in the graph's symbols.
  SymExpr planned_peak_bytes = SymExpr::integer(0);

  // The Return line's output plan.
  const std::vector<OutputPlan>& outputs() const;
};

// Why line `l` ends a partition (it syncs with the device, runs on the host, or allocates memory
// sized by data), or null when a captured graph could replay it.
const char* capture_barrier(const Line& l);

// The name of a KernelCall's kernel.
const std::string& kernel_name(const WrapperProgram& w, const Line& call);

// The slots a call line reads or writes, a SymbolDefs line reads the sizes of, or the return
// line returns (none for other lines; each slot once).
std::vector<int> touched_slots(const Line& l);

// Every program a Cond or While line of `w` runs, and theirs, depth first in line order (after
// `w` itself when `self`).
std::vector<const WrapperProgram*> nested_programs(const WrapperProgram& w, bool self = true);

}  // namespace toroid::codegen::wrapper
