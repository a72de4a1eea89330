// Convolution, col2im and pooling metas: output sizes, memory formats, index dtypes and errors,
// checked against what PyTorch 2.11 produces.
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using D = DType;

namespace {



}  // namespace

TEST_F(MetaTest, Conv2dStridePadding) {
  Value* x = input(D::Float32, {1, 3, 32, 32});
  Value* w = input(D::Float32, {8, 3, 3, 3});
  Value* b = input(D::Float32, {8});
  TensorMeta r = run("aten.convolution.default", {x, w, b, L({2, 2}), L({1, 1}), L({1, 1}), B(false), L({0, 0}), A(1)});
  EXPECT_EQ(str(r.sizes), "[1, 8, 16, 16]");
  EXPECT_EQ(str(r.strides), "[2048, 256, 16, 1]");
  EXPECT_EQ(r.dtype, D::Float32);
  // A single value stands for every spatial dim.
  TensorMeta r1 = run("aten.convolution.default", {x, w, Argument::none(), L({1}), L({0}), L({1}), B(false), L({0}), A(1)});
  EXPECT_EQ(str(r1.sizes), "[1, 8, 30, 30]");
}

TEST_F(MetaTest, ConvChannelsLastInputGivesChannelsLastOutput) {
  Value* x = input(D::Float32, {2, 3, 8, 8}, {192, 1, 24, 3});
  Value* w = input(D::Float32, {4, 3, 3, 3});
  TensorMeta r = run("aten.convolution.default", {x, w, Argument::none(), L({1, 1}), L({1, 1}), L({1, 1}), B(false), L({0, 0}), A(1)});
  EXPECT_EQ(str(r.sizes), "[2, 4, 8, 8]");
  EXPECT_EQ(str(r.strides), "[256, 1, 32, 4]");
  // A channels-last weight also selects channels-last (as the cuDNN/oneDNN/slow backends do).
  Value* xc = input(D::Float32, {1, 3, 8, 8});
  Value* wcl = input(D::Float32, {4, 3, 3, 3}, {27, 1, 9, 3});
  TensorMeta r2 = run("aten.convolution.default", {xc, wcl, Argument::none(), L({1, 1}), L({0, 0}), L({1, 1}), B(false), L({0, 0}), A(1)});
  EXPECT_EQ(str(r2.strides), "[144, 1, 24, 4]");
  // 3-d: channels_last_3d (here oneDNN runs it: batch 2).
  Value* x3 = input(D::Float32, {2, 2, 4, 4, 4}, {128, 1, 32, 8, 2});
  Value* w3 = input(D::Float32, {3, 2, 1, 1, 1});
  TensorMeta r3 = run("aten.convolution.default", {x3, w3, Argument::none(), L({1}), L({0}), L({1}), B(false), L({0}), A(1)});
  EXPECT_EQ(str(r3.sizes), "[2, 3, 4, 4, 4]");
  EXPECT_EQ(str(r3.strides), "[192, 1, 48, 12, 3]");
}

