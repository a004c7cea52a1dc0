// The checks every backend shares (src/spans.hpp): shapes, extents, batches and the exact overlap test.
#include "spans.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "tropical/error.hpp"

namespace tropical::detail {

namespace {

// Sums of up to four spans' worth of byte offsets (each below 2^63) need more than 64 bits.
__extension__ using Wide = __int128;


/// How a span's bytes come about, for messages: "3 rows, ld 8; a batch of 4, stride 16" (in elements).
std::string layout_of(const Span& s, std::size_t elem_size) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) about string + literal chains here.
  std::string text = std::to_string(s.rows);
  text.append(s.rows == 1 ? " row" : " rows");
  if (s.rows > 1) text.append(", ld ").append(std::to_string(s.ld / static_cast<std::int64_t>(elem_size)));
  if (s.batch > 1) {
    text.append("; a batch of ").append(std::to_string(s.batch));
    text.append(", stride ").append(std::to_string(s.elements_stride));
  }
  return text;
}

/// Whether some 0 <= x_k <= ub_k puts sum a_k * x_k within [lo, hi], for up to four terms a_k > 0: a
/// depth-first search, largest coefficient first, that prunes by the reachable range and by the gcd of the
/// coefficients left. Blocks of one matrix and separate buffers settle in a handful of steps; `work` bounds
/// the rest.
class BoundedSum {
 public:
  enum Result { kNone, kFound, kUnsettled };

  void add(Wide a, Wide ub) {
    if (a == 0 || ub == 0) return;
    for (int i = 0; i < n_; ++i) {
      if (a_[i] == a) {  // a*x + a*y with x <= u, y <= v is a*z with z <= u + v
        ub_[i] += ub;
        return;
      }
    }
    a_[n_] = a;
    ub_[n_] = ub;
    ++n_;
  }

  Result find(Wide lo, Wide hi) {
    // Largest coefficient first: the outer loops take the fewest steps.
    for (int i = 0; i < n_; ++i) {
      for (int j = i + 1; j < n_; ++j) {
        if (a_[j] > a_[i]) {
          std::swap(a_[i], a_[j]);
          std::swap(ub_[i], ub_[j]);
        }
      }
    }
    rest_[n_] = 0;
    gcd_[n_] = 0;
    for (int i = n_ - 1; i >= 0; --i) {
      rest_[i] = rest_[i + 1] + a_[i] * ub_[i];
      gcd_[i] = gcd(a_[i], gcd_[i + 1]);
    }
    return search(0, lo, hi);
  }

 private:
  static constexpr int kMaxTerms = 4;
  static constexpr long kWork = 4096;  // steps: some tens of microseconds at worst

  static Wide gcd(Wide a, Wide b) {
    while (b != 0) a = std::exchange(b, a % b);
    return a;
  }
  static Wide ceil_div(Wide x, Wide d) { return (x + d - 1) / d; }  // x >= 0, d > 0

  Result search(int k, Wide lo, Wide hi) {
    lo = std::max<Wide>(lo, 0);
    if (hi < lo || lo > rest_[k]) return kNone;
    if (k == n_) return kFound;  // lo == 0 here
    // What the terms from k on add up to is a multiple of their gcd.
    if (hi / gcd_[k] * gcd_[k] < lo) return kNone;
    const Wide a = a_[k];
    const Wide first = lo > rest_[k + 1] ? ceil_div(lo - rest_[k + 1], a) : 0;
    const Wide last = std::min(ub_[k], hi / a);
    if (k == n_ - 1) return first <= last ? kFound : kNone;
    for (Wide x = first; x <= last; ++x) {
      if (--work_ < 0) return kUnsettled;
      if (const Result r = search(k + 1, lo - a * x, hi - a * x); r != kNone) return r;
    }
    return kNone;
  }

  std::array<Wide, kMaxTerms> a_{}, ub_{};
  std::array<Wide, kMaxTerms + 1> rest_{}, gcd_{};
  int n_ = 0;
  long work_ = kWork;
};

}  // namespace

std::string hex(std::uintptr_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, address);
  return text;
}

void invalid(const std::string& what) { throw InvalidArgument("tropical: " + what); }

Stored stored(Trans t, std::int64_t rows, std::int64_t cols) {
  return t == Trans::kYes ? Stored{cols, rows} : Stored{rows, cols};
}

void check_ld(const char* name, std::int64_t ld, Stored s) {
  if (ld < (s.cols > 1 ? s.cols : 1)) {
    invalid(std::string("leading dimension ") + name + " = " + std::to_string(ld) + " is below " +
            std::to_string(s.cols > 1 ? s.cols : 1));
  }
}

