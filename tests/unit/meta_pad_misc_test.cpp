// Padding, resampling, cat/flip/repeat, the *_scatter ops, resize_, sort/topk, cdist/pdist,
// embeddings, nll_loss and the normalization backward metas, checked against PyTorch 2.11.
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using D = DType;

namespace {

Argument FL(std::initializer_list<double> v) {
  Argument::List l;
  for (double x : v) l.push_back(F(x));
  return Argument(l);
}
Argument TL(std::initializer_list<Value*> v) {
  Argument::List l;
  for (Value* x : v) l.push_back(Argument(x));
  return Argument(l);
}


}  // namespace

TEST_F(MetaTest, ConstantPadNd) {
  TensorMeta r = run("aten.constant_pad_nd.default", {input(D::Float32, {1, 2, 3, 4}), L({1, 1, 2, 2})});
  EXPECT_EQ(str(r.sizes), "[1, 2, 7, 6]");
  // Negative pads narrow; with no positive pad the result is a clone of the narrowed view.
  TensorMeta n = run("aten.constant_pad_nd.default", {input(D::Float32, {3, 4}), L({-1, -1})});
  EXPECT_EQ(str(n.sizes), "[3, 2]");
  EXPECT_EQ(str(n.strides), "[2, 1]");
  TensorMeta m = run("aten.constant_pad_nd.default", {input(D::Float32, {3, 4}), L({-1, 2, 1, 0})});
  EXPECT_EQ(str(m.sizes), "[4, 5]");
  // Channels-last in, channels-last out.
  TensorMeta cl = run("aten.constant_pad_nd.default", {input(D::Float32, {2, 3, 4, 5}, {60, 1, 15, 3}), L({1, 1, 1, 1}), F(0.5)});
  EXPECT_EQ(str(cl.sizes), "[2, 3, 6, 7]");
  EXPECT_EQ(str(cl.strides), "[126, 1, 21, 3]");
  EXPECT_TRUE(contains(error("aten.constant_pad_nd.default", {input(D::Float32, {3, 4}), L({1})}), "Length of pad must be even"));
  EXPECT_TRUE(contains(error("aten.constant_pad_nd.default", {input(D::Float32, {3, 4}), L({-3, -2})}), "negative output size"));
}

TEST_F(MetaTest, ReflectionAndReplicationPads) {
  TensorMeta r2 = run("aten.reflection_pad2d.default", {input(D::Float32, {1, 3, 4, 4}), L({2, 2, 1, 1})});
  EXPECT_EQ(str(r2.sizes), "[1, 3, 6, 8]");
  TensorMeta r1 = run("aten.reflection_pad1d.default", {input(D::Float32, {3, 5}), L({2, 3})});
  EXPECT_EQ(str(r1.sizes), "[3, 10]");
  TensorMeta r3 = run("aten.reflection_pad3d.default", {input(D::Float32, {1, 1, 2, 3, 4}), L({1, 1, 1, 1, 1, 1})});
  EXPECT_EQ(str(r3.sizes), "[1, 1, 4, 5, 6]");
  TensorMeta p3 = run("aten.replication_pad3d.default", {input(D::Float32, {1, 1, 2, 2, 2}), L({1, 1, 1, 1, 1, 1})});
  EXPECT_EQ(str(p3.sizes), "[1, 1, 4, 4, 4]");
  // Replication may pad by more than the input size; reflection may not.
  TensorMeta p2 = run("aten.replication_pad2d.default", {input(D::Float32, {1, 2, 2}), L({3, 3, 3, 3})});
  EXPECT_EQ(str(p2.sizes), "[1, 8, 8]");
  EXPECT_TRUE(contains(error("aten.reflection_pad2d.default", {input(D::Float32, {1, 1, 2, 2}), L({2, 2, 0, 0})}),
                       "Padding size should be less than the corresponding input dimension"));
  EXPECT_TRUE(contains(error("aten.replication_pad2d.default", {input(D::Float32, {1, 1, 2, 2}), L({-2, -1, 0, 0})}),
                       "is too small"));
  EXPECT_TRUE(contains(error("aten.reflection_pad2d.default", {input(D::Float32, {1, 1, 2, 2}), L({1, 1})}),
                       "padding size is expected to be 4"));
  EXPECT_TRUE(contains(error("aten.reflection_pad2d.default", {input(D::Float32, {1, 0, 2, 2}), L({1, 1, 1, 1})}),
                       "Expected 3D or 4D (batch mode) tensor"));
}

