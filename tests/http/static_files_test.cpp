#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <tarry/http/conditional.hpp>
#include <tarry/http/files_handler.hpp>
#include <tarry/http/session.hpp>
#include <tarry/http/static_files.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

namespace tarry::http::test {
namespace {

namespace fs = std::filesystem;
using namespace std::literals;
using namespace std::chrono_literals;

constexpr std::string_view date = "Sun, 06 Nov 1994 08:49:37 GMT";
constexpr std::string_view hello_text = "Hello, file!\n";
constexpr std::string_view index_text = "<p>root</p>\n";
constexpr std::string_view sub_index_text = "<p>sub</p>\n";
constexpr std::string_view secret_text = "outside the root\n";
constexpr std::size_t big_size = 20000;

void write_file(const fs::path& path, std::string_view content) {
    std::ofstream f(path, std::ios::binary);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    ASSERT_TRUE(f.good()) << path;
}

std::string read_all(int fd, std::uint64_t size) {
    std::string s(size, '\0');
    const ssize_t got = ::pread(fd, s.data(), s.size(), 0);
    EXPECT_EQ(got, static_cast<ssize_t>(size));
    s.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return s;
}

/// base/
///   outside.txt          (outside the root)
///   root/                (the docroot)
///     index.html, hello.txt, style.css, app.js, image.png, data.bin, PAGE.HTML, empty.txt
///     big.bin (20000 B), edge.bin (16 KiB), fifo
///     sub/index.html, sub/note.txt, emptydir/
///     link_out -> ../outside.txt, link_in -> hello.txt, link_dir -> sub, link_abs -> /etc
class StaticFilesTest : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<unsigned> counter{0};
        base =
            fs::temp_directory_path() / ("tarry_static_files_test_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter++));
        fs::remove_all(base);
        root = base / "root";
        fs::create_directories(root / "sub");
        fs::create_directories(root / "emptydir");
        write_file(base / "outside.txt", secret_text);
        write_file(root / "index.html", index_text);
        write_file(root / "hello.txt", hello_text);
        write_file(root / "style.css", "body {}\n");
        write_file(root / "app.js", "let x = 1;\n");
        write_file(root / "image.png", "\x89PNG\r\n\x1a\n"sv);
        write_file(root / "data.bin", "\x00\x01\x02"sv);
        write_file(root / "PAGE.HTML", "<b>x</b>");
        write_file(root / "empty.txt", "");
        big = std::string(big_size, 'B');
        for (std::size_t i = 0; i < big.size(); i += 97)
            big[i] = static_cast<char>('a' + i % 26);
        write_file(root / "big.bin", big);
        write_file(root / "edge.bin", std::string(16 * 1024, 'E'));
        write_file(root / "sub" / "index.html", sub_index_text);
        write_file(root / "sub" / "note.txt", "note\n");
        ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
        fs::create_symlink("../outside.txt", root / "link_out");
        fs::create_symlink("hello.txt", root / "link_in");
        fs::create_directory_symlink("sub", root / "link_dir");
        fs::create_directory_symlink("/etc", root / "link_abs");
        files.emplace(root);
    }

    void TearDown() override {
        files.reset();
        std::error_code ec;
        fs::remove_all(base, ec);
        EXPECT_FALSE(ec) << ec.message();
        EXPECT_FALSE(fs::exists(base));
    }

    /// Opens `target` and expects `status`; for 200, also the content.
    void expect(std::string_view target, unsigned status, std::string_view content = {}) {
        const static_files::file f = files->open(target);
        EXPECT_EQ(f.status, status) << target;
        if (status != 200) {
            EXPECT_FALSE(f.fd) << target;
            return;
        }
        ASSERT_TRUE(f.fd) << target;
        EXPECT_EQ(f.size, content.size()) << target;
        EXPECT_EQ(read_all(f.fd.get(), f.size), content) << target;
    }

