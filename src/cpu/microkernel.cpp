// The vector microkernels, compiled once per instruction set by Highway's
// foreach_target (this file includes itself once per target), and the choice
// of one of them at run time (HWY_EXPORT's tables, indexed through our own
// hwy::ChosenTarget so that TROPICAL_CPU_ISA can cap the choice without
// touching Highway's process-wide one).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "kernel.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/storage/log.hpp"

// SSSE3 and AVX3_DL add nothing to max/min/add over SSE4 and AVX3 (AVX-512);
// SVE and RVV have sizeless vectors, which cannot be held in the tile's arrays
// (an aarch64 build runs NEON).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV)
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/microkernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tropical::cpu::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tiles (rows x vectors of C): 32 vector registers on AVX-512, 16 elsewhere.
// The argmax tile also holds the winning k and the group's starting values.
#if HWY_TARGET == HWY_AVX3
constexpr int kRows = 12, kVecs = 2, kArgRows = 4, kArgVecs = 2;
#elif HWY_TARGET == HWY_SCALAR
constexpr int kRows = 4, kVecs = 4, kArgRows = 4, kArgVecs = 2;
#else
constexpr int kRows = 6, kVecs = 2, kArgRows = 3, kArgVecs = 2;
#endif
// One-row tiles (products with m = 1, and n = 1 transposed): each step of k loads kRowVecs vectors of the B
// panel once for one broadcast of A, so the panel streams at the load ports' rate.
constexpr int kRowVecs = 4;
// Group of k per argmax comparison: measured best (f32, 512^3) at 2 on AVX-512, 4 on AVX2.
constexpr int kGroup = HWY_TARGET == HWY_AVX3 ? 2 : 4;

// On x86, Max(p, acc) and Min(p, acc) return acc when p is NaN (maxps/minps
// return their second operand when unordered; Highway's scalar target ignores
// NaN), which is fmax's rule; elsewhere (NEON's max propagates NaN) a
// comparison picks the operand.
#if HWY_ARCH_X86 || HWY_TARGET == HWY_SCALAR
constexpr bool kMaxKeepsSecondOnNaN = true;
#else
constexpr bool kMaxKeepsSecondOnNaN = false;
#endif

/// The semiring's operations on vectors of d.
template <class S, class D>
struct Ops {
  using V = hn::Vec<D>;
  static HWY_INLINE V product(V a, V b) {
    if constexpr (S::kMul == MulKind::kAdd) {
      return hn::Add(a, b);  // integers: only when no sum can saturate (sums_are_exact)
    } else if constexpr (S::kMul == MulKind::kMul) {
      return hn::Mul(a, b);
    } else if constexpr (S::kMul == MulKind::kMin) {
      // NaN operands were packed as the zero; ties give b, as the reference.
      if constexpr (kMaxKeepsSecondOnNaN) return hn::Min(a, b);
      else return hn::IfThenElse(hn::Lt(a, b), a, b);
    } else if constexpr (S::kMul == MulKind::kMax) {
      if constexpr (kMaxKeepsSecondOnNaN) return hn::Max(a, b);
      else return hn::IfThenElse(hn::Gt(a, b), a, b);
    } else {
      return hn::And(a, b);  // bytes packed as 0 or 1
    }
  }
  static HWY_INLINE V accumulate(V p, V acc) {
    if constexpr (S::kAdd == AddKind::kMax) {
      if constexpr (kMaxKeepsSecondOnNaN) return hn::Max(p, acc);
      else return hn::IfThenElse(hn::Gt(p, acc), p, acc);
    } else if constexpr (S::kAdd == AddKind::kMin) {
      if constexpr (kMaxKeepsSecondOnNaN) return hn::Min(p, acc);
      else return hn::IfThenElse(hn::Lt(p, acc), p, acc);
    } else {
      return hn::Or(acc, p);
    }
  }
  /// Lanes where `now` is strictly better than `before`.
  static HWY_INLINE auto improved(V now, V before) {
    if constexpr (S::kAdd == AddKind::kMin) return hn::Lt(now, before);
    else return hn::Gt(now, before);
  }
};

