-- Keep-alive connections with a mix of idle gaps between requests: wrk's delay() hook pauses
-- before each request on a connection (the connection stays open and idle meanwhile), so the
-- server sees busy connections, briefly idle ones and long-idle ones at the same time, which is
-- what keeps its idle-timeout bookkeeping (arm, touch, re-arm) busy.
--
-- Default mix, per request:
--   80%  no delay
--   15%  50-200 ms idle
--    5%  1-2 s idle
-- Override with script arguments PERCENT:MIN_MS-MAX_MS (or PERCENT:MS), which must add up to 100:
--
--   wrk -t1 -c64 -d10s -s load/wrk/idle_mix.lua http://127.0.0.1:8080/
--   wrk -t1 -c64 -d10s -s load/wrk/idle_mix.lua http://127.0.0.1:8080/ -- 80:0 15:50-200 5:1000-2000
--
-- Keep the longest gap below the server's keep-alive timeout: a connection the server expires
-- while idle shows up in wrk as a "read" socket error and a reconnect. wrk's latency excludes the
-- delay itself; requests/sec drops with the mix, since connections spend time idle.

local mix = {}
local req

local function parse_bucket(arg)
    local pct, lo, hi = string.match(arg, "^(%d+%.?%d*):(%d+)-(%d+)$")
    if pct == nil then
        pct, lo = string.match(arg, "^(%d+%.?%d*):(%d+)$")
        hi = lo
    end
    if pct == nil then
        error("idle_mix.lua: expected PERCENT:MIN_MS-MAX_MS, got " .. arg)
    end
    pct, lo, hi = tonumber(pct), tonumber(lo), tonumber(hi)
    if hi < lo then
        error("idle_mix.lua: MAX_MS < MIN_MS in " .. arg)
    end
    return { pct = pct, lo = lo, hi = hi }
end

-- setup() runs once per thread in wrk's main Lua state: hand each thread its own number, so
-- threads seed their generators differently instead of all drawing the same delays.
local next_thread_id = 0

function setup(thread)
    next_thread_id = next_thread_id + 1
    thread:set("thread_id", next_thread_id)
end

function init(args)
    if args[1] == nil then
        args = { "80:0", "15:50-200", "5:1000-2000" }
    end
    local total = 0
    for i = 1, #args do
        local bucket = parse_bucket(args[i])
        total = total + bucket.pct
        bucket.upto = total
        mix[#mix + 1] = bucket
    end
    if math.abs(total - 100) > 1e-9 then
        error("idle_mix.lua: percentages add up to " .. total .. ", not 100")
    end
    math.randomseed(os.time() * 1000 + (thread_id or 0))
    req = wrk.format("GET", wrk.path, { ["Host"] = wrk.headers["Host"] })
end

function delay()
    local r = math.random() * 100
    for _, bucket in ipairs(mix) do
        if r < bucket.upto then
            return math.random(bucket.lo, bucket.hi)
        end
    end
    return mix[#mix].lo
end

function request()
    return req
end
