-- One fixed GET ($BENCH_PATH), repeated; figures to $BENCH_OUT.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local path = os.getenv("BENCH_PATH")
function request()
  return wrk.format("GET", path)
end
done = bench_done
