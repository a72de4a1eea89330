#include "onednn.h"

#include <dnnl.hpp>

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

struct Cached {
  dnnl::convolution_forward primitive;
  dnnl::memory::desc src, weights, bias, dst;
};

std::string key_of(const HostTensor& in, const HostTensor& w, const HostTensor* b, const ConvParams& p,
                   const HostTensor& out) {
  std::ostringstream k;
  for (const HostTensor* t : {&in, &w, &out}) {
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

}  // namespace

void onednn_convolution(const HostTensor& in, const HostTensor& w, const HostTensor* bias, const ConvParams& p,
                        const HostTensor& out) {
  for (const HostTensor* t : {&in, &w, &out})
    if (t->dtype() != DType::Float32) TOROID_INTERNAL_ERROR("oneDNN convolution on " + t->describe());
  if (out.numel() == 0) return;
  static std::mutex mutex;
  static std::map<std::string, Cached> cache;
  std::string key = key_of(in, w, bias, p, out);
  Cached* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) {
      Cached n;
      n.src = dnnl::memory::desc(to_dims(in.sizes()), dnnl::memory::data_type::f32, to_dims(in.strides()));
      n.weights = weight_desc(w, p.groups);
      n.dst = dnnl::memory::desc(to_dims(out.sizes()), dnnl::memory::data_type::f32, to_dims(out.strides()));
      if (bias) n.bias = dnnl::memory::desc({bias->sizes()[0]}, dnnl::memory::data_type::f32, {bias->strides()[0]});
      dims dil;
      for (int64_t d : p.dilation) dil.push_back(d - 1);  // oneDNN counts the gaps
      auto d = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::convolution_direct, n.src, n.weights, n.bias,
                                                      n.dst, to_dims(p.stride), dil, to_dims(p.padding),
                                                      to_dims(p.padding))
                    : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::convolution_direct, n.src, n.weights, n.dst,
                                                      to_dims(p.stride), dil, to_dims(p.padding), to_dims(p.padding));
      n.primitive = dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(d, engine()));
      it = cache.emplace(key, std::move(n)).first;
    }
    c = &it->second;
  }
  dnnl::stream stream(engine());
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(c->src, engine(), in.data())},
      {DNNL_ARG_WEIGHTS, dnnl::memory(c->weights, engine(), w.data())},
      {DNNL_ARG_DST, dnnl::memory(c->dst, engine(), out.data())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(c->bias, engine(), bias->data()));
  c->primitive.execute(stream, args);
  stream.wait();
}

}  // namespace toroid::runtime
