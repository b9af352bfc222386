-- wrk: complete payments against one store, for bench/run.sh. Each request
-- creates an intent for the store's saved card, or confirms one created
-- before; a payment is complete when the confirm answers "succeeded" (its
-- event committed with it). With "idem" as the fourth argument every POST
-- carries its own Idempotency-Key, as the README tells clients to send.
--   wrk -t2 -c50 -d5s --latency -s bench/pay.lua URL -- sk_... card_... EUR [idem]
local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

function init(args)
  local key, card, currency = args[1], args[2], args[3]
  idem = args[4] == "idem"
  headers = {["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"}
  body = '{"amount":2500,"currency":"' .. currency .. '","customer":{"id":"cus_bench","name":"Bench Buyer",' ..
    '"email":"bench@shop.example","phone":"+358401234567"},"payment_method":"' .. card .. '"}'
  queue, succeeded, failed, n = {}, 0, 0, 0
  prefix = string.format("bench-%d-%d-%d-", os.time(), math.random(1, 1e9), tid or 0)
end

local function with_key()
  if not idem then return headers end
  n = n + 1
  headers["Idempotency-Key"] = prefix .. n
  return headers
end

function request()
  local id = table.remove(queue)
  if id then
    return wrk.format("POST", "/v1/payment_intents/" .. id .. "/confirm", with_key(), "")
  end
  return wrk.format("POST", "/v1/payment_intents", with_key(), body)
end

function response(status, hdrs, resp)
  if status == 201 then
    local id = resp:match('"id":"(pi_%w+)"')
    if id then table.insert(queue, id) end
  elseif status == 200 and resp:find('"status":"succeeded"', 1, true) then
    succeeded = succeeded + 1
  else
    failed = failed + 1
  end
end

-- The driver reads the last line: payments, failures, seconds, p99 of all
-- requests in ms.
function done(summary, latency, requests)
  local ok, bad = 0, 0
  for _, t in ipairs(threads) do ok = ok + t:get("succeeded"); bad = bad + t:get("failed") end
  io.write(string.format("payments %d failed %d seconds %.3f p99_ms %.1f\n",
    ok, bad, summary.duration / 1e6, latency:percentile(99) / 1000))
end
