-- wrk: complete payments spread over several stores, for bench/run-multi.sh.
-- Each request creates an intent for the next store's saved card, or confirms
-- an intent created before with its store's secret key; a payment is complete
-- when the confirm answers "succeeded" (its event committed with it).
--   wrk -t1 -c25 -d10s -s bench/payments-stores.lua URL -- EUR sk_1:card_1 sk_2:card_2 ...
local threads = {}
function setup(thread) table.insert(threads, thread) end

function init(args)
  local currency = args[1]
  stores, by_card = {}, {}
  for i = 2, #args do
    local key, card = args[i]:match("^(sk_%w+):(card_%w+)$")
    local s = {
      headers = {["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"},
      body = '{"amount":2500,"currency":"' .. currency .. '","customer":{"id":"cus_bench","name":"Bench Buyer",' ..
        '"email":"bench@shop.example","phone":"+358401234567"},"payment_method":"' .. card .. '"}',
    }
    table.insert(stores, s)
    by_card[card] = s
  end
  queue, turn, succeeded, failed = {}, 0, 0, 0
end

function request()
  local job = table.remove(queue)
  if job then
    return wrk.format("POST", "/v1/payment_intents/" .. job.id .. "/confirm", job.store.headers, "")
  end
  turn = turn % #stores + 1
  local s = stores[turn]
  return wrk.format("POST", "/v1/payment_intents", s.headers, s.body)
end

function response(status, headers, body)
  if status == 201 then
    local id, card = body:match('"id":"(pi_%w+)"'), body:match('"card":"(card_%w+)"')
    if id and by_card[card] then table.insert(queue, {id = id, store = by_card[card]}) end
  elseif status == 200 and body:find('"status":"succeeded"', 1, true) then
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
