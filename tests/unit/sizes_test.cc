#include "runtime/spec/sizes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "runtime/spec/spec.h"

namespace corral::runtime {
namespace {

using ::testing::HasSubstr;

TEST(ParseSize, AcceptsBinaryUnitsInEveryCommonSpelling) {
  const std::pair<const char*, int64_t> cases[] = {
      {"0", 0},
      {"1024", 1024},
      {"1b", 1},
      {"1B", 1},
      {"512k", 512 * 1024},
      {"512K", 512 * 1024},
      {"512kb", 512 * 1024},
      {"512KiB", 512 * 1024},
      {"512m", 512 * kMiB},
      {"512M", 512 * kMiB},
      {"512MiB", 512 * kMiB},
      {"512mib", 512 * kMiB},
      {"512MB", 512 * kMiB},
      {"1g", kGiB},
      {"1G", kGiB},
      {"1GiB", kGiB},
      {"1.5g", 3 * kGiB / 2},
      {"0.5k", 512},
      {"1.0", 1},
      {"2t", 2 * 1024 * kGiB},
      {"1p", 1024LL * 1024 * kGiB},
      {" 512 MiB ", 512 * kMiB},
      {"512\tm", 512 * kMiB},
      {"9223372036854775807", std::numeric_limits<int64_t>::max()},
  };
  for (const auto& [text, want] : cases) {
    Result<int64_t> got = ParseSize(text);
    ASSERT_TRUE(got) << text << ": " << got.error().message();
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(ParseSize, RejectsGarbageNegativesAndFractionsOfBytes) {
  for (const char* bad : {"",     " ",     "lots",    "m",     "-1",  "-1g", "+1",  "1e9",
                          "0x10", "512x",  "512 m b", "1..5g", ".5g", "1.g", "1.5", "0.3k",
                          "1,5g", "1 000", "512mb2",  "1kk",   "1ki", "1eb", "inf", "nan"}) {
    Result<int64_t> got = ParseSize(bad);
    ASSERT_FALSE(got) << '"' << bad << "\" parsed as " << *got;
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(got.error().message(), HasSubstr(std::string("\"") + bad + "\"")) << bad;
  }
  EXPECT_EQ(ParseSize("lots").error().message(), "expected a size like 512m, got \"lots\"");
  EXPECT_EQ(ParseSize("-5m").error().message(), "size \"-5m\" is negative");
  EXPECT_EQ(ParseSize("0.3k").error().message(), "size \"0.3k\" is not a whole number of bytes");
}

TEST(ParseSize, RejectsOverflow) {
  for (const char* big : {"9223372036854775808", "99999999999999999999999", "8388608t", "8192p",
                          "9007199254740992k", "8191.9999999999999999999p"}) {
    Result<int64_t> got = ParseSize(big);
    ASSERT_FALSE(got) << big << " parsed as " << *got;
    EXPECT_THAT(got.error().message(),
                ::testing::AnyOf(HasSubstr("too large"), HasSubstr("too many decimals")))
        << big;
  }
  // Just below the limit is fine: 8191 PiB + 1023 TiB.
  Result<int64_t> near = ParseSize("8388607t");
  ASSERT_TRUE(near);
  EXPECT_EQ(*near, 8388607LL * 1024 * kGiB);
}

TEST(FormatSize, UsesTheLargestBinaryUnit) {
  EXPECT_EQ(FormatSize(0), "0 B");
  EXPECT_EQ(FormatSize(1000), "1000 B");
  EXPECT_EQ(FormatSize(1024), "1 KiB");
  EXPECT_EQ(FormatSize(1536), "1.5 KiB");
  EXPECT_EQ(FormatSize(10 * kMiB), "10 MiB");
  EXPECT_EQ(FormatSize(512 * kMiB), "512 MiB");
  EXPECT_EQ(FormatSize(kGiB), "1 GiB");
  EXPECT_EQ(FormatSize(3 * kGiB / 2), "1.5 GiB");
  EXPECT_EQ(FormatSize(kGiB + 1), "1 GiB");  // rounded to two decimals
  EXPECT_EQ(FormatSize(kGiB + kGiB / 3), "1.33 GiB");
  EXPECT_EQ(FormatSize(-2 * kMiB), "-2 MiB");
  EXPECT_EQ(FormatSize(std::numeric_limits<int64_t>::max()), "8 EiB");
  EXPECT_EQ(FormatSize(std::numeric_limits<int64_t>::min()), "-8 EiB");
}

TEST(FormatSize, ExactValuesRoundTripThroughParseSize) {
  for (int64_t v : {int64_t{0}, int64_t{7}, int64_t{1024}, 1536 * int64_t{1}, 4 * kMiB, 256 * kMiB,
                    3 * kGiB / 2, 5 * 1024 * kGiB}) {
    Result<int64_t> back = ParseSize(FormatSize(v));
    ASSERT_TRUE(back) << FormatSize(v);
    EXPECT_EQ(*back, v) << FormatSize(v);
  }
}

}  // namespace
}  // namespace corral::runtime