TEST_F(MetaTest, Upsample2d) {
  Value* x = input(D::Float32, {1, 3, 8, 8});
  TensorMeta n = run("aten.upsample_nearest2d.vec", {x, Argument::none(), FL({2.0, 2.0})});
  EXPECT_EQ(str(n.sizes), "[1, 3, 16, 16]");
  TensorMeta f = run("aten.upsample_nearest2d.vec", {input(D::Float32, {1, 1, 5, 5}), Argument::none(), FL({1.5, 0.5})});
  EXPECT_EQ(str(f.sizes), "[1, 1, 7, 2]");
  TensorMeta b = run("aten.upsample_bilinear2d.vec", {input(D::Float32, {2, 3, 8, 8}, {192, 1, 24, 3}), L({5, 7}), B(false), Argument::none()});
  EXPECT_EQ(str(b.sizes), "[2, 3, 5, 7]");
  EXPECT_EQ(str(b.strides), "[105, 1, 21, 3]");
  SymExpr s0 = env().create_backed("s0", 10, sym::ValueRange::at_least(2));
  TensorMeta s = run("aten.upsample_nearest2d.vec", {input(D::Float32, {I(1), I(1), s0, s0}), Argument::none(), FL({1.5, 2.0})});
  EXPECT_EQ(env().int_hint(s.sizes[2]), 15);
  EXPECT_EQ(s.sizes[3], env().simplify(s0 * 2));
  EXPECT_TRUE(contains(error("aten.upsample_nearest2d.vec", {x, L({4, 4}), FL({2.0, 2.0})}), "exactly one of output_size and scale_factors"));
}

TEST_F(MetaTest, GridSampler2d) {
  TensorMeta r = run("aten.grid_sampler_2d.default", {input(D::Float32, {2, 3, 8, 8}), input(D::Float32, {2, 5, 6, 2}), A(0), A(0), B(false)});
  EXPECT_EQ(str(r.sizes), "[2, 3, 5, 6]");
  EXPECT_TRUE(contains(error("aten.grid_sampler_2d.default", {input(D::Float32, {2, 3, 8, 8}), input(D::Float32, {1, 5, 6, 2}), A(0), A(0), B(false)}),
                       "same batch size"));
}

TEST_F(MetaTest, CatPromotesAndSkipsLegacyEmpty) {
  Value* a = input(D::Int32, {2, 3});
  Value* h = input(D::Float16, {1, 3});
  TensorMeta r = run("aten.cat.default", {TL({a, h})});
  EXPECT_EQ(r.dtype, D::Float16);
  EXPECT_EQ(str(r.sizes), "[3, 3]");
  // A legacy empty [0] tensor is skipped for shapes but still joins the dtype promotion.
  Value* e = input(D::Float32, {0});
  Value* l = input(D::Int64, {2, 3});
  TensorMeta s = run("aten.cat.default", {TL({e, l}), A(-1)});
  EXPECT_EQ(s.dtype, D::Float32);
  EXPECT_EQ(str(s.sizes), "[2, 3]");
  TensorMeta all_empty = run("aten.cat.default", {TL({e, e})});
  EXPECT_EQ(str(all_empty.sizes), "[0]");
  EXPECT_TRUE(contains(error("aten.cat.default", {TL({a, input(D::Int32, {2, 4})})}), "Sizes of tensors must match except in dimension 0"));
  EXPECT_TRUE(contains(error("aten.cat.default", {TL({a, input(D::Int32, {3})})}), "same number of dimensions"));
  EXPECT_TRUE(contains(error("aten.cat.default", {TL({})}), "non-empty list"));
  EXPECT_TRUE(contains(error("aten.cat.default", {TL({input(D::Int32, {})})}), "zero-dimensional tensor"));
}

