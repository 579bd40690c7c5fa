-- Connection churn: every request carries "Connection: close", so the server answers once and
-- closes, and wrk opens a new connection for the next request. Measures accept + first request +
-- close, i.e. the connection set-up and tear-down path rather than the keep-alive path.
--
--   wrk -t1 -c64 -d10s -s load/wrk/churn.lua http://127.0.0.1:8080/
--
-- Expect one reconnect per request (wrk does not count it as an error). The server closes first,
-- so TIME_WAIT sockets pile up on the server's side, tens of thousands after a few seconds; that
-- is expected, and they do not use up the client's ephemeral ports.

local req

function init(args)
    req = wrk.format("GET", wrk.path, {
        ["Host"] = wrk.headers["Host"],
        ["Connection"] = "close",
    })
end

function request()
    return req
end
