#include "wombatkv/types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/blake3_hash.h"
#include "base/hex.h"
#include "wombatkv/buffer.h"

namespace wombatkv {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

const std::string kKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

TEST(FixedBytes, FromHexRoundTripsThroughToHex) {
  auto key = BlockKey::FromHex(kKeyHex);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  for (size_t i = 0; i < BlockKey::kSize; ++i) EXPECT_EQ(key->bytes[i], i);
  EXPECT_EQ(key->ToHex(), kKeyHex);
}

TEST(FixedBytes, FromHexAcceptsUppercaseAndPrintsLowercase) {
  auto key = ContentHash::FromHex("ABCDEF0123456789ABCDEF0123456789abcdef01");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->bytes[0], 0xab);
  EXPECT_EQ(key->ToHex(), "abcdef0123456789abcdef0123456789abcdef01");
}

TEST(FixedBytes, FromHexRejectsWrongLength) {
  for (std::string bad : {std::string(), kKeyHex.substr(0, 62), kKeyHex.substr(0, 63),
                          kKeyHex + "0", kKeyHex + "00"}) {
    auto r = BlockKey::FromHex(bad);
    ASSERT_FALSE(r.ok()) << "accepted " << bad.size() << " chars";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("block key"), std::string::npos)
        << r.status().message();
  }
  // A block key is not a content hash: 40 hex digits are the wrong length here.
  EXPECT_FALSE(BlockKey::FromHex(kKeyHex.substr(0, 40)).ok());
  EXPECT_FALSE(Fingerprint::FromHex(kKeyHex.substr(0, 22)).ok());
  EXPECT_TRUE(Fingerprint::FromHex(kKeyHex.substr(0, 24)).ok());
}

TEST(FixedBytes, FromHexRejectsNonHexCharacters) {
  for (char c : {'g', 'G', 'z', ' ', '-', 'x', '\0', '\n', '/', ':', '@', '`'}) {
    for (size_t pos : {size_t{0}, size_t{31}, size_t{63}}) {
      std::string bad = kKeyHex;
      bad[pos] = c;
      auto r = BlockKey::FromHex(bad);
      ASSERT_FALSE(r.ok()) << "accepted char " << int(c) << " at " << pos;
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    }
  }
  EXPECT_FALSE(BlockKey::FromHex("0x" + kKeyHex.substr(2)).ok());
}

TEST(FixedBytes, FromHexNamesWhatWasBeingParsed) {
  auto r = BlockKey::FromHex("nothex", "chain tip");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("chain tip"), std::string::npos) << r.status().message();
}

TEST(FixedBytes, ZeroKeyIsZeroAndOthersAreNot) {
  EXPECT_TRUE(BlockKey{}.IsZero());
  auto key = BlockKey::FromHex(std::string(63, '0') + "1");
  ASSERT_TRUE(key.ok());
  EXPECT_FALSE(key->IsZero());
}

TEST(ValidateNamespace, AcceptsNamesFromTheAllowedSet) {
  for (std::string ok : {std::string("a"), std::string("tenant-1"), std::string("A.b_c-D9"),
                         std::string("..."), std::string(".hidden"), std::string("a..b"),
                         std::string(64, 'x')}) {
    EXPECT_TRUE(ValidateNamespace(ok).ok()) << ok;
  }
}

TEST(ValidateNamespace, RejectsEmptyPathComponentsTooLongAndForeignCharacters) {
  std::vector<std::string> bad = {"",        ".",     "..",   "a/b",   "/a",  "a\\b",
                                  "a b",     "a\nb",  "ü",    "a:b",   "a*",  std::string(65, 'x'),
                                  std::string("a\0b", 3)};
  for (const std::string& ns : bad) {
    Status s = ValidateNamespace(ns);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << "accepted \"" << ns << "\"";
  }
}

FingerprintSpec ExampleSpec() {
  FingerprintSpec s;
  s.model_id = "llama-3-8b";
  s.tokenizer_id = "llama3";
  s.kv_dtype = "bf16";
  s.tensor_parallel = 2;
  s.pipeline_parallel = 1;
  s.extras = {{"rope", "yarn"}, {"block_tokens", "16"}};
  return s;
}

TEST(FingerprintSpec, CanonicalFormIsPinned) {
  // Fingerprints are persisted: this text (and so every digest) must never change silently.
  EXPECT_EQ(ExampleSpec().Canonical(),
            "wombatkv.fingerprint.v1\n"
            "model=llama-3-8b\n"
            "tokenizer=llama3\n"
            "kv_dtype=bf16\n"
            "tp=2\n"
            "pp=1\n"
            "lora=\n"
            "x.block_tokens=16\n"
            "x.rope=yarn\n");
}

TEST(FingerprintSpec, DigestIsPinnedAndIsTheBlake3PrefixOfTheCanonicalForm) {
  const FingerprintSpec spec = ExampleSpec();
  // Computed with an independent BLAKE3 implementation over the pinned canonical text above.
  EXPECT_EQ(spec.Digest().ToHex(), "c70ad45848754911851d516d");
  const std::string c = spec.Canonical();
  auto full = Blake3(Bytes(c));
  EXPECT_EQ(spec.Digest(),
            Fingerprint::FromBytes(std::span<const uint8_t>(full.data(), Fingerprint::kSize)));
}

