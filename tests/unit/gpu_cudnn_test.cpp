// cuDNN convolutions against the reference kernel: f32 with bias, stride and padding; bf16
// grouped; 1-D; channels-last (strided) input, output and weight; depthwise channels-last. Skips
// without a GPU or cuDNN (the filter layout's choice runs anywhere).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "toroid/bind/inputs.h"
#include "toroid/graph/text.h"
#include "toroid/interp/interpreter.h"
#include "toroid/runtime/cuda/cudnn.h"
#include "toroid/runtime/cuda/executor.h"
#include "toroid/support/error.h"

namespace {

namespace cuda = toroid::runtime::cuda;
using toroid::ops::HostTensor;
using toroid::ops::RtValue;

const std::byte* data(const RtValue& v) {
  const HostTensor& t = v.tensor();
  return t.storage()->data() + t.offset() * t.element_size();
}

// Runs the graph's one convolution (inputs x, w and optionally b) through cuDNN and compares it
// with the reference interpreter; with `tf32`, the largest error must also reach least_error.
void check(const std::string& text, double tol, bool tf32 = false, double least_error = 0) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  if (!cuda::cudnn_available(&why)) GTEST_SKIP() << "no cuDNN: " << why;
  auto g = toroid::parse_graph(text, "conv.tir");
  std::vector<RtValue> in = toroid::bind::random_inputs(*g, 5);
  std::vector<RtValue> want = toroid::interp::interpret(*g, in);
  const toroid::Node* conv = nullptr;
  for (const toroid::Node* n : g->nodes())
    if (n->is_call() && n->target() == "aten.convolution.default") conv = n;
  ASSERT_NE(conv, nullptr);
  const toroid::TensorMeta& ym = conv->result(0)->meta();
  std::vector<int64_t> ys, yst;
  for (auto e : ym.sizes) ys.push_back(*e.as_int());
  for (auto e : ym.strides) yst.push_back(*e.as_int());
  HostTensor y_host = HostTensor::empty_strided(ym.dtype, ys, yst);
  RtValue y = cuda::to_device(RtValue(y_host));
  std::vector<RtValue> dev;
  for (const RtValue& v : in) dev.push_back(cuda::to_device(v));
  // The operands as the convolution sees them (a permuted input is a view of the raw one).
  auto view = [&](size_t arg, const RtValue& storage) {
    const toroid::TensorMeta& m = conv->args()[arg].value()->meta();
    std::vector<int64_t> sz, st;
    for (auto e : m.sizes) sz.push_back(*e.as_int());
    for (auto e : m.strides) st.push_back(*e.as_int());
    return HostTensor::from_storage(storage.tensor().storage(), m.dtype, sz, st, *m.offset.as_int());
  };
  HostTensor x = view(0, dev[0]), w = view(1, dev[1]);
  auto ints = [&](size_t i) {
    std::vector<int64_t> out;
    for (const toroid::Argument& a : conv->args()[i].list()) out.push_back(*a.scalar().as_int());
    return out;
  };
  cuda::ConvArgs c;
  c.dtype = ym.dtype;
  c.x_sizes = x.sizes();
  c.x_strides = x.strides();
  c.w_sizes = w.sizes();
  c.w_strides = w.strides();
  c.y_sizes = ys;
  c.y_strides = yst;
  c.stride = ints(3);
  c.padding = ints(4);
  c.dilation = ints(5);
  c.groups = *conv->args()[8].scalar().as_int();
  c.x = const_cast<std::byte*>(data(RtValue(x)));
  c.w = const_cast<std::byte*>(data(RtValue(w)));
  c.bias = dev.size() > 2 ? data(dev[2]) : nullptr;
  c.y = const_cast<std::byte*>(data(y));
  c.tf32 = tf32;
  ASSERT_TRUE(cuda::convolution_supported(c, &why)) << why;
  ASSERT_TRUE(cuda::convolution(c));
  HostTensor got = cuda::to_host(y).tensor();
  const HostTensor& ref = want.back().tensor();
  ASSERT_EQ(got.sizes(), ref.sizes());
  ASSERT_EQ(got.strides(), ref.strides());
  double largest = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    ASSERT_NEAR(got.get_double(i), ref.get_double(i), tol * (1 + std::abs(ref.get_double(i)))) << "element " << i;
    largest = std::max(largest, std::abs(got.get_double(i) - ref.get_double(i)));
  }
  EXPECT_GE(largest, least_error);
}

TEST(GpuCudnn, F32BiasStridePadding) {
  check(R"(graph @g functional {
  %x = input : f32[2, 8, 17, 15]
  %w = input : f32[12, 8, 3, 3]
  %b = input : f32[12]
  %y = aten.convolution.default(%x, %w, %b, [2, 2], [1, 1], [1, 1], false, [0, 0], 1) : f32[2, 12, 9, 8]
  output %y
})",
        1e-5);
}

// A ResNet-sized layer with TF32 allowed (torch.backends.cudnn.allow_tf32): cuDNN picks a
// tensor-core algorithm, whose error (about 1e-3 here) the exact FMA path never reaches.
TEST(GpuCudnn, F32WithTf32UsesTensorCores) {
  check(R"(graph @g functional {
  %x = input : f32[2, 64, 14, 14]
  %w = input : f32[64, 64, 3, 3]
  %b = input : f32[64]
  %y = aten.convolution.default(%x, %w, %b, [1, 1], [1, 1], [1, 1], false, [0, 0], 1) : f32[2, 64, 14, 14]
  output %y
})",
        3e-2, true, 1e-4);
}

