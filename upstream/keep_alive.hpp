#pragma once

#include <memory>

namespace tarry::upstream {

/// Taken first by a callback from outside (the upstream connection) on an object that owns
/// itself through `self` (a proxied exchange, a tunnel), when the callback goes on after calling
/// into the client's exchange: such a call may end the object on the way (on_abort, when it has
/// to drive the client's connection at once), and an end only lets go of `self`, so the object
/// is freed when the callback is done with it, not under it. A callback whose last act is to
/// end the object needs none: the end holds the object across its own call to the client.
template <class T> class keep_alive {
public:
    explicit keep_alive(const std::shared_ptr<T>& self) noexcept : held_(self) {}
    keep_alive(const keep_alive&) = delete;
    keep_alive& operator=(const keep_alive&) = delete;

private:
    const std::shared_ptr<T> held_;
};

} // namespace tarry::upstream
