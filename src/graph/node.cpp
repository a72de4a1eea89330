// Argument, Value and Node: use lists and one-line descriptions.
#include <algorithm>

#include "toroid/graph/graph.h"

#include "lexer.h"

namespace toroid {

namespace {

// Removes one use entry; tolerant of a missing entry so cleanup never throws (the verifier
// reports inconsistent use lists).
void remove_one_use(std::vector<Node*>& users, Node* user) {
  auto it = std::find(users.begin(), users.end(), user);
  if (it != users.end()) users.erase(it);
}

using text::quote;

using LiveFn = std::function<bool(const Value*)>;

void describe_argument(const Argument& a, std::string& out, const LiveFn* live = nullptr) {
  switch (a.kind()) {
    case Argument::Kind::None:
      out += "None";
      break;
    case Argument::Kind::Scalar:
      out += a.scalar().is_null() ? std::string("<null>") : a.scalar().str();
      break;
    case Argument::Kind::String:
      out += quote(a.str());
      break;
    case Argument::Kind::DType:
      out += dtype_torch_name(a.dtype());
      break;
    case Argument::Kind::Device:
      out += "device(\"" + a.device().str() + "\")";
      break;
    case Argument::Kind::Layout:
      out += layout_torch_name(a.layout());
      break;
    case Argument::Kind::MemoryFormat:
      out += memory_format_torch_name(a.memory_format());
      break;
    case Argument::Kind::Value:
      out += live != nullptr && !(*live)(a.value()) ? std::string("%<dead>") : describe_value(a.value());
      break;
    case Argument::Kind::List: {
      out += "[";
      bool first = true;
      for (const Argument& e : a.list()) {
        if (!first) out += ", ";
        first = false;
        describe_argument(e, out, live);
      }
      out += "]";
      break;
    }
  }
}

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::Tensor:
      return "tensor";
    case ValueType::Int:
      return "int";
    case ValueType::Float:
      return "float";
    case ValueType::Bool:
      return "bool";
  }
  return "?";
}

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Input:
      return "input";
    case NodeKind::Param:
      return "param";
    case NodeKind::Constant:
      return "constant";
    case NodeKind::Call:
      return "call";
    case NodeKind::Output:
      return "output";
  }
  return "?";
}

Argument Argument::string(std::string s) {
  Argument a;
  a.data_ = std::move(s);
  return a;
}

bool operator==(const Argument& a, const Argument& b) { return a.data_ == b.data_; }

std::string describe_value(const Value* v) {
  if (v == nullptr) return "%<null>";
  return v->name().empty() ? std::string("%<unnamed>") : "%" + v->name();
}

std::string describe_argument(const Argument& a) {
  std::string out;
  describe_argument(a, out);
  return out;
}

// ---- Value ----

const TensorMeta& Value::meta() const {
  if (!is_tensor()) internal_error("meta() of " + std::string(value_type_name(type_)) + " value " + describe_value(this), __FILE__, __LINE__);
  if (!meta_) internal_error("tensor value " + describe_value(this) + " has no meta", __FILE__, __LINE__);
  return *meta_;
}

TensorMeta& Value::meta() {
  return const_cast<TensorMeta&>(static_cast<const Value*>(this)->meta());
}

void Value::set_meta(TensorMeta meta) {
  if (!is_tensor()) internal_error("set_meta() on " + std::string(value_type_name(type_)) + " value " + describe_value(this), __FILE__, __LINE__);
  meta_ = std::move(meta);
}

void Value::replace_all_uses_with(Value* replacement) {
  TOROID_CHECK(replacement != nullptr, "replace_all_uses_with(nullptr)");
  if (replacement == this) return;
  if (replacement->type() != type_) {
    internal_error("cannot replace " + std::string(value_type_name(type_)) + " value " + describe_value(this) + " by " +
                       value_type_name(replacement->type()) + " value " + describe_value(replacement),
                   __FILE__, __LINE__);
  }
  std::vector<Node*> users = users_;
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  for (Node* u : users) u->replace_input(this, replacement);
}

// ---- Node ----

Node::Node(Graph* graph, NodeKind kind, std::string target)
    : graph_(graph), kind_(kind), target_(std::move(target)) {}

Node::~Node() = default;

const Argument* Node::kwarg(std::string_view name) const {
  for (const Kwarg& k : kwargs_) {
    if (k.name == name) return &k.value;
  }
  return nullptr;
}

void Node::use_argument(const Argument& a, bool add) {
  a.for_each_value([&](Value* v) {
    if (v == nullptr) return;
    if (add) v->users_.push_back(this);
    else remove_one_use(v->users_, this);
  });
}

