-- GET /v1/components/by-serial over the seeded compute trays, in a pseudo-random order.
-- Env: BENCH_RACKS (how many racks were seeded), BENCH_OUT (result JSON), BENCH_TOKEN (a bearer
-- token to send, when Flow runs with auth on).
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local racks = tonumber(os.getenv("BENCH_RACKS"))
local token = os.getenv("BENCH_TOKEN")
local headers = {}
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
local n = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  n = (tid or 1) * 7919
end

function request()
  n = n + 1
  local i = (n * 2654435761) % (racks * 18)
  local r, k = math.floor(i / 18), i % 18
  local path = string.format(
    "/v1/components/by-serial?manufacturer=wiwynn&serial_number=S%07d-C%02d", r, k)
  return wrk.format("GET", path, headers)
end

done = bench_done