TEST_F(MetaTest, CatMemoryFormat) {
  Value* c1 = input(D::Float32, {2, 3, 4, 5}, {60, 1, 15, 3});
  Value* c2 = input(D::Float32, {2, 3, 4, 5}, {60, 1, 15, 3});
  TensorMeta r = run("aten.cat.default", {TL({c1, c2}), A(1)});
  EXPECT_EQ(str(r.sizes), "[2, 6, 4, 5]");
  EXPECT_EQ(str(r.strides), "[120, 1, 30, 6]");
  Value* c = input(D::Float32, {2, 3, 4, 5});
  EXPECT_EQ(str(run("aten.cat.default", {TL({c1, c}), A(1)}).strides), "[120, 20, 5, 1]");
  SymExpr s0 = env().create_backed("s0", 4, sym::ValueRange::at_least(2));
  TensorMeta sym = run("aten.cat.default", {TL({input(D::Float32, {s0, I(3)}), input(D::Float32, {I(2), I(3)})})});
  EXPECT_EQ(str(sym.sizes), "[s0 + 2, 3]");
}

TEST_F(MetaTest, FlipAndRepeat) {
  TensorMeta f = run("aten.flip.default", {input(D::Float32, {4, 6}, {1, 4}), L({0})});
  EXPECT_EQ(str(f.strides), "[1, 4]");
  EXPECT_TRUE(contains(error("aten.flip.default", {input(D::Float32, {4, 6}), L({0, -2})}), "appears multiple times"));
  TensorMeta r = run("aten.repeat.default", {input(D::Float32, {2, 3}), L({2, 1, 2})});
  EXPECT_EQ(str(r.sizes), "[2, 2, 6]");
  EXPECT_EQ(str(r.strides), "[12, 6, 1]");
  EXPECT_TRUE(contains(error("aten.repeat.default", {input(D::Float32, {2, 3}), L({2})}), "can not be smaller"));
}

TEST_F(MetaTest, ScatterOpsPreserveStrides) {
  TensorMeta base;
  base.dtype = D::Float32;
  base.sizes = shape({4, 5});
  base.strides = shape({1, 8});
  base.offset = I(3);
  base.storage = g.new_storage();
  Value* x = g.add_input("xs", base);
  TensorMeta s = run("aten.select_scatter.default", {x, input(D::Float32, {5}), A(0), A(-1)});
  EXPECT_EQ(str(s.strides), "[1, 8]");
  EXPECT_EQ(s.offset, I(3));
  EXPECT_NE(s.storage, base.storage);
  TensorMeta sl = run("aten.slice_scatter.default", {x, input(D::Float32, {4, 2}), A(1), A(1), A(5), A(2)});
  EXPECT_EQ(str(sl.sizes), "[4, 5]");
  EXPECT_EQ(str(sl.strides), "[1, 8]");
  EXPECT_TRUE(contains(error("aten.slice_scatter.default", {x, input(D::Float32, {4, 3}), A(1), A(1), A(5), A(2)}),
                       "src size = [4, 3], slice size = [4, 2]"));
  EXPECT_TRUE(contains(error("aten.select_scatter.default", {x, input(D::Float32, {5}), A(0), A(4)}), "out of range"));
  TensorMeta ms = run("aten.masked_scatter.default", {input(D::Float32, {1, 5}), input(D::Bool, {3, 1}), input(D::Float32, {15})});
  EXPECT_EQ(str(ms.sizes), "[3, 5]");
  EXPECT_TRUE(contains(error("aten.masked_scatter.default", {input(D::Float32, {5}), input(D::Float32, {5}), input(D::Float32, {5})}),
                       "boolean masks"));
}

TEST_F(MetaTest, ResizeInPlaceSharesStorage) {
  Value* x = input(D::Float32, {2, 3}, {1, 2});
  TensorMeta r = run("aten.resize_.default", {x, L({4, 5})});
  EXPECT_EQ(r.storage, x->meta().storage);
  EXPECT_EQ(str(r.sizes), "[4, 5]");
  EXPECT_EQ(str(r.strides), "[5, 1]");
  // Same sizes: a no-op that keeps the strides.
  EXPECT_EQ(str(run("aten.resize_.default", {x, L({2, 3})}).strides), "[1, 2]");
  TensorMeta cl = run("aten.resize_.default", {x, L({1, 2, 3, 4})}, {{"memory_format", Argument(MemoryFormat::ChannelsLast)}});
  EXPECT_EQ(str(cl.strides), "[24, 1, 8, 2]");
  EXPECT_TRUE(contains(error("aten.resize_.default", {x, L({-1, 2})}), "negative dimension"));
}

