#include <tarry/server/config.hpp>
#include <tarry/server/config_diff.hpp>
#include <tarry/server/man_page.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace tarry::server::test {
namespace {

namespace fs = std::filesystem;

const fs::path example_file = fs::path(TARRY_SOURCE_TREE) / "server/tarry.example.toml";

// An argv that owns its strings; argv[0] is the program name, as the real one has.
class args {
public:
    args(std::initializer_list<std::string> list) : args(std::vector<std::string>(list)) {}
    explicit args(const std::vector<std::string>& list) : strings_{"tarry"} {
        strings_.insert(strings_.end(), list.begin(), list.end());
        for (const std::string& s : strings_)
            pointers_.push_back(s.c_str());
    }
    int argc() const { return static_cast<int>(pointers_.size()); }
    const char* const* argv() const { return pointers_.data(); }

private:
    std::vector<std::string> strings_;
    std::vector<const char*> pointers_;
};

command_line parse(const args& a) {
    return parse_command_line(a.argc(), a.argv());
}

// The message of the config_error `f` throws, or a test failure if it throws none.
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const config_error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a config_error";
    return "(no error)";
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "\"" << text << "\" does not contain \"" << part << "\"";
}

::testing::AssertionResult one_line(const std::string& text) {
    if (text.find('\n') == std::string::npos && !text.empty()) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "not a single non-empty line: \"" << text << "\"";
}

// config has no operator==, and comparing field by field also names the field that differs.
void expect_same(const config& actual, const config& expected) {
    EXPECT_EQ(actual.listen, expected.listen);
    EXPECT_EQ(actual.docroot, expected.docroot);
    EXPECT_EQ(actual.keep_alive_timeout, expected.keep_alive_timeout);
    EXPECT_EQ(actual.header_timeout, expected.header_timeout);
    EXPECT_EQ(actual.body_timeout, expected.body_timeout);
    EXPECT_EQ(actual.send_timeout, expected.send_timeout);
    EXPECT_EQ(actual.drain_timeout, expected.drain_timeout);
    EXPECT_EQ(actual.max_requests_per_connection, expected.max_requests_per_connection);
    EXPECT_EQ(actual.max_header_bytes, expected.max_header_bytes);
    EXPECT_EQ(actual.max_body_bytes, expected.max_body_bytes);
    EXPECT_EQ(actual.workers, expected.workers);
    EXPECT_EQ(actual.max_connections, expected.max_connections);
    EXPECT_EQ(actual.admin_listen, expected.admin_listen);
    EXPECT_EQ(actual.log_level, expected.log_level);
    EXPECT_EQ(actual.access_log, expected.access_log);
    EXPECT_EQ(actual.expire_batch, expected.expire_batch);
    EXPECT_EQ(actual.timeouts, expected.timeouts);
    EXPECT_EQ(actual.request_timeout, expected.request_timeout);
    EXPECT_EQ(actual.lingering_time, expected.lingering_time);
    EXPECT_EQ(actual.lingering_timeout, expected.lingering_timeout);
    EXPECT_EQ(actual.max_connection_age, expected.max_connection_age);
    EXPECT_EQ(actual.close_spread_time, expected.close_spread_time);
    EXPECT_EQ(actual.keep_alive_min_timeout, expected.keep_alive_min_timeout);
    EXPECT_EQ(actual.trust_forwarded, expected.trust_forwarded);
    EXPECT_EQ(actual.routes, expected.routes);
    EXPECT_EQ(actual.upstreams, expected.upstreams);
}

class ConfigFileTest : public ::testing::Test {
protected:
    fs::path dir;

    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        // One directory per process and test, straight under the temporary directory: tests
        // run in parallel processes, and a shared parent could vanish under another one.
        dir = fs::temp_directory_path() /
              ("tarry_config_test_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir);
        fs::create_directories(dir);
    }

    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    fs::path write(const std::string& text, const std::string& name = "tarry.toml") const {
        const fs::path file = dir / name;
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << text;
        out.close();
        EXPECT_TRUE(out) << "cannot write " << file;
        return file;
    }

    config load(const std::string& text) const { return load_config_file(write(text)); }

    // The error loading `text` gives, asserting it is one line starting with "FILE:LINE: ".
    std::string load_error(const std::string& text, int line) const {
        const fs::path file = write(text);
        const std::string message = error_of([&] { load_config_file(file); });
        EXPECT_TRUE(one_line(message));
        EXPECT_EQ(message.rfind(file.string() + ":" + std::to_string(line) + ": ", 0), 0U)
            << message;
        return message;
    }
};

// --- Defaults --------------------------------------------------------------------------------

TEST(ConfigDefaults, MatchTheDocumentedValues) {
    const config c;
    EXPECT_EQ(c.listen, (std::vector<listen_address>{{"127.0.0.1", 8080}}));
    EXPECT_FALSE(c.docroot);
    EXPECT_EQ(c.keep_alive_timeout, 65s);
    EXPECT_EQ(c.header_timeout, 60s);
    EXPECT_EQ(c.body_timeout, 60s);
    EXPECT_EQ(c.send_timeout, 60s);
    EXPECT_EQ(c.drain_timeout, 10s);
    EXPECT_EQ(c.max_requests_per_connection, 1000U);
    EXPECT_EQ(c.max_header_bytes, 16U * 1024U);
    EXPECT_EQ(c.max_body_bytes, 1024U * 1024U);
    EXPECT_EQ(c.workers, 0U);
    EXPECT_EQ(c.max_connections, 0U);
    EXPECT_FALSE(c.admin_listen);
    EXPECT_EQ(c.log_level, "info");
    EXPECT_FALSE(c.access_log);
    EXPECT_EQ(c.expire_batch, 16U);
    EXPECT_TRUE(c.timeouts);
    EXPECT_FALSE(c.config_file);
    EXPECT_EQ(c.request_timeout, 300s);
    EXPECT_EQ(c.lingering_time, 30s);
    EXPECT_EQ(c.lingering_timeout, 5s);
    EXPECT_EQ(c.max_connection_age, 0s);
    EXPECT_EQ(c.close_spread_time, 1s);
    EXPECT_EQ(c.keep_alive_min_timeout, 1s);
    EXPECT_FALSE(c.trust_forwarded);
    EXPECT_TRUE(c.routes.empty());
    EXPECT_TRUE(c.upstreams.empty());
}

TEST(ConfigDefaults, EmptyCommandLineRunsWithDefaults) {
    const command_line cl = parse(args{});
    EXPECT_EQ(cl.what, command_line::action::run);
    EXPECT_TRUE(cl.help_text.empty());
    expect_same(cl.cfg, config{});
    EXPECT_FALSE(cl.cfg.config_file);
}

// --- Durations -------------------------------------------------------------------------------

TEST(ParseDuration, AcceptsEveryUnit) {
    EXPECT_EQ(parse_duration("1500us", "t"), 1500us);
    EXPECT_EQ(parse_duration("250ms", "t"), 250ms);
    EXPECT_EQ(parse_duration("65s", "t"), 65s);
    EXPECT_EQ(parse_duration("2m", "t"), 2min);
    EXPECT_EQ(parse_duration("1h", "t"), 1h);
    EXPECT_EQ(parse_duration("0s", "t"), duration::zero());
}

TEST(ParseDuration, AcceptsDecimals) {
    EXPECT_EQ(parse_duration("1.5s", "t"), 1500ms);
    EXPECT_EQ(parse_duration("0.25ms", "t"), 250us);
    EXPECT_EQ(parse_duration("1.5us", "t"), 1500ns);
    EXPECT_EQ(parse_duration("0.5h", "t"), 30min);
    EXPECT_EQ(parse_duration("2.000000001s", "t"), 2s + 1ns);
    EXPECT_EQ(parse_duration("0.000000001h", "t"), 3600ns);
}

TEST(ParseDuration, RejectsBareNumbersNegativesAndUnknownUnits) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"65", "a unit is required"},
        {"1.5", "a unit is required"},
        {"", "got \"\""},
        {"-5s", "must not be negative"},
        {"-0s", "must not be negative"},
        {"5d", "unknown unit \"d\""},
        {"5S", "unknown unit \"S\""},
        {"5 s", "unknown unit \" s\""},
        {"5sec", "unknown unit \"sec\""},
        {"s", "got \"s\""},
        {".5s", "got \".5s\""},
        {"1.s", "got \"1.s\""},
        {"+5s", "got \"+5s\""},
        {"1.0000000001s", "at most 9 decimal places"},
        {"0.0005us", "finer than a nanosecond"},
        {"9999999999h", "too large"},
        {"99999999999999999999999s", "too large"},
    };
    for (const auto& [text, reason] : cases) {
        const std::string message = error_of([&t = text] { parse_duration(t, "my_key"); });
        EXPECT_TRUE(one_line(message));
        EXPECT_EQ(message.rfind(R"(my_key: expected a duration such as "65s" or "250ms", got )", 0),
                  0U)
            << message;
        EXPECT_TRUE(contains(message, reason)) << "for " << text;
    }
}

TEST_F(ConfigFileTest, TimeoutsInTheFileAcceptEveryForm) {
    const config c = load("keep_alive_timeout = \"1.5s\"\n"
                          "header_timeout = \"250ms\"\n"
                          "body_timeout = \"2m\"\n"
                          "send_timeout = \"1500us\"\n"
                          "drain_timeout = \"1h\"\n");
    EXPECT_EQ(c.keep_alive_timeout, 1500ms);
    EXPECT_EQ(c.header_timeout, 250ms);
    EXPECT_EQ(c.body_timeout, 2min);
    EXPECT_EQ(c.send_timeout, 1500us);
    EXPECT_EQ(c.drain_timeout, 1h);
}

TEST_F(ConfigFileTest, TimeoutsRejectZeroExceptDrain) {
    for (const std::string key :
         {"keep_alive_timeout", "header_timeout", "body_timeout", "send_timeout"}) {
        const std::string message = load_error("\n" + key + " = \"0s\"\n", 2);
        EXPECT_TRUE(contains(message, key + ": must be more than zero, got \"0s\"")) << message;
    }
    EXPECT_EQ(load("drain_timeout = \"0s\"\n").drain_timeout, duration::zero());
}

