// Advanced indexing, index_put, scatter_reduce and the shape ops that copy: exact values.
#include "ref_test_util.h"

using namespace reftest;

namespace {
HostTensor arange(DType d, std::vector<int64_t> sizes) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, static_cast<double>(i));
  return t;
}
RtValue TL(std::vector<RtValue> v) { return RtValue(RtValue::List(std::move(v))); }
}  // namespace

TEST(RefIndexMore, IndexBasicAndBroadcast) {
  HostTensor x = arange(DType::Int64, {3, 4});
  HostTensor r = call1("aten.index.Tensor", {x, TL({I64({2}, {2, 0})})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3}));
  // None is a whole dim.
  r = call1("aten.index.Tensor", {x, TL({RtValue(), I64({2}, {1, 3})})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{1, 3, 5, 7, 9, 11}));
  // Pairs, then broadcasting [2, 1] with [2].
  EXPECT_EQ(ivals(call1("aten.index.Tensor", {x, TL({I64({2}, {0, 2}), I64({2}, {1, 3})})})), (std::vector<int64_t>{1, 11}));
  r = call1("aten.index.Tensor", {x, TL({I64({2, 1}, {0, 2}), I64({2}, {1, 3})})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{1, 3, 9, 11}));
  // Negative indices and int32 indices.
  EXPECT_EQ(ivals(call1("aten.index.Tensor", {x, TL({T(DType::Int32, {1}, {-1})})})), (std::vector<int64_t>{8, 9, 10, 11}));
}

TEST(RefIndexMore, IndexAdvancedDimPlacement) {
  HostTensor y = arange(DType::Float32, {2, 3, 4});
  // Separated by a slice: the broadcast dims go first.
  HostTensor r = call1("aten.index.Tensor", {y, TL({I64({2}, {0, 1}), RtValue(), I64({2}, {0, 3})})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vals(r), (std::vector<double>{0, 4, 8, 15, 19, 23}));
  // Adjacent after a slice: they stay in place.
  r = call1("aten.index.Tensor", {y, TL({RtValue(), I64({2}, {0, 2}), I64({2}, {1, 1})})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 9, 13, 21}));
  // Adjacent with a trailing dim kept: y[:, [2]] -> [2, 1, 4].
  r = call1("aten.index.Tensor", {y, TL({RtValue(), I64({1}, {2})})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(vals(r), (std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23}));
}

TEST(RefIndexMore, IndexBoolMasks) {
  HostTensor x = arange(DType::Int64, {3, 4});
  HostTensor m = T(DType::Bool, {3, 4}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(ivals(call1("aten.index.Tensor", {x, TL({m})})), (std::vector<int64_t>{6, 7, 8, 9, 10, 11}));
  HostTensor rows = call1("aten.index.Tensor", {x, TL({T(DType::Bool, {3}, {1, 0, 1})})});
  EXPECT_EQ(rows.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ivals(rows), (std::vector<int64_t>{0, 1, 2, 3, 8, 9, 10, 11}));
  // A mask on dim 1 after a slice.
  HostTensor cols = call1("aten.index.Tensor", {x, TL({RtValue(), T(DType::Bool, {4}, {0, 1, 0, 1})})});
  EXPECT_EQ(ivals(cols), (std::vector<int64_t>{1, 3, 5, 7, 9, 11}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.index.Tensor", {x, TL({T(DType::Bool, {2}, {1, 0})})}); }), "does not match the shape"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.index.Tensor", {x, TL({I64({1}, {3})})}); }),
                  "index 3 is out of bounds for dimension 0 with size 3"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.index.Tensor", {x, TL({I64({1}, {0}), I64({1}, {0}), I64({1}, {0})})}); }),
                  "too many indices"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.index.Tensor", {x, TL({F32({1}, {0})})}); }), "must be long, int, byte or bool"));
}

TEST(RefIndexMore, IndexPutAccumulateDuplicates) {
  HostTensor self = F32({5}, {0, 0, 0, 0, 0});
  HostTensor idx = I64({5}, {0, 1, 0, 3, 0});
  HostTensor v = F32({5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(vals(call1("aten.index_put.default", {self, TL({idx}), v, B(true)})), (std::vector<double>{9, 2, 0, 4, 0}));
  EXPECT_EQ(vals(call1("aten.index_put.default", {self, TL({idx}), v, B(false)})), (std::vector<double>{5, 2, 0, 4, 0}));
  EXPECT_EQ(vals(self), std::vector<double>(5, 0));
  // A 0-dim value broadcast over a selected row; a bool mask.
  HostTensor m = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(vals(call1("aten.index_put.default", {m, TL({I64({1}, {1})}), F32({}, {7})})), (std::vector<double>{1, 2, 3, 7, 7, 7}));
  HostTensor mask = T(DType::Bool, {2, 3}, {1, 0, 1, 0, 1, 0});
  EXPECT_EQ(vals(call1("aten.index_put.default", {m, TL({mask}), F32({3}, {10, 20, 30}), B(true)})),
            (std::vector<double>{11, 2, 23, 4, 35, 6}));
  // Integer accumulation wraps.
  HostTensor i8 = T(DType::Int8, {1}, {100});
  EXPECT_EQ(ivals(call1("aten.index_put.default", {i8, TL({I64({2}, {0, 0})}), T(DType::Int8, {2}, {100, 100}), B(true)})),
            (std::vector<int64_t>{44}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.index_put.default", {self, TL({idx}), I64({5}, {1, 1, 1, 1, 1})}); }), "dtypes match"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.index_put.default", {self, TL({idx}), F32({2}, {1, 1})}); }), "shape mismatch"));
}

