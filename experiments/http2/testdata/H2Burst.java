// H2Burst makes N GETs of URL at once with OkHttp 3.x over h2c (prior knowledge), on a new
// client. Arguments: MODE N URL. MODE "sync" starts one thread per call, all released
// together, each calling execute(); MODE "enqueue" enqueues the N calls on the client's
// Dispatcher (its default limits: 64 calls, 5 per host). It prints one line per call,
// "ok|refused|error MILLISECONDS" from the common start to the call's end, and a last line
// "total MILLISECONDS".
import java.util.concurrent.*;

public class H2Burst {
    public static void main(String[] a) throws Exception {
        String mode = a[0], url = a[2];
        int n = Integer.parseInt(a[1]);
        var client = new okhttp3.OkHttpClient.Builder()
                .protocols(java.util.List.of(okhttp3.Protocol.H2_PRIOR_KNOWLEDGE)).build();
        var lines = new String[n];
        var done = new CountDownLatch(n);
        long t0;
        if (mode.equals("sync")) {
            var go = new CountDownLatch(1);
            var ready = new CountDownLatch(n);
            long[] start = new long[1];
            for (int i = 0; i < n; i++) {
                final int k = i;
                new Thread(() -> {
                    ready.countDown();
                    try {
                        go.await();
                        lines[k] = call(client, url, start[0]);
                    } catch (InterruptedException e) {
                        lines[k] = "error 0";
                    }
                    done.countDown();
                }).start();
            }
            ready.await();
            start[0] = System.nanoTime();
            t0 = start[0];
            go.countDown();
        } else {
            t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                final int k = i;
                client.newCall(new okhttp3.Request.Builder().url(url).build()).enqueue(new okhttp3.Callback() {
                    public void onFailure(okhttp3.Call c, java.io.IOException e) {
                        lines[k] = outcome(e) + " " + (System.nanoTime() - t0) / 1_000_000;
                        done.countDown();
                    }
                    public void onResponse(okhttp3.Call c, okhttp3.Response r) {
                        try (r) { r.body().bytes(); lines[k] = "ok " + (System.nanoTime() - t0) / 1_000_000; }
                        catch (java.io.IOException e) { lines[k] = outcome(e) + " " + (System.nanoTime() - t0) / 1_000_000; }
                        done.countDown();
                    }
                });
            }
        }
        done.await(60, TimeUnit.SECONDS);
        long total = (System.nanoTime() - t0) / 1_000_000;
        for (var l : lines) System.out.println(l == null ? "error -1" : l);
        System.out.println("total " + total);
        System.exit(0);
    }

    static String call(okhttp3.OkHttpClient client, String url, long t0) {
        try (var r = client.newCall(new okhttp3.Request.Builder().url(url).build()).execute()) {
            r.body().bytes();
            return "ok " + (System.nanoTime() - t0) / 1_000_000;
        } catch (java.io.IOException e) {
            return outcome(e) + " " + (System.nanoTime() - t0) / 1_000_000;
        }
    }

    static String outcome(java.io.IOException e) {
        if (e instanceof okhttp3.internal.http2.StreamResetException s
                && s.errorCode == okhttp3.internal.http2.ErrorCode.REFUSED_STREAM) return "refused";
        return "error";
    }
}
