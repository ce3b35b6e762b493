# A labrun probe for Ruby's Net::HTTP: labrun probe -- ruby examples/probes/ruby/net_http_probe.rb
#
# It speaks labrun's probe protocol (docs/probe.md): it reads LABRUN_URL, LABRUN_METHOD,
# LABRUN_CALLS, LABRUN_CONCURRENCY, LABRUN_PAUSE and LABRUN_CA, runs LABRUN_CONCURRENCY threads
# that each make LABRUN_CALLS calls in sequence, prints a report line per call and exits 0 when
# every call got a 2xx answer. Each thread keeps one started Net::HTTP, so that its connection
# is reused from one call to the next. Net::HTTP's defaults: open_timeout, read_timeout and
# write_timeout 60 s, keep_alive_timeout 2 s, max_retries 1. Configure by environment:
#   PROBE_OPEN_TIMEOUT   open_timeout, seconds
#   PROBE_READ_TIMEOUT   read_timeout, seconds (per read)
#   PROBE_MAX_RETRIES    max_retries
require "net/http"
require "uri"

url = URI(ENV.fetch("LABRUN_URL"))
method = ENV.fetch("LABRUN_METHOD", "GET")
calls = Integer(ENV.fetch("LABRUN_CALLS", "1"))
concurrency = Integer(ENV.fetch("LABRUN_CONCURRENCY", "1"))
pause = Float(ENV.fetch("LABRUN_PAUSE", "0"))
ca = ENV["LABRUN_CA"].to_s

def client(url, ca)
  http = Net::HTTP.new(url.host, url.port)
  http.open_timeout = Float(ENV["PROBE_OPEN_TIMEOUT"]) if ENV["PROBE_OPEN_TIMEOUT"]
  http.read_timeout = Float(ENV["PROBE_READ_TIMEOUT"]) if ENV["PROBE_READ_TIMEOUT"]
  http.max_retries = Integer(ENV["PROBE_MAX_RETRIES"]) if ENV["PROBE_MAX_RETRIES"]
  if url.scheme == "https"
    http.use_ssl = true
    http.ca_file = ca unless ca.empty?
  end
  http
end

out = Mutex.new
failed = false
threads = (0...concurrency).map do |w|
  Thread.new do
    http = client(url, ca)
    calls.times do |i|
      sleep pause if i > 0 && pause > 0
      n = w * calls + i + 1
      start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      ok = begin
        http.start unless http.started?
        req = Net::HTTPGenericRequest.new(method, method == "POST", true, url.request_uri)
        req.body = "labrun" if method == "POST"
        res = http.request(req)
        res.code.to_i.between?(200, 299)
      rescue StandardError, Timeout::Error => e
        out.synchronize { warn "call #{n}: #{e.class}: #{e.message}" }
        false
      end
      ms = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - start) * 1000
      out.synchronize do
        puts format("LABRUN call=%d ms=%.1f outcome=%s", n, ms, ok ? "ok" : "error")
        $stdout.flush
        failed ||= !ok
      end
    end
  end
end
threads.each(&:join)
exit(failed ? 1 : 0)
