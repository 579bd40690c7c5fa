-- Plain keep-alive load: every connection sends GET <path> back to back and never closes.
-- The baseline the other scripts are compared against. The request is formatted once and returned
-- from request(), like the other scripts, so all of them pay the same per-request Lua call.
--
--   wrk -t1 -c64 -d10s -s load/wrk/keepalive.lua http://127.0.0.1:8080/
--
-- wrk fills wrk.headers["Host"] from the URL (or from -H "Host: ..."); it is passed explicitly so
-- the request always carries it. HTTP/1.1 without "Connection: close" keeps the connection open.

local req

function init(args)
    req = wrk.format("GET", wrk.path, { ["Host"] = wrk.headers["Host"] })
end

function request()
    return req
end