    fs::path base;
    fs::path root;
    std::string big;
    std::optional<static_files> files;
};

TEST_F(StaticFilesTest, ServesAFileWithTypeAndSize) {
    const static_files::file f = files->open("/hello.txt");
    EXPECT_EQ(f.status, 200U);
    EXPECT_EQ(f.size, hello_text.size());
    EXPECT_EQ(f.content_type, "text/plain; charset=utf-8");
    ASSERT_TRUE(f.fd);
    EXPECT_EQ(read_all(f.fd.get(), f.size), hello_text);

    EXPECT_EQ(files->open("/style.css").content_type, "text/css; charset=utf-8");
    EXPECT_EQ(files->open("/app.js").content_type, "text/javascript; charset=utf-8");
    EXPECT_EQ(files->open("/image.png").content_type, "image/png");
    EXPECT_EQ(files->open("/data.bin").content_type, "application/octet-stream");
    EXPECT_EQ(files->open("/PAGE.HTML").content_type, "text/html; charset=utf-8");
    EXPECT_EQ(files->open("/big.bin").size, big_size);
    expect("/sub/note.txt", 200, "note\n");
    expect("/empty.txt", 200, "");
}

TEST_F(StaticFilesTest, DirectoryServesItsIndex) {
    for (const auto target : {"/sub/"sv, "/sub//"sv, "/./sub/."sv, "/sub/?x"sv}) {
        const static_files::file f = files->open(target);
        EXPECT_EQ(f.status, 200U) << target;
        EXPECT_EQ(f.content_type, "text/html; charset=utf-8") << target;
        EXPECT_EQ(f.size, sub_index_text.size()) << target;
    }
    expect("/sub/", 200, sub_index_text);
    expect("/", 200, index_text);
    expect("", 200, index_text);
    expect("/emptydir/", 404);
}

TEST_F(StaticFilesTest, DirectoryWithoutItsSlashRedirects) {
    const auto location = [&](std::string_view target) {
        const static_files::file f = files->open(target);
        EXPECT_EQ(f.status, 301U) << target;
        EXPECT_FALSE(f.fd) << target;
        return f.location;
    };
    EXPECT_EQ(location("/sub"), "/sub/");
    EXPECT_EQ(location("/sub?a=1&b"), "/sub/?a=1&b");
    EXPECT_EQ(location("/s%75b"), "/s%75b/"); // the path as the client wrote it
    EXPECT_EQ(location("/emptydir"), "/emptydir/");
    expect("/sub/../emptydir", 404); // ".." is refused before anything else
}

TEST_F(StaticFilesTest, FileWithATrailingSlashIsNotFound) {
    expect("/hello.txt/", 404);
    expect("/hello.txt/.", 404);
    expect("/sub/note.txt/", 404);
}

TEST_F(StaticFilesTest, FileCarriesItsValidators) {
    const static_files::file f = files->open("/hello.txt");
    struct stat st {};
    ASSERT_EQ(::stat((root / "hello.txt").c_str(), &st), 0);
    EXPECT_EQ(f.mtime, st.st_mtim.tv_sec);
    EXPECT_EQ(f.inode, st.st_ino);
    EXPECT_EQ(f.path, "hello.txt");
    EXPECT_EQ(files->open("/sub/").path, "sub/index.html");
}

TEST_F(StaticFilesTest, SiblingsOpenOnlyWhenTheyAreFiles) {
    write_file(root / "hello.txt.gz", "gz");
    fs::create_directory(root / "hello.txt.br");
    const static_files::file gz = files->open_sibling("hello.txt", ".gz");
    EXPECT_EQ(gz.status, 200U);
    EXPECT_EQ(gz.size, 2U);
    EXPECT_EQ(files->open_sibling("hello.txt", ".br").status, 404U);
    EXPECT_EQ(files->open_sibling("style.css", ".gz").status, 404U);
}

TEST_F(StaticFilesTest, DotDotNeverLeavesTheRoot) {
    ASSERT_TRUE(fs::exists(root / ".." / "outside.txt"));
    for (const auto target :
         {"/../outside.txt"sv, "/a/../../outside.txt"sv, "/sub/../../outside.txt"sv,
          "/%2e%2e/outside.txt"sv, "%2e%2e/outside.txt"sv, "/%2E%2E/outside.txt"sv,
          "/.%2e/outside.txt"sv, "/sub/%2e%2e/%2e%2e/outside.txt"sv, "/.."sv,
          "/../root/hello.txt"sv, "/sub/.."sv, "/sub/../hello.txt"sv, "/..?x"sv}) {
        expect(target, 404);
    }
}

TEST_F(StaticFilesTest, EncodedSeparatorsNameNoFile) {
    expect("/sub%2Findex.html", 404);
    expect("/sub%2findex.html", 404);
    expect("/sub%5Cindex.html", 404);
    expect("/%2e%2e%2foutside.txt", 404);
}

TEST_F(StaticFilesTest, SymlinksBeneathTheRootAreServedThoseThatLeaveItAreNot) {
    // RESOLVE_BENEATH: a link is followed while it stays beneath the root.
    expect("/link_in", 200, hello_text);
    expect("/link_dir/index.html", 200, sub_index_text);
    expect("/link_out", 404);
    expect("/link_abs/hostname", 404);
    expect("/link_abs/passwd", 404);
    // `..` inside a link's target that climbs out, and one that stays in.
    fs::create_symlink("sub/../../outside.txt", root / "link_climb");
    fs::create_symlink("sub/../hello.txt", root / "link_back");
    expect("/link_climb", 404);
    expect("/link_back", 200, hello_text);
    // A link swapped while files are served: each open resolves it anew, beneath the root.
    fs::create_symlink("hello.txt", root / "link_swap");
    expect("/link_swap", 200, hello_text);
    fs::remove(root / "link_swap");
    fs::create_symlink("/etc/passwd", root / "link_swap");
    expect("/link_swap", 404);
    fs::remove(root / "link_swap");
    fs::create_symlink("sub/note.txt", root / "link_swap");
    expect("/link_swap", 200, "note\n");
}

TEST_F(StaticFilesTest, BadPercentEncodingIs400) {
    for (const auto target : {"/%zz"sv, "/%"sv, "/%4"sv, "/a%g1"sv, "/a%1g.txt"sv, "/%%41"sv}) {
        expect(target, 400);
    }
}

TEST_F(StaticFilesTest, EncodedNulIs400) {
    expect("/%00", 400);
    expect("/hello.txt%00.png", 400);
}

TEST_F(StaticFilesTest, PercentDecodedNamesAreFound) {
    expect("/hel%6Co.txt", 200, hello_text);
    expect("/%68%65%6c%6c%6f.txt", 200, hello_text);
    expect("/sub%2fnote.txt", 404);
}

TEST_F(StaticFilesTest, MissingFileIs404) {
    expect("/missing.txt", 404);
    expect("/sub/missing", 404);
    expect("/hello.txt/x", 404);
}

TEST_F(StaticFilesTest, QueryAndFragmentAreIgnored) {
    expect("/hello.txt?x=1", 200, hello_text);
    expect("/hello.txt?path=/../outside.txt", 200, hello_text);
    expect("/hello.txt#frag", 200, hello_text);
    expect("/?x", 200, index_text);
    expect("/missing?hello.txt", 404);
}

TEST_F(StaticFilesTest, FifoIsNotServedAndDoesNotBlock) {
    expect("/fifo", 404);
}

TEST_F(StaticFilesTest, MissingRootThrows) {
    EXPECT_THROW(static_files(base / "no-such-dir"), std::system_error);
    EXPECT_THROW(static_files(root / "hello.txt"), std::system_error);
}

TEST(ContentTypeTest, ByExtension) {
    EXPECT_EQ(static_files::content_type("index.html"), "text/html; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.htm"), "text/html; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.css"), "text/css; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.js"), "text/javascript; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.mjs"), "text/javascript; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.json"), "application/json");
    EXPECT_EQ(static_files::content_type("a.txt"), "text/plain; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.svg"), "image/svg+xml");
    EXPECT_EQ(static_files::content_type("a.png"), "image/png");
    EXPECT_EQ(static_files::content_type("a.jpg"), "image/jpeg");
    EXPECT_EQ(static_files::content_type("a.jpeg"), "image/jpeg");
    EXPECT_EQ(static_files::content_type("a.gif"), "image/gif");
    EXPECT_EQ(static_files::content_type("a.webp"), "image/webp");
    EXPECT_EQ(static_files::content_type("a.ico"), "image/x-icon");
    EXPECT_EQ(static_files::content_type("a.wasm"), "application/wasm");
    EXPECT_EQ(static_files::content_type("a.pdf"), "application/pdf");
    EXPECT_EQ(static_files::content_type("a.woff2"), "font/woff2");
    EXPECT_EQ(static_files::content_type("a.xml"), "application/xml");
    EXPECT_EQ(static_files::content_type("dir/a.tar.gz"), "application/gzip");
}