TEST_F(ConfigFileTest, TimeoutsRejectMoreThanADay) {
    EXPECT_EQ(load("send_timeout = \"24h\"\n").send_timeout, 24h);
    const std::string message = load_error("send_timeout = \"24.5h\"\n", 1);
    EXPECT_TRUE(contains(message, "send_timeout: must be at most 24h, got \"24.5h\""));
}

TEST_F(ConfigFileTest, BareNumberDurationGivesTheDocumentedMessage) {
    const fs::path file = write("# tarry\n\n\n\n\n\nkeep_alive_timeout = \"65\"\n");
    EXPECT_EQ(error_of([&] { load_config_file(file); }),
              file.string() + R"(:7: keep_alive_timeout: expected a duration such as "65s" or )" +
                  R"("250ms", got "65" (a unit is required: us, ms, s, m or h))");
}

TEST_F(ConfigFileTest, DurationWrittenAsATomlNumberIsRejected) {
    const std::string message = load_error("body_timeout = 65\n", 1);
    EXPECT_TRUE(
        contains(message, R"(body_timeout: expected a duration such as "65s" or "250ms", got 65)"));
}

// --- Sizes -----------------------------------------------------------------------------------

TEST_F(ConfigFileTest, SizesAcceptIntegersAndBinarySuffixes) {
    const std::vector<std::pair<std::string, std::size_t>> cases{
        {"8192", 8192},
        {"\"8192\"", 8192},
        {"\"512b\"", 512},
        {"\"16k\"", 16 * 1024},
        {"\"16K\"", 16 * 1024},
        {"\"16KiB\"", 16 * 1024},
        {"\"16kib\"", 16 * 1024},
        {"\"1m\"", 1024 * 1024},
        {"\"1MiB\"", 1024 * 1024},
        {"\"2g\"", std::size_t{2} * 1024 * 1024 * 1024},
        {"\"1GiB\"", std::size_t{1024} * 1024 * 1024},
    };
    for (const auto& [text, bytes] : cases) {
        const config c = load("max_header_bytes = " + text + "\nmax_body_bytes = " + text + "\n");
        EXPECT_EQ(c.max_header_bytes, bytes) << text;
        EXPECT_EQ(c.max_body_bytes, bytes) << text;
    }
}

TEST_F(ConfigFileTest, SizesRejectZeroNegativesAmbiguousUnitsAndFractions) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"0", "max_header_bytes: must be more than zero, got 0"},
        {"\"0k\"", "max_header_bytes: must be more than zero, got \"0k\""},
        {"-1", "max_header_bytes: expected a size such as 16384, \"16k\" or \"1MiB\", got -1"},
        {"\"-1k\"", "must not be negative"},
        {"\"16kB\"", "\"kB\" is ambiguous"},
        {"\"1MB\"", "\"MB\" is ambiguous"},
        {"\"1.5m\"", "only whole numbers"},
        {"\"16x\"", "unknown unit \"x\""},
        {"\"k\"", "got \"k\""},
        {"\"99999999999g\"", "too large"},
        {"1.5", "got 1.5"},
        {"true", "got true"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string message = load_error("\n\nmax_header_bytes = " + text + "\n", 3);
        EXPECT_TRUE(contains(message, "max_header_bytes: ")) << text;
        EXPECT_TRUE(contains(message, expected)) << text;
    }
}

TEST_F(ConfigFileTest, ZeroBodyBytesMeansNoBodyAllowed) {
    EXPECT_EQ(load("max_body_bytes = 0\n").max_body_bytes, 0U);
}

// --- Counts ----------------------------------------------------------------------------------

TEST_F(ConfigFileTest, CountsAcceptTheirWholeRange) {
    const config c = load("workers = 1024\n"
                          "max_requests_per_connection = 0\n"
                          "max_connections = 100000\n"
                          "expire_batch = 1\n");
    EXPECT_EQ(c.workers, 1024U);
    EXPECT_EQ(c.max_requests_per_connection, 0U);
    EXPECT_EQ(c.max_connections, 100000U);
    EXPECT_EQ(c.expire_batch, 1U);
    EXPECT_EQ(load("max_requests_per_connection = 4294967295\n").max_requests_per_connection,
              4294967295U);
}

TEST_F(ConfigFileTest, CountsRejectValuesOutOfRange) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"workers = 1025",
         "workers: expected an integer from 0 to 1024 (0: one per core), got 1025"},
        {"workers = -1", "workers: expected an integer from 0 to 1024 (0: one per core), got -1"},
        {"max_requests_per_connection = 4294967296",
         "max_requests_per_connection: expected an integer from 0 to 4294967295 (0: unlimited), "
         "got 4294967296"},
        {"max_connections = -5", "max_connections: expected an integer of 0 or more"},
        {"expire_batch = 0", "expire_batch: expected an integer of 1 or more, got 0"},
        {"workers = 4.0", "workers: expected an integer from 0 to 1024 (0: one per core), got 4.0"},
    };
    for (const auto& [text, expected] : cases) {
        EXPECT_TRUE(contains(load_error("# comment\n" + text + "\n", 2), expected));
    }
}

// --- Listen addresses ------------------------------------------------------------------------

TEST(ParseListen, AcceptsIpv4Ipv6AllAddressesAndLocalhost) {
    EXPECT_EQ(parse_listen("127.0.0.1:8080", "l"), (listen_address{"127.0.0.1", 8080}));
    EXPECT_EQ(parse_listen("[::1]:8080", "l"), (listen_address{"::1", 8080}));
    EXPECT_EQ(parse_listen("[::]:443", "l"), (listen_address{"::", 443}));
    EXPECT_EQ(parse_listen("[2001:db8::7]:65535", "l"), (listen_address{"2001:db8::7", 65535}));
    EXPECT_EQ(parse_listen(":8080", "l"), (listen_address{"0.0.0.0", 8080}));
    EXPECT_EQ(parse_listen("localhost:80", "l"), (listen_address{"localhost", 80}));
    EXPECT_EQ(parse_listen("10.0.0.1:0", "l"), (listen_address{"10.0.0.1", 0}));
}

TEST(ParseListen, RejectsMalformedAddresses) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"127.0.0.1", "missing :PORT"},
        {"8080", "missing :PORT"},
        {"127.0.0.1:", "missing port"},
        {"127.0.0.1:65536", "from 0 to 65535"},
        {"127.0.0.1:-1", "from 0 to 65535"},
        {"127.0.0.1:http", "from 0 to 65535"},
        {"::1:8080", "put an IPv6 address in brackets"},
        {"[::1:8080", "unbalanced brackets"},
        {"[::1]8080:", "unbalanced brackets"},
        {"[127.0.0.1]:80", "brackets are only for IPv6"},
        {"[]:80", "brackets are only for IPv6"},
        {"example.com:80", "numeric IP address or localhost"},
        {"1.2.3:80", "numeric IP address or localhost"},
        {"", "missing :PORT"},
    };
    for (const auto& [text, reason] : cases) {
        const std::string message = error_of([&t = text] { parse_listen(t, "my_listen"); });
        EXPECT_TRUE(one_line(message));
        EXPECT_TRUE(contains(message, "my_listen: expected HOST:PORT")) << text;
        EXPECT_TRUE(contains(message, "got \"" + text + "\"")) << text;
        EXPECT_TRUE(contains(message, reason)) << text;
    }
}

TEST(ParseListen, UnixSocketsAndParametersAsNginxWritesThem) {
    const listen_address u = parse_listen("unix:/run/tarry/tarry.sock mode=0660 owner=www-data:adm "
                                          "proxy_protocol",
                                          "listen");
    EXPECT_EQ(u.unix_path, "/run/tarry/tarry.sock");
    EXPECT_EQ(u.mode, 0660U);
    EXPECT_EQ(u.owner, "www-data:adm");
    EXPECT_TRUE(u.proxy_protocol);
    EXPECT_EQ(u.name(), "unix:/run/tarry/tarry.sock");
    const listen_address t = parse_listen("[::1]:8080  proxy_protocol", "listen");
    EXPECT_EQ(t.host, "::1");
    EXPECT_EQ(t.port, 8080);
    EXPECT_TRUE(t.proxy_protocol);
    EXPECT_EQ(t.name(), "[::1]:8080");
    EXPECT_FALSE(parse_listen("unix:/x.sock", "listen").proxy_protocol);
    EXPECT_TRUE(t.same_socket(parse_listen("[::1]:8080", "listen"))) << "parameters aside";
}

TEST(ParseListen, RejectsBadParametersNamingThem) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"unix:", "missing the socket's path"},
        {"unix:/" + std::string(107, 'a'), "at most 107 bytes"},
        {"127.0.0.1:80 mode=0660", "mode is for unix: sockets"},
        {"127.0.0.1:80 owner=root", "owner is for unix: sockets"},
        {"unix:/x.sock mode=0999", "octal permission bits"},
        {"unix:/x.sock mode=01777", "octal permission bits"},
        {"unix:/x.sock mode=", "octal permission bits"},
        {"unix:/x.sock owner=", "USER or USER:GROUP"},
        {"unix:/x.sock owner=:adm", "USER or USER:GROUP"},
        {"unix:/x.sock owner=root:", "USER or USER:GROUP"},
        {"127.0.0.1:80 proxy-protocol", "unknown parameter \"proxy-protocol\""},
    };
    for (const auto& [text, reason] : cases) {
        const std::string message = error_of([&t = text] { parse_listen(t, "listen"); });
        EXPECT_TRUE(one_line(message)) << text;
        EXPECT_TRUE(contains(message, reason)) << text << ": " << message;
    }
}

TEST_F(ConfigFileTest, TheSameSocketTwiceIsRefusedWhateverItsParameters) {
    EXPECT_TRUE(contains(
        error_of([&] { load("listen = [\"unix:/a.sock\", \"unix:/a.sock proxy_protocol\"]\n"); }),
        "listed twice"));
    EXPECT_TRUE(contains(
        error_of([&] { load("listen = [\"127.0.0.1:80\", \"127.0.0.1:80 proxy_protocol\"]\n"); }),
        "listed twice"));
}

TEST_F(ConfigFileTest, OneSocketSpeltTwoWaysIsListedTwice) {
    // SO_REUSEPORT would let both bind and split the traffic between them.
    for (const char* pair : {R"("127.0.0.1:80 proxy_protocol", "localhost:80")",
                             R"("[::1]:80", "[0:0:0:0:0:0:0:1]:80")",
                             R"("unix:/run/a/x.sock", "unix:/run/a/./x.sock")"}) {
        EXPECT_TRUE(contains(error_of([&] { load("listen = [" + std::string(pair) + "]\n"); }),
                             "listed twice"))
            << pair;
    }
}