// The layout follows the backend PyTorch would pick (values from torch 2.11, CPU and CUDA).
TEST_F(MetaTest, ConvLayoutFollowsTheBackend) {
  auto on = [&](Device dev, DType d, std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides = {}) {
    TensorMeta m;
    m.dtype = d;
    m.device = dev;
    m.sizes = shape(sizes);
    m.strides = strides.size() ? shape(strides) : contiguous_strides(m.sizes);
    m.storage = g.new_storage();
    return g.add_input("t" + std::to_string(g.inputs().size()), m);
  };
  Device cpu = Device::cpu(), cuda{Device::Type::CUDA, 0};
  auto conv = [&](Value* x, Value* w) {
    return run("aten.convolution.default", {x, w, Argument::none(), L({1}), L({0}), L({1}), B(false), L({0}), A(1)}).strides;
  };
  std::initializer_list<int64_t> x3cl = {128, 1, 32, 8, 2};
  // CPU float32, batch 1, 1x1x1 kernel, small: the slow 3-d kernel, contiguous.
  EXPECT_EQ(str(conv(on(cpu, D::Float32, {1, 2, 4, 4, 4}, x3cl), on(cpu, D::Float32, {3, 2, 1, 1, 1}))), "[192, 64, 16, 4, 1]");
  // ... but a 5x5x5 kernel goes to oneDNN, and bfloat16 always does.
  EXPECT_EQ(str(conv(on(cpu, D::Float32, {1, 2, 6, 6, 6}, {432, 1, 72, 12, 2}), on(cpu, D::Float32, {3, 2, 5, 5, 5}))),
            "[24, 1, 12, 6, 3]");
  EXPECT_EQ(str(conv(on(cpu, D::BFloat16, {1, 2, 4, 4, 4}, x3cl), on(cpu, D::BFloat16, {3, 2, 1, 1, 1}))), "[192, 1, 48, 12, 3]");
  // float64: channels-last in 2-d on the CPU, never on CUDA.
  std::initializer_list<int64_t> x2cl = {192, 1, 24, 3};
  EXPECT_EQ(str(conv(on(cpu, D::Float64, {2, 3, 8, 8}, x2cl), on(cpu, D::Float64, {4, 3, 3, 3}))), "[144, 1, 24, 4]");
  EXPECT_EQ(str(conv(on(cuda, D::Float64, {2, 3, 8, 8}, x2cl), on(cuda, D::Float64, {4, 3, 3, 3}))), "[144, 36, 6, 1]");
  EXPECT_EQ(str(conv(on(cuda, D::Float32, {1, 2, 4, 4, 4}, x3cl), on(cuda, D::Float32, {3, 2, 1, 1, 1}))), "[192, 1, 48, 12, 3]");
  EXPECT_EQ(str(conv(on(cpu, D::Float64, {1, 2, 4, 4, 4}, x3cl), on(cpu, D::Float64, {3, 2, 1, 1, 1}))), "[192, 64, 16, 4, 1]");
}

TEST_F(MetaTest, ConvTransposedGroupsDilation) {
  // ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1) on 5x5 -> 10x10.
  Value* x = input(D::Float32, {1, 4, 5, 5});
  Value* w = input(D::Float32, {4, 2, 3, 3});
  TensorMeta t = run("aten.convolution.default", {x, w, input(D::Float32, {2}), L({2, 2}), L({1, 1}), L({1, 1}), B(true), L({1, 1}), A(1)});
  EXPECT_EQ(str(t.sizes), "[1, 2, 10, 10]");
  // Transposed with groups=2: out channels = groups * weight.size(1).
  TensorMeta tg = run("aten.convolution.default", {x, w, Argument::none(), L({1, 1}), L({0, 0}), L({1, 1}), B(true), L({0, 0}), A(2)});
  EXPECT_EQ(str(tg.sizes), "[1, 4, 7, 7]");
  // Grouped, dilated: (10 - 2*(3-1) - 1)//1 + 1 = 6.
  Value* xg = input(D::Float32, {2, 4, 10, 10});
  Value* wg = input(D::Float32, {8, 2, 3, 3});
  TensorMeta g = run("aten.convolution.default", {xg, wg, Argument::none(), L({1, 1}), L({0, 0}), L({2, 2}), B(false), L({0, 0}), A(2)});
  EXPECT_EQ(str(g.sizes), "[2, 8, 6, 6]");
  // conv1d.
  TensorMeta c1 = run("aten.convolution.default", {input(D::Float32, {2, 3, 10}), input(D::Float32, {5, 3, 3}), Argument::none(),
                                                   L({1}), L({0}), L({1}), B(false), L({0}), A(1)});
  EXPECT_EQ(str(c1.sizes), "[2, 5, 8]");
  EXPECT_EQ(str(c1.strides), "[40, 8, 1]");
}

TEST_F(MetaTest, ConvSymbolicSpatialSize) {
  SymExpr s0 = env().create_backed("s0", 32, sym::ValueRange::at_least(2));
  Value* x = input(D::Float32, {I(1), I(3), s0, s0});
  Value* w = input(D::Float32, {8, 3, 3, 3});
  TensorMeta r = run("aten.convolution.default", {x, w, Argument::none(), L({2, 2}), L({1, 1}), L({1, 1}), B(false), L({0, 0}), A(1)});
  EXPECT_EQ(env().int_hint(r.sizes[2]), 16);
  EXPECT_TRUE(r.sizes[2].has_symbols());
}

