#include "server.hpp"

#include "admin.hpp"
#include "config_diff.hpp"
#include "metrics_text.hpp"
#include "preflight.hpp"

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <future>

#include <pthread.h>
#include <signal.h>

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

std::string signal_name(int sig) {
    switch (sig) {
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "signal " + std::to_string(sig);
    }
}

} // namespace

server::server(config cfg, std::vector<std::string> args, std::vector<custom_route> custom)
    : cfg_(std::move(cfg)), args_(std::move(args)), custom_(std::move(custom)),
      worker_count_(worker_count(cfg_)), signals_(io_, SIGINT, SIGTERM, SIGHUP), log_flush_(io_) {
    signals_.add(SIGUSR1); // reopen the access log (logrotate's postrotate), as nginx does
    // send() is called with MSG_NOSIGNAL, but sendfile() has no such flag: a client that resets
    // while a file streams would otherwise kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    preflight(cfg_); // what would fail later (a docroot, the log's directory) fails now
    ticket_keys_ = std::make_shared<tls::ticket_keys>();
    tls_ = make_tls_context(cfg_, ticket_keys_);
    if (tls_)
        for (const std::string& w : tls_->warnings())
            spdlog::warn("{}", w);
    inherited_ = take_inherited_sockets();
    for (const auto& s : inherited_)
        if (std::none_of(cfg_.listen.begin(), cfg_.listen.end(),
                         [&](const listen_address& a) { return s->address().same_socket(a); }))
            throw config_error("listen: systemd passed a socket on " + s->address().name() +
                               ", which no listen address names");
    if (cfg_.access_log) access_ = open_access_log(*cfg_.access_log, cfg_.access_log_format);
    // Every name resolves before anything is built from it, as nginx's start requires; a name
    // that does not is a configuration error (exit 2), named as --check-config names it.
    const resolved_names resolved = resolve_upstream_names(cfg_);
    for (const auto& [host, a] : resolved.answers)
        names_->set(host, a.addresses);
    for (unsigned i = 0; i < worker_count_; ++i) {
        workers_.push_back(std::make_unique<worker>(i, cfg_, worker_count_, access_, tls_));
        workers_.back()->handlers().names = names_;
        workers_.back()->set_router(build_router(cfg_, custom_, workers_.back()->handlers()));
    }
    watch_names(resolved, cfg_);
    open_listeners(cfg_.listen);
    if (cfg_.admin_listen)
        admin_ = std::make_unique<admin>(
            io_, *cfg_.admin_listen, [this] { return metrics(); }, [this] { return !stopping_; });
    // Last: written once the process can serve, so what reads it signals a running server.
    if (cfg_.pid_file) pid_file_ = std::make_unique<pid_file>(*cfg_.pid_file);
}

void server::watch_names(const resolved_names& resolved, const config& cfg) {
    if (!names_watch_ && resolved.answers.empty()) return;
    if (!names_watch_) {
        names_watch_ = std::make_unique<resolve::name_watch>(
            io_, resolver_options(cfg), refresh_bounds_of(cfg),
            [names = names_](const std::string& host,
                             const std::vector<boost::asio::ip::address>& addresses) {
                names->set(host, addresses);
            });
    }
    names_watch_->watch(resolved.answers, resolver_options(cfg), refresh_bounds_of(cfg));
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
    std::string out = render_metrics(ws, snaps);
    if (names_watch_) render_names(out, names_watch_->states());
    return out;
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
                      const std::vector<listen_address>& open) {
    std::vector<listen_address> fresh;
    for (const auto& a : wanted)
        if (std::none_of(open.begin(), open.end(),
                         [&](const listen_address& o) { return o.same_socket(a); }))
            fresh.push_back(a);
    // Every check before any bind, so that a refusal leaves nothing behind; a Unix socket
    // bound here and then not used closes (and removes its file) when `shared` goes.
    std::vector<std::shared_ptr<shared_socket>> shared(fresh.size());
    for (std::size_t i = 0; i < fresh.size(); ++i) {
        const auto from_systemd =
            std::find_if(inherited_.begin(), inherited_.end(),
                         [&](const auto& s) { return s->address().same_socket(fresh[i]); });
        if (from_systemd != inherited_.end())
            shared[i] = *from_systemd;
        else if (fresh[i].unix_path.empty())
            refuse_if_taken(fresh[i]);
    }
    for (std::size_t i = 0; i < fresh.size(); ++i)
        if (!shared[i] && !fresh[i].unix_path.empty())
            shared[i] = shared_socket::bind_unix(fresh[i]);
    const auto make = [&](worker& w, std::size_t i) {
        return shared[i] ? w.make_listener(fresh[i], shared[i]) : w.make_listener(fresh[i]);
    };
    std::vector<std::vector<std::shared_ptr<listener>>> per_worker(workers_.size());
    for (std::size_t i = 0; i < fresh.size(); ++i)
        per_worker.front().push_back(make(*workers_.front(), i));
    // Port 0: every worker takes the port the first one got.
    for (std::size_t i = 0; i < fresh.size(); ++i)
        if (fresh[i].port == 0 && !shared[i])
            if (const auto ep = per_worker.front()[i]->local_endpoint()) fresh[i].port = ep->port();
    for (std::size_t w = 1; w < workers_.size(); ++w)
        for (std::size_t i = 0; i < fresh.size(); ++i)
            per_worker[w].push_back(make(*workers_[w], i));
    for (std::size_t i = 0; i < fresh.size(); ++i)
        if (shared[i] && !fresh[i].unix_path.empty()) unix_sockets_.push_back(shared[i]);
    return per_worker;
}