/// One step of k: acc(r, v) (+)= a(r) (x) b(v).
template <class S, class D, int MR, int NV>
HWY_INLINE void step(D d, const typename D::T* a, const typename D::T* b, hn::Vec<D> (&acc)[MR][NV]) {
  using O = Ops<S, D>;
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> bv[NV];
  for (int v = 0; v < NV; ++v) bv[v] = hn::Load(d, b + v * lanes);
  for (int r = 0; r < MR; ++r) {
    const auto av = hn::Set(d, a[r]);
    for (int v = 0; v < NV; ++v) acc[r][v] = O::accumulate(O::product(av, bv[v]), acc[r][v]);
  }
}

template <class S, class T, int MR, int NV>
void GemmTile(const TileArgs<T>& t) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const std::int64_t nr = NV * static_cast<std::int64_t>(lanes);
  hn::Vec<decltype(d)> acc[MR][NV];
  const auto zero = hn::Set(d, reference::zero<S, T>());
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = t.load ? hn::LoadU(d, t.c + r * t.ldc + v * lanes) : zero;
  }
  const T* a = t.a;
  const T* b = t.b;
  for (std::int64_t p = 0; p < t.kc; ++p, a += MR, b += nr) step<S, decltype(d), MR, NV>(d, a, b, acc);
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) hn::StoreU(acc[r][v], d, t.c + r * t.ldc + v * lanes);
  }
}

/// v * C for a small constant C, by shifts and adds (x86 has no 64-bit
/// vector multiply below AVX-512DQ).
template <std::int64_t C, class V>
HWY_INLINE V times(V v) {
  V sum = hn::Zero(hn::DFromV<V>());
  for (int bit = 0; (C >> bit) != 0; ++bit) {
    if ((C >> bit) & 1) sum = hn::Add(sum, hn::ShiftLeftSame(v, bit));
  }
  return sum;
}

