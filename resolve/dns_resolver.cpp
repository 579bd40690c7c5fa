#include "dns_resolver.hpp"

#include <ares.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <netinet/in.h>

namespace tarry::resolve {
namespace {

namespace asio = boost::asio;

void init_library() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (const int rc = ares_library_init(ARES_LIB_INIT_ALL); rc != ARES_SUCCESS)
            throw std::runtime_error(std::string("c-ares: ") + ares_strerror(rc));
    });
}

/// "IP", "IP:PORT" or "[IPV6]:PORT", split; throws std::invalid_argument.
std::pair<asio::ip::address, unsigned> split_server(const std::string& text) {
    std::string host = text;
    std::string port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos) throw std::invalid_argument("unbalanced brackets");
        host = text.substr(1, close - 1);
        if (close + 1 < text.size()) {
            if (text[close + 1] != ':') throw std::invalid_argument("expected :PORT after ]");
            port = text.substr(close + 2);
            if (port.empty()) throw std::invalid_argument("missing port");
        }
    } else if (std::count(text.begin(), text.end(), ':') == 1) {
        const auto colon = text.find(':');
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (port.empty()) throw std::invalid_argument("missing port");
    }
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) throw std::invalid_argument("the DNS server must be a numeric IP address");
    if (address.is_v6() && port.empty() && text.front() == '[')
        throw std::invalid_argument("missing port");
    unsigned n = 53;
    if (!port.empty()) {
        const auto r = std::from_chars(port.data(), port.data() + port.size(), n);
        if (r.ec != std::errc{} || r.ptr != port.data() + port.size() || n == 0 || n > 65535)
            throw std::invalid_argument("the port must be a number from 1 to 65535");
    }
    return {address, n};
}

} // namespace

std::string to_string(const std::vector<asio::ip::address>& addresses) {
    std::string out;
    for (const auto& a : addresses) {
        if (!out.empty()) out += ", ";
        out += a.to_string();
    }
    return out;
}

void check_server(const std::string& text) {
    (void)split_server(text);
}

/// A socket c-ares asked to have watched: Asio's descriptor over it, which never closes it
/// (c-ares does, after telling us through the state callback).
struct dns_resolver::watch {
    watch(asio::io_context& io, int socket) : desc(io, socket), fd(socket) {}
    asio::posix::stream_descriptor desc;
    int fd;
    bool want_read = false;
    bool want_write = false;
    bool reading = false; ///< a wait for readability is in flight
    bool writing = false;
    bool gone = false; ///< c-ares no longer has it: waits that complete do nothing
};

/// What a lookup carries through c-ares: who asked, and whether the resolver is still there.
struct dns_resolver::lookup {
    dns_resolver* self;
    std::function<void(answer)> done;
};

dns_resolver::dns_resolver(asio::io_context& io, const options& opts) : io_(io), timer_(io) {
    init_library();
    std::string csv;
    for (const std::string& s : opts.servers) {
        const auto [address, port] = split_server(s);
        if (!csv.empty()) csv += ',';
        csv += address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
        csv += ":" + std::to_string(port);
    }
    ares_options o{};
    o.sock_state_cb = &dns_resolver::on_socket_state;
    o.sock_state_cb_data = this;
    o.timeout = static_cast<int>(opts.timeout.count());
    o.tries = opts.tries;
    const int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
    if (const int rc = ares_init_options(&channel_, &o, mask); rc != ARES_SUCCESS)
        throw std::runtime_error(std::string("c-ares: ") + ares_strerror(rc));
    if (!csv.empty()) {
        if (const int rc = ares_set_servers_ports_csv(channel_, csv.c_str()); rc != ARES_SUCCESS) {
            ares_destroy(channel_);
            throw std::invalid_argument(std::string("c-ares: ") + ares_strerror(rc));
        }
    }
}

dns_resolver::~dns_resolver() {
    cancel();
    ares_destroy(channel_);
}

void dns_resolver::cancel() noexcept {
    // c-ares calls each pending lookup back (ARES_ECANCELLED); on_answer drops them.
    cancelling_ = true;
    ares_cancel(channel_);
    cancelling_ = false;
    timer_.cancel();
}

void dns_resolver::resolve(const std::string& host, std::function<void(answer)> done) {
    auto* l = new lookup{this, std::move(done)};
    ares_addrinfo_hints hints{};
    hints.ai_family = AF_UNSPEC;
    // Sorting by RFC 6724 connects a UDP socket to each address to learn its source: a system
    // call per address for an order we do not use (the group keeps its own, sorted).
    hints.ai_flags = ARES_AI_NOSORT;
    ++pending_;
    ares_getaddrinfo(channel_, host.c_str(), nullptr, &hints, &dns_resolver::on_answer, l);
    schedule_timeout();
}

