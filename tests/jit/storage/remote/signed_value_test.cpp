#include "tropical/storage/remote/signed_value.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tropical::storage::remote {
namespace {

const std::string kKey = "tropical:2:00ff";
// Built by appending: GCC 12 warns falsely (-Wrestrict) on std::string + std::string&&.
const std::string kEntry = [] {
  std::string entry = "TROPJIT\n";
  entry.append(1000, '\x5a').append(3, '\0');
  return entry;
}();

class SignedValue : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(signer_);
    ASSERT_TRUE(stranger_);
    trusted_.add(signer_->public_key());
  }
  std::optional<SigningKey> signer_ = SigningKey::generate();
  std::optional<SigningKey> stranger_ = SigningKey::generate();
  TrustedKeys trusted_;
};

TEST_F(SignedValue, signed_value_opens_to_the_exact_entry) {
  auto value = seal_value(kEntry, kKey, &*signer_);
  ASSERT_TRUE(value);
  EXPECT_EQ(value->size(), kEntry.size() + kTrailerSize);
  const OpenedValue opened = open_value(&*value, kKey, trusted_, false);
  EXPECT_EQ(opened.verdict, ValueVerdict::kAccepted);
  EXPECT_EQ(*value, kEntry);
  ASSERT_TRUE(opened.signer);
  EXPECT_EQ(*opened.signer, signer_->public_key().raw());
}

TEST_F(SignedValue, empty_entry_round_trips) {
  auto value = seal_value("", kKey, &*signer_);
  ASSERT_TRUE(value);
  EXPECT_EQ(open_value(&*value, kKey, trusted_, false).verdict, ValueVerdict::kAccepted);
  EXPECT_TRUE(value->empty());
}

TEST_F(SignedValue, every_flipped_byte_is_refused_and_leaves_the_value_alone) {
  const auto sealed = seal_value(kEntry, kKey, &*signer_);
  ASSERT_TRUE(sealed);
  for (std::size_t i = 0; i < sealed->size(); ++i) {
    std::string value = *sealed;
    value[i] = static_cast<char>(value[i] ^ 0x01);
    const std::string before = value;
    const OpenedValue opened = open_value(&value, kKey, trusted_, false);
    ASSERT_NE(opened.verdict, ValueVerdict::kAccepted) << "byte " << i;
    EXPECT_EQ(value, before);
  }
}

TEST_F(SignedValue, a_valid_value_of_another_key_is_refused) {
  auto value = seal_value(kEntry, "tropical:2:1111", &*signer_);
  ASSERT_TRUE(value);
  EXPECT_EQ(open_value(&*value, kKey, trusted_, false).verdict, ValueVerdict::kBadSignature);
  EXPECT_EQ(open_value(&*value, kKey, trusted_, true).verdict, ValueVerdict::kBadSignature);
}

TEST_F(SignedValue, unsigned_value_is_refused_unless_allowed) {
  const auto sealed = seal_value(kEntry, kKey, nullptr);
  ASSERT_TRUE(sealed);
  std::string value = *sealed;
  EXPECT_EQ(open_value(&value, kKey, trusted_, false).verdict, ValueVerdict::kUnsigned);
  EXPECT_EQ(open_value(&value, kKey, TrustedKeys(), true).verdict, ValueVerdict::kAccepted);
  EXPECT_EQ(value, kEntry);
}

TEST_F(SignedValue, untrusted_signer_is_refused_unless_unsigned_is_allowed) {
  const auto sealed = seal_value(kEntry, kKey, &*stranger_);
  ASSERT_TRUE(sealed);
  std::string value = *sealed;
  EXPECT_EQ(open_value(&value, kKey, trusted_, false).verdict, ValueVerdict::kUntrusted);
  EXPECT_EQ(open_value(&value, kKey, TrustedKeys(), false).verdict, ValueVerdict::kUntrusted);
  // On a trusted network any whole signed value is as good as an unsigned one.
  EXPECT_EQ(open_value(&value, kKey, trusted_, true).verdict, ValueVerdict::kAccepted);
}

TEST_F(SignedValue, a_signature_swapped_in_from_another_signer_is_refused) {
  auto mine = seal_value(kEntry, kKey, &*signer_);
  const auto theirs = seal_value(kEntry, kKey, &*stranger_);
  ASSERT_TRUE(mine && theirs);
  // Keep my key id, take their signature.
  mine->replace(mine->size() - kTrailerSize + 48, 64, theirs->substr(theirs->size() - kTrailerSize + 48, 64));
  EXPECT_EQ(open_value(&*mine, kKey, trusted_, false).verdict, ValueVerdict::kBadSignature);
}

TEST_F(SignedValue, garbage_is_garbage) {
  for (std::string value : {std::string(), std::string("short"), std::string(kTrailerSize, '\0'), kEntry,
                            std::string(500, '\xff')}) {
    EXPECT_EQ(open_value(&value, kKey, trusted_, true).verdict, ValueVerdict::kGarbage);
  }
  // A trailer claiming another entry size.
  auto value = seal_value(kEntry, kKey, &*signer_);
  ASSERT_TRUE(value);
  *value = "x" + *value;
  EXPECT_EQ(open_value(&*value, kKey, trusted_, false).verdict, ValueVerdict::kGarbage);
}

TEST(Ed25519, signature_verifies_only_for_its_message_and_key) {
  const auto a = SigningKey::generate();
  const auto b = SigningKey::generate();
  ASSERT_TRUE(a && b);
  const auto signature = a->sign("message");
  ASSERT_TRUE(signature);
  EXPECT_TRUE(a->public_key().verify("message", *signature));
  EXPECT_FALSE(a->public_key().verify("messagf", *signature));
  EXPECT_FALSE(b->public_key().verify("message", *signature));
  EXPECT_NE(a->public_key().id(), b->public_key().id());
  EXPECT_EQ(a->public_key().id().rfind("ed25519:", 0), 0u);
  EXPECT_EQ(a->public_key().id().size(), 8u + 16u);
}

}  // namespace
}  // namespace tropical::storage::remote