TEST_F(MetaTest, SortAndTopk) {
  Value* x = input(D::Float32, {4, 6}, {1, 4});
  std::vector<ResultSpec> s = run_all("aten.sort.default", {x, A(0), B(true)});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].meta->dtype, D::Int64);
  EXPECT_EQ(str(s[0].meta->strides), "[1, 4]");
  // A non-dense input gives dense strides in its own order.
  std::vector<ResultSpec> nd = run_all("aten.sort.default", {input(D::Float32, {4, 6}, {12, 2})});
  EXPECT_EQ(str(nd[0].meta->strides), "[6, 1]");
  std::vector<ResultSpec> t = run_all("aten.topk.default", {input(D::Float32, {4, 6}), A(3)});
  EXPECT_EQ(str(t[0].meta->sizes), "[4, 3]");
  EXPECT_EQ(t[1].meta->dtype, D::Int64);
  EXPECT_EQ(str(run_all("aten.topk.default", {input(D::Float32, {4, 6}), A(2), A(0)})[1].meta->sizes), "[2, 6]");
  EXPECT_TRUE(contains(error("aten.topk.default", {input(D::Float32, {4, 6}), A(7)}), "selected index k out of range"));
  EXPECT_TRUE(contains(error("aten.topk.default", {input(D::Float32, {4, 6}), A(1), A(2)}), "out of range"));
}

TEST_F(MetaTest, PairwiseDistances) {
  TensorMeta c = run("aten._cdist_forward.default", {input(D::Float32, {2, 1, 5, 3}), input(D::Float32, {4, 7, 3}), F(2.0), Argument::none()});
  EXPECT_EQ(str(c.sizes), "[2, 4, 5, 7]");
  EXPECT_TRUE(contains(error("aten._cdist_forward.default", {input(D::Float32, {5, 3}), input(D::Float32, {7, 4}), F(2.0), Argument::none()}),
                       "same number of columns"));
  EXPECT_TRUE(contains(error("aten._cdist_forward.default", {input(D::Int64, {5, 3}), input(D::Int64, {7, 3}), F(2.0), Argument::none()}),
                       "floating-point"));
  EXPECT_EQ(str(run("aten._pdist_forward.default", {input(D::Float32, {5, 3})}).sizes), "[10]");
  EXPECT_EQ(str(run("aten._pdist_forward.default", {input(D::Float32, {1, 3})}).sizes), "[0]");
  EXPECT_TRUE(contains(error("aten._pdist_forward.default", {input(D::Float32, {5, 3}, {1, 5})}), "requires contiguous"));
}

TEST_F(MetaTest, Embeddings) {
  Value* w = input(D::Float32, {10, 4});
  TensorMeta e = run("aten.embedding.default", {w, input(D::Int64, {2, 3})});
  EXPECT_EQ(str(e.sizes), "[2, 3, 4]");
  EXPECT_TRUE(contains(error("aten.embedding.default", {w, input(D::Float32, {2})}), "Long, Int"));
  TensorMeta b = run("aten.embedding_dense_backward.default", {input(D::Float32, {2, 3, 4}), input(D::Int64, {2, 3}), A(10), A(-1), B(false)});
  EXPECT_EQ(str(b.sizes), "[10, 4]");
}