void check_sizes(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (const auto& [t, name] : {std::pair{ta, "ta"}, std::pair{tb, "tb"}}) {
    if (t != Trans::kNo && t != Trans::kYes) {
      invalid(std::string(name) + " = Trans(" + std::to_string(static_cast<int>(t)) +
              ") is neither Trans::kNo nor Trans::kYes");
    }
  }
  if (m < 0 || n < 0 || k < 0) {
    invalid("negative size m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k));
  }
}

std::int64_t extent(const char* name, Stored s, std::int64_t ld, std::size_t elem_size) {
  if (s.rows == 0 || s.cols == 0) return 0;
  std::int64_t e = 0, bytes = 0;
  if (__builtin_mul_overflow(s.rows - 1, ld, &e) || __builtin_add_overflow(e, s.cols, &e) ||
      __builtin_mul_overflow(e, static_cast<std::int64_t>(elem_size), &bytes)) {
    invalid(std::string(name) + ": " + std::to_string(s.rows) + " rows with leading dimension " +
            std::to_string(ld) + " overflow 64 bits");
  }
  return e;
}

void check_batch(const char* name, std::int64_t stride, std::int64_t extent, std::int64_t batch,
                 std::size_t elem_size, bool disjoint) {
  if (stride < 0) invalid("negative " + std::string(name) + " = " + std::to_string(stride));
  if (batch <= 1 || extent == 0) return;
  if (disjoint && stride < extent) {
    invalid(std::string(name) + " = " + std::to_string(stride) + " makes the products of the batch overlap");
  }
  std::int64_t last = 0;
  if (__builtin_mul_overflow(batch - 1, stride, &last) || __builtin_add_overflow(last, extent, &last) ||
      __builtin_mul_overflow(last, static_cast<std::int64_t>(elem_size), &last)) {
    invalid(std::string(name) + " = " + std::to_string(stride) + " times a batch of " + std::to_string(batch) +
            " overflows 64 bits");
  }
}

void check_non_null(const void* ptr, const char* name) {
  if (ptr == nullptr) invalid(std::string(name) + " is null");
}

Span span(const char* name, const void* ptr, Stored s, std::int64_t ld, std::int64_t stride, std::int64_t batch,
          std::size_t elem_size) {
  Span r;
  r.name = name;
  r.start = reinterpret_cast<std::uintptr_t>(ptr);
  if (s.rows == 0 || s.cols == 0 || batch <= 0) return r;
  const auto size = static_cast<std::int64_t>(elem_size);
  r.batch = batch;
  r.rows = s.rows;
  r.elements_stride = batch > 1 ? stride : 0;
  // extent() and check_batch() bounded every product below; checked again here, as it costs nothing.
  std::int64_t rows_bytes = 0;
  if (__builtin_mul_overflow(r.elements_stride, size, &r.stride) ||
      __builtin_mul_overflow(s.rows > 1 ? ld : 0, size, &r.ld) || __builtin_mul_overflow(s.cols, size, &r.row) ||
      __builtin_mul_overflow(batch - 1, r.stride, &r.bytes) || __builtin_mul_overflow(s.rows - 1, r.ld, &rows_bytes) ||
      __builtin_add_overflow(r.bytes, rows_bytes, &r.bytes) || __builtin_add_overflow(r.bytes, r.row, &r.bytes)) {
    invalid(std::string(name) + ": " + layout_of(r, elem_size) + " overflow 64 bits");
  }
  if (r.start > std::numeric_limits<std::uintptr_t>::max() - static_cast<std::uint64_t>(r.bytes - 1)) {
    invalid(std::string(name) + " (" + layout_of(r, elem_size) + ") spans " + std::to_string(r.bytes) +
            " bytes from " + hex(r.start) + ", past the end of the address space");
  }
  return r;
}

bool overlap(const Span& x, const Span& y) {
  if (x.bytes == 0 || y.bytes == 0) return false;
  const Wide x_start = x.start, x_end = x_start + x.bytes, y_start = y.start, y_end = y_start + y.bytes;
  if (x_end <= y_start || y_end <= x_start) return false;
  // A byte of x is x_start + p * x.stride + i * x.ld + u (u < x.row); counted back from y's last byte, one of
  // y is y_end - 1 - (q * y.stride + j * y.ld + v) (v < y.row). They are the same byte when
  //   p x.stride + i x.ld + q y.stride + j y.ld + (u + v) = y_end - 1 - x_start,
  // where u + v takes every value from 0 to x.row + y.row - 2: a bounded sum that must hit a window.
  BoundedSum sum;
  sum.add(x.stride, x.batch - 1);
  sum.add(x.ld, x.rows - 1);
  sum.add(y.stride, y.batch - 1);
  sum.add(y.ld, y.rows - 1);
  const Wide target = y_end - 1 - x_start;
  return sum.find(target - (x.row + y.row - 2), target) == BoundedSum::kFound;
}

}  // namespace tropical::detail