std::vector<boost::asio::ip::tcp::endpoint> server::endpoints() const {
    return workers_.front()->endpoints();
}

void server::run() {
    for (const auto& l : workers_.front()->listeners())
        if (const auto ep = l->local_endpoint())
            spdlog::info("listening on {}{}", to_string(*ep), l->address().tls ? " (TLS)" : "");
    for (const auto& a : cfg_.listen)
        if (!a.unix_path.empty()) spdlog::info("listening on {}", a.name());
    if (!inherited_.empty()) spdlog::info("{} listening socket(s) from systemd", inherited_.size());
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
    // Stopped. A signal from now on (a second Ctrl-C as the process ends) must not take the
    // default action once the signal set is gone, killing it by signal instead of exit 0: the
    // stop signals stay pending in this thread, the last one (the workers and the joiner end
    // below; until then the set still catches what reaches them).
    sigset_t late;
    sigemptyset(&late);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1})
        sigaddset(&late, sig);
    pthread_sigmask(SIG_BLOCK, &late, nullptr);
    if (joiner_.joinable()) joiner_.join();
    for (auto& w : workers_)
        w->join();
    if (access_) access_->flush();
    log_exit();
}

void server::log_exit() const {
    worker::drain_outcome total;
    for (const auto& w : workers_) {
        const auto d = w->drained();
        total.at_stop += d.at_stop;
        total.cut += d.cut;
        total.left += d.left;
    }
    const std::size_t finished = total.at_stop - std::min(total.at_stop, total.cut + total.left);
    std::string outcome =
        fmt::format("{} connection(s) open at the stop: {} finished", total.at_stop, finished);
    if (total.cut != 0)
        outcome += fmt::format(", {} closed at drain_timeout ({})", total.cut,
                               duration_text(cfg_.drain_timeout));
    if (total.left != 0) outcome += fmt::format(", {} closed at once", total.left);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - stop_started_);
    spdlog::info("exit ({}): {}; drained in {}ms", stop_reason_, outcome, took.count());
}

void server::wait_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
        // A signal caught before the cancel below may complete after it: waiting again then
        // would keep run() from ever returning (a burst of SIGTERMs left a process with no
        // workers, waiting for good).
        if (ec || stopped_) return;
        if (sig == SIGHUP) {
            reload();
        } else if (sig == SIGUSR1) {
            if (access_ && access_->reopen())
                spdlog::info("SIGUSR1: reopened the access log {}", access_->path().string());
            else if (access_)
                spdlog::error(
                    "SIGUSR1: cannot reopen the access log {}; still writing the old file",
                    access_->path().string());
        } else if (!stopping_) {
            stop_reason_ = signal_name(sig);
            spdlog::info(
                "signal {}: stopping (drain up to {}ms)", sig,
                std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.drain_timeout).count());
            stop();
        } else {
            spdlog::warn("signal {} again: stopping now", sig);
            stop_reason_ += ", then " + signal_name(sig) + " again";
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
        stop_started_ = std::chrono::steady_clock::now();
        for (auto& w : workers_)
            w->stop(cfg_.drain_timeout);
        // Workers return from run() by themselves once drained; then the signal wait (the only
        // thing left on this context) is cancelled so run() returns too.
        joiner_ = std::thread([this] {
            for (auto& w : workers_)
                w->join();
            boost::asio::post(io_, [this] {
                boost::system::error_code ignored;
                stopped_ = true;
                signals_.cancel(ignored);
                if (names_watch_) names_watch_->stop(); // its timer would keep run() going
                log_flush_.cancel(); // the log is flushed once the workers have stopped
                if (admin_) admin_->close();
            });
        });
    });
}

std::future<bool> server::request_reload() {
    auto done = std::make_shared<std::promise<bool>>();
    auto f = done->get_future();
    boost::asio::post(io_, [this, done] {
        if (!reload([done] { done->set_value(true); })) done->set_value(false);
    });
    return f;
}

