#include <tarry/upstream/upstream_error_log.hpp>

#include <gtest/gtest.h>

namespace tarry::upstream {
namespace {

TEST(ErrorRateLimit, OneEventPerServerAndKindEachSecondAndTheNextCountsTheRest) {
    error_rate_limit limit;
    EXPECT_EQ(limit.admit("127.0.0.1:3000", failure_kind::connect, 10), 0U);
    for (int i = 0; i < 49; ++i)
        EXPECT_FALSE(limit.admit("127.0.0.1:3000", failure_kind::connect, 10));
    // Another kind, another server: keys of their own.
    EXPECT_EQ(limit.admit("127.0.0.1:3000", failure_kind::timeout, 10), 0U);
    EXPECT_EQ(limit.admit("127.0.0.1:3001", failure_kind::connect, 10), 0U);
    EXPECT_EQ(limit.admit("127.0.0.1:3000", failure_kind::connect, 11), 49U);
    EXPECT_EQ(limit.admit("127.0.0.1:3000", failure_kind::connect, 20), 0U);
}

TEST(UpstreamFailure, ReadsAsNginxsErrorLog) {
    http::request_head req;
    req.method = boost::beast::http::verb::get;
    req.target = "/a?b=\"c\"\x01\xC3\xA9";
    upstream_failure f;
    f.kind = failure_kind::connect;
    f.server = "127.0.0.1:3000";
    f.reason = "connect() failed (111: Connection refused)";
    f.during = "while connecting to upstream";
    f.client = "10.0.0.1";
    f.request = &req;
    EXPECT_EQ(describe(f),
              "upstream connect() failed (111: Connection refused) while connecting to upstream, "
              "client: 10.0.0.1, request: \"GET /a?b=\\x22c\\x22\\x01\\xC3\\xA9 HTTP/1.1\", "
              "upstream: \"http://127.0.0.1:3000/a?b=\\x22c\\x22\\x01\\xC3\\xA9\"");
    f.server = "unix:/run/app.sock";
    f.request = nullptr;
    f.client = {};
    EXPECT_EQ(describe(f), "upstream connect() failed (111: Connection refused) while connecting "
                           "to upstream, client: -, upstream: \"http://unix:/run/app.sock/\"");
}

TEST(UpstreamFailure, ALongTargetIsCut) {
    http::request_head req;
    req.target = "/" + std::string(4000, 'a');
    upstream_failure f;
    f.reason = "connection failed";
    f.request = &req;
    const std::string line = describe(f);
    EXPECT_LT(line.size(), 700U);
    EXPECT_NE(line.find("aaa... HTTP/1.1\""), std::string::npos) << line;
}

} // namespace
} // namespace tarry::upstream