TEST_F(MetaTest, EmbeddingBagShapesPerMode) {
  Value* w = input(D::Float32, {10, 4});
  Value* idx = input(D::Int64, {7});
  Value* off = input(D::Int64, {3});
  auto bag = [&](int64_t mode, bool last, Argument psw = Argument::none(), int64_t pad = -1) {
    return run_all("aten._embedding_bag.default", {w, idx, off, B(false), A(mode), B(false), psw, B(last), A(pad)});
  };
  std::vector<ResultSpec> sum = bag(0, false);
  ASSERT_EQ(sum.size(), 4u);
  EXPECT_EQ(str(sum[0].meta->sizes), "[3, 4]");
  EXPECT_EQ(str(sum[1].meta->sizes), "[0]");  // the fast sum path keeps no offset2bag
  EXPECT_EQ(str(sum[2].meta->sizes), "[3]");
  EXPECT_EQ(str(sum[3].meta->sizes), "[3]");
  EXPECT_EQ(sum[1].meta->dtype, D::Int64);
  std::vector<ResultSpec> mean = bag(1, false);
  EXPECT_EQ(str(mean[1].meta->sizes), "[7]");
  std::vector<ResultSpec> mx = bag(2, true);
  EXPECT_EQ(str(mx[0].meta->sizes), "[2, 4]");
  EXPECT_EQ(str(mx[2].meta->sizes), "[2]");
  EXPECT_EQ(str(mx[3].meta->sizes), "[2, 4]");
  // A padding_idx leaves the fast path: offset2bag is kept.
  EXPECT_EQ(str(bag(0, false, Argument::none(), 2)[1].meta->sizes), "[7]");
  // bfloat16 takes the fast path too (as PyTorch's CPU kernel; its Python meta says otherwise).
  std::vector<ResultSpec> bf = run_all("aten._embedding_bag.default", {input(D::BFloat16, {10, 4}), idx, off, B(false), A(0), B(false),
                                                                         Argument::none(), B(false), A(-1)});
  EXPECT_EQ(str(bf[1].meta->sizes), "[0]");
  EXPECT_TRUE(contains(error("aten._embedding_bag.default", {w, idx, off, B(false), A(1), B(false), input(D::Float32, {7}), B(false), A(-1)}),
                       "only supported with mode='sum'"));
}

TEST_F(MetaTest, NllLoss) {
  Value* x = input(D::Float32, {5, 4});
  Value* t = input(D::Int64, {5});
  std::vector<ResultSpec> none = run_all("aten.nll_loss_forward.default", {x, t, Argument::none(), A(0), A(-100)});
  EXPECT_EQ(str(none[0].meta->sizes), "[5]");
  EXPECT_EQ(str(none[1].meta->sizes), "[]");
  std::vector<ResultSpec> mean = run_all("aten.nll_loss_forward.default", {x, t, Argument::none(), A(1), A(-100)});
  EXPECT_EQ(str(mean[0].meta->sizes), "[]");
  TensorMeta g = run("aten.nll_loss_backward.default", {input(D::Float32, {}), x, t, Argument::none(), A(1), A(-100), input(D::Float32, {})});
  EXPECT_EQ(str(g.sizes), "[5, 4]");
  EXPECT_TRUE(contains(error("aten.nll_loss_forward.default", {x, input(D::Int64, {4}), Argument::none(), A(1), A(-100)}), "size mismatch"));
  EXPECT_TRUE(contains(error("aten.nll_loss_forward.default", {x, t, input(D::Float32, {3}), A(1), A(-100)}), "classes"));
}

TEST_F(MetaTest, NormBackwardsWithOutputMask) {
  Value* x = input(D::Float32, {2, 5, 8});
  Value* stat = input(D::Float32, {2, 5, 1});
  Value* w = input(D::Float32, {8});
  std::vector<ResultSpec> ln = run_all("aten.native_layer_norm_backward.default", {x, x, L({8}), stat, stat, w, w, BL({true, true, false})});
  ASSERT_EQ(ln.size(), 3u);
  EXPECT_EQ(str(ln[0].meta->sizes), "[2, 5, 8]");
  EXPECT_EQ(str(ln[1].meta->sizes), "[8]");
  EXPECT_EQ(str(ln[2].meta->sizes), "[0]");  // masked out
  Value* xg = input(D::Float32, {2, 6, 4, 4}, {96, 1, 24, 6});
  Value* mean = input(D::Float32, {2, 3});
  std::vector<ResultSpec> gn = run_all("aten.native_group_norm_backward.default",
                                       {xg, xg, mean, mean, input(D::Float32, {6}), A(2), A(6), A(16), A(3), BL({true, true, true})});
  EXPECT_EQ(str(gn[0].meta->strides), "[96, 1, 24, 6]");  // CPU keeps channels-last
  EXPECT_EQ(str(gn[1].meta->sizes), "[6]");
  EXPECT_EQ(str(gn[2].meta->sizes), "[6]");
  EXPECT_TRUE(contains(error("aten.native_group_norm_backward.default",
                             {xg, xg, input(D::Float32, {2, 2}), mean, Argument::none(), A(2), A(6), A(16), A(3), BL({true, true, true})}),
                       "same shape"));
}