TEST(ContentTypeTest, UppercaseExtension) {
    EXPECT_EQ(static_files::content_type("INDEX.HTML"), "text/html; charset=utf-8");
    EXPECT_EQ(static_files::content_type("a.Png"), "image/png");
    EXPECT_EQ(static_files::content_type("a.JPEG"), "image/jpeg");
    EXPECT_EQ(static_files::content_type("a.WOFF2"), "font/woff2");
}

TEST(ContentTypeTest, UnknownOrNone) {
    EXPECT_EQ(static_files::content_type("a.unknown"), "application/octet-stream");
    EXPECT_EQ(static_files::content_type("README"), "application/octet-stream");
    EXPECT_EQ(static_files::content_type(""), "application/octet-stream");
    EXPECT_EQ(static_files::content_type("a."), "application/octet-stream");
    EXPECT_EQ(static_files::content_type("a.htmlx"), "application/octet-stream");
    EXPECT_EQ(static_files::content_type("a.ht"), "application/octet-stream");
    // A dot in a directory name is no extension of the file.
    EXPECT_EQ(static_files::content_type("site.html/readme"), "application/octet-stream");
    EXPECT_EQ(static_files::content_type(".html"), "text/html; charset=utf-8");
}

// ---- The session serving files ----

class SessionFilesTest : public StaticFilesTest {
protected:
    void SetUp() override {
        StaticFilesTest::SetUp();
        settings.keep_alive_timeout_s = 9;
        routes.add("/", std::make_shared<files_handler>(root));
        settings.routes = &routes;
    }

