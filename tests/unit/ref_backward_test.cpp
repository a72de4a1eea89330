// native_layer_norm_backward and native_group_norm_backward against central differences of
// the forward kernels in f64.
#include <functional>

#include "ref_test_util.h"

using namespace reftest;

namespace {
HostTensor filled(std::vector<int64_t> sizes, double scale, double shift) {
  HostTensor t = HostTensor::zeros(DType::Float64, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::sin(scale * static_cast<double>(i) + shift) * 2);
  return t;
}
RtValue mask3() { return RtValue(RtValue::List{B(true), B(true), B(true)}); }

// Checks grads[k] against d/dt sum(go * f()) for each perturbed tensor ts[k].
void check_fd(std::vector<HostTensor*> ts, const std::vector<RtValue>& grads, const HostTensor& go, const std::function<HostTensor()>& f) {
  const double h = 1e-6;
  for (size_t k = 0; k < ts.size(); ++k)
    for (int64_t i = 0; i < ts[k]->numel(); ++i) {
      double v = ts[k]->get_double(i);
      auto loss = [&](double x) {
        ts[k]->set_double(i, x);
        HostTensor y = f();
        double l = 0;
        for (int64_t q = 0; q < y.numel(); ++q) l += y.get_double(q) * go.get_double(q);
        return l;
      };
      double fd = (loss(v + h) - loss(v - h)) / (2 * h);
      ts[k]->set_double(i, v);
      EXPECT_NEAR(grads[k].tensor().get_double(i), fd, 1e-6) << "grad " << k << " at " << i;
    }
}
}  // namespace

TEST(RefBackward, LayerNormBackwardFiniteDifferences) {
  HostTensor x = filled({3, 2, 3}, 0.7, 0.1), w = filled({2, 3}, 1.1, 0.5), b = filled({2, 3}, 0.3, 0.9);
  auto fwd = [&] { return call("aten.native_layer_norm.default", {x, L({2, 3}), w, b, D(1e-5)}); };
  auto r = fwd();
  HostTensor go = filled({3, 2, 3}, 0.45, 0.2);
  auto g = call("aten.native_layer_norm_backward.default", {go, x, L({2, 3}), r[1].tensor(), r[2].tensor(), w, b, mask3()});
  EXPECT_EQ(g[1].tensor().sizes(), (std::vector<int64_t>{2, 3}));
  check_fd({&x, &w, &b}, g, go, [&] { return fwd()[0].tensor(); });
  // Masked results are empty 1-d tensors (the meta's undefined_result).
  auto m = call("aten.native_layer_norm_backward.default",
                {go, x, L({2, 3}), r[1].tensor(), r[2].tensor(), w, b, RtValue(RtValue::List{B(true), B(false), B(false)})});
  for (size_t i : {1, 2}) EXPECT_EQ(m[i].tensor().sizes(), (std::vector<int64_t>{0})) << i;
}

TEST(RefBackward, GroupNormBackwardFiniteDifferences) {
  HostTensor x = filled({2, 4, 3}, 0.9, 0.4), w = filled({4}, 1.3, 0.2), b = filled({4}, 0.6, 0.1);
  auto fwd = [&] { return call("aten.native_group_norm.default", {x, w, b, I(2), I(4), I(3), I(2), D(1e-5)}); };
  auto r = fwd();
  HostTensor go = filled({2, 4, 3}, 0.37, 0.8);
  auto g = call("aten.native_group_norm_backward.default", {go, x, r[1].tensor(), r[2].tensor(), w, I(2), I(4), I(3), I(2), mask3()});
  check_fd({&x, &w, &b}, g, go, [&] { return fwd()[0].tensor(); });
}
