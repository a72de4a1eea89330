#include "toroid/graph/inputs.h"

namespace toroid {

std::vector<const Value*> graph_inputs(const Graph& g) {
  std::vector<const Value*> out;
  for (Node* n : g.inputs()) out.push_back(n->result(0));
  for (Node* n : g.params()) out.push_back(n->result(0));
  return out;
}

std::string describe_input(const Value* v) {
  std::string s = describe_value(v);
  if (v->node()->kind() == NodeKind::Param) s += " (param \"" + v->node()->target() + "\")";
  return s;
}

}  // namespace toroid