/// The argmax tile. Over each group of kGroup k it runs the plain max, then
/// compares once with the values before the group and records, where an
/// element improved (strictly: ties keep the smaller k, NaN never improves),
/// the group's position in the block plus one (0: no improvement in this
/// block). At the end of the block those elements find their exact k: the
/// first product of their group equal to the element, gathered from the
/// packed slivers; the others keep the k they had. A vector none of whose
/// lanes improved in this block skips that step.
template <class S, class T, int MR, int NV>
void ArgmaxTile(const TileArgs<T>& t) {
  using TI = hwy::MakeSigned<T>;
  using O = Ops<S, hn::ScalableTag<T>>;
  const hn::ScalableTag<T> d;
  const hn::Rebind<TI, decltype(d)> di;
  const size_t lanes = hn::Lanes(d);
  constexpr std::int64_t kNr = NV * static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<T>()));
  hn::Vec<decltype(d)> acc[MR][NV];
  hn::Vec<decltype(di)> moved[MR][NV];
  const auto zero = hn::Set(d, reference::zero<S, T>());
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = t.load ? hn::LoadU(d, t.c + r * t.ldc + v * lanes) : zero;
      moved[r][v] = hn::Zero(di);
    }
  }
  const T* a = t.a;
  const T* b = t.b;
  for (std::int64_t p = 0; p < t.kc; p += kGroup) {
    hn::Vec<decltype(d)> before[MR][NV];
    for (int r = 0; r < MR; ++r) {
      for (int v = 0; v < NV; ++v) before[r][v] = acc[r][v];
    }
    if (t.kc - p >= kGroup) {
      for (int q = 0; q < kGroup; ++q, a += MR, b += kNr) step<S, decltype(d), MR, NV>(d, a, b, acc);
    } else {
      for (std::int64_t q = p; q < t.kc; ++q, a += MR, b += kNr) step<S, decltype(d), MR, NV>(d, a, b, acc);
    }
    const auto k1 = hn::Set(di, static_cast<TI>(p + 1));
    for (int r = 0; r < MR; ++r) {
      for (int v = 0; v < NV; ++v) {
        const auto better = hn::RebindMask(di, O::improved(acc[r][v], before[r][v]));
#if HWY_TARGET == HWY_AVX3
        moved[r][v] = hn::IfThenElse(better, k1, moved[r][v]);  // one masked move
#else
        moved[r][v] = hn::Max(moved[r][v], hn::IfThenElseZero(better, k1));  // and + max: blendv is 3 uops
#endif
      }
    }
  }
  alignas(64) TI wide[HWY_MAX_BYTES / sizeof(TI)];
  const auto k0 = hn::Set(di, static_cast<TI>(t.k0));
  const auto kc = hn::Set(di, static_cast<TI>(t.kc));
  const auto none = hn::Zero(di);
  const auto columns = hn::Iota(di, 0);
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      std::int32_t* idx = t.idx + r * t.ldidx + v * lanes;
      for (size_t l = 0; l < lanes; ++l) wide[l] = t.load ? idx[l] : -1;
      auto found = hn::Load(di, wide);
      auto pending = hn::Gt(moved[r][v], none);
      if (!hn::AllFalse(di, pending)) {
        const auto start = hn::IfThenElseZero(pending, hn::Sub(moved[r][v], hn::Set(di, TI{1})));
        for (int q = 0; q < kGroup; ++q) {
          const auto kq = hn::Add(start, hn::Set(di, static_cast<TI>(q)));
          const auto valid = hn::And(pending, hn::Lt(kq, kc));
          if (hn::AllFalse(di, valid)) break;
          const auto safe = hn::IfThenElseZero(valid, kq);
          const auto av = hn::GatherIndex(d, t.a + r, times<MR>(safe));
          const auto bv = hn::GatherIndex(d, t.b + v * lanes, hn::Add(times<kNr>(safe), columns));
          const auto equal = hn::And(valid, hn::RebindMask(di, hn::Eq(O::product(av, bv), acc[r][v])));
          found = hn::IfThenElse(equal, hn::Add(kq, k0), found);
          pending = hn::AndNot(equal, pending);
        }
      }
      hn::StoreU(acc[r][v], d, t.c + r * t.ldc + v * lanes);
      hn::Store(found, di, wide);
      for (size_t l = 0; l < lanes; ++l) idx[l] = static_cast<std::int32_t>(wide[l]);
    }
  }
}

/// B's NaN as the zero for MaxMin and MinMax, as pack_value makes it (Highway's scalar Min and Max would
/// take the other operand); every other value as it is.
template <class S, class D>
HWY_INLINE hn::Vec<D> unpacked_value(D d, hn::Vec<D> v) {
  using T = hn::TFromD<D>;
  if constexpr (std::is_floating_point_v<T> && (S::kMul == MulKind::kMin || S::kMul == MulKind::kMax)) {
    return hn::IfThenElse(hn::IsNaN(v), hn::Set(d, reference::zero<S, T>()), v);
  } else {
    return v;
  }
}

