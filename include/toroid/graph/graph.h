// The graph IR (the role of FX in Inductor).
//
// A Graph holds Nodes in topological order. A Node is an input, a parameter, a constant, a call
// of an operator named by its ATen overload ("aten.add.Tensor"), or the output. A Node has zero
// or more results (Values) and may own subgraphs (cond branches, loop bodies, user kernels).
// Values are identified by object; their names are only for printing.
//
// Ownership: a Graph owns its Nodes, a Node its Values and subgraphs. The root graph owns the
// ShapeEnv (shared with its subgraphs) and every Storage.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "toroid/graph/meta.h"
#include "toroid/graph/types.h"
#include "toroid/support/error.h"
#include "toroid/sym/expr.h"
#include "toroid/sym/shape_env.h"

namespace toroid {

class Graph;
class Node;
class Value;

// The type of a value: a tensor, or a (possibly symbolic) scalar.
enum class ValueType : uint8_t { Tensor, Int, Float, Bool };
const char* value_type_name(ValueType t);  // "tensor", "int", "float", "bool"

// A constant or value argument of a call. Ints, floats and bools are SymExprs (constant or
// symbolic); strings, dtypes, devices, layouts and memory formats are attribute constants.
class Argument {
 public:
  using List = std::vector<Argument>;
  enum class Kind : uint8_t { None, Scalar, String, DType, Device, Layout, MemoryFormat, Value, List };

  Argument() = default;  // None
  Argument(SymExpr scalar) : data_(scalar) {}
  Argument(Value* value) : data_(value) {}
  Argument(DType d) : data_(d) {}
  Argument(Device d) : data_(d) {}
  Argument(Layout l) : data_(l) {}
  Argument(MemoryFormat m) : data_(m) {}
  Argument(List list) : data_(std::move(list)) {}
  static Argument none() { return {}; }
  static Argument integer(int64_t v) { return Argument(SymExpr::integer(v)); }
  static Argument floating(double v) { return Argument(SymExpr::floating(v)); }
  static Argument boolean(bool v) { return Argument(SymExpr::boolean(v)); }
  static Argument string(std::string s);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_none() const { return kind() == Kind::None; }
  bool is_value() const { return kind() == Kind::Value; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_scalar() const { return kind() == Kind::Scalar; }

  SymExpr scalar() const { return std::get<SymExpr>(data_); }
  const std::string& str() const { return std::get<std::string>(data_); }
  DType dtype() const { return std::get<DType>(data_); }
  Device device() const { return std::get<Device>(data_); }
  Layout layout() const { return std::get<Layout>(data_); }
  MemoryFormat memory_format() const { return std::get<MemoryFormat>(data_); }
  Value* value() const { return std::get<Value*>(data_); }
  const List& list() const { return std::get<List>(data_); }
  List& list() { return std::get<List>(data_); }

  // Calls fn on every Value this argument mentions (recursing into lists).
  template <typename Fn>
  void for_each_value(Fn&& fn) const {
    if (is_value()) fn(value());
    else if (is_list()) for (const Argument& a : list()) a.for_each_value(fn);
  }
  // Structural equality (values by identity, scalars by expression identity).
  friend bool operator==(const Argument& a, const Argument& b);

 private:
  std::variant<std::monostate, SymExpr, std::string, DType, Device, Layout, MemoryFormat, Value*, List> data_;
};

// "%x" (or "%<unnamed>"), and an argument as text ("[%x, 2]", "torch.float32"), for messages.
std::string describe_value(const Value* v);
std::string describe_argument(const Argument& a);

struct Kwarg {
  std::string name;
  Argument value;
};

// One result of a node.
class Value {
 public:
  Node* node() const { return node_; }
  unsigned index() const { return index_; }  // which result of its node
  ValueType type() const { return type_; }
  bool is_tensor() const { return type_ == ValueType::Tensor; }

  const TensorMeta& meta() const;  // tensors only (InternalError otherwise)
  TensorMeta& meta();
  void set_meta(TensorMeta meta);
  bool has_meta() const { return meta_.has_value(); }
  // For scalar values: the symbolic value when known (an expression such as s0, or a fresh
  // unbacked symbol u0 for item()); null when unknown.
  SymExpr scalar_value() const { return scalar_value_; }
  void set_scalar_value(SymExpr e) { scalar_value_ = e; }

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // One entry per use: a node using this value twice appears twice.
  const std::vector<Node*>& users() const { return users_; }
  bool has_users() const { return !users_.empty(); }
  // Replaces every use of this value by `replacement` (same type required).
  void replace_all_uses_with(Value* replacement);

 private:
  friend class Node;
  friend class Graph;
  Value(Node* node, unsigned index, ValueType type) : node_(node), index_(index), type_(type) {}

  Node* node_;
  unsigned index_;
  ValueType type_;
  std::optional<TensorMeta> meta_;
  SymExpr scalar_value_;
  std::string name_;
  std::vector<Node*> users_;
};

enum class NodeKind : uint8_t { Input, Param, Constant, Call, Output };
const char* node_kind_name(NodeKind k);

// What a new node's result looks like.
struct ResultSpec {
  ValueType type = ValueType::Tensor;
  std::optional<TensorMeta> meta;  // tensors
  SymExpr scalar_value;            // scalars (optional)
  std::string name;                // printing hint (optional)