TEST_F(MetaTest, ConvErrors) {
  Value* x = input(D::Float32, {1, 3, 8, 8});
  Value* w = input(D::Float32, {8, 4, 3, 3});
  auto conv = [&](Value* in, Value* wt, Argument bias, int64_t groups) {
    return error("aten.convolution.default", {in, wt, bias, L({1, 1}), L({0, 0}), L({1, 1}), B(false), L({0, 0}), A(groups)});
  };
  EXPECT_TRUE(contains(conv(x, w, Argument::none(), 1), "expected input[1, 3, 8, 8] to have 4 channels, but got 3 channels"));
  Value* w3 = input(D::Float32, {8, 3, 3, 3});
  EXPECT_TRUE(contains(conv(x, w3, input(D::Float32, {7}), 1), "expected bias to be 1-dimensional with 8 elements"));
  EXPECT_TRUE(contains(conv(x, input(D::Float32, {8, 3, 9, 9}), Argument::none(), 1), "Kernel size can't be greater"));
  EXPECT_TRUE(contains(conv(x, input(D::Float64, {8, 3, 3, 3}), Argument::none(), 1), "should be the same"));
  EXPECT_TRUE(contains(conv(x, input(D::Float32, {8, 3, 3}), Argument::none(), 1), "-dimensional input"));
  EXPECT_TRUE(contains(conv(x, w3, Argument::none(), 0), "non-positive groups"));
  EXPECT_TRUE(contains(error("aten.convolution.default", {x, w3, Argument::none(), L({1, 1, 1}), L({0, 0}), L({1, 1}), B(false),
                                                          L({0, 0}), A(1)}),
                       "expected stride to be a single integer value or a list of 2 values"));
  EXPECT_TRUE(contains(error("aten.convolution.default", {x, w3, Argument::none(), L({1, 1}), L({int64_t{1} << 40, 0}), L({1, 1}),
                                                          B(false), L({0, 0}), A(1)}),
                       "padding value 1099511627776 is out of range"));
}