/// The row kernel (RowArgs): per k, one broadcast of a(p) against B's row p, vector by vector, the running
/// row of C (a task's columns, in L1) loaded and stored around each step, so that B streams once, in order,
/// unpacked. Columns past the last whole vector take the reference's operations, which these equal.
template <class S, class T, bool kArgmax>
void RowUpdate(const RowArgs<T>& t) {
  using TI = hwy::MakeSigned<T>;
  using O = Ops<S, hn::ScalableTag<T>>;
  const hn::ScalableTag<T> d;
  const hn::Rebind<TI, decltype(d)> di;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t whole = t.cols / lanes * lanes;
  for (std::int64_t p = 0; p < t.kc; ++p) {
    const auto av = hn::Set(d, t.a[p]);
    const T* b = t.b + p * t.ldb;
    for (std::int64_t j = 0; j < whole; j += lanes) {
      const auto before = hn::LoadU(d, t.c + j);
      const auto product = O::product(av, unpacked_value<S>(d, hn::LoadU(d, b + j)));
      if constexpr (kArgmax) {
        const auto better = O::improved(product, before);
        hn::StoreU(hn::IfThenElse(better, product, before), d, t.c + j);
        const auto idx = hn::LoadU(di, reinterpret_cast<const TI*>(t.idx + j));
        hn::StoreU(hn::IfThenElse(hn::RebindMask(di, better), hn::Set(di, static_cast<TI>(t.k0 + p)), idx), di,
                   reinterpret_cast<TI*>(t.idx + j));
      } else {
        hn::StoreU(O::accumulate(product, before), d, t.c + j);
      }
    }
    for (std::int64_t j = whole; j < t.cols; ++j) {
      const T product = reference::mul<S, T>(t.a[p], b[j]);
      if constexpr (kArgmax) {
        if (reference::better<S, T>(product, t.c[j])) {
          t.c[j] = product;
          t.idx[j] = static_cast<std::int32_t>(t.k0 + p);
        }
      } else {
        t.c[j] = reference::add<S, T>(t.c[j], product);
      }
    }
  }
}

/// The dot kernel (RowArgs, B stored transposed): per column j, B's row j against a's values, lane by lane
/// (four accumulators), then the lanes folded and the last k past a whole vector taken with the reference's
/// operations. The sum (max, min) of the lanes is the sum in any order (no NaN enters an accumulator); the
/// argmax keeps each lane's first winner and then the smallest k among the lanes that reach the maximum.
template <class S, class T, bool kArgmax>
void RowDot(const RowArgs<T>& t) {
  using TI = hwy::MakeSigned<T>;
  using O = Ops<S, hn::ScalableTag<T>>;
  const hn::ScalableTag<T> d;
  const hn::Rebind<TI, decltype(d)> di;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  constexpr int kAcc = kArgmax ? 1 : 4;
  const std::int64_t whole = t.kc / (kAcc * lanes) * (kAcc * lanes);
  const auto zero = hn::Set(d, reference::zero<S, T>());
  alignas(64) T values[HWY_MAX_BYTES / sizeof(T)];
  alignas(64) TI winners[HWY_MAX_BYTES / sizeof(T)];
  for (std::int64_t j = 0; j < t.cols; ++j) {
    const T* b = t.b + j * t.ldb;
    hn::Vec<decltype(d)> acc[kAcc];
    for (int u = 0; u < kAcc; ++u) acc[u] = zero;
    auto won = hn::Set(di, TI{-1});
    for (std::int64_t p = 0; p < whole; p += kAcc * lanes) {
      for (int u = 0; u < kAcc; ++u) {
        const std::int64_t q = p + u * lanes;
        const auto product =
            O::product(hn::LoadU(d, t.a + q), unpacked_value<S>(d, hn::LoadU(d, b + q)));
        if constexpr (kArgmax) {
          const auto better = O::improved(product, acc[u]);
          acc[u] = hn::IfThenElse(better, product, acc[u]);
          won = hn::IfThenElse(hn::RebindMask(di, better), hn::Iota(di, static_cast<TI>(t.k0 + q)), won);
        } else {
          acc[u] = O::accumulate(product, acc[u]);
        }
      }
    }
    for (int u = 1; u < kAcc; ++u) acc[0] = O::accumulate(acc[u], acc[0]);
    hn::Store(acc[0], d, values);
    T value = reference::zero<S, T>();
    std::int64_t winner = -1;
    if constexpr (kArgmax) {
      hn::Store(won, di, winners);
      for (std::int64_t l = 0; l < lanes; ++l) {
        if (winners[l] < 0) continue;  // this lane never beat the zero
        if (reference::better<S, T>(values[l], value) || (values[l] == value && winners[l] < winner)) {
          value = values[l];
          winner = winners[l];
        }
      }
    } else {
      for (std::int64_t l = 0; l < lanes; ++l) value = reference::add<S, T>(value, values[l]);
    }
    for (std::int64_t p = whole; p < t.kc; ++p) {
      const T product = reference::mul<S, T>(t.a[p], b[p]);
      if constexpr (kArgmax) {
        if (reference::better<S, T>(product, value)) {
          value = product;
          winner = t.k0 + p;
        }
      } else {
        value = reference::add<S, T>(value, product);
      }
    }
    t.c[j] = value;
    if constexpr (kArgmax) t.idx[j] = static_cast<std::int32_t>(winner);
  }
}

