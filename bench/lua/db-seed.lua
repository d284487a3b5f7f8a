-- Seeds a document table with distinct rows: {"data":{"city":"c<n % 5000>","n":n}}.
-- Used only by bench/scenarios/db.mjs to fill 100k rows before measuring (headers via -H).
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", nil, nil, '{"data":{"city":"c' .. (n % 5000) .. '","n":' .. n .. '}}')
end
