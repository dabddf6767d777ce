// The AIO API's file calls (server/aio/api.h) against a real persistent sandbox, with
// DeerFlow's request bodies (docs/deerflow-contract.md §5.1 #6-#12) and the error
// conventions: FileOperationError in a 200 envelope, HTTP status codes for download.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "base/files.h"
#include "tests/support/aio_api_fixture.h"

namespace corral::test {
namespace {

using nlohmann::json;

const std::string kWs = "/mnt/user-data/workspace";

bool HasPath(const json& files, const std::string& path, bool is_dir) {
  for (const auto& f : files) {
    if (f["path"] == path) return f["is_directory"] == is_dir;
  }
  return false;
}

TEST_F(AioApiTest, WriteReadRangesAppendAndOwnership) {
  const std::string p = kWs + "/a/b/c.txt";
  AioAnswer w = Post("v1/file/write", {{"file", p}, {"content", "l0\nl1\nl2\nl3\n"}});
  ASSERT_EQ(w.status, 200) << w.raw;
  EXPECT_EQ(w.body["success"], true) << "parent directories are created";
  EXPECT_EQ(w.data()["bytes_written"], 12);
  EXPECT_EQ(Post("v1/file/read", {{"file", p}}).data()["content"], "l0\nl1\nl2\nl3\n");
  // DeerFlow's read_file(start_line=s-1, end_line=e): 0-based inclusive, exclusive end.
  EXPECT_EQ(
      Post("v1/file/read", {{"file", p}, {"start_line", 1}, {"end_line", 3}}).data()["content"],
      "l1\nl2\n");
  EXPECT_EQ(
      Post("v1/file/read", {{"file", p}, {"start_line", 0}, {"end_line", 10}}).data()["content"],
      "l0\nl1\nl2\nl3\n");
  EXPECT_EQ(Post("v1/file/read", {{"file", p}, {"start_line", 2}}).data()["content"], "l2\nl3\n");
  EXPECT_EQ(Post("v1/file/read", {{"file", p}, {"end_line", 1}}).data()["content"], "l0\n");
  EXPECT_EQ(
      Post("v1/file/read", {{"file", p}, {"start_line", 3}, {"end_line", 2}}).data()["content"],
      "");
  EXPECT_EQ(
      Post("v1/file/write", {{"file", p}, {"content", "l4\n"}, {"append", true}}).body["success"],
      true);
  EXPECT_EQ(Post("v1/file/read", {{"file", p}, {"start_line", 4}}).data()["content"], "l4\n");
  struct stat st;
  ASSERT_EQ(::stat(dir_.Join("user-data/workspace/a/b/c.txt").c_str(), &st), 0);
  // As the sandbox user: whoever its shell writes as (on the host a reserved id, not 1000:
  // runtime/run/identity.h).
  Shell("touch " + kWs + "/by-shell");
  struct stat shell_st;
  ASSERT_EQ(::stat(dir_.Join("user-data/workspace/by-shell").c_str(), &shell_st), 0);
  EXPECT_EQ(st.st_uid, shell_st.st_uid) << "written as the sandbox user";
  EXPECT_EQ(st.st_gid, shell_st.st_gid);
  EXPECT_NE(st.st_uid, 0u);
  EXPECT_EQ(Shell("cat " + p), "l0\nl1\nl2\nl3\nl4\n") << "the shell sees the same file";
}

TEST_F(AioApiTest, FileErrorsAreEnvelopes) {
  AioAnswer r = Post("v1/file/read", {{"file", kWs + "/missing.txt"}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["success"], false);
  const json& e = r.data();
  EXPECT_EQ(e["path"], kWs + "/missing.txt");
  EXPECT_EQ(e["operation"], "read");
  EXPECT_EQ(e["error_type"], "not_found");
  EXPECT_EQ(e["errno"], 2);
  EXPECT_EQ(e["errno_name"], "ENOENT");
  EXPECT_EQ(e["exception_type"], "FileNotFoundError");
  EXPECT_TRUE(e["retryable"].is_boolean());
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_EQ(Post("v1/file/read", {{"file", kWs}}).data()["error_type"], "invalid_target");
  std::string denied =
      Post("v1/file/write", {{"file", "/etc/passwd"}, {"content", "x"}}).data()["error_type"];
  EXPECT_TRUE(denied == "permission_denied" || denied == "read_only_filesystem") << denied;
  EXPECT_EQ(Post("v1/file/read", {{"file", "relative.txt"}}).data()["error_type"], "invalid_path");
  EXPECT_EQ(Post("v1/file/list", {{"path", kWs + "/nope"}}).data()["error_type"], "not_found");
  AioAnswer bad64 =
      Post("v1/file/write", {{"file", kWs + "/x.bin"}, {"content", "@@@"}, {"encoding", "base64"}});
  EXPECT_EQ(bad64.body["success"], false);
  EXPECT_EQ(bad64.data()["error_type"], "decode_error");
  EXPECT_EQ(Post("v1/file/write", {{"file", kWs + "/x"}, {"content", "x"}, {"encoding", "latin1"}})
                .status,
            422);
}

TEST_F(AioApiTest, Base64WriteAndDownloadBytes) {
  const std::string bytes("\x00\x01\xff\xfe binary\n", 12);
  // base64 of the 12 bytes above.
  AioAnswer w = Post("v1/file/write", {{"file", kWs + "/../outputs/img.bin"},
                                       {"content", "AAH//iBiaW5hcnkK"},
                                       {"encoding", "base64"}});
  EXPECT_EQ(w.body["success"], true) << w.raw;
  AioAnswer d =
      Call("GET", "v1/file/download", "", nullptr, {{"path", "/mnt/user-data/outputs/img.bin"}});
  EXPECT_EQ(d.status, 200);
  EXPECT_EQ(d.content_type, "application/octet-stream");
  EXPECT_EQ(d.raw, bytes);
  EXPECT_EQ(Call("GET", "v1/file/download", "", nullptr, {{"path", "/mnt/user-data/outputs/none"}})
                .status,
            404);
  EXPECT_EQ(Call("GET", "v1/file/download", "", nullptr, {{"path", "/etc/hostname"}}).status, 403);
  EXPECT_EQ(Call("GET", "v1/file/download", "", nullptr, {}).status, 422);
  EXPECT_EQ(
      Call("GET", "v1/file/download", "", nullptr, {{"path", "/mnt/user-data/outputs"}}).status,
      400);
}

// What a command in the sandbox can make in outputs/ besides files: a unix socket and a
// FIFO. Reading or downloading one is a clear 4xx that names the type (was a 500 with the
// kernel's ENXIO text for the socket), a FIFO never blocks the call, and a write never
// feeds one. A name with UTF-8 and control bytes reaches Content-Disposition encoded.
TEST_F(AioApiTest, SocketsAndFifosAreRefusedAndNamesAreEncoded) {
  Shell(
      "cd /mnt/user-data/outputs && mkfifo pipe && python3 -c \"import socket; "
      "s = socket.socket(socket.AF_UNIX); s.bind('sock')\" && ls -l");
  for (const std::string name : {"pipe", "sock"}) {
    const std::string path = "/mnt/user-data/outputs/" + name;
    AioAnswer d = Call("GET", "v1/file/download", "", nullptr, {{"path", path}});
    EXPECT_EQ(d.status, 403) << name << ": " << d.raw;
    EXPECT_NE(d.raw.find(name == "pipe" ? "is a FIFO" : "is a unix socket"), std::string::npos)
        << d.raw;
    AioAnswer r = Post("v1/file/read", {{"file", path}});
    EXPECT_EQ(r.body["success"], false) << r.raw;
    EXPECT_NE(r.raw.find("only regular files"), std::string::npos) << r.raw;
    AioAnswer w = Post("v1/file/write", {{"file", path}, {"content", "x"}});
    EXPECT_EQ(w.body["success"], false) << w.raw;
  }
  const std::string odd = "r\xc3\xa9sum\xc3\xa9 \"q\"\x01.txt";  // résumé "q"^A.txt
  ASSERT_EQ(Post("v1/file/write", {{"file", "/mnt/user-data/outputs/" + odd}, {"content", "x"}})
                .body["success"],
            true);
  AioAnswer d =
      Call("GET", "v1/file/download", "", nullptr, {{"path", "/mnt/user-data/outputs/" + odd}});
  ASSERT_EQ(d.status, 200) << d.raw;
  std::string disposition;
  for (const auto& [name, value] : d.headers) {
    if (name == "Content-Disposition") disposition = value;
  }
  EXPECT_EQ(disposition,
            "attachment; filename=\"r__sum__ _q__.txt\"; "
            "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22q%22%01.txt");
}

TEST_F(AioApiTest, ListFindGrepSearchShapes) {
  Post("v1/file/write",
       {{"file", kWs + "/src/main.py"}, {"content", "import os\nprint('Hello')\nhello = 1\n"}});
  Post("v1/file/write",
       {{"file", kWs + "/src/deep/util.py"}, {"content", "def hello():\n    pass\n"}});
  Post("v1/file/write", {{"file", kWs + "/README.md"}, {"content", "# hello\n"}});
  Post("v1/file/write", {{"file", kWs + "/.hidden/secret.txt"}, {"content", "hello\n"}});

  AioAnswer l = Post("v1/file/list", {{"path", kWs}, {"recursive", true}, {"show_hidden", false}});
  ASSERT_EQ(l.body["success"], true) << l.raw;
  const json& files = l.data()["files"];
  EXPECT_TRUE(HasPath(files, kWs + "/src", true)) << l.raw;
  EXPECT_TRUE(HasPath(files, kWs + "/src/deep", true));
  EXPECT_TRUE(HasPath(files, kWs + "/src/deep/util.py", false));
  EXPECT_FALSE(HasPath(files, kWs + "/.hidden", true));
  for (const auto& f : files) {
    EXPECT_TRUE(f["name"].is_string() && f["is_directory"].is_boolean()) << f;
    if (f["path"] == kWs + "/README.md") {
      EXPECT_EQ(f["size"], 8);
      EXPECT_EQ(f["name"], "README.md");
      EXPECT_EQ(f["extension"], ".md");
    }
  }
  EXPECT_EQ(l.data()["total_count"], files.size());
  AioAnswer lh = Post("v1/file/list", {{"path", kWs}, {"recursive", true}, {"show_hidden", true}});
  EXPECT_TRUE(HasPath(lh.data()["files"], kWs + "/.hidden/secret.txt", false));
  AioAnswer flat = Post("v1/file/list", {{"path", kWs}});
  EXPECT_FALSE(HasPath(flat.data()["files"], kWs + "/src/main.py", false))
      << "not recursive by default";

  AioAnswer f = Post("v1/file/find", {{"path", kWs}, {"glob", "**/*.py"}});
  ASSERT_EQ(f.body["success"], true) << f.raw;
  json found = f.data()["files"];
  std::vector<std::string> got(found.begin(), found.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{kWs + "/src/deep/util.py", kWs + "/src/main.py"}));

  // DeerFlow's grep body.
  AioAnswer g = Post("v1/file/grep", {{"path", kWs},
                                      {"pattern", "hello"},
                                      {"case_insensitive", true},
                                      {"fixed_strings", false},
                                      {"max_results", 104},
                                      {"max_file_size", "1M"},
                                      {"recursive", true}});
  ASSERT_EQ(g.body["success"], true) << g.raw;
  EXPECT_EQ(g.data()["truncated"], false);
  bool saw = false;
  for (const auto& m : g.data()["matches"]) {
    EXPECT_TRUE(m["file"].is_string() && m["line_number"].is_number_integer() &&
                m["line_content"].is_string());
    if (m["file"] == kWs + "/src/main.py" && m["line_number"] == 2) {
      saw = true;
      EXPECT_EQ(m["line_content"], "print('Hello')");
    }
  }
  EXPECT_TRUE(saw) << g.raw;
  AioAnswer one =
      Post("v1/file/grep",
           {{"path", kWs + "/src/main.py"}, {"pattern", "hello"}, {"fixed_strings", true}});
  ASSERT_EQ(one.data()["matches"].size(), 1u) << one.raw;
  EXPECT_EQ(one.data()["matches"][0]["line_number"], 3);
  AioAnswer shallow =
      Post("v1/file/grep",
           {{"path", kWs}, {"pattern", "hello"}, {"case_insensitive", true}, {"recursive", false}});
  ASSERT_EQ(shallow.data()["matches"].size(), 1u) << shallow.raw;
  EXPECT_EQ(shallow.data()["matches"][0]["file"], kWs + "/README.md");
  AioAnswer trunc =
      Post("v1/file/grep",
           {{"path", kWs}, {"pattern", "hello"}, {"case_insensitive", true}, {"max_results", 1}});
  EXPECT_EQ(trunc.data()["truncated"], true);
  EXPECT_EQ(trunc.data()["matches"].size(), 1u);
  EXPECT_EQ(Post("v1/file/grep", {{"path", kWs}, {"pattern", "x"}, {"max_results", 0}}).status,
            422);
  EXPECT_EQ(Post("v1/file/grep", {{"path", kWs}, {"pattern", "x"}, {"max_results", 10001}}).status,
            422);
  EXPECT_EQ(Post("v1/file/grep", {{"path", kWs}, {"pattern", "(unclosed"}}).body["success"], false);

  AioAnswer s =
      Post("v1/file/search", {{"file", kWs + "/src/main.py"}, {"regex", "^(import|hello)"}});
  ASSERT_EQ(s.body["success"], true) << s.raw;
  EXPECT_EQ(s.data()["line_numbers"], json({1, 3}));
  EXPECT_EQ(s.data()["matches"], json({"import os", "hello = 1"}));
}

// max_file_size (DeerFlow sends "1M"): files larger than it are skipped, smaller ones read;
// without it the default is DeerFlow's local 1,000,000 bytes.
TEST_F(AioApiTest, GrepHonoursMaxFileSize) {
  // 1.5 MiB with the match on its last line, and a small file with one too.
  Post("v1/file/write", {{"file", kWs + "/big/big.txt"},
                         {"content", std::string(1536 * 1024 - 12, 'x') + "\nneedle here\n"}});
  Post("v1/file/write", {{"file", kWs + "/big/small.txt"}, {"content", "needle too\n"}});
  auto files = [&](const json& extra) {
    json body = {{"path", kWs + "/big"}, {"pattern", "needle"}};
    body.update(extra);
    AioAnswer g = Post("v1/file/grep", body);
    EXPECT_EQ(g.body["success"], true) << g.raw;
    std::vector<std::string> out;
    for (const auto& m : g.data()["matches"]) out.push_back(m["file"]);
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<std::string> small_only = {kWs + "/big/small.txt"};
  const std::vector<std::string> both = {kWs + "/big/big.txt", kWs + "/big/small.txt"};
  EXPECT_EQ(files({{"max_file_size", "1M"}}), small_only);
  EXPECT_EQ(files(json::object()), small_only);
  EXPECT_EQ(files({{"max_file_size", "2M"}}), both);
  EXPECT_EQ(files({{"max_file_size", "1600000"}}), both);
  EXPECT_EQ(files({{"max_file_size", "5"}}), std::vector<std::string>{});
  EXPECT_EQ(
      Post("v1/file/grep", {{"path", kWs}, {"pattern", "x"}, {"max_file_size", "lots"}}).status,
      422);
}

}  // namespace
}  // namespace corral::test