template <class S, class T>
void Fill(KernelSet<T>* out) {
  const hn::ScalableTag<T> d;
  const int lanes = static_cast<int>(hn::Lanes(d));
  out->mr = kRows;
  out->nr = kVecs * lanes;
  out->gemm = &GemmTile<S, T, kRows, kVecs>;
  out->nr1 = kRowVecs * lanes;
  out->gemm1 = &GemmTile<S, T, 1, kRowVecs>;
  if constexpr (S::kAdd != AddKind::kOr) {  // AndOr's bytes are 0 or 1 only once packed: it packs B
    out->row = &RowUpdate<S, T, false>;
    out->dot = &RowDot<S, T, false>;
    // The row kernel keeps the winning k in lanes of the element's width: 4 bytes, as the argmax's int32.
    if constexpr (sizeof(T) == 4) out->row_argmax = &RowUpdate<S, T, true>;
    if constexpr (sizeof(T) >= 4) out->dot_argmax = &RowDot<S, T, true>;
  }
  if constexpr (sizeof(T) >= 4) {  // a byte or a 16-bit lane cannot hold k: AndOr's and int16's argmax stay scalar
    out->mra = kArgRows;
    out->nra = kArgVecs * lanes;
    out->argmax = &ArgmaxTile<S, T, kArgRows, kArgVecs>;
    out->nra1 = kRowVecs * lanes;
    out->argmax1 = &ArgmaxTile<S, T, 1, kRowVecs>;
  }
}

// One exported function per pair (HWY_EXPORT takes names, not templates).
// Integer MaxMul saturates its products: no vector kernel.
#define TROPICAL_CPU_FILL(NAME, S, T) \
  void NAME(KernelSet<T>* out) { Fill<S, T>(out); }
#define TROPICAL_CPU_FILL_ALL(X)                                                                          \
  X(FillMaxPlusF32, MaxPlus, float) X(FillMaxPlusF64, MaxPlus, double)                                    \
  X(FillMaxPlusI32, MaxPlus, std::int32_t) X(FillMaxPlusI64, MaxPlus, std::int64_t)                       \
  X(FillMinPlusF32, MinPlus, float) X(FillMinPlusF64, MinPlus, double)                                    \
  X(FillMinPlusI32, MinPlus, std::int32_t) X(FillMinPlusI64, MinPlus, std::int64_t)                       \
  X(FillMaxMulF32, MaxMul, float) X(FillMaxMulF64, MaxMul, double)                                        \
  X(FillMaxMinF32, MaxMin, float) X(FillMaxMinF64, MaxMin, double)                                        \
  X(FillMaxMinI32, MaxMin, std::int32_t) X(FillMaxMinI64, MaxMin, std::int64_t)                           \
  X(FillMinMaxF32, MinMax, float) X(FillMinMaxF64, MinMax, double)                                        \
  X(FillMinMaxI32, MinMax, std::int32_t) X(FillMinMaxI64, MinMax, std::int64_t)                           \
  X(FillAndOrU8, AndOr, std::uint8_t)                                                                     \
  X(FillMaxPlusI16, MaxPlus, std::int16_t) X(FillMinPlusI16, MinPlus, std::int16_t)                       \
  X(FillMaxMinI16, MaxMin, std::int16_t) X(FillMinMaxI16, MinMax, std::int16_t)