TEST_F(MetaTest, ConvolutionBackwardMask) {
  Value* x = input(D::Float32, {2, 3, 8, 8}, {192, 1, 24, 3});
  Value* w = input(D::Float32, {4, 3, 3, 3});
  Value* go = input(D::Float32, {2, 4, 8, 8}, {256, 1, 32, 4});
  std::vector<ResultSpec> r = run_all("aten.convolution_backward.default",
                                      {go, x, w, L({4}), L({1, 1}), L({1, 1}), L({1, 1}), B(false), L({0, 0}), A(1), BL({true, true, true})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(str(r[0].meta->sizes), "[2, 3, 8, 8]");
  EXPECT_EQ(str(r[0].meta->strides), "[192, 1, 24, 3]");
  EXPECT_EQ(str(r[1].meta->sizes), "[4, 3, 3, 3]");
  EXPECT_EQ(str(r[1].meta->strides), "[27, 1, 9, 3]");
  EXPECT_EQ(str(r[2].meta->sizes), "[4]");
  // Masked-out results are empty [0] tensors (PyTorch: undefined).
  std::vector<ResultSpec> m = run_all("aten.convolution_backward.default",
                                      {go, x, w, Argument::none(), L({1, 1}), L({1, 1}), L({1, 1}), B(false), L({0, 0}), A(1), BL({true, false, false})});
  EXPECT_EQ(str(m[1].meta->sizes), "[0]");
  EXPECT_EQ(str(m[2].meta->sizes), "[0]");
  EXPECT_TRUE(contains(error("aten.convolution_backward.default", {input(D::Float32, {2, 4, 7, 7}), x, w, L({4}), L({1, 1}), L({1, 1}),
                                                                   L({1, 1}), B(false), L({0, 0}), A(1), BL({true, true, true})}),
                       "expected grad_output of size [2, 4, 8, 8]"));
}

TEST_F(MetaTest, Col2im) {
  Value* x = input(D::Float32, {1, 12, 9});
  TensorMeta r = run("aten.col2im.default", {x, L({4, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})});
  EXPECT_EQ(str(r.sizes), "[1, 3, 4, 4]");
  TensorMeta u = run("aten.col2im.default", {input(D::Float32, {12, 9}), L({4, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})});
  EXPECT_EQ(str(u.sizes), "[3, 4, 4]");
  EXPECT_TRUE(contains(error("aten.col2im.default", {input(D::Float32, {1, 12, 8}), L({4, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})}),
                       "sliding blocks"));
  EXPECT_TRUE(contains(error("aten.col2im.default", {input(D::Float32, {1, 10, 9}), L({4, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})}),
                       "divisible by the product of kernel_size"));
}

TEST_F(MetaTest, MaxPool2dCeilMode) {
  Value* x = input(D::Float32, {1, 1, 5, 5});
  auto pool = [&](Value* in, int64_t k, int64_t s, int64_t p, bool ceil) {
    return run_all("aten.max_pool2d_with_indices.default", {in, L({k, k}), L({s, s}), L({p, p}), L({1, 1}), B(ceil)});
  };
  EXPECT_EQ(str(pool(x, 2, 2, 0, false)[0].meta->sizes), "[1, 1, 2, 2]");
  EXPECT_EQ(str(pool(x, 2, 2, 0, true)[0].meta->sizes), "[1, 1, 3, 3]");
  // With padding 1 the ceil window would start in the right padding: dropped (3, not 4).
  EXPECT_EQ(str(pool(x, 2, 2, 1, true)[0].meta->sizes), "[1, 1, 3, 3]");
  // MaxPool2d(3, 2, ceil_mode=True) on 4x4 -> 2x2 (floor mode: 1x1).
  Value* x4 = input(D::Float32, {1, 1, 4, 4});
  EXPECT_EQ(str(pool(x4, 3, 2, 0, true)[0].meta->sizes), "[1, 1, 2, 2]");
  EXPECT_EQ(str(pool(x4, 3, 2, 0, false)[0].meta->sizes), "[1, 1, 1, 1]");
  // 112 -> 56 with kernel 3, stride 2, padding 1 (ResNet stem).
  EXPECT_EQ(str(pool(input(D::Float32, {1, 64, 112, 112}), 3, 2, 1, false)[0].meta->sizes), "[1, 64, 56, 56]");
}

TEST_F(MetaTest, MaxPool2dIndicesAndLayout) {
  Value* x = input(D::Float16, {2, 3, 8, 8}, {192, 1, 24, 3});
  std::vector<ResultSpec> r = run_all("aten.max_pool2d_with_indices.default", {x, L({2, 2})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].meta->dtype, D::Float16);
  EXPECT_EQ(r[1].meta->dtype, D::Int64);
  EXPECT_EQ(str(r[0].meta->sizes), "[2, 3, 4, 4]");
  EXPECT_EQ(str(r[0].meta->strides), "[48, 1, 12, 3]");
  EXPECT_EQ(str(r[1].meta->strides), "[48, 1, 12, 3]");
  EXPECT_NE(r[0].meta->storage, r[1].meta->storage);
  // Unbatched.
  std::vector<ResultSpec> u = run_all("aten.max_pool2d_with_indices.default", {input(D::Float32, {3, 9, 9}), L({3, 3}), L({2, 2})});
  EXPECT_EQ(str(u[0].meta->sizes), "[3, 4, 4]");
}

TEST_F(MetaTest, PoolingErrors) {
  Value* x = input(D::Float32, {1, 1, 5, 5});
  EXPECT_TRUE(contains(error("aten.max_pool2d_with_indices.default", {x, L({2, 2}), L({2, 2}), L({2, 2})}),
                       "pad should be at most half of effective kernel size"));
  EXPECT_TRUE(contains(error("aten.avg_pool2d.default", {x, L({7, 7})}), "Output size is too small"));
  EXPECT_TRUE(contains(error("aten.avg_pool2d.default", {x, L({0, 2})}), "kernel size should be greater than zero"));
  EXPECT_TRUE(contains(error("aten.avg_pool2d.default", {input(D::Float32, {5, 5}), L({2, 2})}), "3D or 4D"));
  EXPECT_TRUE(contains(error("aten.avg_pool2d.default", {input(D::UInt8, {1, 1, 5, 5}), L({2, 2})}), "not implemented"));
  EXPECT_TRUE(contains(error("aten.avg_pool3d.default", {input(D::Float32, {1, 1, 2, 5, 5}), L({3, 3, 3}), L({1, 1, 1}), L({1, 1, 1})}),
                       "smaller than kernel size"));
  EXPECT_TRUE(contains(error("aten.max_pool2d_with_indices.default", {x, L({2, 2, 2})}),
                       "kernel_size must either be a single int, or a tuple of two ints"));
}

TEST_F(MetaTest, AvgPools) {
  TensorMeta a2 = run("aten.avg_pool2d.default", {input(D::Float32, {3, 8, 8}), L({2, 2})});
  EXPECT_EQ(str(a2.sizes), "[3, 4, 4]");
  TensorMeta cl = run("aten.avg_pool2d.default", {input(D::Float32, {2, 3, 8, 8}, {192, 1, 24, 3}), L({3, 3}), L({1, 1}), L({1, 1})});
  EXPECT_EQ(str(cl.sizes), "[2, 3, 8, 8]");
  EXPECT_EQ(str(cl.strides), "[192, 1, 24, 3]");
  TensorMeta a1 = run("aten.avg_pool1d.default", {input(D::Float32, {2, 3, 10}), L({3}), L({2})});
  EXPECT_EQ(str(a1.sizes), "[2, 3, 4]");
  EXPECT_EQ(str(a1.strides), "[12, 4, 1]");
  TensorMeta a1c = run("aten.avg_pool1d.default", {input(D::Float32, {2, 3, 10}), L({3}), L({2}), L({1}), B(true)});
  EXPECT_EQ(str(a1c.sizes), "[2, 3, 6]");  // the last window starts at 9, inside the input
  // avg_pool3d is contiguous even for a channels_last_3d input; max_pool3d keeps it.
  Value* x3 = input(D::Float32, {1, 2, 4, 4, 4}, {128, 1, 32, 8, 2});
  TensorMeta a3 = run("aten.avg_pool3d.default", {x3, L({2, 2, 2})});
  EXPECT_EQ(str(a3.sizes), "[1, 2, 2, 2, 2]");
  EXPECT_EQ(str(a3.strides), "[16, 8, 4, 2, 1]");
  std::vector<ResultSpec> m3 = run_all("aten.max_pool3d_with_indices.default", {x3, L({2, 2, 2})});
  EXPECT_EQ(str(m3[0].meta->strides), "[16, 1, 8, 4, 2]");
  EXPECT_EQ(m3[1].meta->dtype, D::Int64);
}

TEST_F(MetaTest, AdaptivePools) {
  Value* cl = input(D::Float32, {2, 3, 8, 8}, {192, 1, 24, 3});
  TensorMeta a = run("aten._adaptive_avg_pool2d.default", {cl, L({1, 1})});
  EXPECT_EQ(str(a.sizes), "[2, 3, 1, 1]");
  EXPECT_EQ(str(a.strides), "[3, 1, 3, 3]");
  TensorMeta b = run("aten._adaptive_avg_pool2d.default", {input(D::Float32, {3, 7, 9}), L({2, 4})});
  EXPECT_EQ(str(b.sizes), "[3, 2, 4]");
  TensorMeta c = run("aten._adaptive_avg_pool3d.default", {input(D::Float32, {2, 3, 4, 5, 6}), L({1, 2, 3})});
  EXPECT_EQ(str(c.sizes), "[2, 3, 1, 2, 3]");
  TensorMeta d = run("aten.adaptive_avg_pool1d.default", {input(D::Float32, {2, 3, 10}), L({5})});
  EXPECT_EQ(str(d.sizes), "[2, 3, 5]");
  EXPECT_EQ(str(d.strides), "[15, 5, 1]");
  EXPECT_TRUE(contains(error("aten._adaptive_avg_pool2d.default", {input(D::Float32, {2, 0, 4, 4}), L({2, 2})}), "non-zero size"));
}

TEST_F(MetaTest, PoolBackwards) {
  Value* x = input(D::Float32, {2, 3, 8, 8}, {192, 1, 24, 3});
  Value* go = input(D::Float32, {2, 3, 4, 4});
  TensorMeta ab = run("aten.avg_pool2d_backward.default", {go, x, L({2, 2}), L({2, 2}), L({0, 0}), B(false), B(true), Argument::none()});
  EXPECT_EQ(str(ab.sizes), "[2, 3, 8, 8]");
  EXPECT_EQ(str(ab.strides), "[192, 1, 24, 3]");
  Value* idx = input(D::Int64, {2, 3, 4, 4});
  TensorMeta mb = run("aten.max_pool2d_with_indices_backward.default", {go, x, L({2, 2}), L({2, 2}), L({0, 0}), L({1, 1}), B(false), idx});
  EXPECT_EQ(str(mb.strides), "[192, 1, 24, 3]");
  EXPECT_TRUE(contains(error("aten.max_pool2d_with_indices_backward.default",
                             {input(D::Float32, {2, 3, 5, 4}), x, L({2, 2}), L({2, 2}), L({0, 0}), L({1, 1}), B(false), idx}),
                       "tensor.size[2] == 4"));
  TensorMeta adb = run("aten._adaptive_avg_pool2d_backward.default", {input(D::Float32, {2, 3, 1, 1}), x});
  EXPECT_EQ(str(adb.strides), "[192, 1, 24, 3]");
}