std::shared_ptr<access_log> server::open_access_log(const std::filesystem::path& path,
                                                    const std::string& format) {
    auto log = std::make_shared<access_log>(path, access_log::format_named(format));
    std::weak_ptr<access_log> weak = log;
    log->on_waiting([this, weak] {
        boost::asio::post(io_, [this, weak] {
            if (auto l = weak.lock()) flush_soon(std::move(l));
        });
    });
    return log;
}

void server::flush_soon(std::shared_ptr<access_log> log) {
    // One timer, armed only while lines wait: an idle server has nothing to wake for.
    if (flush_armed_ || stopping_) return;
    flush_armed_ = true;
    log_flush_.expires_after(std::chrono::seconds(1));
    log_flush_.async_wait([this, log = std::move(log)](const boost::system::error_code&) {
        flush_armed_ = false;
        log->flush();
        if (access_ && access_ != log) access_->flush();
    });
}

void server::set_unix_permissions(const std::vector<listen_address>& wanted) {
    std::erase_if(unix_sockets_, [](const auto& w) { return w.expired(); });
    for (const auto& weak : unix_sockets_) {
        const auto sock = weak.lock();
        if (!sock) continue;
        for (const auto& a : wanted) {
            if (!a.same_socket(sock->address())) continue;
            try {
                sock->set_permissions(a);
            } catch (const std::exception& e) {
                spdlog::error("reload: {}", e.what());
            }
        }
    }
}

bool server::reload(std::function<void()> applied) {
    // Everything new is built before anything changes: a failure anywhere leaves the server as
    // it was, and the next reload starts from the running state, not a half-applied one.
    config next;
    std::vector<std::shared_ptr<http::router>> routers;
    std::vector<std::vector<std::shared_ptr<listener>>> added;
    std::shared_ptr<access_log> access = access_;
    std::unique_ptr<admin> next_admin;
    std::shared_ptr<const tls::context> next_tls;
    resolved_names resolved;
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
            if (applied) applied();
            return true;
        }
        preflight(next);
        // Names are looked up again, all at once: one that fails keeps its last good answer
        // (logged), a new one that fails rejects the reload. Fresh answers go to the running
        // groups too: they are as true for them as for the new ones.
        resolved = resolve_upstream_names(next, names_.get());
        for (const auto& [host, a] : resolved.answers)
            names_->set(host, a.addresses);
        for (const std::string& host : resolved.kept)
            spdlog::warn("reload: cannot resolve {} ({}); keeping its last answer ({})", host,
                         resolved.answers[host].error,
                         resolve::to_string(resolved.answers[host].addresses));
        // Certificates are read again, all of them or none: a bad key keeps the running ones.
        next_tls = make_tls_context(next, ticket_keys_);
        for (auto& w : workers_)
            routers.push_back(build_router(next, custom_, w->handlers()));
        added = new_listeners(next.listen, cfg_.listen);
        if (next.access_log != cfg_.access_log || next.access_log_format != cfg_.access_log_format)
            access = next.access_log ? open_access_log(*next.access_log, next.access_log_format)
                                     : nullptr;
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
    if (next.pid_file != cfg_.pid_file) {
        spdlog::warn("reload: a new pid_file needs a restart; the process id stays in {}",
                     pid_file_ ? pid_file_->path().string() : std::string("no file"));
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
    set_unix_permissions(next.listen);
    if (next_tls)
        for (const std::string& w : next_tls->warnings())
            spdlog::warn("reload: {}", w);
    std::vector<std::string> changes = config_changes(cfg_, next);
    if (changes.empty()) changes.emplace_back("no change");
    // Certificates are read again whether or not their paths changed (a renewal keeps them).
    if (next_tls) changes.emplace_back("certificates read again");
    tls_ = std::move(next_tls);
    try {
        watch_names(resolved, next);
    } catch (const std::exception& e) { // the resolver was usable a moment ago: out of memory
        spdlog::error("reload: names are no longer looked up again: {}", e.what());
    }
    cfg_ = std::move(next);
    spdlog::info("reloaded configuration: {}", fmt::join(changes, "; "));
    // The server's state is final before any worker can report: whoever waits for `applied`
    // may read it. Each worker applies the change on its own thread; the last to do so tells.
    auto left = std::make_shared<std::atomic<std::size_t>>(workers_.size());
    const auto one_applied = [left, applied = std::move(applied)] {
        if (left->fetch_sub(1) == 1 && applied) applied();
    };
    for (std::size_t i = 0; i < workers_.size(); ++i)
        workers_[i]->reload(cfg_, std::move(routers[i]), worker_count_, access_,
                            std::move(added[i]), tls_, one_applied);
    return true;
}

} // namespace tarry::server
