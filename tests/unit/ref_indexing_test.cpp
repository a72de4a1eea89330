// Indexing kernels: exact values and out-of-range errors.
#include "ref_test_util.h"

using namespace reftest;

TEST(RefIndexing, IndexSelectAndGather) {
  HostTensor x = I64({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ivals(call1("aten.index_select.default", {x, I(0), I64({2}, {2, 0})})), (std::vector<int64_t>{5, 6, 1, 2}));
  EXPECT_EQ(ivals(call1("aten.index_select.default", {x, I(1), T(DType::Int32, {3}, {1, 1, 0})})),
            (std::vector<int64_t>{2, 2, 1, 4, 4, 3, 6, 6, 5}));
  EXPECT_NE(error_of([&] { call1("aten.index_select.default", {x, I(0), I64({1}, {3})}); }).find("index out of range"),
            std::string::npos);
  HostTensor g = call1("aten.gather.default", {x, I(1), I64({3, 1}, {1, 0, 1})});
  EXPECT_EQ(ivals(g), (std::vector<int64_t>{2, 3, 6}));
  EXPECT_NE(error_of([&] { call1("aten.gather.default", {x, I(1), I64({1, 1}, {2})}); }).find("out of bounds for dimension 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.gather.default", {x, I(1), T(DType::Int32, {1, 1}, {0})}); }).find("int64"),
            std::string::npos);
}

TEST(RefIndexing, Scatter) {
  HostTensor self = F32({2, 3}, {0, 0, 0, 0, 0, 0});
  HostTensor idx = I64({1, 3}, {1, 0, 1});
  HostTensor s = call1("aten.scatter.src", {self, I(0), idx, F32({1, 3}, {7, 8, 9})});
  EXPECT_EQ(vals(s), (std::vector<double>{0, 8, 0, 7, 0, 9}));
  EXPECT_EQ(vals(self), std::vector<double>(6, 0));  // functional: self untouched
  EXPECT_EQ(vals(call1("aten.scatter.value", {self, I(1), I64({2, 1}, {2, 0}), D(5)})), (std::vector<double>{0, 0, 5, 5, 0, 0}));
  HostTensor add = call1("aten.scatter_add.default", {I64({3}, {1, 1, 1}), I(0), I64({4}, {0, 0, 2, 0}), I64({4}, {1, 2, 3, 4})});
  EXPECT_EQ(ivals(add), (std::vector<int64_t>{8, 1, 4}));
  EXPECT_NE(error_of([&] { call1("aten.scatter.src", {self, I(0), I64({1, 1}, {-1}), F32({1, 1}, {1})}); }).find("out of bounds"),
            std::string::npos);
}

TEST(RefIndexing, NonzeroAndLocalScalar) {
  HostTensor x = F32({2, 2}, {0, 1, 2, 0});
  HostTensor nz = call1("aten.nonzero.default", {x});
  EXPECT_EQ(nz.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(nz), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(call1("aten.nonzero.default", {F32({0}, {})}).sizes(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(call("aten._local_scalar_dense.default", {F32({}, {2.5})})[0].to_double(), 2.5);
  EXPECT_EQ(call("aten._local_scalar_dense.default", {I64({1}, {-3})})[0].to_int(), -3);
  EXPECT_NE(error_of([&] { call("aten._local_scalar_dense.default", {x}); }).find("4 elements"), std::string::npos);
}