TEST(ParseCommandLine, AdminListenTakesNoUnixSocketOrParameters) {
    for (const char* bad : {"unix:/a.sock", "127.0.0.1:9090 proxy_protocol"}) {
        const char* argv[] = {"tarry", "--admin-listen", bad};
        const std::string message = error_of([&] { parse_command_line(3, argv); });
        EXPECT_TRUE(contains(message, "--admin-listen: expected HOST:PORT")) << message;
    }
}

TEST_F(ConfigFileTest, ListenIsAStringOrAnArray) {
    EXPECT_EQ(load("listen = \"[::1]:9000\"\n").listen,
              (std::vector<listen_address>{{"::1", 9000}}));
    EXPECT_EQ(load("listen = [\n  \":80\",\n  \"[::1]:81\",\n  \"127.0.0.1:0\",\n"
                   "  \"127.0.0.1:0\",\n]\n")
                  .listen,
              (std::vector<listen_address>{
                  {"0.0.0.0", 80}, {"::1", 81}, {"127.0.0.1", 0}, {"127.0.0.1", 0}}));
}

TEST_F(ConfigFileTest, ListenErrorsPointAtTheBadElement) {
    EXPECT_TRUE(contains(load_error("listen = [\n  \":80\",\n  \"nope\",\n]\n", 3),
                         "listen: expected HOST:PORT such as"));
    EXPECT_TRUE(contains(load_error("listen = [\n  \":80\",\n  \":80\",\n]\n", 3),
                         "listen: \":80\" is listed twice"));
    EXPECT_TRUE(contains(load_error("listen = [\n  \":80\",\n  80,\n]\n", 3),
                         "listen: expected HOST:PORT such as \"127.0.0.1:8080\", \"[::1]:8080\" "
                         "or \":8080\", or unix:PATH, got 80"));
    EXPECT_TRUE(contains(load_error("\nlisten = []\n", 2), "listen: needs at least one"));
    EXPECT_TRUE(contains(load_error("listen = 8080\n", 1), "listen: expected a HOST:PORT string"));
}

TEST_F(ConfigFileTest, AdminListenTakesOneAddress) {
    EXPECT_EQ(load("admin_listen = \"[::1]:9090\"\n").admin_listen, (listen_address{"::1", 9090}));
    EXPECT_TRUE(contains(load_error("admin_listen = [\":9090\"]\n", 1),
                         "admin_listen: expected HOST:PORT such as"));
}

// --- The rest of the keys --------------------------------------------------------------------

TEST_F(ConfigFileTest, EveryKeyIsReadFromTheFile) {
    const config c = load("listen = [\"[::1]:1\", \":2\"]\n"
                          "docroot = \"/srv/www\"\n"
                          "keep_alive_timeout = \"5s\"\n"
                          "header_timeout = \"6s\"\n"
                          "body_timeout = \"7s\"\n"
                          "send_timeout = \"8s\"\n"
                          "drain_timeout = \"9s\"\n"
                          "max_requests_per_connection = 10\n"
                          "max_header_bytes = \"11k\"\n"
                          "max_body_bytes = \"12m\"\n"
                          "workers = 13\n"
                          "max_connections = 14\n"
                          "admin_listen = \"127.0.0.1:15\"\n"
                          "log_level = \"trace\"\n"
                          "access_log = \"-\"\n"
                          "expire_batch = 17\n"
                          "timeouts = false\n");
    config expected;
    expected.listen = {{"::1", 1}, {"0.0.0.0", 2}};
    expected.docroot = "/srv/www";
    expected.keep_alive_timeout = 5s;
    expected.header_timeout = 6s;
    expected.body_timeout = 7s;
    expected.send_timeout = 8s;
    expected.drain_timeout = 9s;
    expected.max_requests_per_connection = 10;
    expected.max_header_bytes = 11 * 1024;
    expected.max_body_bytes = 12 * 1024 * 1024;
    expected.workers = 13;
    expected.max_connections = 14;
    expected.admin_listen = listen_address{"127.0.0.1", 15};
    expected.log_level = "trace";
    expected.access_log = "-";
    expected.expire_batch = 17;
    expected.timeouts = false;
    expect_same(c, expected);
    EXPECT_EQ(c.config_file, dir / "tarry.toml");
}

TEST_F(ConfigFileTest, FileOnlyOverridesTheKeysItSets) {
    config base;
    base.workers = 3;
    base.log_level = "error";
    const config c = load_config_file(write("log_level = \"debug\"\n"), base);
    EXPECT_EQ(c.workers, 3U);
    EXPECT_EQ(c.log_level, "debug");
}

TEST_F(ConfigFileTest, LogLevelMustBeKnown) {
    for (const std::string level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
        EXPECT_EQ(load("log_level = \"" + level + "\"\n").log_level, level);
    }
    EXPECT_TRUE(contains(load_error("\nlog_level = \"verbose\"\n", 2),
                         "log_level: expected one of trace, debug, info, warn, error, critical, "
                         "off, got \"verbose\""));
    EXPECT_TRUE(contains(load_error("log_level = \"INFO\"\n", 1), "got \"INFO\""));
}

TEST_F(ConfigFileTest, PathsMustNotBeEmpty) {
    EXPECT_TRUE(contains(load_error("docroot = \"\"\n", 1), "docroot: expected a directory path"));
    EXPECT_TRUE(contains(load_error("access_log = \"\"\n", 1), "access_log: expected a file path"));
}

// --- File errors -----------------------------------------------------------------------------

TEST_F(ConfigFileTest, UnknownKeyNamesTheKeyTheLineAndTheClosestKey) {
    const fs::path file = write("# tarry\nworkers = 2\nkeepalive_timeout = \"65s\"\n");
    EXPECT_EQ(error_of([&] { load_config_file(file); }),
              file.string() +
                  ":3: unknown key \"keepalive_timeout\" (did you mean \"keep_alive_timeout\"?)");
}

TEST_F(ConfigFileTest, UnknownKeysWithDashesOrTablesAreExplained) {
    EXPECT_TRUE(contains(load_error("\nmax-body-bytes = 5\n", 2),
                         "unknown key \"max-body-bytes\" (did you mean \"max_body_bytes\"?)"));
    EXPECT_TRUE(contains(load_error("workers = 1\n\n[server]\nport = 80\n", 3),
                         "unknown key \"server\" (tarry's settings are all top-level keys"));
    EXPECT_TRUE(
        contains(load_error("config_file = \"x.toml\"\n", 1), "unknown key \"config_file\""));
}

TEST_F(ConfigFileTest, WrongTypeNamesTheKeyAndTheLine) {
    EXPECT_TRUE(contains(load_error("\nworkers = \"4\"\n", 2),
                         "workers: expected an integer from 0 to 1024 (0: one per core), got "
                         "\"4\""));
    EXPECT_TRUE(
        contains(load_error("\n\ntimeouts = \"yes\"\n", 3), "timeouts: expected true or false"));
    EXPECT_TRUE(
        contains(load_error("docroot = [\"a\"]\n", 1), "docroot: expected a directory path"));
    EXPECT_TRUE(contains(load_error("log_level = 3\n", 1), "log_level: expected one of"));
    EXPECT_TRUE(contains(load_error("header_timeout = { s = 1 }\n", 1), "got a table"));
}

TEST_F(ConfigFileTest, TomlSyntaxErrorHasTheLine) {
    const std::string message = load_error("workers = 1\n\n\nlog_level = = \"info\"\n", 4);
    EXPECT_TRUE(contains(message, "TOML syntax error: ")) << message;
    EXPECT_TRUE(contains(load_error("workers = 1\nworkers = 2\n", 2), "TOML syntax error: "));
    EXPECT_TRUE(contains(load_error("\nlog_level = \"info\n", 2), "TOML syntax error: "));
}

TEST_F(ConfigFileTest, ErrorsAreReportedInFileOrder) {
    // "admin_listen" sorts first, but the workers line comes first in the file.
    const std::string message = load_error("workers = -1\nadmin_listen = \"x\"\n", 1);
    EXPECT_TRUE(contains(message, "workers: "));
}

TEST_F(ConfigFileTest, MessagesStayOnOneLine) {
    const std::string message = load_error("log_level = \"in\\nfo\"\n", 1);
    EXPECT_TRUE(contains(message, R"(got "in\x0afo")")) << message;
}

TEST_F(ConfigFileTest, MissingFileIsAnError) {
    const fs::path file = dir / "absent.toml";
    const std::string message = error_of([&] { load_config_file(file); });
    EXPECT_TRUE(one_line(message));
    EXPECT_EQ(message, file.string() + ": cannot read the config file: No such file or directory");
    EXPECT_EQ(error_of([&] { parse(args{"--config", file.string()}); }), message);
}

TEST_F(ConfigFileTest, DirectoryIsNotAConfigFile) {
    EXPECT_EQ(error_of([&] { load_config_file(dir); }),
              dir.string() + ": cannot read the config file: it is a directory");
}

TEST_F(ConfigFileTest, EmptyFileKeepsTheBase) {
    const config c = load("# nothing here\n");
    expect_same(c, config{});
    EXPECT_EQ(c.config_file, dir / "tarry.toml");
}

// --- Command line ----------------------------------------------------------------------------

TEST(CommandLine, EveryFlagSetsItsField) {
    const command_line cl = parse(args{"--listen",
                                       "[::1]:1",
                                       "--listen=:2",
                                       "--docroot",
                                       "/srv/www",
                                       "--keep-alive-timeout",
                                       "5s",
                                       "--header-timeout",
                                       "6s",
                                       "--body-timeout",
                                       "7s",
                                       "--send-timeout",
                                       "8s",
                                       "--drain-timeout=0s",
                                       "--max-requests",
                                       "0",
                                       "--workers",
                                       "13",
                                       "--max-connections",
                                       "14",
                                       "--admin-listen",
                                       "127.0.0.1:15",
                                       "--log-level",
                                       "warn",
                                       "--access-log",
                                       "-",
                                       "--no-timeouts"});
    config expected;
    expected.listen = {{"::1", 1}, {"0.0.0.0", 2}};
    expected.docroot = "/srv/www";
    expected.keep_alive_timeout = 5s;
    expected.header_timeout = 6s;
    expected.body_timeout = 7s;
    expected.send_timeout = 8s;
    expected.drain_timeout = 0s;
    expected.max_requests_per_connection = 0;
    expected.workers = 13;
    expected.max_connections = 14;
    expected.admin_listen = listen_address{"127.0.0.1", 15};
    expected.log_level = "warn";
    expected.access_log = "-";
    expected.timeouts = false;
    EXPECT_EQ(cl.what, command_line::action::run);
    expect_same(cl.cfg, expected);
    EXPECT_FALSE(cl.cfg.config_file);
}