    std::string consume(session& s, std::string_view input, std::size_t* used = nullptr) {
        std::string out;
        const std::size_t n = s.consume(input.data(), input.size(), out, date);
        if (used != nullptr) *used = n;
        return out;
    }

    /// The head of a response; with `file` (below the root), that file's 200 fields.
    std::string head(std::string_view status_line, std::string_view type, std::uint64_t length,
                     std::string_view file = {}) const {
        std::string s = "HTTP/1.1 ";
        s += status_line;
        s += "\r\nServer: tarry\r\nDate: ";
        s += date;
        s += "\r\nContent-Type: ";
        s += type;
        s += "\r\nContent-Length: " + std::to_string(length) + "\r\nKeep-Alive: timeout=9\r\n";
        if (!file.empty()) s += file_fields(file);
        s += "\r\n";
        return s;
    }

    /// Last-Modified, ETag and Accept-Ranges of a file below the root.
    std::string file_fields(std::string_view file) const {
        struct stat st {};
        EXPECT_EQ(::stat((root / file).c_str(), &st), 0) << file;
        std::string s = "Last-Modified: ";
        append_http_date(s, st.st_mtim.tv_sec);
        s += "\r\nETag: " +
             make_etag(st.st_mtim.tv_sec, static_cast<std::uint64_t>(st.st_size), st.st_ino);
        s += "\r\nAccept-Ranges: bytes\r\n";
        return s;
    }

    router routes;
    session_settings settings;
};

TEST_F(SessionFilesTest, SmallFileIsSentInline) {
    session s(settings);
    std::size_t used = 0;
    const std::string_view req = "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(consume(s, req, &used), "HTTP/1.1 200 OK\r\n"
                                      "Server: tarry\r\n"
                                      "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                                      "Content-Type: text/plain; charset=utf-8\r\n"
                                      "Content-Length: 13\r\n"
                                      "Keep-Alive: timeout=9\r\n" +
                                          file_fields("hello.txt") +
                                          "\r\n"
                                          "Hello, file!\n");
    EXPECT_EQ(used, req.size());
    EXPECT_FALSE(s.has_file());
    EXPECT_FALSE(s.closing());
}

