#include "server.hpp"

#include "admin.hpp"
#include "metrics_text.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <future>

namespace tarry::server {

namespace {

unsigned worker_count(const config& cfg) {
    if (cfg.workers != 0) return cfg.workers;
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : n;
}

std::string to_string(const boost::asio::ip::tcp::endpoint& ep) {
    const auto a = ep.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" +
           std::to_string(ep.port());
}

} // namespace

server::server(config cfg, std::vector<std::string> args)
    : cfg_(std::move(cfg)), args_(std::move(args)), worker_count_(worker_count(cfg_)),
      signals_(io_, SIGINT, SIGTERM, SIGHUP) {
    // send() is called with MSG_NOSIGNAL, but sendfile() has no such flag: a client that resets
    // while a file streams would otherwise kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    if (cfg_.docroot) files_ = std::make_unique<http::static_files>(*cfg_.docroot);
    if (cfg_.access_log) access_ = std::make_unique<access_log>(*cfg_.access_log);
    for (unsigned i = 0; i < worker_count_; ++i)
        workers_.push_back(
            std::make_unique<worker>(i, cfg_, files_.get(), worker_count_, access_.get()));
    open_listeners(cfg_.listen);
    if (cfg_.admin_listen)
        admin_ = std::make_unique<admin>(io_, *cfg_.admin_listen, [this] { return metrics(); });
}

std::optional<boost::asio::ip::tcp::endpoint> server::admin_endpoint() const {
    if (!admin_) return std::nullopt;
    return admin_->local_endpoint();
}

std::string server::metrics() {
    std::vector<worker*> ws;
    std::vector<std::future<worker_snapshot>> pending;
    for (auto& w : workers_) {
        ws.push_back(w.get());
        auto p = std::make_shared<std::promise<worker_snapshot>>();
        pending.push_back(p->get_future());
        w->post([p, wp = w.get()] { p->set_value(take_snapshot(*wp)); });
    }
    std::vector<worker_snapshot> snaps;
    for (auto& f : pending)
        // A worker that is gone (stopping) or stuck does not hold the endpoint hostage.
        if (f.wait_for(std::chrono::seconds(1)) == std::future_status::ready)
            snaps.push_back(f.get());
    return render_metrics(ws, snaps);
}

server::~server() {
    if (joiner_.joinable()) joiner_.join();
    admin_.reset();
    workers_.clear();
}

std::vector<listen_address> server::resolve_ports(const std::vector<listen_address>& addrs) const {
    // Port 0 asks the kernel for a free port. Every worker must share it, so the first worker
    // binds, and the others take the port it got.
    std::vector<listen_address> resolved = addrs;
    const auto eps = workers_.front()->endpoints();
    for (std::size_t i = 0; i < resolved.size() && i < eps.size(); ++i)
        if (resolved[i].port == 0) resolved[i].port = eps[i].port();
    return resolved;
}

void server::open_listeners(const std::vector<listen_address>& addrs) {
    for (const auto& a : addrs)
        workers_.front()->listen(a);
    const auto resolved = resolve_ports(addrs);
    for (std::size_t w = 1; w < workers_.size(); ++w)
        for (const auto& a : resolved)
            workers_[w]->listen(a);
}

std::vector<boost::asio::ip::tcp::endpoint> server::endpoints() const {
    return workers_.front()->endpoints();
}

void server::run() {
    for (const auto& ep : endpoints())
        spdlog::info("listening on {}", to_string(ep));
    spdlog::info(
        "{} worker(s); keep_alive_timeout {}ms, header_timeout {}ms", worker_count_,
        std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.keep_alive_timeout).count(),
        std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.header_timeout).count());
    if (admin_) {
        spdlog::info("admin endpoint (/metrics, /healthz) on {}",
                     to_string(admin_->local_endpoint()));
        admin_->start();
    }
    for (auto& w : workers_)
        w->start();
    wait_signal();
    io_.run();
    if (joiner_.joinable()) joiner_.join();
    for (auto& w : workers_)
        w->join();
    if (access_) access_->flush();
}

void server::wait_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
            reload();
        } else if (!stopping_) {
            spdlog::info(
                "signal {}: stopping (drain up to {}ms)", sig,
                std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.drain_timeout).count());
            stop();
        } else {
            spdlog::warn("signal {} again: stopping now", sig);
            for (auto& w : workers_)
                w->io().stop();
        }
        wait_signal();
    });
}

void server::stop() {
    boost::asio::post(io_, [this] {
        if (stopping_) return;
        stopping_ = true;
        for (auto& w : workers_)
            w->stop(cfg_.drain_timeout);
        // Workers return from run() by themselves once drained; then the signal wait (the only
        // thing left on this context) is cancelled so run() returns too.
        joiner_ = std::thread([this] {
            for (auto& w : workers_)
                w->join();
            boost::asio::post(io_, [this] {
                boost::system::error_code ignored;
                signals_.cancel(ignored);
                if (admin_) admin_->close();
            });
        });
    });
}

std::future<bool> server::request_reload() {
    auto done = std::make_shared<std::promise<bool>>();
    auto f = done->get_future();
    boost::asio::post(io_, [this, done] { done->set_value(reload()); });
    return f;
}

bool server::reload() {
    config next;
    try {
        if (!args_.empty()) {
            std::vector<const char*> argv;
            for (const auto& a : args_)
                argv.push_back(a.c_str());
            next = reload_config(cfg_, static_cast<int>(argv.size()), argv.data());
        } else if (cfg_.config_file) {
            next = load_config_file(*cfg_.config_file);
        } else {
            spdlog::info("reload: no configuration file to re-read");
            return true;
        }
        if (next.docroot != cfg_.docroot) {
            old_files_.push_back(std::move(files_));
            if (next.docroot) files_ = std::make_unique<http::static_files>(*next.docroot);
        }
        for (const auto& a : next.listen)
            (void)endpoint_of(a);
    } catch (const std::exception& e) {
        spdlog::error("reload rejected, keeping the running configuration: {}", e.what());
        return false;
    }
    if (next.workers != cfg_.workers) spdlog::warn("reload: a new worker count needs a restart");
    for (auto& w : workers_)
        w->reload(next, files_.get(), worker_count_, access_.get());
    cfg_ = std::move(next);
    spdlog::info("reloaded configuration");
    return true;
}

} // namespace tarry::server