TROPICAL_CPU_FILL_ALL(TROPICAL_CPU_FILL)

}  // namespace tropical::cpu::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tropical::cpu {
namespace detail {
namespace {

/// An instruction set TROPICAL_CPU_ISA may name, and its Highway target bit.
struct IsaName {
  const char* name;
  std::int64_t target;
};
constexpr IsaName kIsaNames[] = {
    {"scalar", HWY_SCALAR}, {"baseline", HWY_SCALAR}, {"sse4", HWY_SSE4}, {"avx2", HWY_AVX2},
    {"avx512", HWY_AVX3},   {"avx3", HWY_AVX3},       {"neon", HWY_NEON},
};

/// The compiled targets the CPU supports, capped by TROPICAL_CPU_ISA (targets
/// at or below the named one: Highway numbers better targets with lower bits).
/// A name this CPU (or this build) lacks caps nothing: `lacking` receives it, for
/// one warning once the choice is known (a cap below it would fall to scalar).
std::int64_t allowed_targets(std::string& lacking) {
  std::int64_t allowed = hwy::SupportedTargets() & HWY_TARGETS;
  const char* env = std::getenv("TROPICAL_CPU_ISA");
  if (env == nullptr || *env == '\0') return allowed;
  for (const IsaName& isa : kIsaNames) {
    if (std::strcmp(env, isa.name) != 0) continue;
    if (isa.target != HWY_SCALAR && (allowed & isa.target) == 0) {
      lacking = env;
      return allowed;
    }
    return allowed & ~(isa.target - 1);
  }
  std::fprintf(stderr,
               "tropical: TROPICAL_CPU_ISA=%s is not one of scalar, sse4, avx2, avx512, neon; using the best "
               "instruction set of this CPU\n",
               storage::terminal_safe(env).c_str());
  return allowed;
}

/// The dispatch choice, made once: index into HWY_EXPORT's tables, and the name.
struct Choice {
  hwy::ChosenTarget chosen;
  const char* name = "scalar";
};

Choice& choice() {
  static Choice c;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string lacking;
    const std::int64_t allowed = allowed_targets(lacking);
    c.chosen.Update(allowed);
    const std::int64_t best = allowed & -allowed;
    c.name = "scalar";
    for (const IsaName& isa : kIsaNames) {
      if (best == isa.target && best != HWY_SCALAR) {
        c.name = isa.name;
        break;
      }
    }
    if (!lacking.empty()) {
      std::fprintf(stderr, "tropical: TROPICAL_CPU_ISA=%s names an instruction set this CPU lacks; using the best it "
                   "has (%s)\n", lacking.c_str(), c.name);
    }
  });
  return c;
}

}  // namespace

const char* isa_name() { return choice().name; }

std::size_t chosen_target_index() { return choice().chosen.GetIndex(); }

#define TROPICAL_CPU_EXPORT(NAME, S, T)                                  \
  HWY_EXPORT(NAME);                                                      \
  template <>                                                            \
  const KernelSet<T>& vector_kernels<S, T>() {                           \
    static const KernelSet<T> set = [] {                                 \
      KernelSet<T> s;                                                    \
      HWY_DISPATCH_TABLE(NAME)[choice().chosen.GetIndex()](&s);          \
      return s;                                                          \
    }();                                                                 \
    return set;                                                          \
  }
TROPICAL_CPU_FILL_ALL(TROPICAL_CPU_EXPORT)

// Integer MaxMul: the exact scalar kernels.
template <>
const KernelSet<std::int32_t>& vector_kernels<MaxMul, std::int32_t>() {
  static const KernelSet<std::int32_t> none{};
  return none;
}
template <>
const KernelSet<std::int64_t>& vector_kernels<MaxMul, std::int64_t>() {
  static const KernelSet<std::int64_t> none{};
  return none;
}
template <>
const KernelSet<std::int16_t>& vector_kernels<MaxMul, std::int16_t>() {
  static const KernelSet<std::int16_t> none{};
  return none;
}

}  // namespace detail

std::string_view isa() { return detail::isa_name(); }

}  // namespace tropical::cpu
#endif  // HWY_ONCE
