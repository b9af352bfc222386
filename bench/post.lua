-- wrk: POST an empty JSON object to one path (the anchor's insert).
function request() return wrk.format("POST", "/rows", {["Content-Type"] = "application/json"}, "{}") end