TEST(CommandLine, DecimalDurationFlag) {
    EXPECT_EQ(parse(args{"--keep-alive-timeout", "1.5s"}).cfg.keep_alive_timeout, 1500ms);
}

TEST(CommandLine, EachBadFlagNamesTheFlag) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--keep-alive-timeout", "abc"},
         R"(--keep-alive-timeout: expected a duration such as "65s" or "250ms", got "abc")"},
        {{"--keep-alive-timeout", "65"}, R"(--keep-alive-timeout: expected a duration)"},
        {{"--header-timeout", "0s"}, "--header-timeout: must be more than zero, got \"0s\""},
        {{"--body-timeout", "5d"}, "--body-timeout: expected a duration"},
        {{"--send-timeout=-1s"}, "--send-timeout: expected a duration"},
        {{"--drain-timeout", "25h"}, "--drain-timeout: must be at most 24h"},
        {{"--max-requests", "-1"},
         "--max-requests: expected an integer from 0 to 4294967295 (0: unlimited), got \"-1\""},
        {{"--max-requests", "4294967296"}, "--max-requests: expected an integer"},
        {{"--workers", "abc"},
         "--workers: expected an integer from 0 to 1024 (0: one per core), got \"abc\""},
        {{"--workers", "1025"}, "--workers: expected an integer from 0 to 1024"},
        {{"--workers", "+4"}, "--workers: expected an integer"},
        {{"--max-connections", "1e3"}, "--max-connections: expected an integer of 0 or more"},
        {{"--listen", "nope"}, "--listen: expected HOST:PORT"},
        {{"--listen", ":80", "--listen", ":80"}, "--listen: \":80\" is listed twice"},
        {{"--admin-listen", "1.2.3.4"}, "--admin-listen: expected HOST:PORT"},
        {{"--log-level", "verbose"}, "--log-level: expected one of trace, debug, info"},
        {{"--docroot"}, "--docroot: expected a value"},
        {{"--docroot", "--workers", "2"}, "--docroot: expected a value"},
        {{"--access-log", ""}, "--access-log: expected a value"},
        {{"--config"}, "--config: expected a value"},
        {{"--listen"}, "--listen: expected a value"},
        {{"--workers", "1", "--workers", "2"}, "--workers: given more than once"},
        {{"--no-timeouts=false"}, "--no-timeouts: takes no value, got \"false\""},
        {{"--bogus"}, "--bogus: unknown flag"},
        {{"--bogus=1"}, "--bogus: unknown flag"},
        {{"--keepalive-timeout", "5s"},
         "--keepalive-timeout: unknown flag (did you mean --keep-alive-timeout?)"},
        {{"--max-header-bytes", "1k"},
         "--max-header-bytes: unknown flag (max_header_bytes can only be set in the config file)"},
        {{"-x"}, "-x: unknown flag"},
        {{"serve"}, "unexpected argument \"serve\""},
        {{"--workers", "2", "extra"}, "unexpected argument \"extra\""},
        {{"--", "--workers"}, "unexpected argument \"--workers\""},
    };
    for (const auto& [list, expected] : cases) {
        const args a(list);
        const std::string message = error_of([&] { parse(a); });
        EXPECT_TRUE(one_line(message));
        EXPECT_EQ(message.rfind(expected, 0), 0U) << "got: " << message;
    }
}

TEST(CommandLine, CheckConfigAction) {
    const command_line cl = parse(args{"--check-config", "--workers", "3"});
    EXPECT_EQ(cl.what, command_line::action::check_config);
    EXPECT_EQ(cl.cfg.workers, 3U);
}

TEST(CommandLine, HelpActionFillsTheHelpText) {
    for (const std::string flag : {"--help", "-h"}) {
        const command_line cl = parse(args{flag});
        EXPECT_EQ(cl.what, command_line::action::help);
        for (const std::string name :
             {"--config", "--listen", "--docroot", "--keep-alive-timeout", "--header-timeout",
              "--body-timeout", "--send-timeout", "--drain-timeout", "--max-requests", "--workers",
              "--max-connections", "--admin-listen", "--log-level", "--access-log", "--no-timeouts",
              "--check-config", "--version"}) {
            EXPECT_TRUE(contains(cl.help_text, name));
        }
    }
}

TEST(CommandLine, HelpWinsOverABadConfigFile) {
    const command_line cl = parse(args{"--config", "/nonexistent/tarry.toml", "--help"});
    EXPECT_EQ(cl.what, command_line::action::help);
    EXPECT_FALSE(cl.help_text.empty());
}

TEST(CommandLine, VersionAction) {
    const command_line cl = parse(args{"--version", "--config", "/nonexistent/tarry.toml"});
    EXPECT_EQ(cl.what, command_line::action::version);
    EXPECT_TRUE(cl.help_text.empty());
}

TEST(CommandLine, HandlesAnEmptyArgv) {
    EXPECT_EQ(parse_command_line(0, nullptr).what, command_line::action::run);
}

TEST_F(ConfigFileTest, FlagsOverrideTheFileWhichOverridesDefaults) {
    const fs::path file = write("keep_alive_timeout = \"30s\"\n"
                                "header_timeout = \"20s\"\n"
                                "workers = 4\n"
                                "log_level = \"debug\"\n"
                                "timeouts = true\n");
    const command_line cl = parse(args{"--workers", "2", "--config", file.string(),
                                       "--keep-alive-timeout", "5s", "--no-timeouts"});
    EXPECT_EQ(cl.what, command_line::action::run);
    EXPECT_EQ(cl.cfg.keep_alive_timeout, 5s); // flag over file
    EXPECT_EQ(cl.cfg.workers, 2U);            // flag over file, even though given first
    EXPECT_FALSE(cl.cfg.timeouts);            // flag over file
    EXPECT_EQ(cl.cfg.header_timeout, 20s);    // file over default
    EXPECT_EQ(cl.cfg.log_level, "debug");     // file over default
    EXPECT_EQ(cl.cfg.body_timeout, 60s);      // default
    EXPECT_EQ(cl.cfg.config_file, file);
}

TEST_F(ConfigFileTest, ListenFlagsReplaceTheFileList) {
    const fs::path file = write("listen = [\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:3\"]\n");
    EXPECT_EQ(parse(args{"--config", file.string()}).cfg.listen,
              (std::vector<listen_address>{{"127.0.0.1", 1}, {"127.0.0.1", 2}, {"127.0.0.1", 3}}));
    EXPECT_EQ(parse(args{"--config", file.string(), "--listen", "[::1]:8080", "--listen", ":9090"})
                  .cfg.listen,
              (std::vector<listen_address>{{"::1", 8080}, {"0.0.0.0", 9090}}));
}

TEST_F(ConfigFileTest, CheckConfigReadsTheFileAndReportsItsErrors) {
    const fs::path good = write("workers = 7\n", "good.toml");
    const command_line cl = parse(args{"--check-config", "--config", good.string()});
    EXPECT_EQ(cl.what, command_line::action::check_config);
    EXPECT_EQ(cl.cfg.workers, 7U);
    const fs::path bad = write("\nworkers = 7000\n", "bad.toml");
    EXPECT_TRUE(contains(error_of([&] {
                             parse(args{"--check-config", "--config", bad.string()});
                         }),
                         bad.string() + ":2: workers: "));
}

TEST_F(ConfigFileTest, ConfigGivenTwiceIsAnError) {
    const fs::path file = write("workers = 1\n");
    EXPECT_EQ(error_of([&] {
                  parse(args{"--config", file.string(), "--config", file.string()});
              }),
              "--config: given more than once");
}

// --- Reload ----------------------------------------------------------------------------------

TEST_F(ConfigFileTest, ReloadPicksUpTheChangedFileWhileFlagsStillWin) {
    const fs::path file = write("keep_alive_timeout = \"30s\"\nworkers = 4\n");
    const args a{"--config", file.string(), "--workers", "2"};
    const config first = parse(a).cfg;
    EXPECT_EQ(first.keep_alive_timeout, 30s);
    EXPECT_EQ(first.workers, 2U);
    EXPECT_EQ(first.log_level, "info");

    write("keep_alive_timeout = \"10s\"\nworkers = 8\nlog_level = \"warn\"\n");
    const config second = reload_config(first, a.argc(), a.argv());
    EXPECT_EQ(second.keep_alive_timeout, 10s);
    EXPECT_EQ(second.workers, 2U);
    EXPECT_EQ(second.log_level, "warn");
    EXPECT_EQ(second.config_file, file);

    write("\n\nkeep_alive_timeout = \"10\"\n");
    const std::string message = error_of([&] { reload_config(second, a.argc(), a.argv()); });
    EXPECT_TRUE(contains(message, file.string() + ":3: keep_alive_timeout: ")) << message;
}

TEST_F(ConfigFileTest, ReloadWithoutAFileReturnsTheFlags) {
    const args a{"--workers", "5"};
    config current;
    current.workers = 9;
    EXPECT_EQ(reload_config(current, a.argc(), a.argv()).workers, 5U);
}

TEST(Reload, RefusesACommandLineThatDoesNotRunAServer) {
    const args a{"--help"};
    EXPECT_TRUE(
        contains(error_of([&] { reload_config(config{}, a.argc(), a.argv()); }), "reload: "));
}

// --- The example file ------------------------------------------------------------------------

TEST(ExampleFile, ParsesToTheDefaults) {
    ASSERT_TRUE(fs::exists(example_file)) << example_file;
    const config c = load_config_file(example_file);
    expect_same(c, config{});
    EXPECT_EQ(c.config_file, example_file);
}

