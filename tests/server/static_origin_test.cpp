// The static-files handler as browsers, caches and download managers use it, over real sockets
// against the server running in-process on 127.0.0.1:0.
#include "test_client.hpp"

#include <tarry/http/files_handler.hpp>
#include <tarry/server/server.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;
using server::config;

void write_file(const fs::path& path, const std::string& content) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
}

/// The value of field `name` in a response head, or empty.
std::string field(const response& r, const std::string& name) {
    const auto at = r.head.find("\r\n" + name + ": ");
    if (at == std::string::npos) return {};
    const auto start = at + name.size() + 4;
    return r.head.substr(start, r.head.find("\r\n", start) - start);
}

class StaticOriginTest : public ::testing::Test {
protected:
    config cfg;
    std::unique_ptr<server::server> srv;
    std::thread runner;
    std::uint16_t port = 0;
    fs::path root;
    std::string big; ///< 300 KiB: ranges of it go out with sendfile

    void SetUp() override {
        static std::atomic<unsigned> counter{0};
        root = fs::temp_directory_path() / ("tarry_static_origin_" + std::to_string(::getpid()) +
                                            "_" + std::to_string(counter++));
        fs::remove_all(root);
        fs::create_directories(root / "docs");
        write_file(root / "page.html", "<p>version one</p>\n");
        write_file(root / "docs" / "index.html", "<p>docs</p>\n");
        write_file(root / "hello.txt", "Hello, file!\n");
        big.resize(std::size_t{300} * 1024);
        for (std::size_t i = 0; i < big.size(); ++i)
            big[i] = static_cast<char>('a' + (i * 7 + i / 1024) % 26);
        write_file(root / "big.bin", big);
        write_file(root / "app.js", "console.log('plain');\n");
        write_file(root / "app.js.gz", "pretend this is gzip");
        write_file(root / "both.css", "body{}\n");
        write_file(root / "both.css.gz", "gzip bytes");
        write_file(root / "both.css.br", "br bytes");
        cfg.listen = {{"127.0.0.1", 0}};
        cfg.workers = 1;
        cfg.drain_timeout = 5s;
        cfg.docroot = root;
        srv = std::make_unique<server::server>(cfg, std::vector<std::string>{},
                                               std::vector<server::custom_route>{});
        port = srv->endpoints().at(0).port();
        runner = std::thread([this] { srv->run(); });
    }

    void TearDown() override {
        srv->stop();
        runner.join();
        std::error_code ec;
        fs::remove_all(root, ec);
    }

