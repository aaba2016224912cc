-- Shared by the wrk scripts: done() writes the run's figures as JSON to $BENCH_OUT.
function bench_done(summary, latency, requests)
  local errors = summary.errors
  local out = io.open(os.getenv("BENCH_OUT"), "w")
  out:write(string.format(
    '{"requests": %d, "seconds": %.6f, "non2xx": %d, "socket_errors": %d, ' ..
    '"p50_ms": %.4f, "p99_ms": %.4f, "mean_ms": %.4f, "max_ms": %.4f}\n',
    summary.requests, summary.duration / 1e6, errors.status,
    errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.mean / 1000, latency.max / 1000))
  out:close()
end
