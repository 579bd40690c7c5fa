// The reverse proxy through HTTP/2: requests on h2 streams (h2c with prior knowledge) proxied
// to a real Node.js application over HTTP/1.1 (tests/upstream/backend.js). Request bodies go
// upstream as the client's windows let them come, streamed responses come down under flow
// control, and a stream the client resets cancels its upstream request at once: the pooled
// connection is closed, never reused mid-response.
#include "child_process.hpp"
#include "proxy_fixture.hpp"

#include <cstdio>
#include <string>

using namespace std::chrono_literals;

namespace tarry::test {
namespace {

class ProxyH2Test : public ProxyTest {
protected:
    static inline std::unique_ptr<node_backend> node;
    static void SetUpTestSuite() { node = std::make_unique<node_backend>(); }
    static void TearDownTestSuite() { node.reset(); }

    void start_proxy() {
        ASSERT_NE(node->port(), 0) << "node did not start";
        cfg.http2 = true;
        ups.servers = {
            upstream::server_address::parse("127.0.0.1:" + std::to_string(node->port()))};
        start();
    }
    [[nodiscard]] run_result python(const std::string& args) const {
        return run_shell("/usr/bin/python3 " TARRY_H2_CLIENT " " + std::to_string(port) + " " +
                         args);
    }
};

TEST_F(ProxyH2Test, CurlGetsAnAnswerOfUnknownLength) {
    start_proxy();
    const run_result r =
        run_shell("curl -sS --max-time 20 --http2-prior-knowledge -i http://127.0.0.1:" +
                  std::to_string(port) + "/api/hello");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("HTTP/2 200"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("transfer-encoding"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("hello from the application"), std::string::npos) << r.output;
}

TEST_F(ProxyH2Test, PostLargerThanTheWindowGoesUpstream) {
    start_proxy();
    const run_result r = python("post 1000000 /upload");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "200 1000000\n");
}

TEST_F(ProxyH2Test, StreamedResponsesComeDownUnderFlowControl) {
    start_proxy();
    const run_result r = python("streams 6 /stream?n=2000000");
    ASSERT_EQ(r.status, 0) << r.output;
    std::string expected;
    for (int i = 0; i < 6; ++i)
        expected += "200 2000000\n";
    EXPECT_EQ(r.output, expected);
}

TEST_F(ProxyH2Test, AResetStreamCancelsItsUpstreamRequestAtOnce) {
    start_proxy();
    // /stall sends a head and a piece, then nothing for 5 s: the reset comes in between.
    const run_result r = python("reset /stall");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "reset 200\n");
    // The stalled request's connection is closed, not waiting to be pooled when /stall ends;
    // the second request's is idle in the pool.
    ASSERT_TRUE(eventually([&] { return metrics().busy.get() == 0; }));
    std::int64_t closed = 0;
    for (const auto& c : metrics().closes)
        closed += c.get();
    EXPECT_GE(closed, 1);
    EXPECT_LE(metrics().idle.get(), 1);
}

} // namespace
} // namespace tarry::test