std::string read_text(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(ExampleFile, DocumentsEveryKey) {
    const std::string text = read_text(example_file);
    for (const setting& s : settings()) {
        if (s.key.empty() || s.type == "TABLE") continue;
        const std::string key(s.key);
        // Set, or shown commented out for the keys that are off by default.
        const bool set = text.find("\n" + key + " = ") != std::string::npos;
        const bool shown = text.find("\n# " + key + " = ") != std::string::npos;
        EXPECT_TRUE(set || shown) << key;
    }
    // The tables' keys, in the commented examples at the end.
    for (const route_setting& s : route_settings())
        EXPECT_TRUE(contains(text, "\n#   " + std::string(s.key) + " = "));
    for (const upstream_setting& s : upstream_settings())
        EXPECT_TRUE(contains(text, "\n#   " + std::string(s.key) + " = "));
    for (const auto& s : tls_settings())
        EXPECT_TRUE(contains(text, "\n#   " + std::string(s.key) + " = "));
    EXPECT_TRUE(contains(text, "\n# [[route]]\n"));
    EXPECT_TRUE(contains(text, "\n# [upstream."));
}

TEST(ExampleFile, SetsEveryKeyToTheTablesDefault) {
    const std::string text = read_text(example_file);
    for (const setting& s : settings()) {
        if (s.key.empty() || s.default_text.empty()) continue;
        EXPECT_TRUE(
            contains(text, "\n" + std::string(s.key) + " = " + std::string(s.default_text) + "\n"));
    }
}

TEST(Readme, DocumentsEveryKeyAndFlag) {
    const std::string text = read_text(fs::path(TARRY_SOURCE_TREE) / "README.md");
    for (const setting& s : settings()) {
        // Not contains(): it would print the whole README.
        if (!s.key.empty()) {
            EXPECT_NE(text.find("| `" + std::string(s.key) + "` |"), std::string::npos) << s.key;
        }
        if (!s.flag.empty() && !s.hidden && s.apply != nullptr) {
            EXPECT_NE(text.find("`" + std::string(s.flag)), std::string::npos) << s.flag;
        }
    }
}

TEST_F(ConfigFileTest, ExampleFileCommentedKeysAreValidToo) {
    std::ifstream in(example_file);
    std::string line;
    std::string uncommented;
    // Uncommenting the optional keys must give a valid file as well.
    while (std::getline(in, line)) {
        for (const std::string key : {"docroot", "admin_listen", "access_log", "tls_listen",
                                      "tls_certificate", "tls_certificate_key"}) {
            if (line.rfind("# " + key + " = ", 0) == 0) line = line.substr(2);
        }
        uncommented += line + "\n";
    }
    const config c = load(uncommented);
    EXPECT_TRUE(c.docroot);
    EXPECT_TRUE(c.admin_listen);
    EXPECT_TRUE(c.access_log);
    EXPECT_TRUE(c.tls_certificate);
    EXPECT_EQ(std::count_if(c.listen.begin(), c.listen.end(),
                            [](const listen_address& a) { return a.tls; }),
              1);
}

// --- The settings table ----------------------------------------------------------------------

TEST_F(ConfigFileTest, TheTablesDefaultsAreTheBuiltInDefaults) {
    std::string text;
    for (const setting& s : settings()) {
        if (!s.key.empty() && !s.default_text.empty()) {
            text += std::string(s.key) + " = " + std::string(s.default_text) + "\n";
        }
    }
    expect_same(load(text), config{});

    std::string upstream = "[upstream.a]\n";
    for (const upstream_setting& s : upstream_settings()) {
        if (!s.default_text.empty()) {
            upstream += std::string(s.key) + " = " + std::string(s.default_text) + "\n";
        }
    }
    const config c = load(upstream + "servers = [\"127.0.0.1:1\"]\n");
    ASSERT_EQ(c.upstreams.size(), 1U);
    upstream_config expected;
    expected.name = "a";
    expected.servers = {{"127.0.0.1", 1, {}}};
    EXPECT_EQ(c.upstreams[0], expected);
}

TEST(SettingsTable, KeysAndFlagsAreUniqueAndWellFormed) {
    std::vector<std::string_view> keys;
    std::vector<std::string_view> flags;
    for (const setting& s : settings()) {
        EXPECT_FALSE(s.key.empty() && s.flag.empty());
        EXPECT_FALSE(s.help.empty()) << s.key << s.flag;
        if (!s.key.empty()) keys.push_back(s.key);
        if (!s.flag.empty()) {
            EXPECT_EQ(s.flag.rfind("--", 0), 0U) << s.flag;
            flags.push_back(s.flag);
        }
    }
    std::sort(keys.begin(), keys.end());
    std::sort(flags.begin(), flags.end());
    EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
    EXPECT_EQ(std::adjacent_find(flags.begin(), flags.end()), flags.end());
}

TEST(SettingsTable, HelpNamesEveryVisibleFlag) {
    const command_line cl = parse(args{"--help"});
    for (const setting& s : settings()) {
        if (s.flag.empty()) continue;
        EXPECT_EQ(contains(cl.help_text, std::string(s.flag) + " "), !s.hidden) << s.flag;
    }
}

// The names in --help's flag column: the first word of each option line, as in
// "  -h,--help  Print this help and exit." or "  --listen ADDRESS ...".
std::vector<std::string> help_flag_column(const std::string& help) {
    std::vector<std::string> names;
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t start = line.find_first_not_of(' ');
        if (start == 0 || start == std::string::npos || line[start] != '-') continue;
        std::istringstream word(line.substr(start, line.find(' ', start) - start));
        for (std::string name; std::getline(word, name, ',');)
            names.push_back(name);
    }
    return names;
}

// --help lists every flag there is: the parser makes its options from the settings table and
// from nothing else, so the table's flags are exactly what it accepts, and --help's flag column
// must name each of them and nothing more (CLI11's -h beside --help).
TEST(SettingsTable, HelpListsEveryFlagTheCommandLineAccepts) {
    for (const std::string asked : {"--help", "-h"}) {
        std::vector<std::string> listed = help_flag_column(parse(args{asked}).help_text);
        std::vector<std::string> accepted{"-h"};
        for (const setting& s : settings()) {
            if (!s.flag.empty()) accepted.emplace_back(s.flag);
        }
        std::sort(listed.begin(), listed.end());
        std::sort(accepted.begin(), accepted.end());
        EXPECT_EQ(listed, accepted) << asked;
    }
}

TEST(SettingsTable, FileOnlyKeysAreExplainedOnTheCommandLine) {
    for (const setting& s : settings()) {
        if (s.key.empty() || !s.flag.empty()) continue;
        std::string flag = "--" + std::string(s.key);
        std::replace(flag.begin(), flag.end(), '_', '-');
        const args a{flag, "1"};
        EXPECT_TRUE(contains(error_of([&] { parse(a); }),
                             "(" + std::string(s.key) + " can only be set in the config file)"));
    }
}

// Roff writes a flag's dashes as "\-".
std::string unescape_roff(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, "\\-") == 0) {
            out += '-';
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

TEST(ManPage, NamesEveryKeyAndFlagOfTheTable) {
    const std::string page = man_page("1.2.3");
    EXPECT_EQ(page.rfind(".TH TARRY 8 ", 0), 0U);
    const std::string text = unescape_roff(page);
    for (const setting& s : settings()) {
        if (!s.flag.empty()) {
            EXPECT_TRUE(contains(text, "\\fB" + std::string(s.flag) + "\\fR"));
        }
        if (!s.key.empty()) {
            EXPECT_TRUE(contains(text, "\\fB" + std::string(s.key) + "\\fR"));
        }
    }
    for (const route_setting& s : route_settings())
        EXPECT_TRUE(contains(text, "\\fB" + std::string(s.key) + "\\fR"));
    for (const upstream_setting& s : upstream_settings())
        EXPECT_TRUE(contains(text, "\\fB" + std::string(s.key) + "\\fR"));
    for (const std::string section :
         {"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "CONFIGURATION FILE", "SIGNALS",
          "EXIT STATUS", "FILES", "SEE ALSO"}) {
        EXPECT_TRUE(contains(text, "\n.SH " + section + "\n"));
    }
    EXPECT_TRUE(contains(text, "/etc/tarry/tarry.toml"));
    EXPECT_TRUE(contains(text, "1.2.3"));
}

TEST(CommandLine, ManActionNeverReadsTheFile) {
    const command_line cl = parse(args{"--man", "--config", "/nonexistent/tarry.toml"});
    EXPECT_EQ(cl.what, command_line::action::man);
    const args a{"--man"};
    EXPECT_TRUE(
        contains(error_of([&] { reload_config(config{}, a.argc(), a.argv()); }), "reload: "));
}

// --- The newer timeouts ----------------------------------------------------------------------

TEST_F(ConfigFileTest, NewTimeoutsAreReadFromTheFile) {
    const config c = load("request_timeout = \"2m\"\n"
                          "lingering_time = \"10s\"\n"
                          "lingering_timeout = \"2s\"\n"
                          "max_connection_age = \"1h\"\n"
                          "close_spread_time = \"500ms\"\n"
                          "keep_alive_min_timeout = \"2s\"\n"
                          "trust_forwarded = true\n");
    EXPECT_EQ(c.request_timeout, 2min);
    EXPECT_EQ(c.lingering_time, 10s);
    EXPECT_EQ(c.lingering_timeout, 2s);
    EXPECT_EQ(c.max_connection_age, 1h);
    EXPECT_EQ(c.close_spread_time, 500ms);
    EXPECT_EQ(c.keep_alive_min_timeout, 2s);
    EXPECT_TRUE(c.trust_forwarded);
}

TEST_F(ConfigFileTest, NewTimeoutsZeroRules) {
    const config c = load("max_connection_age = \"0s\"\n"
                          "close_spread_time = \"0s\"\n"
                          "keep_alive_min_timeout = \"0s\"\n");
    EXPECT_EQ(c.max_connection_age, 0s);
    EXPECT_EQ(c.close_spread_time, 0s);
    EXPECT_EQ(c.keep_alive_min_timeout, 0s);
    for (const std::string key : {"request_timeout", "lingering_time", "lingering_timeout"}) {
        EXPECT_TRUE(contains(load_error("\n" + key + " = \"0s\"\n", 2),
                             key + ": must be more than zero, got \"0s\""));
    }
    EXPECT_TRUE(contains(load_error("max_connection_age = \"25h\"\n", 1),
                         "max_connection_age: must be at most 24h"));
    EXPECT_TRUE(contains(load_error("request_timeout = 300\n", 1),
                         "request_timeout: expected a duration such as"));
    EXPECT_TRUE(contains(load_error("trust_forwarded = \"yes\"\n", 1),
                         "trust_forwarded: expected true or false, got \"yes\""));
}

TEST(CommandLine, NewTimeoutFlags) {
    const command_line cl = parse(args{"--request-timeout", "30s", "--max-connection-age=10m"});
    EXPECT_EQ(cl.cfg.request_timeout, 30s);
    EXPECT_EQ(cl.cfg.max_connection_age, 10min);
    EXPECT_TRUE(contains(error_of([&] {
                             parse(args{"--request-timeout", "0s"});
                         }),
                         "--request-timeout: must be more than zero, got \"0s\""));
    EXPECT_EQ(error_of([&] {
                  parse(args{"--max-connection-age", "1"});
              }).rfind("--max-connection-age: expected a duration", 0),
              0U);
    EXPECT_EQ(error_of([&] { parse(args{"--request-timeout"}); }),
              "--request-timeout: expected a value");
}

// --- Routes and upstreams --------------------------------------------------------------------

const std::string app_upstream = "[upstream.app]\n"
                                 "servers = [\"127.0.0.1:3000\", \"unix:/run/app.sock\"]\n";

TEST(ParseUpstreamServer, AcceptsHostPortAndUnixPaths) {
    EXPECT_EQ(parse_upstream_server("127.0.0.1:3000", "s"),
              (upstream_server{"127.0.0.1", 3000, {}}));
    EXPECT_EQ(parse_upstream_server("[::1]:80", "s"), (upstream_server{"::1", 80, {}}));
    EXPECT_EQ(parse_upstream_server("localhost:8000", "s"),
              (upstream_server{"localhost", 8000, {}}));
    EXPECT_EQ(parse_upstream_server("unix:/run/app.sock", "s"),
              (upstream_server{"", 0, "/run/app.sock"}));
}

TEST(ParseUpstreamServer, RejectsWhatCannotBeConnectedTo) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {":3000", "missing the host"},
        {"127.0.0.1:0", "the port must be a number from 1 to 65535"},
        {"app_internal:80", "numeric IP address, localhost or a DNS name"},
        {"app.internal:0", "the port must be a number from 1 to 65535"},
        {"127.0.0.1", "missing :PORT"},
        {"unix:", "missing the socket's path"},
        {"unix:/" + std::string(120, 'a'), "at most 107 bytes"},
    };
    for (const auto& [text, reason] : cases) {
        const std::string message = error_of([&t = text] { parse_upstream_server(t, "srv"); });
        EXPECT_TRUE(one_line(message));
        EXPECT_EQ(
            message.rfind("srv: expected HOST:PORT such as \"127.0.0.1:3000\" or unix:PATH", 0), 0U)
            << message;
        EXPECT_TRUE(contains(message, reason)) << text;
    }
}

