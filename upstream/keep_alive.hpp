#pragma once

#include <memory>

namespace tarry::upstream {

/// Taken first by a callback from outside (the upstream connection, the client's output) on an
/// object that owns itself through `self` (a proxied exchange, a tunnel): keeps it alive until
/// the callback returns. What the callback calls on the client's exchange may end the object on
/// the way (on_abort, when that call has to drive the client's connection at once), and an end
/// only lets go of `self`: the object is freed when the callback is done with it, not under it.
template <class T> class keep_alive {
public:
    explicit keep_alive(const std::shared_ptr<T>& self) noexcept : held_(self) {}
    keep_alive(const keep_alive&) = delete;
    keep_alive& operator=(const keep_alive&) = delete;

private:
    const std::shared_ptr<T> held_;
};

} // namespace tarry::upstream