TEST(RefIndexMore, ScatterReduceAllModes) {
  HostTensor self = F32({4}, {1, 2, 3, 4});
  HostTensor idx = I64({6}, {0, 1, 0, 1, 2, 1});
  HostTensor src = F32({6}, {1, 2, 3, 4, 5, 6});
  auto run = [&](const char* mode, bool inc) {
    return vals(call1("aten.scatter_reduce.two", {self, I(0), idx, src, S(mode)}, {{"include_self", B(inc)}}));
  };
  EXPECT_EQ(run("sum", true), (std::vector<double>{5, 14, 8, 4}));
  EXPECT_EQ(run("sum", false), (std::vector<double>{4, 12, 5, 4}));
  EXPECT_EQ(run("prod", true), (std::vector<double>{3, 96, 15, 4}));
  EXPECT_EQ(run("prod", false), (std::vector<double>{3, 48, 5, 4}));
  std::vector<double> mean = run("mean", true);
  EXPECT_FLOAT_EQ(mean[0], 5.0 / 3);
  EXPECT_EQ(std::vector<double>(mean.begin() + 1, mean.end()), (std::vector<double>{3.5, 4, 4}));
  EXPECT_EQ(run("mean", false), (std::vector<double>{2, 4, 5, 4}));
  EXPECT_EQ(run("amax", true), (std::vector<double>{3, 6, 5, 4}));
  EXPECT_EQ(run("amin", false), (std::vector<double>{1, 2, 5, 4}));
  EXPECT_EQ(run("amin", true), (std::vector<double>{1, 2, 3, 4}));
  // Integer mean floors.
  HostTensor r = call1("aten.scatter_reduce.two", {I64({1}, {0}), I(0), I64({2}, {0, 0}), I64({2}, {-1, -3}), S("mean")});
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{-2}));
  // NaN propagates through amax.
  r = call1("aten.scatter_reduce.two", {F32({1}, {0}), I(0), I64({2}, {0, 0}), F32({2}, {NAN, 1}), S("amax")});
  EXPECT_TRUE(std::isnan(r.get_double(0)));
  EXPECT_TRUE(has(error_of([&] { run("max", true); }), "reduce argument must be either sum, prod, mean, amax or amin"));
}

TEST(RefIndexMore, MaskedSelectSliceScatter) {
  HostTensor ms = call1("aten.masked_scatter.default",
                        {F32({4}, {0, 0, 0, 0}), T(DType::Bool, {4}, {1, 0, 1, 1}), F32({5}, {1, 2, 3, 4, 5})});
  EXPECT_EQ(vals(ms), (std::vector<double>{1, 0, 2, 3}));
  ms = call1("aten.masked_scatter.default", {F32({2, 2}, {9, 9, 9, 9}), T(DType::Bool, {2}, {0, 1}), F32({2}, {1, 2})});
  EXPECT_EQ(vals(ms), (std::vector<double>{9, 1, 9, 2}));
  EXPECT_TRUE(has(error_of([&] {
                    call1("aten.masked_scatter.default", {F32({2}, {0, 0}), T(DType::Bool, {2}, {1, 1}), F32({1}, {1})});
                  }),
                  "Number of elements of source"));
  HostTensor ss = call1("aten.select_scatter.default", {F32({2, 3}, {0, 0, 0, 0, 0, 0}), F32({3}, {1, 2, 3}), I(0), I(-1)});
  EXPECT_EQ(vals(ss), (std::vector<double>{0, 0, 0, 1, 2, 3}));
  ss = call1("aten.select_scatter.default", {F32({2, 3}, {0, 0, 0, 0, 0, 0}), F32({2}, {1, 2}), I(1), I(1)});
  EXPECT_EQ(vals(ss), (std::vector<double>{0, 1, 0, 0, 2, 0}));
  HostTensor sl = call1("aten.slice_scatter.default", {F32({6}, {0, 0, 0, 0, 0, 0}), F32({2}, {1, 2}), I(0), I(1), I(5), I(2)});
  EXPECT_EQ(vals(sl), (std::vector<double>{0, 1, 0, 2, 0, 0}));
  sl = call1("aten.slice_scatter.default", {F32({2, 2}, {0, 0, 0, 0}), F32({2, 1}, {7, 8}), I(1), I(-1)});
  EXPECT_EQ(vals(sl), (std::vector<double>{0, 7, 0, 8}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.slice_scatter.default", {F32({4}, {0, 0, 0, 0}), F32({3}, {1, 2, 3}), I(0), I(0), I(2)}); }),
                  "expected src to have a size equal to the slice of self"));
}