  static ResultSpec tensor(TensorMeta m, std::string name = {}) {
    return {ValueType::Tensor, std::move(m), SymExpr(), std::move(name)};
  }
  static ResultSpec scalar(ValueType t, SymExpr value = {}, std::string name = {}) {
    return {t, std::nullopt, value, std::move(name)};
  }
};

struct NamedSubgraph {
  std::string name;  // e.g. "true_branch"
  std::unique_ptr<Graph> graph;
};

// Where a node came from in the user's program: a frontend's name for it (an FX node's name)
// and a line of the user's stack ("model.py:12 in forward"). Passes stamp the origin of the node
// they replace on the nodes they make, so that kernels name the user's code (provenance).
struct NodeOrigin {
  std::string name;
  std::string stack;
  bool empty() const { return name.empty() && stack.empty(); }
};

class Node {
 public:
  ~Node();
  NodeKind kind() const { return kind_; }
  bool is_call() const { return kind_ == NodeKind::Call; }
  // Call: the operator overload ("aten.add.Tensor"). Param: the parameter's qualified name.
  const std::string& target() const { return target_; }
  void set_target(std::string t) { target_ = std::move(t); }
  Graph* graph() const { return graph_; }

  const std::vector<Argument>& args() const { return args_; }
  const std::vector<Kwarg>& kwargs() const { return kwargs_; }
  const Argument* kwarg(std::string_view name) const;  // null if absent
  // Setters keep use lists right.
  void set_args(std::vector<Argument> args);
  void set_kwargs(std::vector<Kwarg> kwargs);
  void set_arg(size_t i, Argument a);
  // Replaces every use of `from` in this node's arguments by `to`.
  void replace_input(Value* from, Value* to);
  // Every value this node uses, in argument order (with repeats).
  std::vector<Value*> inputs() const;

  size_t num_results() const { return results_.size(); }
  Value* result(size_t i = 0) const { return results_.at(i).get(); }
  std::vector<Value*> results() const;
  bool has_users() const;  // any result used

  const std::vector<NamedSubgraph>& subgraphs() const { return subgraphs_; }
  Graph* subgraph(std::string_view name) const;  // null if absent
  // Creates an empty subgraph owned by this node (shares the root's ShapeEnv and storages).
  Graph* add_subgraph(std::string name);

  // Constant nodes: the data, dtype given by the result meta, row-major, little-endian.
  const std::vector<uint8_t>& constant_data() const { return constant_data_; }
  void set_constant_data(std::vector<uint8_t> bytes) { constant_data_ = std::move(bytes); }

  // Where the node came from in a text file (unknown for nodes built in memory).
  const SourceLoc& loc() const { return loc_; }
  void set_loc(SourceLoc loc) { loc_ = std::move(loc); }
  // Where the node came from in the user's program (empty when unknown); `origin(...)` in text.
  const NodeOrigin& origin() const { return origin_; }
  void set_origin(NodeOrigin origin) { origin_ = std::move(origin); }
  // Input nodes: the caller gives up the tensor's memory (`input donated` in text), so the
  // program may reuse it once nothing reads the value (a backward's saved activations).
  bool donated() const { return donated_; }
  void set_donated(bool donated) { donated_ = donated; }

  Node* next() const;  // null at the end
  Node* prev() const;  // null at the start

  // "%y = aten.relu.default(...)" style one-line description, for error messages.
  std::string describe() const;
  // The same, but values for which `live` is false print as "%<dead>" and are not looked at (the
  // verifier describes nodes whose arguments may dangle).
  std::string describe(const std::function<bool(const Value*)>& live) const;

 private:
  friend class Graph;
  Node(Graph* graph, NodeKind kind, std::string target);
  void add_uses();
  void drop_uses();
  void use_argument(const Argument& a, bool add);

  Graph* graph_;
  NodeKind kind_;
  std::string target_;
  std::vector<Argument> args_;
  std::vector<Kwarg> kwargs_;
  std::vector<std::unique_ptr<Value>> results_;
  std::vector<NamedSubgraph> subgraphs_;
  std::vector<uint8_t> constant_data_;
  SourceLoc loc_;
  NodeOrigin origin_;
  bool donated_ = false;
  std::list<std::unique_ptr<Node>>::iterator self_;
  mutable uint64_t order_ = 0;
};

// A kernel the user wrote, in the root graph's kernel table (`kernel "add" : kind="cuda",
// entry="add", source="..."`): user-kernel calls name it instead of repeating its source.
struct UserKernelEntry {
  std::string name;
  std::string kind;    // "cuda", "ptx", "cubin", "cpp"
  std::string source;  // CUDA C++, PTX, a cubin's bytes, or C++
  std::string entry;   // the symbol to launch (default: the name)
  // Triton's TTIR of the kernel (its PTX does every load and store in inline assembly, which the
  // PTX analysis must take as unknown): what the kernel writes is read from it instead.
  std::string ttir;
  // The cubin a `ptx` kernel was compiled to for one architecture (Triton's): loaded instead of
  // the PTX where the device runs it, which spares the driver's JIT compile.
  std::string cubin;
  SourceLoc loc;
};

class Graph {
 public:
  // A root graph with its own ShapeEnv.
  Graph();
  // A separate root graph (own nodes and storages) that shares `like`'s ShapeEnv: passes build
  // replacement graphs for replace_by_example in it, so sizes use `like`'s symbols and the
  // guards a meta function records while building land in `like`'s ShapeEnv.
  static std::unique_ptr<Graph> sharing_shape_env(const Graph& like);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // A functional graph has no mutation except a trailing copy_ into a graph input.
  bool functional() const { return functional_; }
  void set_functional(bool f) { functional_ = f; }

