-- Pipelined keep-alive load: each connection writes DEPTH GET requests in one write, waits for
-- all DEPTH responses, then writes the next batch. Exercises request parsing across reads and
-- response ordering. DEPTH is the first script argument (default 16).
--
--   wrk -t1 -c64 -d10s -s load/wrk/pipeline.lua http://127.0.0.1:8080/ -- 16
--
-- wrk counts every response as a request, but its latency figures are per batch (from the write
-- to the last response of the batch), so they grow with DEPTH.

local req

function init(args)
    local depth = tonumber(args[1] or "16")
    if depth == nil or depth < 1 or depth ~= math.floor(depth) then
        error("pipeline.lua: depth must be a positive integer, got " .. tostring(args[1]))
    end
    local one = wrk.format("GET", wrk.path, { ["Host"] = wrk.headers["Host"] })
    req = string.rep(one, depth)
end

function request()
    return req
end
