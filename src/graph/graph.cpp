// Graph: node list, insertion points, order queries, storages.
#include <algorithm>
#include <unordered_set>

#include "toroid/graph/graph.h"

namespace toroid {

namespace {
// Order indices are spaced so most insertions take a midpoint instead of renumbering.
constexpr uint64_t kOrderGap = uint64_t{1} << 20;
}  // namespace

Graph::Graph() : shape_env_(std::make_shared<ShapeEnv>()), insert_at_(nodes_.end()) {}

std::unique_ptr<Graph> Graph::sharing_shape_env(const Graph& like) {
  std::unique_ptr<Graph> g(new Graph());
  g->shape_env_ = like.root()->shape_env_;
  return g;
}

Graph::Graph(Node* parent)
    : parent_(parent), shape_env_(parent->graph()->root()->shape_env_), insert_at_(nodes_.end()) {}

Graph::~Graph() {
  // Back to front, so a node's users go before it. Use lists are not maintained: the whole
  // graph (and every value it could be using) goes away together.
  while (!nodes_.empty()) nodes_.pop_back();
}

Graph* Graph::root() {
  Graph* g = this;
  while (g->parent_ != nullptr) g = g->parent_->graph();
  return g;
}

const Graph* Graph::root() const {
  const Graph* g = this;
  while (g->parent_ != nullptr) g = g->parent_->graph();
  return g;
}

const std::vector<UserKernelEntry>& Graph::user_kernels() const { return root()->user_kernels_; }

const UserKernelEntry* Graph::find_user_kernel(const std::string& name) const {
  for (const UserKernelEntry& e : root()->user_kernels_)
    if (e.name == name) return &e;
  return nullptr;
}

void Graph::add_user_kernel(UserKernelEntry entry) {
  std::vector<UserKernelEntry>& table = root()->user_kernels_;
  for (UserKernelEntry& e : table)
    if (e.name == entry.name) {
      e = std::move(entry);
      return;
    }
  table.push_back(std::move(entry));
}

Storage* Graph::new_storage() {
  Graph* r = root();
  auto s = std::make_unique<Storage>();
  s->id = r->storages_.size();
  r->storages_.push_back(std::move(s));
  return r->storages_.back().get();
}

std::vector<const Storage*> Graph::storages() const {
  const Graph* r = root();
  std::vector<const Storage*> out;
  out.reserve(r->storages_.size());
  for (const auto& s : r->storages_) out.push_back(s.get());
  return out;
}

Graph::NodeRange Graph::nodes() const {
  return NodeRange(NodeRange::iterator(nodes_.cbegin()), NodeRange::iterator(nodes_.cend()));
}

std::vector<Node*> Graph::node_list() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Node* Graph::front() const { return nodes_.empty() ? nullptr : nodes_.front().get(); }
Node* Graph::back() const { return nodes_.empty() ? nullptr : nodes_.back().get(); }

std::vector<Node*> Graph::inputs() const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    if (n->kind() == NodeKind::Input) out.push_back(n.get());
  }
  return out;
}

std::vector<Node*> Graph::params() const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    if (n->kind() == NodeKind::Param) out.push_back(n.get());
  }
  return out;
}

Node* Graph::output_node() const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if ((*it)->kind() == NodeKind::Output) return it->get();
  }
  return nullptr;
}

std::vector<Value*> Graph::output_values() const {
  std::vector<Value*> out;
  if (Node* o = output_node()) {
    for (const Argument& a : o->args()) a.for_each_value([&](Value* v) { out.push_back(v); });
  }
  return out;
}

void Graph::check_owned(const Node* n, const char* what) const {
  TOROID_CHECK(n != nullptr, std::string(what) + ": null node");
  if (n->graph() != this) {
    internal_error(std::string(what) + ": node " + n->describe() + " belongs to graph @" + n->graph()->name() +
                       ", not @" + name_,
                   __FILE__, __LINE__);
  }
}

