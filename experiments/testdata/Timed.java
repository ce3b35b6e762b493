// Timed times calls with the library LIB (jdk, urlconnection, hc4, okhttp). Arguments: LIB
// TIMEOUT_MS REPS WARM URL...; on one client it makes a warm-up GET on WARM, then REPS GETs of
// each URL in turn, each with the library's timeout set to TIMEOUT_MS (the JDK HttpClient:
// HttpRequest.timeout(); HttpURLConnection: setReadTimeout; HttpClient 4.5: socketTimeout;
// OkHttp: readTimeout) and reading the whole body, and prints one line per call:
// "INDEX ok|error MILLISECONDS", INDEX counting the URLs from 0. The JDK HttpClient's warm-up
// has no timeout: its HttpRequest.timeout() bounds the connect too, and the first exchange
// of a JVM (class loading, the selector thread's start) can take longer than TIMEOUT_MS on a
// loaded machine.
import java.io.*;
import java.net.*;
import java.time.Duration;

public class Timed {
    interface Caller { void get(String url, boolean warm) throws IOException, InterruptedException; }

    public static void main(String[] a) throws Exception {
        String lib = a[0];
        int timeout = Integer.parseInt(a[1]), reps = Integer.parseInt(a[2]);
        Caller c = switch (lib) {
            case "jdk" -> jdk(timeout);
            case "urlconnection" -> urlConnection(timeout);
            case "hc4" -> hc4(timeout);
            case "okhttp" -> okhttp(timeout);
            default -> throw new IllegalArgumentException(lib);
        };
        c.get(a[3], true);
        for (int i = 4; i < a.length; i++) {
            for (int r = 0; r < reps; r++) {
                long t0 = System.nanoTime();
                String out = "ok";
                try {
                    c.get(a[i], false);
                } catch (IOException e) {
                    out = "error";
                }
                System.out.printf("%d %s %.3f%n", i - 4, out, (System.nanoTime() - t0) / 1e6);
            }
        }
        System.exit(0); // OkHttp's and the JDK's threads need not linger
    }

    static Caller jdk(int timeout) {
        var c = java.net.http.HttpClient.newHttpClient();
        return (url, warm) -> {
            var b = java.net.http.HttpRequest.newBuilder(URI.create(url));
            if (!warm) b.timeout(Duration.ofMillis(timeout));
            c.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray());
        };
    }

    static Caller urlConnection(int timeout) {
        return (url, warm) -> {
            var c = (HttpURLConnection) new URL(url).openConnection();
            c.setReadTimeout(timeout);
            try (var in = c.getInputStream()) { in.readAllBytes(); }
        };
    }

    static Caller hc4(int timeout) {
        var cfg = org.apache.http.client.config.RequestConfig.custom().setSocketTimeout(timeout).build();
        var c = org.apache.http.impl.client.HttpClients.custom().setDefaultRequestConfig(cfg).build();
        return (url, warm) -> {
            try (var r = c.execute(new org.apache.http.client.methods.HttpGet(url))) {
                org.apache.http.util.EntityUtils.consume(r.getEntity());
            }
        };
    }

    static Caller okhttp(int timeout) {
        var c = new okhttp3.OkHttpClient.Builder().readTimeout(Duration.ofMillis(timeout)).build();
        return (url, warm) -> {
            try (var r = c.newCall(new okhttp3.Request.Builder().url(url).build()).execute()) { r.body().bytes(); }
        };
    }
}
