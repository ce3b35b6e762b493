// ExchangeCost times a library's exchanges on its default client: LIB (hc5, okhttp) JIT_URL
// SEQ_N SEQ_URL N URL. After warming the JIT on JIT_URL (another server), a new client makes
// SEQ_N GETs of SEQ_URL one after another on its pooled connection and prints "seq MS" for
// each, then starts N GETs of URL at once, one thread each, and prints "ok|error MS" for each
// from the common start.
import java.util.concurrent.*;

public class ExchangeCost {
    interface Caller { void get(String url) throws Exception; }

    public static void main(String[] a) throws Exception {
        int seqN = Integer.parseInt(a[2]), n = Integer.parseInt(a[4]);
        for (int i = 0; i < 3; i++) {
            Caller jit = client(a[0]);
            for (int j = 0; j < 20; j++) jit.get(a[1]);
            together(jit, n, a[1], false);
        }
        Caller c = client(a[0]);
        c.get(a[3]);
        for (int i = 0; i < seqN; i++) {
            long t = System.nanoTime();
            c.get(a[3]);
            System.out.printf("seq %.3f%n", (System.nanoTime() - t) / 1e6);
        }
        together(c, n, a[5], true);
        System.exit(0);
    }

    static Caller client(String lib) {
        return switch (lib) {
            case "hc5" -> {
                var h = org.apache.hc.client5.http.impl.classic.HttpClients.createDefault();
                yield url -> h.execute(new org.apache.hc.client5.http.classic.methods.HttpGet(url), r -> {
                    org.apache.hc.core5.http.io.entity.EntityUtils.consume(r.getEntity());
                    return null;
                });
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
