-- wrk: GET /v1/events pages from cursors spread over a store: each
-- request starts after an event drawn at random from a file of ids (one a
-- line, as bench/events writes), so that pages come from the whole
-- history rather than from the pages already in a cache.
--   wrk -t2 -c10 -d10s --latency -s bench/pages.lua URL -- sk_... IDS_FILE [limit]
local ids = {}
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  for l in io.lines(args[2]) do ids[#ids + 1] = l end
  limit = args[3] or "100"
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  return wrk.format("GET", "/v1/events?limit=" .. limit .. "&starting_after=" .. ids[math.random(#ids)])
end