TEST_F(ConfigFileTest, RoutesAndUpstreamsAreRead) {
    const config c = load("[[route]]\n"
                          "prefix = \"/api/\"\n"
                          "upstream = \"app\"\n"
                          "\n"
                          "[[route]]\n"
                          "prefix = \"/static/\"\n"
                          "docroot = \"/srv/static\"\n"
                          "cache_control = \"public, max-age=60\"\n"
                          "\n"
                          "[[route]]\n"
                          "prefix = \"/\"\n"
                          "respond = \"hello\"\n"
                          "\n" +
                          app_upstream +
                          "balance = \"least_conn\"\n"
                          "max_idle = 0\n"
                          "idle_timeout = \"30s\"\n"
                          "connect_timeout = \"1s\"\n"
                          "send_timeout = \"2s\"\n"
                          "response_timeout = \"3s\"\n"
                          "read_timeout = \"4s\"\n"
                          "fail_timeout = \"5s\"\n"
                          "tunnel_idle_timeout = \"2m\"\n"
                          "\n"
                          "[upstream.other-1_b]\n"
                          "servers = [\"[::1]:81\"]\n");
    ASSERT_EQ(c.routes.size(), 3U);
    EXPECT_EQ(c.routes[0], (route_config{"/api/", route_config::kind::proxy, {}, "app", {}}));
    EXPECT_EQ(c.routes[1],
              (route_config{
                  "/static/", route_config::kind::files, "/srv/static", {}, "public, max-age=60"}));
    EXPECT_EQ(c.routes[2], (route_config{"/", route_config::kind::hello, {}, {}, {}}));

    ASSERT_EQ(c.upstreams.size(), 2U);
    const upstream_config& app = c.upstreams[0];
    EXPECT_EQ(app.name, "app");
    EXPECT_EQ(app.servers,
              (std::vector<upstream_server>{{"127.0.0.1", 3000, {}}, {"", 0, "/run/app.sock"}}));
    EXPECT_EQ(app.balance, upstream_config::balance_kind::least_conn);
    EXPECT_EQ(app.max_idle, 0U);
    EXPECT_EQ(app.idle_timeout, 30s);
    EXPECT_EQ(app.connect_timeout, 1s);
    EXPECT_EQ(app.send_timeout, 2s);
    EXPECT_EQ(app.response_timeout, 3s);
    EXPECT_EQ(app.read_timeout, 4s);
    EXPECT_EQ(app.fail_timeout, 5s);
    EXPECT_EQ(app.tunnel_idle_timeout, 2min);
    const upstream_config& other = c.upstreams[1];
    EXPECT_EQ(other.name, "other-1_b");
    EXPECT_EQ(other.servers, (std::vector<upstream_server>{{"::1", 81, {}}}));
    EXPECT_EQ(other.balance, upstream_config::balance_kind::round_robin);
    EXPECT_EQ(other.max_idle, 1024U);
    EXPECT_EQ(other.idle_timeout, 60s);
}

TEST_F(ConfigFileTest, UpstreamMayBeDefinedAfterTheRouteThatNamesIt) {
    const config c = load("[[route]]\nprefix = \"/api/\"\nupstream = \"app\"\n\n" + app_upstream);
    ASSERT_EQ(c.routes.size(), 1U);
    EXPECT_EQ(c.upstreams.size(), 1U);
}

TEST_F(ConfigFileTest, RouteErrorsNameTheRouteAndTheLine) {
    const std::vector<std::tuple<std::string, int, std::string>> cases{
        {app_upstream + "\n[[route]]\nprefix = \"/a/\"\nupstream = \"app\"\n\n[[route]]\n"
                        "prefix = \"/b/\"\nupstream = \"x\"\n",
         10, "route[2].upstream: no upstream named \"x\""},
        {app_upstream + "[[route]]\nprefix = \"/a/\"\nupstream = \"ap\"\n", 5,
         "route[1].upstream: no upstream named \"ap\" (did you mean \"app\"?)"},
        {"[[route]]\nprefix = \"/a/\"\nupstream = \"app\"\n", 3,
         "route[1].upstream: no upstream named \"app\""},
        {"workers = 1\n[[route]]\nprefix = \"/a/\"\n", 2,
         "route[1]: needs exactly one of upstream, docroot, respond or redirect"},
        {"[[route]]\nprefix = \"/a/\"\ndocroot = \"/srv\"\nrespond = \"hello\"\n", 1,
         "route[1]: needs exactly one of upstream, docroot, respond or redirect, got docroot and "
         "respond"},
        {"[[route]]\nprefix = \"/a/\"\nupstream = \"a\"\ndocroot = \"/srv\"\nrespond = \"hello\"\n",
         1, "got upstream, docroot and respond"},
        {"[[route]]\nrespond = \"hello\"\n", 1,
         "route[1].prefix: required, such as prefix = \"/api/\""},
        {"[[route]]\nprefix = \"api/\"\nrespond = \"hello\"\n", 2,
         "route[1].prefix: must start with \"/\", got \"api/\""},
        {"[[route]]\nprefix = \"\"\nrespond = \"hello\"\n", 2,
         "route[1].prefix: must start with \"/\", got \"\""},
        {"[[route]]\nprefix = 5\nrespond = \"hello\"\n", 2, "route[1].prefix: expected a string"},
        {"[[route]]\nprefix = \"/a/\"\nrespond = \"hello\"\n[[route]]\nprefix = \"/b/\"\n"
         "respond = \"hello\"\n[[route]]\n\nprefix = \"/a/\"\nrespond = \"hello\"\n",
         9, "route[3].prefix: \"/a/\" is already the prefix of route[1]"},
        {"[[route]]\nprefix = \"/a/\"\nrespond = \"hi\"\n", 3,
         "route[1].respond: expected \"hello\", got \"hi\""},
        {"[[route]]\nprefix = \"/a/\"\nrespond = \"hello\"\ncache_control = \"no-store\"\n", 4,
         "route[1].cache_control: only a docroot route sends Cache-Control"},
        {"[[route]]\nprefix = \"/a/\"\ndocroot = \"/srv\"\nupgrade = false\n", 4,
         "route[1].upgrade: only an upstream route passes upgrades on"},
        {"[[route]]\nprefix = \"/a/\"\nupstream = \"app\"\nupgrade = \"no\"\n", 4,
         "route[1].upgrade: expected true or false"},
        {"[[route]]\nprefix = \"/a/\"\ndocroot = \"/srv\"\ncache_control = \"a\\r\\nb: c\"\n", 4,
         "route[1].cache_control: only visible ASCII and spaces are allowed, got \"a\\x0d\\x0ab: "
         "c\""},
        {"[[route]]\nprefix = \"/a/\"\ndocroot = \"\"\n", 3,
         "route[1].docroot: expected a directory path, got an empty string"},
        {"[[route]]\nprefix = \"/a/\"\nrespond = \"hello\"\nupstreams = \"app\"\n", 4,
         "route[1]: unknown key \"upstreams\" (did you mean \"upstream\"?)"},
        {"route = \"/\"\n", 1, "route: expected [[route]] tables, got \"/\""},
        {"route = []\n", 1, "route: expected [[route]] tables, got an array"},
        {"docroot = \"/srv\"\n\n[[route]]\nprefix = \"/\"\nrespond = \"hello\"\n", 4,
         "route[1].prefix: \"/\" conflicts with docroot (line 1), which is shorthand for a route "
         "\"/\"; keep one"},
    };
    for (const auto& [text, line, expected] : cases) {
        const std::string message = load_error(text, line);
        EXPECT_TRUE(contains(message, expected)) << text;
    }
}

