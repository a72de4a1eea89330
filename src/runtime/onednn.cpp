#include "onednn.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "toroid/support/error.h"

namespace toroid::runtime {

using ops::HostTensor;

namespace {

using dims = dnnl::memory::dims;

dims to_dims(const std::vector<int64_t>& v) { return dims(v.begin(), v.end()); }

// A grouped convolution's weight as oneDNN wants it: [groups, oc/groups, ic/groups, k...].
dnnl::memory::desc weight_desc(const HostTensor& w, int64_t groups) {
  if (groups == 1) return {to_dims(w.sizes()), dnnl::memory::data_type::f32, to_dims(w.strides())};
  dims d{groups, w.sizes()[0] / groups}, s{w.strides()[0] * (w.sizes()[0] / groups), w.strides()[0]};
  for (int64_t i = 1; i < w.dim(); ++i) {
    d.push_back(w.sizes()[static_cast<size_t>(i)]);
    s.push_back(w.strides()[static_cast<size_t>(i)]);
  }
  return {d, dnnl::memory::data_type::f32, s};
}

// Which of the three convolution primitives: the tensors are (src, weights, dst) in each, one of
// them the result (a backward pass writes diff_src or diff_weights).
enum class Pass { Forward, BackwardData, BackwardWeights };

struct Cached {
  dnnl::primitive primitive;
  dnnl::memory::desc src, weights, bias, dst;
};

std::string key_of(Pass pass, const HostTensor& src, const HostTensor& w, const HostTensor* b, const ConvParams& p,
                   const HostTensor& dst) {
  std::ostringstream k;
  k << static_cast<int>(pass) << "|";
  for (const HostTensor* t : {&src, &w, &dst}) {
    for (int64_t s : t->sizes()) k << s << ",";
    k << "/";
    for (int64_t s : t->strides()) k << s << ",";
    k << "|";
  }
  k << (b ? b->strides()[0] : -1) << "|";
  for (const auto* v : {&p.stride, &p.padding, &p.dilation})
    for (int64_t x : *v) k << x << ",";
  k << p.groups;
  return k.str();
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

Cached make_primitive(Pass pass, const HostTensor& src, const HostTensor& w, const HostTensor* bias,
                      const ConvParams& p, const HostTensor& dst) {
  using dnnl::algorithm, dnnl::prop_kind;
  Cached n;
  n.src = dnnl::memory::desc(to_dims(src.sizes()), dnnl::memory::data_type::f32, to_dims(src.strides()));
  n.weights = weight_desc(w, p.groups);
  n.dst = dnnl::memory::desc(to_dims(dst.sizes()), dnnl::memory::data_type::f32, to_dims(dst.strides()));
  if (bias) n.bias = dnnl::memory::desc({bias->sizes()[0]}, dnnl::memory::data_type::f32, {bias->strides()[0]});
  dims dil;
  for (int64_t d : p.dilation) dil.push_back(d - 1);  // oneDNN counts the gaps
  dims stride = to_dims(p.stride), pad = to_dims(p.padding);
  prop_kind prop = pass == Pass::Forward ? prop_kind::forward_inference : prop_kind::forward_training;
  auto forward = bias ? dnnl::convolution_forward::desc(prop, algorithm::convolution_direct, n.src, n.weights, n.bias,
                                                        n.dst, stride, dil, pad, pad)
                      : dnnl::convolution_forward::desc(prop, algorithm::convolution_direct, n.src, n.weights, n.dst,
                                                        stride, dil, pad, pad);
  dnnl::convolution_forward::primitive_desc forward_pd(forward, engine());
  if (pass == Pass::Forward) {
    n.primitive = dnnl::convolution_forward(forward_pd);
  } else if (pass == Pass::BackwardData) {
    dnnl::convolution_backward_data::desc d(algorithm::convolution_direct, n.src, n.weights, n.dst, stride, dil, pad,
                                            pad);
    n.primitive = dnnl::convolution_backward_data(dnnl::convolution_backward_data::primitive_desc(d, engine(), forward_pd));
  } else {
    dnnl::convolution_backward_weights::desc d(algorithm::convolution_direct, n.src, n.weights, n.dst, stride, dil,
                                               pad, pad);
    n.primitive =
        dnnl::convolution_backward_weights(dnnl::convolution_backward_weights::primitive_desc(d, engine(), forward_pd));
  }
  return n;
}

// An operand as oneDNN can describe it: strides that nest (ordered by stride, each dim's stride
// at least the extent of the ones inside it), else a dense copy: a broadcast one (a zero stride
// over several elements, such as the gradient of a mean), or a slice of a permuted view whose
// dims interleave (strides [21, 2, 3] over sizes [7, 2, 7]: oneDNN refuses to describe it).
HostTensor describable(const HostTensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[static_cast<size_t>(d)] > 1) dims.emplace_back(t.strides()[static_cast<size_t>(d)], t.sizes()[static_cast<size_t>(d)]);
  std::sort(dims.begin(), dims.end());
  int64_t extent = 1;  // elements the dims so far span
  for (const auto& [stride, size] : dims) {
    if (stride < extent) return t.clone();
    extent = stride * size;
  }
  return t;
}

// Runs `pass` with src, weights and dst (the one it writes included) in their own layouts.
void run(Pass pass, const HostTensor& src_in, const HostTensor& w_in, const HostTensor* bias, const ConvParams& p,
         const HostTensor& dst_in) {
  for (const HostTensor* t : {&src_in, &w_in, &dst_in})
    if (t->dtype() != DType::Float32) TOROID_INTERNAL_ERROR("oneDNN convolution on " + t->describe());
  const HostTensor& result = pass == Pass::Forward ? dst_in : pass == Pass::BackwardData ? src_in : w_in;
  if (result.numel() == 0) return;
  HostTensor src = pass == Pass::BackwardData ? src_in : describable(src_in);
  HostTensor w = pass == Pass::BackwardWeights ? w_in : describable(w_in);
  HostTensor dst = pass == Pass::Forward ? dst_in : describable(dst_in);
  if (pass != Pass::Forward && (src.numel() == 0 || w.numel() == 0 || dst.numel() == 0)) {
    std::memset(result.data(), 0, static_cast<size_t>(result.numel()) * sizeof(float));  // no products: zero (dense)
    return;
  }
  static std::mutex mutex;
  static std::map<std::string, Cached> cache;
  std::string key = key_of(pass, src, w, bias, p, dst);
  Cached* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, make_primitive(pass, src, w, bias, p, dst)).first;
    c = &it->second;
  }
  dnnl::stream stream(engine());
  int src_arg = pass == Pass::BackwardData ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  int w_arg = pass == Pass::BackwardWeights ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  int dst_arg = pass == Pass::Forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
  std::unordered_map<int, dnnl::memory> args{{src_arg, dnnl::memory(c->src, engine(), src.data())},
                                             {w_arg, dnnl::memory(c->weights, engine(), w.data())},
                                             {dst_arg, dnnl::memory(c->dst, engine(), dst.data())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(c->bias, engine(), bias->data()));
  c->primitive.execute(stream, args);
  stream.wait();
}

}  // namespace

void onednn_convolution(const HostTensor& in, const HostTensor& w, const HostTensor* bias, const ConvParams& p,
                        const HostTensor& out) {
  run(Pass::Forward, in, w, bias, p, out);
}

void onednn_convolution_backward_input(const HostTensor& grad_output, const HostTensor& weight, const ConvParams& p,
                                       const HostTensor& grad_input) {
  run(Pass::BackwardData, grad_input, weight, nullptr, p, grad_output);
}

void onednn_convolution_backward_weight(const HostTensor& grad_output, const HostTensor& input, const ConvParams& p,
                                        const HostTensor& grad_weight) {
  run(Pass::BackwardWeights, input, grad_weight, nullptr, p, grad_output);
}

}  // namespace toroid::runtime
