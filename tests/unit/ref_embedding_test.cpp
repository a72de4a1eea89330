// embedding, embedding_bag (modes, offsets, per-sample weights, padding), their backward and
// nll_loss.
#include "ref_test_util.h"

using namespace reftest;

namespace {
HostTensor W() { return F32({3, 2}, {0, 1, 2, 3, 4, 5}); }
std::vector<RtValue> bag(HostTensor idx, HostTensor offs, int64_t mode, RtValue psw = RtValue(), bool last = false, int64_t pad = -1) {
  return call("aten._embedding_bag.default", {W(), idx, offs, B(false), I(mode), B(false), psw, B(last), I(pad)});
}
}  // namespace

TEST(RefEmbedding, Embedding) {
  HostTensor r = call1("aten.embedding.default", {W(), I64({1, 2}, {2, 0})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{4, 5, 0, 1}));
  EXPECT_NE(error_of([&] { call1("aten.embedding.default", {W(), I64({1}, {3})}); }).find("index out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.embedding.default", {W(), F32({1}, {0})}); }).find("Long, Int"), std::string::npos);
}

TEST(RefEmbedding, EmbeddingBagModes) {
  HostTensor idx = I64({4}, {0, 2, 1, 2}), offs = I64({2}, {0, 2});
  auto r = bag(idx, offs, 0);
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{4, 6, 6, 8}));
  EXPECT_EQ(r[1].tensor().numel(), 0);  // the fast sum path keeps no offset2bag
  r = bag(idx, offs, 1);
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{2, 3, 3, 4}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(ivals(r[2].tensor()), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(r[3].tensor()), (std::vector<int64_t>{2, 2}));  // max_indices: bag_size, as PyTorch CPU
  r = bag(idx, offs, 2);
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{4, 5, 4, 5}));
  EXPECT_EQ(r[3].tensor().sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(r[3].tensor()), (std::vector<int64_t>{2, 2, 2, 2}));
  // Per-sample weights; include_last_offset; padding_idx; an empty bag.
  EXPECT_EQ(vals(bag(idx, offs, 0, F32({4}, {1, 2, 3, 4}))[0].tensor()), (std::vector<double>{8, 11, 22, 29}));
  EXPECT_EQ(vals(bag(idx, I64({3}, {0, 2, 4}), 0, RtValue(), true)[0].tensor()), (std::vector<double>{4, 6, 6, 8}));
  r = bag(idx, offs, 1, RtValue(), false, 2);
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(ivals(r[2].tensor()), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(vals(bag(idx, I64({2}, {0, 0}), 1)[0].tensor()), (std::vector<double>{0, 0, 2.5, 3.5}));
  EXPECT_NE(error_of([&] { bag(idx, offs, 1, F32({4}, {1, 1, 1, 1})); }).find("only supported for mode='sum'"), std::string::npos);
  EXPECT_NE(error_of([&] { bag(idx, I64({2}, {1, 2}), 0); }).find("offsets[0] has to be 0"), std::string::npos);
}

TEST(RefEmbedding, DenseBackwardIsAdjointOfEmbedding) {
  HostTensor idx = I64({2, 3}, {2, 0, 2, 1, 2, 0});
  HostTensor go = F32({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  HostTensor g = call1("aten.embedding_dense_backward.default", {go, idx, I(3), I(-1), B(false)});
  EXPECT_EQ(vals(g), (std::vector<double>{3 + 11, 4 + 12, 7, 8, 1 + 5 + 9, 2 + 6 + 10}));
  // padding_idx 2 gets nothing; scale_grad_by_freq divides by the count.
  g = call1("aten.embedding_dense_backward.default", {go, idx, I(3), I(2), B(true)});
  EXPECT_EQ(vals(g), (std::vector<double>{7, 8, 7, 8, 0, 0}));
}

TEST(RefEmbedding, NllLoss) {
  HostTensor x = F32({2, 3}, {-1, -2, -3, -4, -5, -6}), t = I64({2}, {2, 0});
  auto fwd = [&](int64_t red, RtValue w, int64_t ignore = -100) { return call("aten.nll_loss_forward.default", {x, t, w, I(red), I(ignore)}); };
  EXPECT_EQ(vals(fwd(0, RtValue())[0].tensor()), (std::vector<double>{3, 4}));
  EXPECT_EQ(fwd(2, RtValue())[0].tensor().get_double(0), 7);
  EXPECT_EQ(fwd(1, RtValue())[0].tensor().get_double(0), 3.5);
  HostTensor w = F32({3}, {1, 2, 3});
  EXPECT_EQ(vals(fwd(0, w)[0].tensor()), (std::vector<double>{9, 4}));
  auto m = fwd(1, w);
  EXPECT_EQ(m[0].tensor().get_double(0), 3.25);
  EXPECT_EQ(m[1].tensor().get_double(0), 4);
  EXPECT_EQ(fwd(1, w, 0)[0].tensor().get_double(0), 3);
  HostTensor gi = call1("aten.nll_loss_backward.default", {F32({}, {1}), x, t, w, I(1), I(-100), m[1].tensor()});
  EXPECT_EQ(vals(gi), (std::vector<double>{0, 0, -0.75, -0.25, 0, 0}));
  gi = call1("aten.nll_loss_backward.default", {F32({2}, {2, 3}), x, t, RtValue(), I(0), I(-100), F32({}, {0})});
  EXPECT_EQ(vals(gi), (std::vector<double>{0, 0, -2, -3, 0, 0}));
  EXPECT_NE(error_of([&] { call("aten.nll_loss_forward.default", {x, I64({2}, {3, 0}), RtValue(), I(1), I(-100)}); })
                .find("Target 3 is out of bounds."),
            std::string::npos);
}