TEST(GpuCudnn, Bf16GroupedDilated) {
  check(R"(graph @g functional {
  %x = input : bf16[2, 16, 12, 12]
  %w = input : bf16[32, 4, 3, 3]
  %y = aten.convolution.default(%x, %w, None, [1, 1], [2, 2], [2, 2], false, [0, 0], 4) : bf16[2, 32, 12, 12]
  output %y
})",
        2e-2);
}

TEST(GpuCudnn, OneDimensional) {
  check(R"(graph @g functional {
  %x = input : f32[3, 4, 50]
  %w = input : f32[6, 4, 5]
  %b = input : f32[6]
  %y = aten.convolution.default(%x, %w, %b, [1], [2], [1], false, [0], 1) : f32[3, 6, 50]
  output %y
})",
        1e-5);
}

TEST(GpuCudnn, ChannelsLast) {
  check(R"(graph @g functional {
  %n = input : f32[2, 9, 9, 8]
  %x = aten.permute.default(%n, [0, 3, 1, 2]) : f32[2, 8, 9, 9]{strides=[648, 1, 72, 8], storage=%n}
  %w = input : f32[4, 8, 3, 3]
  %y = aten.convolution.default(%x, %w, None, [1, 1], [1, 1], [1, 1], false, [0, 0], 1) : f32[2, 4, 9, 9]{strides=[324, 1, 36, 4]}
  output %y
})",
        1e-5);
}

// ConvNeXt's block: a depthwise 7x7 over a channels-last input, with bias; its weight is
// described as NHWC (the same bytes).
TEST(GpuCudnn, DepthwiseChannelsLast) {
  check(R"(graph @g functional {
  %n = input : f32[2, 10, 10, 16]
  %x = aten.permute.default(%n, [0, 3, 1, 2]) : f32[2, 16, 10, 10]{strides=[1600, 1, 160, 16], storage=%n}
  %w = input : f32[16, 1, 7, 7]
  %b = input : f32[16]
  %y = aten.convolution.default(%x, %w, %b, [1, 1], [3, 3], [1, 1], false, [0, 0], 16) : f32[2, 16, 10, 10]{strides=[1600, 1, 160, 16]}
  output %y
})",
        1e-5);
}

// A weight stored channels-last (a model converted with .to(memory_format=torch.channels_last)).
TEST(GpuCudnn, ChannelsLastWeight) {
  check(R"(graph @g functional {
  %n = input : f32[2, 9, 9, 8]
  %x = aten.permute.default(%n, [0, 3, 1, 2]) : f32[2, 8, 9, 9]{strides=[648, 1, 72, 8], storage=%n}
  %v = input : f32[4, 3, 3, 8]
  %w = aten.permute.default(%v, [0, 3, 1, 2]) : f32[4, 8, 3, 3]{strides=[72, 1, 24, 8], storage=%v}
  %y = aten.convolution.default(%x, %w, None, [1, 1], [1, 1], [1, 1], false, [0, 0], 1) : f32[2, 4, 9, 9]{strides=[324, 1, 36, 4]}
  output %y
})",
        1e-5);
}

TEST(GpuCudnn, FilterLayoutFollowsTheWeightThenTheInput) {
  cuda::ConvArgs c;
  c.x_sizes = {2, 16, 10, 10};
  c.x_strides = {1600, 1, 160, 16};  // channels-last
  c.w_sizes = {16, 1, 7, 7};
  c.w_strides = {49, 49, 7, 1};  // depthwise: contiguous and channels-last alike
  EXPECT_TRUE(cuda::weight_channels_last(c));
  c.x_strides = {1600, 100, 10, 1};
  EXPECT_FALSE(cuda::weight_channels_last(c)) << "a contiguous input keeps the NCHW filter";
  c.w_sizes = {4, 8, 3, 3};
  c.w_strides = {72, 1, 24, 8};  // channels-last only
  EXPECT_TRUE(cuda::weight_channels_last(c));
  c.x_strides = {1600, 1, 160, 16};
  c.w_strides = {72, 9, 3, 1};  // contiguous only
  EXPECT_FALSE(cuda::weight_channels_last(c)) << "a general NCHW weight stays NCHW";
}

// A [1, 2, 4, 4] by [3, 2, 2, 2] convolution, all dense, for the refusal tests to bend.
cuda::ConvArgs small_convolution() {
  cuda::ConvArgs c;
  c.x_sizes = {1, 2, 4, 4};
  c.x_strides = {32, 16, 4, 1};
  c.w_sizes = {3, 2, 2, 2};
  c.w_strides = {8, 4, 2, 1};
  c.y_sizes = {1, 3, 3, 3};
  c.y_strides = {27, 9, 3, 1};
  c.stride = c.dilation = {1, 1};
  c.padding = {0, 0};
  return c;
}

TEST(GpuCudnn, NonContiguousWeightIsRefusedWithAReason) {
  cuda::ConvArgs c = small_convolution();
  c.w_strides = {1, 3, 6, 12};
  std::string why;
  if (!cuda::cudnn_available(&why)) GTEST_SKIP() << "no cuDNN: " << why;
  EXPECT_FALSE(cuda::convolution_supported(c, &why));
  EXPECT_NE(why.find("weight is not contiguous"), std::string::npos) << why;
}

TEST(GpuCudnn, BroadcastGradientIsRefusedWithAReason) {
  // The gradient of a mean reaches convolution_backward expanded (zero strides): the host runs it.
  cuda::ConvArgs c = small_convolution();
  c.pass = cuda::ConvPass::BackwardData;
  c.y_strides = {0, 0, 0, 0};
  std::string why;
  if (!cuda::cudnn_available(&why)) GTEST_SKIP() << "no cuDNN: " << why;
  EXPECT_FALSE(cuda::convolution_supported(c, &why));
  EXPECT_NE(why.find("broadcast"), std::string::npos) << why;
}

}  // namespace