TEST_F(SessionFilesTest, HeadHasNoBody) {
    session s(settings);
    EXPECT_EQ(consume(s, "HEAD /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("200 OK", "text/plain; charset=utf-8", hello_text.size(), "hello.txt"));
    EXPECT_FALSE(s.has_file());
    EXPECT_EQ(consume(s, "HEAD /big.bin HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("200 OK", "application/octet-stream", big_size, "big.bin"));
    EXPECT_FALSE(s.has_file());
}

TEST_F(SessionFilesTest, DirectoryAndAbsoluteForm) {
    session s(settings);
    EXPECT_EQ(consume(s, "GET /sub/ HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("200 OK", "text/html; charset=utf-8", sub_index_text.size(), "sub/index.html") +
                  std::string(sub_index_text));
    EXPECT_EQ(
        consume(s, "GET http://example.com/hello.txt?q HTTP/1.1\r\nHost: example.com\r\n\r\n"),
        head("200 OK", "text/plain; charset=utf-8", hello_text.size(), "hello.txt") +
            std::string(hello_text));
    EXPECT_EQ(consume(s, "GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"),
              head("200 OK", "text/html; charset=utf-8", index_text.size(), "index.html") +
                  std::string(index_text));
}

TEST_F(SessionFilesTest, ErrorsKeepTheConnection) {
    session s(settings);
    EXPECT_EQ(consume(s, "GET /missing HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("404 Not Found", "text/plain", 10) + "Not Found\n");
    EXPECT_EQ(consume(s, "GET /../outside.txt HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("404 Not Found", "text/plain", 10) + "Not Found\n");
    EXPECT_EQ(consume(s, "GET /link_out HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("404 Not Found", "text/plain", 10) + "Not Found\n");
    EXPECT_EQ(consume(s, "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("400 Bad Request", "text/plain", 12) + "Bad Request\n");
    EXPECT_FALSE(s.closing());
}

TEST_F(SessionFilesTest, LargeFileIsStreamed) {
    session s(settings);
    const std::string_view req = "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string next = "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string input = std::string(req) + next;
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used),
              head("200 OK", "application/octet-stream", big_size, "big.bin"));
    // The file goes out before anything else is answered.
    EXPECT_EQ(used, req.size());
    ASSERT_TRUE(s.has_file());
    EXPECT_EQ(s.file().offset, 0U);
    EXPECT_EQ(s.file().remaining, big_size);
    ASSERT_TRUE(s.file().fd);
    EXPECT_EQ(read_all(s.file().fd.get(), big_size), big);
    EXPECT_EQ(consume(s, next, &used), "");
    EXPECT_EQ(used, 0U);

    s.file_done();
    EXPECT_FALSE(s.has_file());
    EXPECT_EQ(consume(s, next, &used),
              head("200 OK", "text/plain; charset=utf-8", hello_text.size(), "hello.txt") +
                  std::string(hello_text));
    EXPECT_EQ(used, next.size());
}

TEST_F(SessionFilesTest, SixteenKibIsStillInline) {
    session s(settings);
    EXPECT_EQ(consume(s, "GET /edge.bin HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("200 OK", "application/octet-stream", 16 * 1024, "edge.bin") +
                  std::string(16 * 1024, 'E'));
    EXPECT_FALSE(s.has_file());
}

TEST_F(SessionFilesTest, EmptyFile) {
    session s(settings);
    EXPECT_EQ(consume(s, "GET /empty.txt HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("200 OK", "text/plain; charset=utf-8", 0, "empty.txt"));
    EXPECT_FALSE(s.has_file());
}

TEST_F(SessionFilesTest, NotModifiedHasValidatorsAndNoBodyOrLength) {
    session s(settings);
    const std::string fields = file_fields("hello.txt");
    const auto etag_at = fields.find("ETag: ") + 6;
    const std::string etag = fields.substr(etag_at, fields.find('\r', etag_at) - etag_at);
    const std::string last_modified = fields.substr(0, fields.find("ETag: "));
    EXPECT_EQ(
        consume(s, "GET /hello.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: " + etag + "\r\n\r\n"),
        "HTTP/1.1 304 Not Modified\r\nServer: tarry\r\nDate: " + std::string(date) +
            "\r\nKeep-Alive: timeout=9\r\n" + last_modified + "ETag: " + etag + "\r\n\r\n");
    EXPECT_FALSE(s.closing());
    // The next request on the connection is read right after it.
    EXPECT_EQ(consume(s, "HEAD /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"),
              head("200 OK", "text/plain; charset=utf-8", hello_text.size(), "hello.txt"));
}

TEST_F(SessionFilesTest, RangeOfALargeFileIsStreamedFromItsOffset) {
    session s(settings);
    const std::string out =
        consume(s, "GET /big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=100-17099\r\n\r\n");
    EXPECT_EQ(out.substr(0, 24), "HTTP/1.1 206 Partial Con");
    EXPECT_NE(out.find("\r\nContent-Length: 17000\r\n"), std::string::npos);
    EXPECT_NE(out.find("\r\nContent-Range: bytes 100-17099/20000\r\n"), std::string::npos);
    ASSERT_TRUE(s.has_file());
    EXPECT_EQ(s.file().offset, 100U);
    EXPECT_EQ(s.file().remaining, 17000U);
}

TEST_F(SessionFilesTest, CacheControlOnCacheableAnswersOnly) {
    router r;
    r.add("/", std::make_shared<files_handler>(root, "public, max-age=60"));
    settings.routes = &r;
    session s(settings);
    EXPECT_NE(consume(s, "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
                  .find("\r\nCache-Control: public, max-age=60\r\n"),
              std::string::npos);
    EXPECT_NE(consume(s, "GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-0\r\n\r\n")
                  .find("\r\nCache-Control: public, max-age=60\r\n"),
              std::string::npos);
    EXPECT_NE(consume(s, "GET /hello.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: *\r\n\r\n")
                  .find("\r\nCache-Control: public, max-age=60\r\n"),
              std::string::npos);
    EXPECT_EQ(consume(s, "GET /missing HTTP/1.1\r\nHost: x\r\n\r\n").find("Cache-Control"),
              std::string::npos);
    settings.routes = &routes;
}

TEST_F(SessionFilesTest, OpenFilesAreKeptForTheirValidityThenReopened) {
    router r;
    r.add("/", std::make_shared<files_handler>(root, "", 10, 300ms));
    settings.routes = &r;
    session s(settings);
    const std::string req = "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_NE(consume(s, req).find(hello_text), std::string::npos);
    // Replaced (a new inode): the kept descriptor still reads the old file for a while.
    write_file(root / "hello.txt.new", "Hello, new file!\n");
    fs::rename(root / "hello.txt.new", root / "hello.txt");
    const auto replaced = std::chrono::steady_clock::now();
    const std::string during = consume(s, req);
    if (std::chrono::steady_clock::now() - replaced < 300ms) {
        EXPECT_NE(during.find(hello_text), std::string::npos);
    }
    std::this_thread::sleep_for(350ms);
    const std::string after = consume(s, req);
    EXPECT_NE(after.find("Hello, new file!\n"), std::string::npos);
    EXPECT_NE(after.find(file_fields("hello.txt")), std::string::npos);
    settings.routes = &routes;
}

TEST_F(SessionFilesTest, WithoutTheCacheEveryRequestOpensAfresh) {
    router r;
    r.add("/", std::make_shared<files_handler>(root, "", 0, 0ms));
    settings.routes = &r;
    session s(settings);
    const std::string req = "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_NE(consume(s, req).find(hello_text), std::string::npos);
    write_file(root / "hello.txt.new", "Hello, new file!\n");
    fs::rename(root / "hello.txt.new", root / "hello.txt");
    EXPECT_NE(consume(s, req).find("Hello, new file!\n"), std::string::npos);
    // A large file goes to the connection with the handler's own descriptor.
    consume(s, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(s.has_file());
    EXPECT_EQ(read_all(s.file().fd.get(), big_size), big);
    s.file_done();
    settings.routes = &routes;
}

TEST_F(SessionFilesTest, DrainWhileAFileIsPendingClosesAfterIt) {
    session s(settings);
    consume(s, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(s.has_file());
    s.drain();
    EXPECT_FALSE(s.closing()); // the file still has to go out
    s.file_done();
    EXPECT_TRUE(s.closing()); // and then nothing else is left
}

} // namespace
} // namespace tarry::http::test
