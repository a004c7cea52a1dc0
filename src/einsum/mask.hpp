#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace tropical::einsum_detail {

/// A set of label indices (bit i: label i) of any size, as the planners' integer bit masks: networks of
/// graph problems have hundreds of labels. Masks of one network have one word count.
class Mask {
 public:
  Mask() = default;
  /// The empty set over `labels` labels.
  explicit Mask(int labels) : words_((labels + 63) / 64, 0) {}

  void set(int i) { words_[i / 64] |= std::uint64_t{1} << (i % 64); }
  void reset(int i) { words_[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }
  bool test(int i) const { return (words_[i / 64] >> (i % 64) & 1) != 0; }
  bool empty() const {
    for (std::uint64_t w : words_) {
      if (w != 0) return false;
    }
    return true;
  }
  int count() const {
    int n = 0;
    for (std::uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  /// The label indices in increasing order.
  std::vector<int> bits() const {
    std::vector<int> out;
    for (std::size_t w = 0; w < words_.size(); ++w) {
      for (std::uint64_t x = words_[w]; x != 0; x &= x - 1)
        out.push_back(static_cast<int>(w * 64) + std::countr_zero(x));
    }
    return out;
  }
  Mask& operator|=(const Mask& o) {
    return apply(o, [](auto a, auto b) { return a | b; });
  }
  Mask& operator&=(const Mask& o) {
    return apply(o, [](auto a, auto b) { return a & b; });
  }
  Mask& operator^=(const Mask& o) {
    return apply(o, [](auto a, auto b) { return a ^ b; });
  }
  /// This set less the labels of o.
  Mask& remove(const Mask& o) {
    return apply(o, [](auto a, auto b) { return a & ~b; });
  }
  friend Mask operator|(Mask a, const Mask& b) { return a |= b; }
  friend Mask operator&(Mask a, const Mask& b) { return a &= b; }
  friend Mask operator^(Mask a, const Mask& b) { return a ^= b; }
  friend Mask without(Mask a, const Mask& b) { return a.remove(b); }
  friend bool operator==(const Mask&, const Mask&) = default;
  friend auto operator<=>(const Mask& a, const Mask& b) {
    // As the integers the Python planners use: the highest word decides.
    for (std::size_t w = a.words_.size(); w-- > 0;) {
      if (a.words_[w] != b.words_[w]) return a.words_[w] <=> b.words_[w];
    }
    return std::strong_ordering::equal;
  }

 private:
  template <class F>
  Mask& apply(const Mask& o, F f) {
    for (std::size_t w = 0; w < words_.size(); ++w) words_[w] = f(words_[w], o.words_[w]);
    return *this;
  }
  std::vector<std::uint64_t> words_;
};

}  // namespace tropical::einsum_detail
