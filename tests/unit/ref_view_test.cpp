// View kernels share storage and compute PyTorch's sizes, strides and offsets.
#include "ref_test_util.h"

using namespace reftest;

namespace {
HostTensor iota(std::vector<int64_t> sizes) {
  HostTensor t = HostTensor::zeros(DType::Int64, sizes);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_int(i, i);
  return t;
}
}  // namespace

TEST(RefView, ViewAndReshape) {
  HostTensor x = iota({2, 3, 4});
  HostTensor v = call1("aten.view.default", {x, L({6, -1})});
  EXPECT_TRUE(v.shares_storage(x));
  EXPECT_EQ(v.sizes(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(v.strides(), (std::vector<int64_t>{4, 1}));
  HostTensor t = x.as_strided({4, 3, 2}, {1, 4, 12}, 0);  // permuted (2, 1, 0)
  EXPECT_NE(error_of([&] { call1("aten.view.default", {t, L({12, 2})}); }).find("Use .reshape"), std::string::npos);
  HostTensor r = call1("aten.reshape.default", {t, L({12, 2})});
  EXPECT_FALSE(r.shares_storage(x));  // no view can do it: a copy
  EXPECT_EQ(ivals(r)[1], 12);
  // Merging dims that are contiguous with each other is a view even in a permuted tensor.
  HostTensor p = x.as_strided({3, 4, 2}, {4, 1, 12}, 0);  // permute(1, 2, 0)
  HostTensor pv = call1("aten.view.default", {p, L({12, 2})});
  EXPECT_EQ(pv.strides(), (std::vector<int64_t>{1, 12}));
  EXPECT_NE(error_of([&] { call1("aten.view.default", {x, L({5, 5})}); }).find("invalid for input of size 24"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.view.default", {x, L({-1, -1})}); }).find("only one dimension"), std::string::npos);
  HostTensor u = call1("aten._unsafe_view.default", {x, L({24})});
  EXPECT_TRUE(u.shares_storage(x));  // an alias in PyTorch, though its schema says otherwise
  EXPECT_EQ(ivals(u)[23], 23);
  EXPECT_NE(error_of([&] { call1("aten._unsafe_view.default", {t, L({12, 2})}); }).find("Use .reshape"), std::string::npos);
  HostTensor s = call1("aten.view.default", {iota({1}), L({})});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(call1("aten.view.default", {s, L({1, 1})}).sizes(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(call1("aten.view.default", {iota({0, 3}), L({3, 0, 5})}).numel(), 0);
}

TEST(RefView, ExpandPermuteTranspose) {
  HostTensor x = iota({3, 1});
  HostTensor e = call1("aten.expand.default", {x, L({2, -1, 4})});
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(e.strides(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_TRUE(e.shares_storage(x));
  EXPECT_NE(error_of([&] { call1("aten.expand.default", {x, L({3, 2, 4})}); }).find("must match the existing size"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.expand.default", {x, L({-1, 3, 4})}); }).find("leading"), std::string::npos);
  HostTensor y = iota({2, 3, 4});
  HostTensor p = call1("aten.permute.default", {y, L({2, 0, -2})});
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(p.strides(), (std::vector<int64_t>{1, 12, 4}));
  EXPECT_NE(error_of([&] { call1("aten.permute.default", {y, L({0, 0, 1})}); }).find("repeated dim"), std::string::npos);
  HostTensor t = call1("aten.transpose.int", {y, I(0), I(-1)});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 4, 12}));
  EXPECT_EQ(call1("aten.t.default", {iota({2, 5})}).sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(call1("aten.t.default", {iota({5})}).sizes(), (std::vector<int64_t>{5}));
  EXPECT_NE(error_of([&] { call1("aten.t.default", {y}); }).find("<= 2 dimensions"), std::string::npos);
}

TEST(RefView, SqueezeUnsqueeze) {
  HostTensor x = iota({1, 3, 1});
  EXPECT_EQ(call1("aten.squeeze.default", {x}).sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(call1("aten.squeeze.dim", {x, I(-1)}).sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(call1("aten.squeeze.dim", {x, I(1)}).sizes(), (std::vector<int64_t>{1, 3, 1}));  // not size 1: no-op
  EXPECT_EQ(call1("aten.squeeze.dims", {x, L({0, 2})}).sizes(), (std::vector<int64_t>{3}));
  HostTensor u = call1("aten.unsqueeze.default", {iota({2, 3}), I(1)});
  EXPECT_EQ(u.sizes(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(u.strides(), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(call1("aten.unsqueeze.default", {iota({2, 3}), I(-1)}).strides(), (std::vector<int64_t>{3, 1, 1}));
  EXPECT_NE(error_of([] { call1("aten.unsqueeze.default", {iota({2}), I(3)}); }).find("[-2, 1]"), std::string::npos);
}

TEST(RefView, SelectSliceDiagonal) {
  HostTensor x = iota({3, 4});
  HostTensor s = call1("aten.select.int", {x, I(1), I(-1)});
  EXPECT_EQ(ivals(s), (std::vector<int64_t>{3, 7, 11}));
  EXPECT_EQ(s.offset(), 3);
  EXPECT_NE(error_of([&] { call1("aten.select.int", {x, I(0), I(3)}); }).find("index 3 out of range"), std::string::npos);
  HostTensor sl = call1("aten.slice.Tensor", {x, I(1), I(1), I(100), I(2)});
  EXPECT_EQ(ivals(sl), (std::vector<int64_t>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(sl.strides(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(call1("aten.slice.Tensor", {x, I(0), I(-2)}).sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(call1("aten.slice.Tensor", {x, I(0), I(2), I(1)}).sizes(), (std::vector<int64_t>{0, 4}));
  EXPECT_NE(error_of([&] { call1("aten.slice.Tensor", {x, I(0), I(0), I(2), I(0)}); }).find("step must be positive"), std::string::npos);
  HostTensor d = call1("aten.diagonal.default", {x, I(1)});
  EXPECT_EQ(ivals(d), (std::vector<int64_t>{1, 6, 11}));
  EXPECT_EQ(ivals(call1("aten.diagonal.default", {x, I(-1)})), (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(call1("aten.diagonal.default", {x, I(10)}).numel(), 0);
  HostTensor d3 = call1("aten.diagonal.default", {iota({2, 2, 2}), I(0), I(0), I(2)});
  EXPECT_EQ(d3.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(d3), (std::vector<int64_t>{0, 5, 2, 7}));
}

TEST(RefView, SplitUnbindAsStrided) {
  HostTensor x = iota({5, 2});
  auto parts = call("aten.split_with_sizes.default", {x, L({2, 3})});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].tensor().offset(), 4);
  EXPECT_TRUE(parts[1].tensor().shares_storage(x));
  EXPECT_NE(error_of([&] { call("aten.split_with_sizes.default", {x, L({2, 2})}); }).find("sum exactly to 5"), std::string::npos);
  auto sp = call("aten.split.Tensor", {x, I(2)});
  ASSERT_EQ(sp.size(), 3u);
  EXPECT_EQ(sp[2].tensor().sizes(), (std::vector<int64_t>{1, 2}));
  auto ub = call("aten.unbind.int", {x, I(1)});
  ASSERT_EQ(ub.size(), 2u);
  EXPECT_EQ(ivals(ub[1].tensor()), (std::vector<int64_t>{1, 3, 5, 7, 9}));
  HostTensor as = call1("aten.as_strided.default", {x, L({2, 2}), L({1, 2}), I(1)});
  EXPECT_EQ(ivals(as), (std::vector<int64_t>{1, 3, 2, 4}));
  EXPECT_NE(error_of([&] { call1("aten.as_strided.default", {x, L({4, 4}), L({4, 1})}); }).find("out of bounds"), std::string::npos);
  HostTensor al = call1("aten.alias.default", {x});
  EXPECT_TRUE(al.shares_storage(x));
  EXPECT_EQ(call("aten.sym_size.int", {x, I(-1)})[0].to_int(), 2);
  EXPECT_EQ(call("aten.sym_stride.int", {x, I(0)})[0].to_int(), 2);
  EXPECT_EQ(call("aten.sym_numel.default", {x})[0].to_int(), 10);
  EXPECT_EQ(call("aten.sym_storage_offset.default", {parts[1]})[0].to_int(), 4);
}

TEST(RefView, WritesThroughViewsAreShared) {
  HostTensor x = iota({2, 3});
  HostTensor col = call1("aten.select.int", {x, I(1), I(2)});
  call1("aten.copy_.default", {col, I64({1}, {-1})});
  EXPECT_EQ(ivals(x), (std::vector<int64_t>{0, 1, -1, 3, 4, -1}));
  HostTensor tr = call1("aten.transpose.int", {x, I(0), I(1)});
  call1("aten.add_.Tensor", {tr, I64({1}, {10})});
  EXPECT_EQ(ivals(x), (std::vector<int64_t>{10, 11, 9, 13, 14, 9}));
}
