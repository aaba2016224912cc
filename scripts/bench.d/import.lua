-- POST /v1/expected-racks with new GB200-shaped racks (the shape of bench.py's rack_body).
-- Env: BENCH_IMPORT_BASE (first rack number), BENCH_OUT (result JSON).
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local base = tonumber(os.getenv("BENCH_IMPORT_BASE"))
local threads = {}
local count = 0

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local function mac(r, c, b)
  return string.format("02:%02x:%02x:%02x:%02x:%02x",
    math.floor(r / 65536) % 256, math.floor(r / 256) % 256, r % 256, c, b)
end

local function body(r)
  local parts = {}
  local idx = 0
  local function add(kind, tag, k, manufacturer, model, slot, bmc_types)
    local bmcs = {}
    for b, t in ipairs(bmc_types) do
      bmcs[#bmcs + 1] = string.format('{"type":"%s","mac_address":"%s"}', t, mac(r, idx, b - 1))
    end
    parts[#parts + 1] = string.format(
      '{"type":"%s","name":"bench-r%07d-%s%02d","manufacturer":"%s","model":"%s",' ..
      '"serial_number":"S%07d-%s%02d","firmware_version":"1.0.0",' ..
      '"position":{"slot_id":%d,"tray_idx":%d,"host_id":0},"bmcs":[%s]}',
      kind, r, kind, k, manufacturer, model, r, tag, k, slot, k, table.concat(bmcs, ","))
    idx = idx + 1
  end
  for k = 0, 7 do add("powershelf", "P", k, "NVIDIA", "GB200 Power Shelf", 1 + k, {"host"}) end
  for k = 0, 8 do add("nvswitch", "N", k, "NVIDIA", "GB200 NVLink Switch", 20 + k, {"host"}) end
  for k = 0, 17 do
    add("compute", "C", k, "WiWynn", "GB200 Compute Tray", 30 + k, {"host", "dpu", "dpu"})
  end
  for k = 0, 1 do add("torswitch", "T", k, "Celestica", "ToR", 60 + k, {}) end
  return string.format(
    '{"name":"bench-r%07d","manufacturer":"Wiwynn","serial_number":"RACK%07d",' ..
    '"model":"GB200 NVL72","location":{"region":"bench","datacenter":"bench01","room":"r1",' ..
    '"position":"p%07d"},"components":[%s]}', r, r, r, table.concat(parts, ","))
end

function request()
  count = count + 1
  local r = base + (tid - 1) * 1000000 + count
  return wrk.format("POST", "/v1/expected-racks", {["Content-Type"] = "application/json"}, body(r))
end

done = bench_done
