-- One fixed GET ($BENCH_PATH), repeated; figures to $BENCH_OUT. BENCH_TOKEN: a bearer token to
-- send, when Flow runs with auth on.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local path = os.getenv("BENCH_PATH")
local token = os.getenv("BENCH_TOKEN")
local headers = {}
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
function request()
  return wrk.format("GET", path, headers)
end
done = bench_done