// TOML puts a key written after a table header into that table: a top-level key added at the end
// of a file is told where it belongs, and misspelt keys get a suggestion inside tables too.
TEST_F(ConfigFileTest, ATopLevelKeyInsideATableIsToldToMoveAboveTheFirstTable) {
    const std::string two_routes = "[[route]]\nprefix = \"/a/\"\nrespond = \"hello\"\n\n"
                                   "[[route]]\nprefix = \"/b/\"\nrespond = \"hello\"\n";
    const std::string move_it = "it is a top-level key, move it above the first [table] or "
                                "[[table]] of the file";
    const std::vector<std::tuple<std::string, int, std::string>> cases{
        {two_routes + "keep_alive_timeout = \"5s\"\n", 8,
         "route[2]: unknown key \"keep_alive_timeout\": " + move_it},
        {app_upstream + "access_log = \"-\"\n", 3,
         "upstream.app: unknown key \"access_log\": " + move_it},
        {"[[tls]]\nserver_names = [\"a.example\"]\nworkers = 2\n", 3,
         "tls[1]: unknown key \"workers\": " + move_it},
        {two_routes + "prefx = \"/c/\"\n", 8,
         "route[2]: unknown key \"prefx\" (did you mean \"prefix\"?)"},
        {app_upstream + "max_idel = 4\n", 3,
         "upstream.app: unknown key \"max_idel\" (did you mean \"max_idle\"?)"},
        {two_routes + "keepalive_timeout = \"5s\"\n", 8,
         "route[2]: unknown key \"keepalive_timeout\" (did you mean the top-level key "
         "\"keep_alive_timeout\"? it belongs above the first [table]"},
    };
    for (const auto& [text, line, expected] : cases) {
        const std::string message = load_error(text, line);
        EXPECT_TRUE(contains(message, expected)) << message;
    }
}

TEST_F(ConfigFileTest, UpstreamErrorsNameTheUpstreamAndTheLine) {
    const std::vector<std::tuple<std::string, int, std::string>> cases{
        {"[upstream.app]\nbalance = \"least_conn\"\n", 1,
         "upstream.app.servers: required: at least one HOST:PORT or unix:PATH"},
        {"[upstream.app]\nservers = []\n", 1, "upstream.app.servers: required"},
        {"[upstream.app]\nservers = [\n  \"127.0.0.1:1\",\n  \"127.0.0.1:1\",\n]\n", 4,
         "upstream.app.servers: \"127.0.0.1:1\" is listed twice"},
        {"[upstream.app]\nservers = [\"unix:/a\", \"unix:/a\"]\n", 2,
         "upstream.app.servers: \"unix:/a\" is listed twice"},
        {"[upstream.app]\nservers = [\n  \"example_com:80\",\n]\n", 3,
         "upstream.app.servers: expected HOST:PORT such as"},
        {"[upstream.app]\nservers = [\n  80,\n]\n", 3, "upstream.app.servers: expected HOST:PORT"},
        {"[upstream.app]\nservers = 80\n", 2,
         "upstream.app.servers: expected an array of HOST:PORT or unix:PATH strings, got 80"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\nbalance = \"random\"\n", 3,
         "upstream.app.balance: expected \"round_robin\" or \"least_conn\", got \"random\""},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\nmax_idle = -1\n", 3,
         "upstream.app.max_idle: expected an integer from 0 to 65535 (0: no pooling), got -1"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\nconnect_timeout = \"0s\"\n", 3,
         "upstream.app.connect_timeout: must be more than zero, got \"0s\""},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\nfail_timeout = \"25h\"\n", 3,
         "upstream.app.fail_timeout: must be at most 24h"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\ntunnel_idle_timeout = \"0s\"\n", 3,
         "upstream.app.tunnel_idle_timeout: must be more than zero"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\nread_timeout = 60\n", 3,
         "upstream.app.read_timeout: expected a duration such as"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\nconect_timeout = \"1s\"\n", 3,
         "upstream.app: unknown key \"conect_timeout\" (did you mean \"connect_timeout\"?)"},
        {"[upstream.\"a b\"]\nservers = [\"127.0.0.1:1\"]\n", 1,
         "upstream.\"a b\": a name is letters, digits, \"_\" and \"-\""},
        {"[upstream.\"\"]\nservers = [\"127.0.0.1:1\"]\n", 1, "upstream.\"\": a name is letters"},
        {"upstream = \"app\"\n", 1, "upstream: expected [upstream.NAME] tables, got \"app\""},
        {"[upstream]\napp = 5\n", 2, "upstream.app: expected a table [upstream.app], got 5"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\ntls_verify = false\n", 3,
         "upstream.app.tls_verify: the upstream is not TLS (write its servers https://HOST:PORT, "
         "or set tls = true)"},
        {"[upstream.app]\nservers = [\"127.0.0.1:1\"]\ntls_server_name = \"app.test\"\n", 3,
         "upstream.app.tls_server_name: the upstream is not TLS"},
    };
    for (const auto& [text, line, expected] : cases) {
        const std::string message = load_error(text, line);
        EXPECT_TRUE(contains(message, expected)) << text;
    }
}

TEST_F(ConfigFileTest, UnknownTopLevelTableStillExplained) {
    EXPECT_TRUE(contains(load_error("[routes]\nprefix = \"/\"\n", 1),
                         "unknown key \"routes\" (did you mean \"route\"?)"));
}

TEST(EffectiveRoutes, AddTheImpliedRootRoute) {
    config c;
    EXPECT_EQ(effective_routes(c),
              (std::vector<route_config>{{"/", route_config::kind::hello, {}, {}, {}}}));
    c.docroot = "/srv/www";
    EXPECT_EQ(effective_routes(c),
              (std::vector<route_config>{{"/", route_config::kind::files, "/srv/www", {}, {}}}));
    c.routes = {{"/api/", route_config::kind::proxy, {}, "app", {}}};
    EXPECT_EQ(effective_routes(c),
              (std::vector<route_config>{{"/api/", route_config::kind::proxy, {}, "app", {}},
                                         {"/", route_config::kind::files, "/srv/www", {}, {}}}));
    c.docroot.reset();
    c.routes.push_back({"/", route_config::kind::proxy, {}, "app", {}});
    EXPECT_EQ(effective_routes(c), c.routes);
}

TEST(CommandLine, ProxyIsOneUpstreamAndARoute) {
    const command_line cl = parse(args{"--proxy", "127.0.0.1:3000"});
    upstream_config upstream;
    upstream.name = "default";
    upstream.servers = {{"127.0.0.1", 3000, {}}};
    EXPECT_EQ(cl.cfg.upstreams, std::vector<upstream_config>{upstream});
    EXPECT_EQ(cl.cfg.routes,
              (std::vector<route_config>{{"/", route_config::kind::proxy, {}, "default", {}}}));
    EXPECT_EQ(effective_routes(cl.cfg), cl.cfg.routes);
    EXPECT_EQ(parse(args{"--proxy=unix:/run/app.sock"}).cfg.upstreams.at(0).servers,
              (std::vector<upstream_server>{{"", 0, "/run/app.sock"}}));
}

TEST(CommandLine, ProxyErrors) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--proxy", "nope"}, "--proxy: expected HOST:PORT such as \"127.0.0.1:3000\""},
        {{"--proxy"}, "--proxy: expected a value"},
        {{"--proxy", "127.0.0.1:1", "--proxy", "127.0.0.1:2"}, "--proxy: given more than once"},
        {{"--proxy", "127.0.0.1:1", "--docroot", "/srv"},
         "--proxy: conflicts with docroot, which also answers \"/\""},
    };
    for (const auto& [list, expected] : cases) {
        const args a(list);
        const std::string message = error_of([&] { parse(a); });
        EXPECT_TRUE(one_line(message));
        EXPECT_EQ(message.rfind(expected, 0), 0U) << "got: " << message;
    }
}

TEST_F(ConfigFileTest, FlagsThatConflictWithTheFilesRoutes) {
    const fs::path root_route = write("[[route]]\nprefix = \"/\"\nrespond = \"hello\"\n", "r.toml");
    EXPECT_EQ(error_of([&] {
                  parse(args{"--config", root_route.string(), "--docroot", "/srv"});
              }),
              "--docroot: conflicts with route[1] of the config file, which already answers "
              "\"/\" (docroot is shorthand for a route \"/\")");
    EXPECT_EQ(error_of([&] {
                  parse(args{"--config", root_route.string(), "--proxy", "127.0.0.1:1"});
              }),
              "--proxy: conflicts with route[1] of the config file, which already answers \"/\"");
    const fs::path docroot = write("docroot = \"/srv\"\n", "d.toml");
    EXPECT_EQ(error_of([&] {
                  parse(args{"--config", docroot.string(), "--proxy", "127.0.0.1:1"});
              }),
              "--proxy: conflicts with docroot, which also answers \"/\"");
    const fs::path named = write("[upstream.default]\nservers = [\"127.0.0.1:2\"]\n", "u.toml");
    EXPECT_EQ(error_of([&] {
                  parse(args{"--config", named.string(), "--proxy", "127.0.0.1:1"});
              }),
              "--proxy: the config file already defines an upstream named \"default\"");

    // A docroot flag over the file's docroot is an override, not a conflict.
    EXPECT_EQ(parse(args{"--config", docroot.string(), "--docroot", "/www"}).cfg.docroot, "/www");
    // The proxy flag beside the file's other routes is fine.
    const fs::path api = write("[[route]]\nprefix = \"/api/\"\nrespond = \"hello\"\n", "a.toml");
    const command_line cl = parse(args{"--config", api.string(), "--proxy", "127.0.0.1:1"});
    EXPECT_EQ(cl.cfg.routes.size(), 2U);
}

TEST_F(ConfigFileTest, ReloadReadsRoutesAgain) {
    const fs::path file = write(app_upstream + "[[route]]\nprefix = \"/a/\"\nupstream = \"app\"\n");
    const args a{"--config", file.string()};
    const config first = parse(a).cfg;
    EXPECT_EQ(first.routes.size(), 1U);
    write(app_upstream);
    const config second = reload_config(first, a.argc(), a.argv());
    EXPECT_TRUE(second.routes.empty());
    EXPECT_EQ(second.upstreams.size(), 1U);
}

