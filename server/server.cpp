#include "server.hpp"

#include "admin.hpp"
#include "metrics_text.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
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

server::server(config cfg, std::vector<std::string> args, std::vector<custom_route> custom)
    : cfg_(std::move(cfg)), args_(std::move(args)), custom_(std::move(custom)),
      worker_count_(worker_count(cfg_)), signals_(io_, SIGINT, SIGTERM, SIGHUP) {
    // send() is called with MSG_NOSIGNAL, but sendfile() has no such flag: a client that resets
    // while a file streams would otherwise kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    if (cfg_.access_log) access_ = std::make_shared<access_log>(*cfg_.access_log);
    for (unsigned i = 0; i < worker_count_; ++i) {
        workers_.push_back(std::make_unique<worker>(i, cfg_, worker_count_, access_));
        workers_.back()->set_router(build_router(cfg_, custom_, workers_.back()->handlers()));
    }
    open_listeners(cfg_.listen);
    if (cfg_.admin_listen)
        admin_ = std::make_unique<admin>(
            io_, *cfg_.admin_listen, [this] { return metrics(); }, [this] { return !stopping_; });
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

void server::open_listeners(const std::vector<listen_address>& addrs) {
    auto per_worker = new_listeners(addrs, {});
    for (std::size_t w = 0; w < workers_.size(); ++w)
        for (auto& l : per_worker[w])
            workers_[w]->adopt(std::move(l));
}

std::vector<std::vector<std::shared_ptr<listener>>>
server::new_listeners(const std::vector<listen_address>& wanted,
                      const std::vector<listen_address>& open) const {
    std::vector<listen_address> fresh;
    for (const auto& a : wanted)
        if (std::find(open.begin(), open.end(), a) == open.end()) fresh.push_back(a);
    std::vector<std::vector<std::shared_ptr<listener>>> per_worker(workers_.size());
    for (const auto& a : fresh)
        per_worker.front().push_back(workers_.front()->make_listener(a));
    // Port 0: every worker takes the port the first one got.
    for (std::size_t i = 0; i < fresh.size(); ++i)
        if (fresh[i].port == 0) fresh[i].port = per_worker.front()[i]->local_endpoint().port();
    for (std::size_t w = 1; w < workers_.size(); ++w)
        for (const auto& a : fresh)
            per_worker[w].push_back(workers_[w]->make_listener(a));
    return per_worker;
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
    // Everything new is built before anything changes: a failure anywhere leaves the server as
    // it was, and the next reload starts from the running state, not a half-applied one.
    config next;
    std::vector<std::shared_ptr<http::router>> routers;
    std::vector<std::vector<std::shared_ptr<listener>>> added;
    std::shared_ptr<access_log> access = access_;
    std::unique_ptr<admin> next_admin;
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
        for (auto& w : workers_)
            routers.push_back(build_router(next, custom_, w->handlers()));
        added = new_listeners(next.listen, cfg_.listen);
        if (next.access_log != cfg_.access_log)
            access = next.access_log ? std::make_shared<access_log>(*next.access_log) : nullptr;
        if (next.admin_listen != cfg_.admin_listen && next.admin_listen)
            next_admin = std::make_unique<admin>(
                io_, *next.admin_listen, [this] { return metrics(); },
                [this] { return !stopping_; });
    } catch (const std::exception& e) {
        spdlog::error("reload rejected, keeping the running configuration: {}", e.what());
        return false;
    }
    if (next.workers != cfg_.workers) {
        spdlog::warn("reload: workers = {} needs a restart; {} keep running", next.workers,
                     worker_count_);
    }
    spdlog::set_level(spdlog::level::from_str(next.log_level));
    if (next.admin_listen != cfg_.admin_listen) {
        if (admin_) {
            admin_->close();
            old_admins_.push_back(std::move(admin_));
        }
        admin_ = std::move(next_admin);
        if (admin_) admin_->start();
    }
    access_ = access;
    for (std::size_t i = 0; i < workers_.size(); ++i)
        workers_[i]->reload(next, std::move(routers[i]), worker_count_, access_,
                            std::move(added[i]));
    cfg_ = std::move(next);
    spdlog::info("reloaded configuration");
    return true;
}

} // namespace tarry::server
