#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "toroid/support/error.h"
#include "toroid/support/file.h"
#include "toroid/support/hash.h"
#include "toroid/support/log.h"

using namespace toroid;

TEST(SupportError, UserErrorFormatsLocation) {
  try {
    user_error("expected ']'", SourceLoc{"a.tir", 3, 7});
    FAIL() << "no throw";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "a.tir:3:7: error: expected ']'");
    EXPECT_EQ(e.message(), "expected ']'");
    EXPECT_EQ(e.loc().line, 3);
  }
}

TEST(SupportError, UnknownLocationLeavesPartsOut) {
  EXPECT_EQ(SourceLoc{}.str(), "<input>");
  EXPECT_EQ((SourceLoc{"f.tir", 2, 0}).str(), "f.tir:2");
  EXPECT_EQ(format_diagnostic(SourceLoc{"f", 1, 1}, "m", "warning"), "f:1:1: warning: m");
}

TEST(SupportError, PreformattedKeepsText) {
  try {
    user_error_preformatted("x.tir:1:1: error: a\nx.tir:2:1: error: b");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "x.tir:1:1: error: a\nx.tir:2:1: error: b");
  }
}

TEST(SupportError, CheckThrowsInternalError) {
  EXPECT_THROW(TOROID_CHECK(1 + 1 == 3, "arithmetic"), InternalError);
  EXPECT_NO_THROW(TOROID_CHECK(true, "fine"));
}

TEST(SupportHash, Fnv1aKnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_NE(hash_combine(1, 2), hash_combine(2, 1));
}

TEST(SupportLog, TopicsFromSpec) {
  set_log_topics("passes,fusion");
  EXPECT_TRUE(log_enabled("passes"));
  EXPECT_TRUE(log_enabled("fusion"));
  EXPECT_FALSE(log_enabled("codegen"));
  set_log_topics("all");
  EXPECT_TRUE(log_enabled("codegen"));
  set_log_topics("");
  EXPECT_FALSE(log_enabled("passes"));
}

TEST(SupportFile, AtomicWriteThenRead) {
  auto dir = std::filesystem::temp_directory_path() / ("toroid_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "out.txt").string();
  write_file_atomic(path, "hello\n");
  write_file_atomic(path, "replaced\n");
  EXPECT_EQ(read_file(path), "replaced\n");
  // No temporary file is left behind.
  int count = 0;
  for (auto& entry : std::filesystem::directory_iterator(dir)) { (void)entry; ++count; }
  EXPECT_EQ(count, 1);
  std::filesystem::remove_all(dir);
}

TEST(SupportFile, MissingFileIsUserError) {
  try {
    read_file("/nonexistent/dir/x.tir");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/x.tir'"), std::string::npos);
  }
}