TEST_F(ConfigFileTest, ExampleFileRoutesAndUpstreamsAreValidWhenUncommented) {
    std::ifstream in(example_file);
    std::string line;
    std::string text;
    bool in_block = false;
    // The commented [[route]] and [upstream.NAME] examples, uncommented, with the example's own
    // "/" docroot uncommented too: a valid file.
    while (std::getline(in, line)) {
        if (line.rfind("# [[route]]", 0) == 0 || line.rfind("# [upstream.", 0) == 0) {
            in_block = true;
        }
        const bool key = line.rfind("# ", 0) == 0 && line.find(" = ") != std::string::npos;
        const bool header = line == "# [[route]]" || line.rfind("# [upstream.", 0) == 0;
        if (in_block && (key || header)) line = line.substr(2);
        text += line + "\n";
    }
    const config c = load(text);
    EXPECT_FALSE(c.routes.empty());
    EXPECT_FALSE(c.upstreams.empty());
}

TEST_F(ConfigFileTest, AnUpstreamRouteMayRefuseUpgrades) {
    const config c = load("[[route]]\nprefix = \"/ws/\"\nupstream = \"app\"\nupgrade = false\n\n"
                          "[[route]]\nprefix = \"/\"\nupstream = \"app\"\n\n" +
                          app_upstream);
    ASSERT_EQ(c.routes.size(), 2U);
    EXPECT_FALSE(c.routes[0].upgrade);
    EXPECT_TRUE(c.routes[1].upgrade) << "upgrades pass by default";
    EXPECT_EQ(c.upstreams.at(0).tunnel_idle_timeout, 1h);
}

TEST_F(ConfigFileTest, AccessLogFormatIsOneOfThree) {
    EXPECT_EQ(load("access_log_format = \"json\"\n").access_log_format, "json");
    EXPECT_EQ(load("access_log_format = \"combined\"\n").access_log_format, "combined");
    EXPECT_EQ(load("access_log_format = \"extended\"\n").access_log_format, "extended");
    EXPECT_EQ(load("").access_log_format, "common");
    EXPECT_TRUE(contains(load_error("access_log_format = \"xml\"\n", 1),
                         "access_log_format: expected \"common\", \"combined\", \"extended\" or "
                         "\"json\", got \"xml\""));
}

// --- TLS ---------------------------------------------------------------------------------------

TEST_F(ConfigFileTest, TlsListenAddsTlsAddressesBesideThePlainOnes) {
    const config c = load("listen = [\"127.0.0.1:8080\"]\n"
                          "tls_listen = [\"127.0.0.1:8443\", \"[::1]:8443\"]\n"
                          "tls_certificate = \"/etc/tarry/cert.pem\"\n"
                          "tls_certificate_key = \"/etc/tarry/key.pem\"\n"
                          "handshake_timeout = \"3s\"\n");
    ASSERT_EQ(c.listen.size(), 3U);
    EXPECT_FALSE(c.listen[0].tls);
    EXPECT_TRUE(c.listen[1].tls);
    EXPECT_TRUE(c.listen[2].tls);
    EXPECT_EQ(c.listen[2].host, "::1");
    EXPECT_EQ(c.handshake_timeout, 3s);
    EXPECT_EQ(c.tls_certificate, fs::path("/etc/tarry/cert.pem"));
}

TEST_F(ConfigFileTest, ATlsAddressBehindABalancerTakesProxyProtocol) {
    const config c = load("tls_listen = \"127.0.0.1:8443 proxy_protocol\"\n"
                          "tls_certificate = \"/etc/tarry/cert.pem\"\n"
                          "tls_certificate_key = \"/etc/tarry/key.pem\"\n");
    const auto tls = std::find_if(c.listen.begin(), c.listen.end(),
                                  [](const listen_address& a) { return a.tls; });
    ASSERT_NE(tls, c.listen.end());
    EXPECT_TRUE(tls->proxy_protocol);
}

TEST_F(ConfigFileTest, TlsTablesGiveCertificatesByName) {
    const config c = load("tls_listen = \":8443\"\n"
                          "[[tls]]\n"
                          "server_names = [\"a.example\", \"*.b.example\"]\n"
                          "certificate = \"a.pem\"\n"
                          "certificate_key = \"a.key\"\n"
                          "[[tls]]\n"
                          "server_names = \"c.example\"\n"
                          "certificate = \"c.pem\"\n"
                          "certificate_key = \"c.key\"\n");
    ASSERT_EQ(c.tls.size(), 2U);
    EXPECT_EQ(c.tls[0].server_names, (std::vector<std::string>{"a.example", "*.b.example"}));
    EXPECT_EQ(c.tls[1].server_names, (std::vector<std::string>{"c.example"}));
    EXPECT_EQ(c.tls[1].certificate_key, fs::path("c.key"));
    EXPECT_FALSE(c.tls_certificate); // the first table's certificate is the default
}

TEST_F(ConfigFileTest, TlsMistakesNameTheKey) {
    EXPECT_TRUE(contains(load_error("tls_listen = \":8443\"\n", 1),
                         "tls_listen: needs tls_certificate and tls_certificate_key"));
    EXPECT_TRUE(contains(load_error("tls_certificate = \"a.pem\"\n", 1),
                         "tls_certificate_key: required with tls_certificate"));
    EXPECT_TRUE(contains(load_error("listen = \":8443\"\ntls_listen = \"0.0.0.0:8443\"\n"
                                    "tls_certificate = \"a\"\ntls_certificate_key = \"b\"\n",
                                    2),
                         "0.0.0.0:8443 is also a listen address; a socket is plain or TLS"));
    EXPECT_TRUE(
        contains(load_error("tls_listen = \"unix:/run/t.sock\"\n", 1), "TLS is for TCP addresses"));
    EXPECT_TRUE(contains(load_error("tls_listen = \":8443\"\n[[tls]]\nserver_names = \"a\"\n"
                                    "certificate = \"a.pem\"\n",
                                    2),
                         "tls[1].certificate_key: required"));
    EXPECT_TRUE(contains(load_error("[[tls]]\nserver_names = [\"a b\"]\ncertificate = \"a\"\n"
                                    "certificate_key = \"b\"\n",
                                    2),
                         "tls[1].server_names: expected a server name"));
    EXPECT_TRUE(contains(load_error("[[tls]]\nserver_name = \"a\"\n", 2),
                         "did you mean \"server_names\"?"));
    EXPECT_TRUE(contains(load_error("listen = []\n", 1),
                         "listen: needs at least one address (in listen or tls_listen)"));
}

TEST(CommandLine, TlsFlagsSetTheTlsKeys) {
    const command_line cl = parse(args{
        "--tls-listen", "127.0.0.1:8443", "--tls-listen", "127.0.0.1:9443", "--tls-certificate",
        "c.pem", "--tls-certificate-key", "k.pem", "--handshake-timeout", "2s"});
    ASSERT_EQ(cl.cfg.listen.size(), 3U); // the default plain address stays
    EXPECT_FALSE(cl.cfg.listen[0].tls);
    EXPECT_TRUE(cl.cfg.listen[1].tls);
    EXPECT_EQ(cl.cfg.listen[2].port, 9443);
    EXPECT_EQ(cl.cfg.handshake_timeout, 2s);
    EXPECT_TRUE(contains(error_of([] {
                             parse(args{"--tls-listen", "127.0.0.1:8443"});
                         }),
                         "tls_listen: needs tls_certificate"));
}

// --- What a reload changed ---------------------------------------------------------------------

TEST(ConfigChanges, NothingDifferentIsNoEntry) {
    config a;
    a.routes.push_back({"/api/", route_config::kind::proxy, {}, "app", {}, true});
    EXPECT_TRUE(config_changes(a, a).empty());
}

TEST(ConfigChanges, ScalarsSayOldAndNewValue) {
    const config a;
    config b;
    b.keep_alive_timeout = 250ms;
    b.log_level = "debug";
    b.max_body_bytes = 2048;
    b.trust_forwarded = true;
    b.access_log = "/var/log/tarry/access.log";
    EXPECT_EQ(config_changes(a, b),
              (std::vector<std::string>{"keep_alive_timeout 65s -> 250ms",
                                        "max_body_bytes 1048576 -> 2048",
                                        "log_level \"info\" -> \"debug\"",
                                        "access_log unset -> \"/var/log/tarry/access.log\"",
                                        "trust_forwarded false -> true"}));
}

TEST(ConfigChanges, ListenersRoutesAndUpstreamsAddedRemovedOrChanged) {
    config a;
    a.listen = {parse_listen("127.0.0.1:8080", "listen"),
                parse_listen("unix:/run/t.sock", "listen")};
    a.routes.push_back({"/a/", route_config::kind::hello, {}, {}, {}, true});
    a.routes.push_back({"/b/", route_config::kind::files, "/srv", {}, {}, true});
    a.upstreams.push_back({"app", {{"127.0.0.1", 3000, {}}}});
    config b = a;
    b.listen = {parse_listen("127.0.0.1:8080", "listen"),
                parse_listen("unix:/run/t.sock mode=0600", "listen"),
                parse_listen("[::1]:9000", "listen")};
    b.listen.back().tls = true;
    b.routes.erase(b.routes.begin());
    b.routes.front().docroot = "/srv/new";
    b.routes.push_back({"/c/", route_config::kind::proxy, {}, "app", {}, true});
    b.upstreams.front().servers.push_back({"127.0.0.1", 3001, {}});
    b.upstreams.push_back({"other", {{"127.0.0.1", 4000, {}}}});
    EXPECT_EQ(config_changes(a, b),
              (std::vector<std::string>{"listen unix:/run/t.sock changed",
                                        "tls_listen [::1]:9000 added", "route \"/a/\" removed",
                                        "route \"/b/\" changed", "route \"/c/\" added",
                                        "upstream app changed", "upstream other added"}));
}

TEST(ConfigChanges, DurationsAreWrittenAsAFileWouldWriteThem) {
    EXPECT_EQ(duration_text(65s), "65s");
    EXPECT_EQ(duration_text(250ms), "250ms");
    EXPECT_EQ(duration_text(1500us), "1500us");
    EXPECT_EQ(duration_text(0s), "0s");
}

} // namespace
} // namespace tarry::server::test
