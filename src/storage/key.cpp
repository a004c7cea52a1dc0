#include "tropical/storage/key.hpp"

#include <limits>

#include "tropical/storage/sha256.hpp"

namespace tropical::storage {
namespace {

constexpr std::string_view kTag = "tropical.jit.CacheKey";

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_field(std::string& out, std::string_view field) {
  put_u64(out, field.size());
  out.append(field);
}

// Reads little-endian fields off the front of a byte string; any overrun makes it fail for good.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && rest_.empty(); }
  std::uint64_t u(int bytes) {
    if (!ok_ || rest_.size() < static_cast<std::size_t>(bytes)) return fail();
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<unsigned char>(rest_[i])} << (8 * i);
    rest_.remove_prefix(static_cast<std::size_t>(bytes));
    return v;
  }
  std::string field() {
    const std::uint64_t size = u(8);
    if (!ok_ || size > rest_.size()) return fail(), std::string();
    std::string out(rest_.substr(0, size));
    rest_.remove_prefix(size);
    return out;
  }

 private:
  std::uint64_t fail() {
    ok_ = false;
    return 0;
  }
  std::string_view rest_;
  bool ok_ = true;
};

}  // namespace

std::string CacheKey::serialize() const {
  std::string out;
  put_field(out, kTag);
  put_u32(out, kCacheFormatVersion);
  put_field(out, kernel_name);
  put_field(out, source_digest);
  put_u64(out, options.size());
  for (const auto& option : options) put_field(out, option);
  put_u64(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(arch)));
  put_field(out, compiler);
  return out;
}

std::string CacheKey::digest() const { return Sha256::hex(Sha256::of(serialize())); }

std::optional<CacheKey> CacheKey::parse(std::string_view bytes, std::uint32_t* version) {
  Reader in(bytes);
  if (in.field() != kTag) return std::nullopt;
  const auto written = static_cast<std::uint32_t>(in.u(4));
  if (written == 0 || written > kCacheFormatVersion) return std::nullopt;
  CacheKey key;
  key.kernel_name = in.field();
  key.source_digest = in.field();
  const std::uint64_t count = in.u(8);
  // Each option takes at least its 8-byte length: a count beyond that is damage, not a reason to allocate.
  if (!in.ok() || count > bytes.size() / 8) return std::nullopt;
  for (std::uint64_t i = 0; i < count && in.ok(); ++i) key.options.push_back(in.field());
  const auto arch = static_cast<std::int64_t>(in.u(8));
  key.compiler = in.field();
  if (!in.done() || arch < std::numeric_limits<int>::min() || arch > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  key.arch = static_cast<int>(arch);
  if (version != nullptr) *version = written;
  return key;
}

KeyMismatch key_mismatch(const CacheKey& stored, std::uint32_t stored_version, const CacheKey& wanted) {
  if (stored.kernel_name != wanted.kernel_name) return KeyMismatch::kKernel;
  if (stored.arch != wanted.arch) return KeyMismatch::kArch;
  if (stored.compiler != wanted.compiler) return KeyMismatch::kCompiler;
  if (stored_version != kCacheFormatVersion) return KeyMismatch::kFormat;
  if (stored.source_digest != wanted.source_digest) return KeyMismatch::kSource;
  if (stored.options != wanted.options) return KeyMismatch::kOptions;
  return KeyMismatch::kNone;
}

}  // namespace tropical::storage