void dns_resolver::on_answer(void* arg, int status, int, ares_addrinfo* res) noexcept {
    std::unique_ptr<lookup> l(static_cast<lookup*>(arg));
    dns_resolver& self = *l->self;
    --self.pending_;
    if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
        if (res) ares_freeaddrinfo(res);
        return;
    }
    answer a;
    try {
        if (status != ARES_SUCCESS) {
            a.error = ares_strerror(status);
        } else {
            int ttl = -1;
            for (const ares_addrinfo_node* n = res->nodes; n != nullptr; n = n->ai_next) {
                if (n->ai_family == AF_INET) {
                    const auto* sin = reinterpret_cast<const sockaddr_in*>(n->ai_addr);
                    asio::ip::address_v4::bytes_type b;
                    std::memcpy(b.data(), &sin->sin_addr, b.size());
                    a.addresses.emplace_back(asio::ip::address_v4(b));
                } else if (n->ai_family == AF_INET6) {
                    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(n->ai_addr);
                    asio::ip::address_v6::bytes_type b;
                    std::memcpy(b.data(), &sin6->sin6_addr, b.size());
                    a.addresses.emplace_back(asio::ip::address_v6(b, sin6->sin6_scope_id));
                } else {
                    continue;
                }
                if (ttl < 0 || n->ai_ttl < ttl) ttl = n->ai_ttl;
            }
            for (const ares_addrinfo_cname* c = res->cnames; c != nullptr; c = c->next)
                if (ttl < 0 || c->ttl < ttl) ttl = c->ttl;
            std::sort(a.addresses.begin(), a.addresses.end());
            a.addresses.erase(std::unique(a.addresses.begin(), a.addresses.end()),
                              a.addresses.end());
            a.ttl = std::chrono::seconds(std::max(ttl, 0));
            if (a.addresses.empty()) a.error = "no address";
        }
    } catch (...) {
        a.addresses.clear();
        a.error = "out of memory";
    }
    if (res) ares_freeaddrinfo(res);
    // Never from inside resolve() or ares_process_fd: the caller may start the next lookup, or
    // destroy this resolver, from its callback.
    try {
        asio::post(self.io_,
                   [done = std::move(l->done), a = std::move(a)]() mutable { done(std::move(a)); });
    } catch (...) {
    }
}

void dns_resolver::on_socket_state(void* data, int fd, int readable, int writable) noexcept {
    auto& self = *static_cast<dns_resolver*>(data);
    try {
        auto it = self.watches_.find(fd);
        if (!readable && !writable) {
            if (it == self.watches_.end()) return;
            // c-ares is about to close it: let go of it first, so Asio neither closes it nor
            // keeps it in its epoll set (release() aborts the waits in flight).
            it->second->gone = true;
            it->second->desc.release();
            self.watches_.erase(it);
            return;
        }
        if (it == self.watches_.end())
            it = self.watches_.emplace(fd, std::make_shared<watch>(self.io_, fd)).first;
        const auto w = it->second;
        w->want_read = readable != 0;
        w->want_write = writable != 0;
        if (w->want_read && !w->reading) self.arm(w, false);
        if (w->want_write && !w->writing) self.arm(w, true);
    } catch (...) {
        // Not watched: c-ares still gives the lookup up at its timeout.
    }
}

void dns_resolver::arm(const std::shared_ptr<watch>& w, bool write) {
    (write ? w->writing : w->reading) = true;
    w->desc.async_wait(
        write ? asio::posix::descriptor_base::wait_write : asio::posix::descriptor_base::wait_read,
        [this, w, write](const boost::system::error_code& ec) {
            (write ? w->writing : w->reading) = false;
            if (ec || w->gone) return;
            const int fd = w->fd;
            process(write ? ARES_SOCKET_BAD : fd, write ? fd : ARES_SOCKET_BAD);
            if (w->gone) return;
            if (write ? (w->want_write && !w->writing) : (w->want_read && !w->reading)) {
                try {
                    arm(w, write);
                } catch (...) {
                }
            }
        });
}

void dns_resolver::process(int read_fd, int write_fd) noexcept {
    ares_process_fd(channel_, read_fd, write_fd);
    schedule_timeout();
}

void dns_resolver::schedule_timeout() noexcept {
    if (pending_ == 0) {
        timer_.cancel();
        return;
    }
    timeval max{5, 0};
    timeval tv{};
    const timeval* t = ares_timeout(channel_, &max, &tv);
    const auto after = std::chrono::seconds(t->tv_sec) + std::chrono::microseconds(t->tv_usec);
    timer_.expires_after(after);
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        process(ARES_SOCKET_BAD, ARES_SOCKET_BAD); // c-ares retries or gives up what is due
    });
}

} // namespace tarry::resolve