void Graph::set_insertion_point_before(Node* n) {
  check_owned(n, "set_insertion_point_before");
  insert_at_ = n->self_;
  insert_at_end_ = false;
}

void Graph::set_insertion_point_after(Node* n) {
  check_owned(n, "set_insertion_point_after");
  insert_at_ = std::next(n->self_);
  insert_at_end_ = false;
}

void Graph::set_insertion_point_to_end() {
  insert_at_ = nodes_.end();
  insert_at_end_ = true;
}

Graph::NodeIt Graph::default_position(NodeKind kind) {
  if (!insert_at_end_) return insert_at_;
  // "End" means before a trailing output node; a new output goes last.
  if (kind != NodeKind::Output && !nodes_.empty() && nodes_.back()->kind() == NodeKind::Output) {
    return std::prev(nodes_.end());
  }
  return nodes_.end();
}

Graph::NodeIt Graph::leading_position(bool include_params) {
  auto it = nodes_.begin();
  while (it != nodes_.end() &&
         ((*it)->kind() == NodeKind::Input || (include_params && (*it)->kind() == NodeKind::Param))) {
    ++it;
  }
  return it;
}

Node* Graph::insert_node(std::unique_ptr<Node> node, NodeIt pos) {
  Node* raw = node.get();
  raw->self_ = nodes_.insert(pos, std::move(node));
  assign_order(raw);
  return raw;
}

void Graph::assign_order(Node* n) {
  if (!order_valid_) return;
  NodeIt it = n->self_;
  uint64_t lo = it == nodes_.begin() ? 0 : (*std::prev(it))->order_;
  NodeIt nx = std::next(it);
  if (nx == nodes_.end()) {
    if (lo > UINT64_MAX - kOrderGap) order_valid_ = false;
    else n->order_ = lo + kOrderGap;
    return;
  }
  uint64_t hi = (*nx)->order_;
  if (hi <= lo || hi - lo < 2) {
    order_valid_ = false;
    return;
  }
  n->order_ = lo + (hi - lo) / 2;
}

void Graph::renumber() const {
  uint64_t i = 0;
  for (const auto& n : nodes_) n->order_ = ++i * kOrderGap;
  order_valid_ = true;
}

Node* Graph::create_node(NodeKind kind, std::string target, std::vector<Argument> args, std::vector<Kwarg> kwargs,
                         std::vector<ResultSpec> results) {
  std::unique_ptr<Node> node(new Node(this, kind, std::move(target)));
  for (size_t i = 0; i < results.size(); ++i) {
    ResultSpec& r = results[i];
    std::unique_ptr<Value> v(new Value(node.get(), static_cast<unsigned>(i), r.type));
    if (r.meta) {
      TOROID_CHECK(r.type == ValueType::Tensor, "a meta for a " + std::string(value_type_name(r.type)) + " result");
      v->meta_ = std::move(r.meta);
    }
    v->scalar_value_ = r.scalar_value;
    v->name_ = std::move(r.name);
    node->results_.push_back(std::move(v));
  }
  node->set_args(std::move(args));
  node->set_kwargs(std::move(kwargs));
  NodeIt pos = default_position(kind);
  return insert_node(std::move(node), pos);
}

Value* Graph::add_input(std::string name, TensorMeta meta) {
  std::unique_ptr<Node> node(new Node(this, NodeKind::Input, ""));
  std::unique_ptr<Value> v(new Value(node.get(), 0, ValueType::Tensor));
  v->meta_ = std::move(meta);
  v->name_ = std::move(name);
  node->results_.push_back(std::move(v));
  return insert_node(std::move(node), leading_position(false))->result();
}

Value* Graph::add_scalar_input(std::string name, ValueType type, SymExpr value) {
  TOROID_CHECK(type != ValueType::Tensor, "add_scalar_input with a tensor type");
  std::unique_ptr<Node> node(new Node(this, NodeKind::Input, ""));
  std::unique_ptr<Value> v(new Value(node.get(), 0, type));
  v->scalar_value_ = value;
  v->name_ = std::move(name);
  node->results_.push_back(std::move(v));
  return insert_node(std::move(node), leading_position(false))->result();
}

