#include "tropical/reference.hpp"

namespace tropical::reference {

template <class S, class T>
  requires SupportedPair<S, T>
void product(const Product<T>& p) {
  const Scaling<T>& s = p.scaling;
  for (std::int64_t q = 0; q < p.batch; ++q) {
    for (std::int64_t i = 0; i < p.m(); ++i) {
      for (std::int64_t j = 0; j < p.n(); ++j) {
        T acc = zero<S, T>();
        std::int32_t best = -1;
        for (std::int64_t l = 0; l < p.k(); ++l) {
          const T prod = mul<S, T>(p.a.at(i, l, q), p.b.at(l, j, q));
          if (p.argmax) {
            if (better<S, T>(prod, acc)) {
              acc = prod;
              best = static_cast<std::int32_t>(l);
            }
          } else {
            acc = add<S, T>(acc, prod);
          }
        }
        if (p.argmax) p.argmax->at(i, j, q) = best;
        if (s.apply_alpha) acc = mul<S, T>(*s.alpha, acc);
        if (s.read_c) {
          const T old = p.c.at(i, j, q);
          acc = add<S, T>(acc, s.apply_beta ? mul<S, T>(*s.beta, old) : old);
        }
        p.c.at(i, j, q) = acc;
      }
    }
  }
}

template <class S, class T>
  requires SupportedPair<S, T> && Differentiable<S>
void gradient(const Gradient<T>& g) {
  const bool wrt_a = g.wrt == Wrt::kA;
  for (std::int64_t q = 0; q < g.batch; ++q) {
    for (std::int64_t r = 0; r < g.grad.rows; ++r) {
      for (std::int64_t c = 0; c < g.grad.cols; ++c) g.grad.at(r, c, q) = T(0);
    }
    // dA's element (i, p) gathers its terms in increasing j, dB's (p, j) in increasing i.
    for (std::int64_t i = 0; i < g.m(); ++i) {
      for (std::int64_t j = 0; j < g.n(); ++j) {
        const std::int32_t p = g.argmax.at(i, j, q);
        if (p < 0 || p >= g.k()) continue;
        T d = g.grad_c.at(i, j, q);
        if constexpr (S::kMul == MulKind::kMul) d *= wrt_a ? g.operand.at(p, j, q) : g.operand.at(i, p, q);
        (wrt_a ? g.grad.at(i, p, q) : g.grad.at(p, j, q)) += d;
      }
    }
  }
}

// Every semiring x type of the catalog is instantiated here, so the reference
// is compiled into the library once (backward passes for every type of the
// differentiable semirings: the CPU side costs nothing and keeps tests uniform).
#define TROPICAL_INSTANTIATE_PRODUCT(S, T) template void product<S, T>(const Product<T>&);
#define TROPICAL_INSTANTIATE_GRADIENT(S, T) template void gradient<S, T>(const Gradient<T>&);

#define TROPICAL_INSTANTIATE_NUMBERS(S, MACRO) \
  MACRO(S, float)                              \
  MACRO(S, double)                             \
  MACRO(S, std::int32_t)                       \
  MACRO(S, std::int64_t)                       \
  MACRO(S, std::int16_t)

TROPICAL_INSTANTIATE_NUMBERS(MaxPlus, TROPICAL_INSTANTIATE_PRODUCT)
TROPICAL_INSTANTIATE_NUMBERS(MinPlus, TROPICAL_INSTANTIATE_PRODUCT)
TROPICAL_INSTANTIATE_NUMBERS(MaxMul, TROPICAL_INSTANTIATE_PRODUCT)
TROPICAL_INSTANTIATE_NUMBERS(MaxMin, TROPICAL_INSTANTIATE_PRODUCT)
TROPICAL_INSTANTIATE_NUMBERS(MinMax, TROPICAL_INSTANTIATE_PRODUCT)
TROPICAL_INSTANTIATE_PRODUCT(AndOr, std::uint8_t)
TROPICAL_INSTANTIATE_NUMBERS(MaxPlus, TROPICAL_INSTANTIATE_GRADIENT)
TROPICAL_INSTANTIATE_NUMBERS(MinPlus, TROPICAL_INSTANTIATE_GRADIENT)
TROPICAL_INSTANTIATE_NUMBERS(MaxMul, TROPICAL_INSTANTIATE_GRADIENT)

#undef TROPICAL_INSTANTIATE_NUMBERS
#undef TROPICAL_INSTANTIATE_GRADIENT
#undef TROPICAL_INSTANTIATE_PRODUCT

}  // namespace tropical::reference
