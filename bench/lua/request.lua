-- Generic wrk request script: method and body from the environment, so scenarios can send
-- POST/PATCH bodies without writing Lua. Headers are passed with wrk -H.
--   WRK_METHOD  HTTP method (default GET)
--   WRK_BODY    request body (optional; set Content-Type with a header)
-- Note: it defines no request()/response() callbacks on purpose: those run Lua per request
-- and make wrk itself the bottleneck near 150k req/s. wrk builds one static request.
local method = os.getenv("WRK_METHOD")
local body = os.getenv("WRK_BODY")
if method ~= nil and method ~= "" then wrk.method = method end
if body ~= nil and body ~= "" then wrk.body = body end
