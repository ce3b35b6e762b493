// Concurrent starts calls together with the library LIB (jdk, urlconnection, hc4, okhttp) on
// its default client. Arguments: LIB JIT_URL WARM_N WARM_URL N URL. It first runs the whole
// sequence twice on throwaway clients against JIT_URL (another server), so that the JVM has
// compiled the library's code before anything is timed. Then, on a new client, it warms the
// pool with WARM_N GETs of WARM_URL at once, starts N GETs of URL at once, one thread each, and
// prints one line per call: "ok|error MILLISECONDS" from the common start to its end.
import java.io.*;
import java.net.*;
import java.util.concurrent.*;

public class Concurrent {
    interface Caller { void get(String url) throws Exception; }

    public static void main(String[] a) throws Exception {
        int warmN = Integer.parseInt(a[2]), n = Integer.parseInt(a[4]);
        for (int i = 0; i < 2; i++) {
            Caller jit = client(a[0]);
            together(jit, warmN, a[1], false);
            together(jit, n, a[1], false);
        }
        Caller c = client(a[0]);
        together(c, warmN, a[3], false);
        together(c, n, a[5], true);
        System.exit(0);
    }

    static Caller client(String lib) {
        return switch (lib) {
            case "jdk" -> {
                var h = java.net.http.HttpClient.newHttpClient();
                yield url -> h.send(java.net.http.HttpRequest.newBuilder(URI.create(url)).build(),
                        java.net.http.HttpResponse.BodyHandlers.ofByteArray());
            }
            case "urlconnection" -> url -> {
                try (var in = new URL(url).openConnection().getInputStream()) { in.readAllBytes(); }
            };
            case "hc4" -> {
                var h = org.apache.http.impl.client.HttpClients.createDefault();
                yield url -> {
                    try (var r = h.execute(new org.apache.http.client.methods.HttpGet(url))) {
                        org.apache.http.util.EntityUtils.consume(r.getEntity());
                    }
                };
            }
            case "okhttp" -> {
                var h = new okhttp3.OkHttpClient();
                yield url -> {
                    try (var r = h.newCall(new okhttp3.Request.Builder().url(url).build()).execute()) { r.body().bytes(); }
                };
            }
            default -> throw new IllegalArgumentException(lib);
        };
    }

    static void together(Caller c, int n, String url, boolean print) throws Exception {
        var pool = Executors.newFixedThreadPool(n);
        var go = new CountDownLatch(1);
        var futures = new java.util.ArrayList<Future<String>>();
        long[] t0 = new long[1];
        for (int i = 0; i < n; i++) {
            futures.add(pool.submit(() -> {
                go.await();
                String out = "ok";
                try {
                    c.get(url);
                } catch (Exception e) {
                    out = "error";
                }
                return String.format("%s %.3f", out, (System.nanoTime() - t0[0]) / 1e6);
            }));
        }
        t0[0] = System.nanoTime();
        go.countDown();
        for (var f : futures) {
            String line = f.get();
            if (print) System.out.println(line);
        }
        pool.shutdown();
    }
}