Value* Graph::add_param(std::string qualified_name, TensorMeta meta, std::string value_name) {
  std::unique_ptr<Node> node(new Node(this, NodeKind::Param, std::move(qualified_name)));
  std::unique_ptr<Value> v(new Value(node.get(), 0, ValueType::Tensor));
  v->meta_ = std::move(meta);
  v->name_ = std::move(value_name);
  node->results_.push_back(std::move(v));
  return insert_node(std::move(node), leading_position(true))->result();
}

Node* Graph::add_call(std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs,
                      std::vector<ResultSpec> results) {
  return create_node(NodeKind::Call, std::move(op), std::move(args), std::move(kwargs), std::move(results));
}

Node* Graph::set_output(std::vector<Argument> outputs) {
  if (Node* o = output_node()) {
    o->set_args(std::move(outputs));
    return o;
  }
  std::unique_ptr<Node> node(new Node(this, NodeKind::Output, ""));
  node->set_args(std::move(outputs));
  return insert_node(std::move(node), nodes_.end());
}

namespace {

// Drops every use made by `n` and by the nodes of its subgraphs, while all values still exist.
void drop_uses_recursive(Node* n, void (*drop)(Node*)) {
  for (const NamedSubgraph& s : n->subgraphs()) {
    for (Node* inner : s.graph->node_list()) drop_uses_recursive(inner, drop);
  }
  drop(n);
}

}  // namespace

void Graph::erase(Node* n) {
  check_owned(n, "erase");
  for (const auto& r : n->results_) {
    if (r->has_users()) {
      internal_error("cannot erase " + n->describe() + ": " + describe_value(r.get()) + " still has " +
                         std::to_string(r->users().size()) + " use(s), e.g. in " + r->users().front()->describe(),
                     __FILE__, __LINE__);
    }
  }
  drop_uses_recursive(n, [](Node* x) { x->drop_uses(); });
  if (!insert_at_end_ && insert_at_ == n->self_) ++insert_at_;
  nodes_.erase(n->self_);
}

void Graph::move_before(Node* n, Node* anchor) {
  check_owned(n, "move_before");
  check_owned(anchor, "move_before");
  if (n == anchor || std::next(n->self_) == anchor->self_) return;
  if (!insert_at_end_ && insert_at_ == n->self_) ++insert_at_;  // the insertion point stays put
  nodes_.splice(anchor->self_, nodes_, n->self_);
  assign_order(n);
}

void Graph::move_after(Node* n, Node* anchor) {
  check_owned(n, "move_after");
  check_owned(anchor, "move_after");
  if (n == anchor || std::next(anchor->self_) == n->self_) return;
  if (!insert_at_end_ && insert_at_ == n->self_) ++insert_at_;
  nodes_.splice(std::next(anchor->self_), nodes_, n->self_);
  assign_order(n);
}

bool Graph::comes_before(const Node* a, const Node* b) const {
  check_owned(a, "comes_before");
  check_owned(b, "comes_before");
  if (!order_valid_) renumber();
  return a->order_ < b->order_;
}

bool Graph::is_topologically_sorted() const {
  std::unordered_set<const Value*> defined;
  for (const auto& n : nodes_) {
    for (Value* v : n->inputs()) {
      if (!defined.contains(v)) return false;
    }
    for (const auto& r : n->results_) defined.insert(r.get());
  }
  return true;
}

void retarget_storage(Graph& g, const Storage* from, Storage* to) {
  if (from == nullptr || from == to) return;
  for (Node* n : g.nodes()) {
    for (Value* v : n->results())
      if (v->is_tensor() && v->has_meta() && v->meta().storage == from) v->meta().storage = to;
    for (const NamedSubgraph& sub : n->subgraphs()) retarget_storage(*sub.graph, from, to);
  }
}

}  // namespace toroid
