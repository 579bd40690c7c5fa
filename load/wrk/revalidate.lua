-- Revalidation load: every request carries the validator a browser or CDN stored, so every answer
-- is a 304 with no body. The entity tag is the script's argument (each server makes its own).
--
--   wrk -t1 -c64 -d5s -s load/wrk/revalidate.lua http://127.0.0.1:8080/1k.html -- '"abc-400-1"'

local req

function init(args)
    req = wrk.format("GET", wrk.path, {
        ["Host"] = wrk.headers["Host"],
        ["If-None-Match"] = args[1],
    })
end

function request()
    return req
end

local non_304 = 0

function response(status, headers, body)
    if status ~= 304 then
        non_304 = non_304 + 1
    end
end

function done(summary, latency, requests)
    io.write(string.format("non-304 responses: %d\n", non_304))
end
