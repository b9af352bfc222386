-- wrk: GET one path with an optional bearer key.
--   wrk -t2 -c50 -d10s --latency -s bench/get.lua URL -- /path [key]
function init(args)
  path = args[1]
  if args[2] then wrk.headers["Authorization"] = "Bearer " .. args[2] end
end
function request() return wrk.format("GET", path) end