    /// Sends one GET with `fields` (whole lines) on `c` and reads the answer.
    static response get(test_client& c, const std::string& target, const std::string& fields = {}) {
        EXPECT_TRUE(c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n" + fields + "\r\n"));
        auto r = c.read_response();
        EXPECT_TRUE(r) << target;
        return r ? *r : response{};
    }
};

TEST_F(StaticOriginTest, BrowserRevalidation) {
    test_client c(port);
    ASSERT_TRUE(c.connected());
    const response first = get(c, "/page.html");
    EXPECT_EQ(first.status, 200);
    EXPECT_EQ(first.body, "<p>version one</p>\n");
    const std::string etag = field(first, "ETag");
    const std::string last_modified = field(first, "Last-Modified");
    ASSERT_FALSE(etag.empty());
    ASSERT_FALSE(last_modified.empty());
    EXPECT_EQ(etag.front(), '"'); // strong
    EXPECT_EQ(field(first, "Accept-Ranges"), "bytes");

    // The browser revalidates with what it stored: 304, validators again, no body.
    const response again = get(c, "/page.html", "If-None-Match: " + etag + "\r\n");
    EXPECT_EQ(again.status, 304);
    EXPECT_EQ(field(again, "ETag"), etag);
    EXPECT_EQ(field(again, "Last-Modified"), last_modified);
    EXPECT_TRUE(again.body.empty());
    EXPECT_EQ(field(again, "Content-Length"), "");
    const response by_date = get(c, "/page.html", "If-Modified-Since: " + last_modified + "\r\n");
    EXPECT_EQ(by_date.status, 304);

    // The file is deployed anew (a new file renamed over the old one, as deploy tools do).
    write_file(root / "page.html.new", "<p>version two, longer</p>\n");
    fs::rename(root / "page.html.new", root / "page.html");
    // Open files are trusted for a while (nginx's open_file_cache_valid); past it, the new file.
    std::this_thread::sleep_for(http::files_handler::default_open_file_valid + 100ms);
    const response changed = get(c, "/page.html", "If-None-Match: " + etag + "\r\n");
    EXPECT_EQ(changed.status, 200);
    EXPECT_EQ(changed.body, "<p>version two, longer</p>\n");
    EXPECT_NE(field(changed, "ETag"), etag);
    EXPECT_FALSE(c.closed());
}

TEST_F(StaticOriginTest, FailedPreconditionIs412) {
    test_client c(port);
    EXPECT_EQ(get(c, "/page.html", "If-Match: \"not-it\"\r\n").status, 412);
    EXPECT_EQ(get(c, "/page.html", "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n").status,
              412);
    EXPECT_EQ(get(c, "/page.html", "If-Match: *\r\n").status, 200);
}

TEST_F(StaticOriginTest, ResumedDownload) {
    test_client c(port);
    const response first = get(c, "/big.bin", "Range: bytes=0-99999\r\n");
    ASSERT_EQ(first.status, 206);
    EXPECT_EQ(field(first, "Content-Range"), "bytes 0-99999/307200");
    EXPECT_EQ(first.body.size(), 100000U);
    const std::string etag = field(first, "ETag");
    // The download manager resumes where it stopped, only if the file is still the same.
    const response rest = get(c, "/big.bin", "Range: bytes=100000-\r\nIf-Range: " + etag + "\r\n");
    ASSERT_EQ(rest.status, 206);
    EXPECT_EQ(field(rest, "Content-Range"), "bytes 100000-307199/307200");
    EXPECT_TRUE(first.body + rest.body == big);
    // A suffix range, small enough to go inline.
    const response tail = get(c, "/big.bin", "Range: bytes=-10\r\n");
    EXPECT_EQ(tail.status, 206);
    EXPECT_EQ(tail.body, big.substr(big.size() - 10));
    EXPECT_FALSE(c.closed());
}

TEST_F(StaticOriginTest, IfRangeWithAStaleValidatorSendsTheWholeFile) {
    test_client c(port);
    const response stale = get(c, "/big.bin", "Range: bytes=100-\r\nIf-Range: \"stale\"\r\n");
    EXPECT_EQ(stale.status, 200);
    EXPECT_EQ(stale.body.size(), big.size());
    EXPECT_TRUE(stale.body == big);
    const response old_date =
        get(c, "/big.bin", "Range: bytes=100-\r\nIf-Range: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
    EXPECT_EQ(old_date.status, 200);
    const response same_date =
        get(c, "/big.bin",
            "Range: bytes=100-199\r\nIf-Range: " + field(stale, "Last-Modified") + "\r\n");
    EXPECT_EQ(same_date.status, 206);
    EXPECT_EQ(same_date.body, big.substr(100, 100));
}

TEST_F(StaticOriginTest, UnsatisfiableMalformedAndSeveralRanges) {
    test_client c(port);
    const response r416 = get(c, "/hello.txt", "Range: bytes=500-\r\n");
    EXPECT_EQ(r416.status, 416);
    EXPECT_EQ(field(r416, "Content-Range"), "bytes */13");
    const response malformed = get(c, "/hello.txt", "Range: bytes=9-2\r\n");
    EXPECT_EQ(malformed.status, 200);
    EXPECT_EQ(malformed.body, "Hello, file!\n");
    const response other_unit = get(c, "/hello.txt", "Range: lines=1-2\r\n");
    EXPECT_EQ(other_unit.status, 200);
    const response several = get(c, "/hello.txt", "Range: bytes=0-1,5-6\r\n");
    EXPECT_EQ(several.status, 200);
    EXPECT_EQ(several.body, "Hello, file!\n");
    EXPECT_FALSE(c.closed());
}

TEST_F(StaticOriginTest, PrecompressedGzip) {
    test_client c(port);
    const response plain = get(c, "/app.js");
    EXPECT_EQ(plain.status, 200);
    EXPECT_EQ(plain.body, "console.log('plain');\n");
    EXPECT_EQ(field(plain, "Content-Encoding"), "");
    EXPECT_EQ(field(plain, "Vary"), "Accept-Encoding");

    const response gz = get(c, "/app.js", "Accept-Encoding: gzip, deflate\r\n");
    EXPECT_EQ(gz.status, 200);
    EXPECT_EQ(gz.body, "pretend this is gzip");
    EXPECT_EQ(field(gz, "Content-Encoding"), "gzip");
    EXPECT_EQ(field(gz, "Vary"), "Accept-Encoding");
    EXPECT_EQ(field(gz, "Content-Type"), "text/javascript; charset=utf-8");
    EXPECT_NE(field(gz, "ETag"), field(plain, "ETag"));

    // Each representation revalidates against its own ETag.
    const response gz304 =
        get(c, "/app.js", "Accept-Encoding: gzip\r\nIf-None-Match: " + field(gz, "ETag") + "\r\n");
    EXPECT_EQ(gz304.status, 304);
    EXPECT_EQ(field(gz304, "Vary"), "Accept-Encoding");
    EXPECT_EQ(get(c, "/app.js", "If-None-Match: " + field(gz, "ETag") + "\r\n").status, 200);
    EXPECT_EQ(get(c, "/app.js", "Accept-Encoding: gzip;q=0\r\n").body, "console.log('plain');\n");
    // A file with no sibling says nothing of encodings.
    EXPECT_EQ(field(get(c, "/hello.txt", "Accept-Encoding: gzip\r\n"), "Vary"), "");
}

TEST_F(StaticOriginTest, BrotliPreferredWhenBothAreAcceptable) {
    test_client c(port);
    EXPECT_EQ(get(c, "/both.css", "Accept-Encoding: gzip, br\r\n").body, "br bytes");
    EXPECT_EQ(get(c, "/both.css", "Accept-Encoding: gzip, br;q=0.5\r\n").body, "gzip bytes");
    EXPECT_EQ(get(c, "/both.css", "Accept-Encoding: gzip\r\n").body, "gzip bytes");
    EXPECT_EQ(get(c, "/both.css").body, "body{}\n");
}

TEST_F(StaticOriginTest, DirectoryWithoutItsSlashRedirectsKeepingTheQuery) {
    test_client c(port);
    const response r = get(c, "/docs?lang=en&x=1");
    EXPECT_EQ(r.status, 301);
    EXPECT_EQ(field(r, "Location"), "/docs/?lang=en&x=1");
    const response index = get(c, "/docs/?lang=en&x=1");
    EXPECT_EQ(index.status, 200);
    EXPECT_EQ(index.body, "<p>docs</p>\n");
    EXPECT_EQ(get(c, "/hello.txt/").status, 404);
    EXPECT_FALSE(c.closed());
}

TEST_F(StaticOriginTest, OutOfDescriptorsIs503NotA404) {
    test_client c(port);
    ASSERT_EQ(get(c, "/hello.txt").status, 200); // accepted before the limit drops
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    // Use up every descriptor below a lowered limit, so the server's next open fails EMFILE.
    const int highest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(highest, 0);
    std::vector<int> held{highest};
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(highest) + 16;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    for (rlim_t i = 0; i < low.rlim_cur; ++i) {
        const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        held.push_back(fd);
    }
    ASSERT_TRUE(c.send("GET /page.html HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto r = c.read_response();
    for (const int fd : held)
        ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(get(c, "/page.html").status, 200);
}

} // namespace
} // namespace tarry::test