TEST(RefIndexMore, CatFlipRepeat) {
  RtValue list = TL({F32({1, 2}, {1, 2}), I64({1, 1}, {3})});
  HostTensor c = call1("aten.cat.default", {list, I(-1)});
  EXPECT_EQ(c.dtype(), DType::Float32);
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(vals(c), (std::vector<double>{1, 2, 3}));
  // Legacy empty 1-d tensors are skipped; dim 0 of 2-d inputs.
  c = call1("aten.cat.default", {TL({F32({0}, {}), F32({1, 2}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})})});
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(vals(c), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.cat.default", {TL({F32({1, 2}, {1, 2}), F32({1, 3}, {1, 2, 3})})}); }),
                  "Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 for tensor number 1"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.cat.default", {TL({F32({}, {1})})}); }), "zero-dimensional tensor"));
  HostTensor x = arange(DType::Int64, {2, 3});
  EXPECT_EQ(ivals(call1("aten.flip.default", {x, L({0, 1})})), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(ivals(call1("aten.flip.default", {x, L({-1})})), (std::vector<int64_t>{2, 1, 0, 5, 4, 3}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.flip.default", {x, L({0, -2})}); }), "appears multiple times"));
  HostTensor r = call1("aten.repeat.default", {I64({2}, {1, 2}), L({2, 1, 2})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{1, 2, 1, 2, 1, 2, 1, 2}));
  r = call1("aten.repeat.default", {x, L({2, 1})});
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.repeat.default", {x, L({2})}); }), "can not be smaller"));
}

TEST(RefIndexMore, ConstantPadAndResize) {
  HostTensor x = F32({3}, {1, 2, 3});
  EXPECT_EQ(vals(call1("aten.constant_pad_nd.default", {x, L({1, 2}), D(9)})), (std::vector<double>{9, 1, 2, 3, 9, 9}));
  EXPECT_EQ(vals(call1("aten.constant_pad_nd.default", {x, L({-1, 1})})), (std::vector<double>{2, 3, 0}));
  HostTensor p = call1("aten.constant_pad_nd.default", {F32({2, 2}, {1, 2, 3, 4}), L({1, 0, 0, 1})});
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(vals(p), (std::vector<double>{0, 1, 2, 0, 3, 4, 0, 0, 0}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.constant_pad_nd.default", {x, L({1})}); }), "must be even"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.constant_pad_nd.default", {x, L({-2, -2})}); }), "negative output size"));
  HostTensor y = F32({4}, {1, 2, 3, 4});
  HostTensor r = call1("aten.resize_.default", {y, L({2, 2})});
  EXPECT_TRUE(r.shares_storage(y));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 2, 3, 4}));
  HostTensor alias = y.as_strided({2}, {1}, 0);
  r = call1("aten.resize_.default", {y, L({3, 2})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 2, 3, 4, 0, 0}));
  // The storage grows in place: self and its aliases keep sharing it, as in PyTorch.
  EXPECT_TRUE(r.shares_storage(y));
  r.set_double(0, 7);
  EXPECT_EQ(alias.get_double(0), 7);
}

// Brute force: index with two separated index tensors equals the gather computed by hand.
TEST(RefIndexMore, IndexCrossCheck) {
  HostTensor y = arange(DType::Float64, {3, 4, 5});
  HostTensor i0 = I64({2, 1}, {2, 0}), i2 = I64({3}, {4, 0, 2});
  HostTensor r = call1("aten.index.Tensor", {y, TL({i0, RtValue(), i2})});
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{2, 3, 4}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(r.get_double((a * 3 + b) * 4 + j), static_cast<double>((i0.get_int(a) * 4 + j) * 5 + i2.get_int(b)));
}