  ShapeEnv& shape_env() const { return *shape_env_; }
  Graph* root();
  const Graph* root() const;
  Node* parent_node() const { return parent_; }  // owning node of a subgraph; null for the root

  // The root graph's kernel table (user kernels), in order; add_user_kernel replaces an entry of
  // the same name.
  const std::vector<UserKernelEntry>& user_kernels() const;
  const UserKernelEntry* find_user_kernel(const std::string& name) const;
  void add_user_kernel(UserKernelEntry entry);

  // Storages (owned by the root graph).
  Storage* new_storage();
  // Every storage of the root graph, in creation order.
  std::vector<const Storage*> storages() const;

  // Iteration in order.
  class NodeRange;
  NodeRange nodes() const;
  // A snapshot of the nodes in order (safe to iterate while erasing or inserting).
  std::vector<Node*> node_list() const;
  size_t size() const { return nodes_.size(); }
  Node* front() const;
  Node* back() const;
  std::vector<Node*> inputs() const;  // Input nodes in order
  std::vector<Node*> params() const;  // Param nodes in order
  Node* output_node() const;          // null if the graph has none yet
  std::vector<Value*> output_values() const;  // values among the output's arguments

  // Insertion point for create_*: by default the end (before the output node, if any).
  void set_insertion_point_before(Node* n);
  void set_insertion_point_after(Node* n);
  void set_insertion_point_to_end();

  Node* create_node(NodeKind kind, std::string target, std::vector<Argument> args,
                    std::vector<Kwarg> kwargs, std::vector<ResultSpec> results);
  // Convenience forms. Inputs go after the leading run of Input nodes, params after the leading
  // run of Input and Param nodes, whatever the insertion point.
  Value* add_input(std::string name, TensorMeta meta);  // appended after the last input
  Value* add_scalar_input(std::string name, ValueType type, SymExpr value = {});
  Value* add_param(std::string qualified_name, TensorMeta meta, std::string value_name = {});
  Node* add_call(std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs,
                 std::vector<ResultSpec> results);
  Node* set_output(std::vector<Argument> outputs);  // creates or replaces the output node

  // Removes a node; its results must have no users (InternalError otherwise).
  void erase(Node* n);
  void move_before(Node* n, Node* anchor);
  void move_after(Node* n, Node* anchor);

  // Is `a` before `b` in this graph's order? Both must belong to this graph.
  bool comes_before(const Node* a, const Node* b) const;
  // Every argument of every node is defined earlier in the same graph.
  bool is_topologically_sorted() const;

  class NodeRange {
   public:
    class iterator {
     public:
      using Base = std::list<std::unique_ptr<Node>>::const_iterator;
      explicit iterator(Base it) : it_(it) {}
      Node* operator*() const { return it_->get(); }
      iterator& operator++() { ++it_; return *this; }
      bool operator==(const iterator& o) const { return it_ == o.it_; }
      bool operator!=(const iterator& o) const { return it_ != o.it_; }
     private:
      Base it_;
    };
    NodeRange(iterator b, iterator e) : b_(b), e_(e) {}
    iterator begin() const { return b_; }
    iterator end() const { return e_; }
   private:
    iterator b_, e_;
  };

 private:
  friend class Node;
  using NodeIt = std::list<std::unique_ptr<Node>>::iterator;
  explicit Graph(Node* parent);  // a subgraph
  void renumber() const;
  NodeIt default_position(NodeKind kind);
  NodeIt leading_position(bool include_params);
  Node* insert_node(std::unique_ptr<Node> node, NodeIt pos);
  void assign_order(Node* n);
  void check_owned(const Node* n, const char* what) const;

  std::string name_ = "main";
  std::vector<UserKernelEntry> user_kernels_;  // root only
  bool functional_ = false;
  Node* parent_ = nullptr;
  std::shared_ptr<ShapeEnv> shape_env_;
  std::vector<std::unique_ptr<Storage>> storages_;  // root only
  std::list<std::unique_ptr<Node>> nodes_;
  std::list<std::unique_ptr<Node>>::iterator insert_at_;  // insert before this
  bool insert_at_end_ = true;
  mutable bool order_valid_ = false;
};

// Every value of `g` and its subgraphs whose storage is `from` (a replaced value's views and
// in-place results) takes `to`: what a pass calls when one value stands in for another.
void retarget_storage(Graph& g, const Storage* from, Storage* to);

}  // namespace toroid
