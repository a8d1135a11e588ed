#include "wombatkv/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace wombatkv {
namespace {

const std::vector<Code> kAllCodes = {
    Code::kOk,           Code::kNotFound,          Code::kUnavailable,
    Code::kConflict,     Code::kInvalidArgument,   Code::kCorruption,
    Code::kResourceExhausted, Code::kFailedPrecondition, Code::kInternal,
    Code::kPermissionDenied,
};

TEST(Status, DefaultIsOkWithNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(Status, EachFactoryProducesItsCodeAndKeepsTheMessage) {
  struct Case {
    Status s;
    Code code;
  };
  const Case cases[] = {
      {Status::NotFound("m"), Code::kNotFound},
      {Status::Unavailable("m"), Code::kUnavailable},
      {Status::Conflict("m"), Code::kConflict},
      {Status::InvalidArgument("m"), Code::kInvalidArgument},
      {Status::Corruption("m"), Code::kCorruption},
      {Status::ResourceExhausted("m"), Code::kResourceExhausted},
      {Status::FailedPrecondition("m"), Code::kFailedPrecondition},
      {Status::Internal("m"), Code::kInternal},
      {Status::PermissionDenied("m"), Code::kPermissionDenied},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.s.ok());
    EXPECT_EQ(c.s.code(), c.code);
    EXPECT_EQ(c.s.message(), "m");
  }
  EXPECT_TRUE(Status::NotFound("x").IsNotFound());
  EXPECT_FALSE(Status::Conflict("x").IsNotFound());
  EXPECT_TRUE(Status::Conflict("x").IsConflict());
  EXPECT_FALSE(Status::NotFound("x").IsConflict());
}

TEST(Status, CodeNamesAreDistinctAndStable) {
  // Names appear in logs and error strings across the C ABI; pin them.
  EXPECT_EQ(CodeName(Code::kOk), "OK");
  EXPECT_EQ(CodeName(Code::kNotFound), "NOT_FOUND");
  EXPECT_EQ(CodeName(Code::kUnavailable), "UNAVAILABLE");
  EXPECT_EQ(CodeName(Code::kConflict), "CONFLICT");
  EXPECT_EQ(CodeName(Code::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_EQ(CodeName(Code::kCorruption), "CORRUPTION");
  EXPECT_EQ(CodeName(Code::kResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(CodeName(Code::kFailedPrecondition), "FAILED_PRECONDITION");
  EXPECT_EQ(CodeName(Code::kInternal), "INTERNAL");
  EXPECT_EQ(CodeName(Code::kPermissionDenied), "PERMISSION_DENIED");
  std::set<std::string_view> names;
  for (Code c : kAllCodes) names.insert(CodeName(c));
  EXPECT_EQ(names.size(), kAllCodes.size());
  EXPECT_EQ(CodeName(static_cast<Code>(200)), "UNKNOWN");
}

TEST(Status, ToStringIsCodeNameColonMessage) {
  EXPECT_EQ(Status::Corruption("block abc: hash mismatch").ToString(),
            "CORRUPTION: block abc: hash mismatch");
}

TEST(Status, WithContextPrefixesTheMessageAndKeepsTheCode) {
  Status s = Status::Unavailable("timed out").WithContext("put block 12");
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(s.message(), "put block 12: timed out");
  // Contexts nest outermost-first.
  EXPECT_EQ(s.WithContext("publish").message(), "publish: put block 12: timed out");
}

TEST(Status, WithContextOnOkStaysOkAndEmpty) {
  Status s = Status::Ok().WithContext("anything");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(Result, HoldsAValue) {
  Result<int> r = 42;
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  *r = 7;
  EXPECT_EQ(r.value(), 7);
}

TEST(Result, HoldsAnErrorStatus) {
  Result<int> r = Status::NotFound("no such block");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(), "no such block");
}

TEST(Result, MovesMoveOnlyValuesOut) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r.value(), 5);
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

TEST(Result, ArrowReachesMembersOfTheValue) {
  Result<std::string> r = std::string("abc");
  EXPECT_EQ(r->size(), 3u);
}

TEST(ResultDeathTest, ConstructingFromAnOkStatusDies) {
  EXPECT_DEATH({ Result<int> r = Status::Ok(); (void)r; }, "Result constructed from an OK Status");
}

Status FailIf(bool fail) { return fail ? Status::Corruption("bad crc") : Status::Ok(); }

Status ReturnIfErrorUser(bool fail, int* reached) {
  WMBT_RETURN_IF_ERROR(FailIf(fail));
  *reached = 1;
  return Status::Ok();
}

TEST(Macros, ReturnIfErrorPropagatesErrorsAndContinuesOnOk) {
  int reached = 0;
  Status s = ReturnIfErrorUser(true, &reached);
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_EQ(s.message(), "bad crc");
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(ReturnIfErrorUser(false, &reached).ok());
  EXPECT_EQ(reached, 1);
}

Result<int> MaybeInt(bool fail) {
  if (fail) return Status::Unavailable("try again");
  return 10;
}

Result<int> AssignOrReturnUser(bool fail) {
  WMBT_ASSIGN_OR_RETURN(int v, MaybeInt(fail));
  WMBT_ASSIGN_OR_RETURN(int w, MaybeInt(false));  // two uses in one scope must compile
  return v + w + 1;
}

TEST(Macros, AssignOrReturnBindsTheValueOrPropagatesTheError) {
  Result<int> ok = AssignOrReturnUser(false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 21);
  Result<int> bad = AssignOrReturnUser(true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kUnavailable);
  EXPECT_EQ(bad.status().message(), "try again");
}

}  // namespace
}  // namespace wombatkv
