-- wrk: complete payments against keelpay. Each connection creates an intent
-- for a saved card, then confirms it; a payment is complete when the confirm
-- answers "succeeded" (its event committed with it).
--   wrk -t2 -c50 -d10s --latency -s bench/payment.lua URL -- sk_... card_... EUR
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  key, card, currency = args[1], args[2], args[3]
  wrk.headers["Authorization"] = "Bearer " .. key
  wrk.headers["Content-Type"] = "application/json"
  queue, succeeded, failed, pending = {}, 0, 0, nil
  body = '{"amount":2500,"currency":"' .. currency .. '","customer":{"id":"cus_bench","name":"Bench Buyer",' ..
    '"email":"bench@shop.example","phone":"+358401234567"},"payment_method":"' .. card .. '"}'
end
function request()
  local id = table.remove(queue)
  if id then
    return wrk.format("POST", "/v1/payment_intents/" .. id .. "/confirm", nil, "")
  end
  return wrk.format("POST", "/v1/payment_intents", nil, body)
end
function response(status, headers, resp)
  if status == 201 then
    local id = resp:match('"id":"(pi_%w+)"')
    if id then table.insert(queue, id) end
  elseif status == 200 then
    if resp:find('"status":"succeeded"', 1, true) then succeeded = succeeded + 1 else failed = failed + 1 end
  else
    failed = failed + 1
  end
end
function done(summary, latency, requests)
  local ok, bad = 0, 0
  for _, t in ipairs(threads) do ok = ok + t:get("succeeded"); bad = bad + t:get("failed") end
  local secs = summary.duration / 1e6
  io.write(string.format("complete payments: %d in %.1fs = %.0f/s (failed %d)\n", ok, secs, ok / secs, bad))
end