void Node::add_uses() {
  for (const Argument& a : args_) use_argument(a, true);
  for (const Kwarg& k : kwargs_) use_argument(k.value, true);
}

void Node::drop_uses() {
  for (Value* v : inputs()) {
    if (v != nullptr) remove_one_use(v->users_, this);
  }
}

void Node::set_args(std::vector<Argument> args) {
  for (const Argument& a : args_) use_argument(a, false);
  args_ = std::move(args);
  for (const Argument& a : args_) use_argument(a, true);
}

void Node::set_kwargs(std::vector<Kwarg> kwargs) {
  for (const Kwarg& k : kwargs_) use_argument(k.value, false);
  kwargs_ = std::move(kwargs);
  for (const Kwarg& k : kwargs_) use_argument(k.value, true);
}

void Node::set_arg(size_t i, Argument a) {
  TOROID_CHECK(i < args_.size(), "set_arg index " + std::to_string(i) + " out of range in " + describe());
  use_argument(args_[i], false);
  args_[i] = std::move(a);
  use_argument(args_[i], true);
}

namespace {

// Rewrites `from` to `to` in place; returns how many occurrences changed.
size_t replace_in(Argument& a, Value* from, Value* to) {
  if (a.is_value()) {
    if (a.value() != from) return 0;
    a = Argument(to);
    return 1;
  }
  size_t n = 0;
  if (a.is_list()) {
    for (Argument& e : a.list()) n += replace_in(e, from, to);
  }
  return n;
}

}  // namespace

void Node::replace_input(Value* from, Value* to) {
  if (from == to || from == nullptr) return;
  size_t n = 0;
  for (Argument& a : args_) n += replace_in(a, from, to);
  for (Kwarg& k : kwargs_) n += replace_in(k.value, from, to);
  for (size_t i = 0; i < n; ++i) {
    remove_one_use(from->users_, this);
    if (to != nullptr) to->users_.push_back(this);
  }
}

std::vector<Value*> Node::inputs() const {
  std::vector<Value*> out;
  auto push = [&](Value* v) { out.push_back(v); };
  for (const Argument& a : args_) a.for_each_value(push);
  for (const Kwarg& k : kwargs_) k.value.for_each_value(push);
  return out;
}

std::vector<Value*> Node::results() const {
  std::vector<Value*> out;
  out.reserve(results_.size());
  for (const auto& r : results_) out.push_back(r.get());
  return out;
}

bool Node::has_users() const {
  return std::any_of(results_.begin(), results_.end(), [](const auto& r) { return r->has_users(); });
}

Graph* Node::subgraph(std::string_view name) const {
  for (const NamedSubgraph& s : subgraphs_) {
    if (s.name == name) return s.graph.get();
  }
  return nullptr;
}

Graph* Node::add_subgraph(std::string name) {
  std::unique_ptr<Graph> g(new Graph(this));
  g->set_name(name);
  Graph* raw = g.get();
  subgraphs_.push_back(NamedSubgraph{std::move(name), std::move(g)});
  return raw;
}

Node* Node::next() const {
  auto it = std::next(self_);
  return it == graph_->nodes_.end() ? nullptr : it->get();
}

Node* Node::prev() const {
  if (self_ == graph_->nodes_.begin()) return nullptr;
  return std::prev(self_)->get();
}

std::string Node::describe() const { return describe(LiveFn()); }

std::string Node::describe(const std::function<bool(const Value*)>& live_fn) const {
  const LiveFn* live = live_fn ? &live_fn : nullptr;
  constexpr size_t kMaxArgsText = 160;  // keep error messages one readable line
  std::string out;
  if (kind_ != NodeKind::Output && !results_.empty()) {
    for (size_t i = 0; i < results_.size(); ++i) {
      if (i > 0) out += ", ";
      out += describe_value(results_[i].get());
    }
    out += " = ";
  }
  switch (kind_) {
    case NodeKind::Input:
      out += "input";
      return out;
    case NodeKind::Param:
      out += "param " + quote(target_);
      return out;
    case NodeKind::Constant:
      out += "constant";
      return out;
    case NodeKind::Output:
      out += "output";
      break;
    case NodeKind::Call:
      out += target_;
      break;
  }
  std::string args;
  bool first = true;
  for (const Argument& a : args_) {
    if (!first) args += ", ";
    first = false;
    describe_argument(a, args, live);
  }
  for (const Kwarg& k : kwargs_) {
    if (!first) args += ", ";
    first = false;
    args += k.name + "=";
    describe_argument(k.value, args, live);
  }
  if (args.size() > kMaxArgsText) args = args.substr(0, kMaxArgsText) + "...";
  if (kind_ == NodeKind::Output) return args.empty() ? out : out + " " + args;
  return out + "(" + args + ")";
}

}  // namespace toroid