TEST(FingerprintSpec, ExtrasOrderOfInsertionDoesNotMatter) {
  FingerprintSpec a = ExampleSpec();
  FingerprintSpec b = ExampleSpec();
  b.extras.clear();
  b.extras.emplace("block_tokens", "16");
  b.extras.emplace("rope", "yarn");
  EXPECT_EQ(a.Canonical(), b.Canonical());
  EXPECT_EQ(a.Digest(), b.Digest());
}

TEST(FingerprintSpec, EveryFieldChangesTheDigest) {
  const Fingerprint base = ExampleSpec().Digest();
  std::vector<FingerprintSpec> variants(8, ExampleSpec());
  variants[0].model_id += "x";
  variants[1].tokenizer_id += "x";
  variants[2].kv_dtype = "fp8";
  variants[3].tensor_parallel = 4;
  variants[4].pipeline_parallel = 2;
  variants[5].lora = "r16";
  variants[6].extras["rope"] = "none";
  variants[7].extras.erase("rope");
  std::set<Fingerprint> seen = {base};
  for (const auto& v : variants) EXPECT_TRUE(seen.insert(v.Digest()).second) << v.Canonical();
}

// Pairs that would serialise identically if values were not escaped.
TEST(FingerprintSpec, NewlineOrEqualsInAValueCannotForgeAnotherSpec) {
  std::vector<std::pair<FingerprintSpec, FingerprintSpec>> pairs;
  {
    // A newline in lora forging an extras line.
    FingerprintSpec a = ExampleSpec(), b = ExampleSpec();
    a.extras.clear();
    b.extras.clear();
    a.lora = "r8\nx.k=v";
    b.lora = "r8";
    b.extras["k"] = "v";
    pairs.emplace_back(a, b);
  }
  {
    // '=' moving between an extras key and its value.
    FingerprintSpec a = ExampleSpec(), b = ExampleSpec();
    a.extras = {{"k=v", "w"}};
    b.extras = {{"k", "v=w"}};
    pairs.emplace_back(a, b);
  }
  {
    // A newline in the model id forging the tokenizer line (and the real one made empty).
    FingerprintSpec a = ExampleSpec(), b = ExampleSpec();
    a.model_id = "m\ntokenizer=t";
    a.tokenizer_id = "";
    b.model_id = "m";
    b.tokenizer_id = "t\ntokenizer=";
    pairs.emplace_back(a, b);
  }
  {
    // The escape character itself: a trailing backslash must not swallow the separator.
    FingerprintSpec a = ExampleSpec(), b = ExampleSpec();
    a.extras = {{"k\\", "v"}};
    b.extras = {{"k", "\\v"}};
    pairs.emplace_back(a, b);
  }
  {
    FingerprintSpec a = ExampleSpec(), b = ExampleSpec();
    a.lora = "a\\nb";  // backslash, 'n'
    b.lora = "a\nb";   // a real newline
    pairs.emplace_back(a, b);
  }
  for (const auto& [a, b] : pairs) {
    EXPECT_NE(a.Canonical(), b.Canonical()) << a.Canonical();
    EXPECT_NE(a.Digest(), b.Digest()) << a.Canonical();
  }
}

TEST(FingerprintSpec, CanonicalFormHasExactlyOneLinePerField) {
  FingerprintSpec s = ExampleSpec();
  s.model_id = "a\nb\nc";
  s.lora = "=\n=";
  s.extras["k\n"] = "\n";
  const std::string c = s.Canonical();
  // domain line + 6 fixed fields + 3 extras
  EXPECT_EQ(std::count(c.begin(), c.end(), '\n'), 10) << c;
}

TEST(HashPayload, IsTheFirst20BytesOfBlake3) {
  for (std::string_view in : {std::string_view(""), std::string_view("hello wombat"),
                              std::string_view("abc")}) {
    auto full = Blake3(Bytes(in));
    EXPECT_EQ(HashPayload(Bytes(in)),
              ContentHash::FromBytes(std::span<const uint8_t>(full.data(), ContentHash::kSize)));
  }
  EXPECT_EQ(HashPayload({}).ToHex(), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9");
  EXPECT_EQ(HashPayload(Bytes("hello wombat")).ToHex(),
            "54d7478760215d5a6bc1ce5caf5fcfe729e45dd0");
  std::vector<uint8_t> big(100000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  auto full = Blake3(big);
  EXPECT_EQ(HashPayload(big).ToHex(), HexEncode(full).substr(0, 40));
}

}  // namespace
}  // namespace wombatkv

namespace wombatkv {
namespace {

TEST(CopyAndHashPayload, CopiesExactlyAndHashesLikeHashPayload) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537},
                   size_t{300000}, size_t{(2u << 20) + 3}}) {
    std::vector<uint8_t> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
    auto dst = Buffer::Allocate(n);
    ContentHash h = CopyAndHashPayload(src, dst->data());
    EXPECT_EQ(h, HashPayload(src)) << n;
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst->data())) << n;
  }
}

TEST(Buffer, LargeBuffersAreHugePageAligned) {
  auto b = Buffer::Allocate(3u << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (2u << 20), 0u);
  b->data()[(3u << 20) - 1] = 1;  // the whole size is writable
  EXPECT_EQ(b->size(), 3u << 20);
}

}  // namespace
}  // namespace wombatkv
