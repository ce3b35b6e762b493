// Killed runs cases with the library LIB (jdk, urlconnection, hc4, okhttp): its arguments after
// LIB are quadruples METHOD WARM CALL IDLE_MS. For each, on a new client, it makes one warm-up
// GET on WARM, waits IDLE_MS, then makes one call of METHOD on CALL, and prints the call's
// outcome as one line: "ok STATUS" or "error EXCEPTION-CLASS". The servers count executions and
// connections, one server per case.
// A POST carries a small fixed-length (buffered) body. Timeouts are 1 s so that nothing hangs.
import java.io.*;
import java.net.*;
import java.time.Duration;

public class Killed {
    public static void main(String[] a) throws Exception {
        String lib = a[0];
        for (int i = 1; i + 3 < a.length; i += 4) {
            String method = a[i], warm = a[i + 1], call = a[i + 2];
            long idle = Long.parseLong(a[i + 3]);
            switch (lib) {
                case "jdk" -> jdk(warm, method, call, idle);
                case "urlconnection" -> urlConnection(warm, method, call, idle);
                case "hc4" -> hc4(warm, method, call, idle);
                case "okhttp" -> okhttp(warm, method, call, idle);
                default -> throw new IllegalArgumentException(lib);
            }
        }
    }

    static void print(String what) { System.out.println(what); }

    static void jdk(String warm, String method, String call, long idle) throws Exception {
        var c = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        var h = java.net.http.HttpResponse.BodyHandlers.ofString();
        c.send(java.net.http.HttpRequest.newBuilder(URI.create(warm)).timeout(Duration.ofSeconds(1)).build(), h);
        Thread.sleep(idle);
        var b = java.net.http.HttpRequest.newBuilder(URI.create(call)).timeout(Duration.ofSeconds(1));
        b = method.equals("GET") ? b.GET() : b.method(method, java.net.http.HttpRequest.BodyPublishers.ofString("order=42"));
        try {
            print("ok " + c.send(b.build(), h).statusCode());
        } catch (IOException e) {
            print("error " + e.getClass().getName());
        }
    }

    static int urlOnce(String url, String method) throws IOException {
        var c = (HttpURLConnection) new URL(url).openConnection();
        c.setConnectTimeout(1000);
        c.setReadTimeout(1000);
        c.setRequestMethod(method);
        if (!method.equals("GET")) {
            c.setDoOutput(true);
            try (var o = c.getOutputStream()) { o.write("order=42".getBytes()); }
        }
        int code = c.getResponseCode();
        try (var in = c.getInputStream()) { in.readAllBytes(); }
        return code;
    }

    static void urlConnection(String warm, String method, String call, long idle) throws Exception {
        urlOnce(warm, "GET");
        Thread.sleep(idle);
        try {
            print("ok " + urlOnce(call, method));
        } catch (IOException e) {
            print("error " + e.getClass().getName());
        }
    }

    static void hc4(String warm, String method, String call, long idle) throws Exception {
        var cfg = org.apache.http.client.config.RequestConfig.custom().setConnectTimeout(1000).setSocketTimeout(1000).build();
        try (var c = org.apache.http.impl.client.HttpClients.custom().setDefaultRequestConfig(cfg).build()) {
            try (var r = c.execute(new org.apache.http.client.methods.HttpGet(warm))) {
                org.apache.http.util.EntityUtils.consume(r.getEntity());
            }
            Thread.sleep(idle);
            org.apache.http.client.methods.HttpUriRequest req;
            if (method.equals("GET")) {
                req = new org.apache.http.client.methods.HttpGet(call);
            } else {
                var p = new org.apache.http.client.methods.HttpPost(call);
                p.setEntity(new org.apache.http.entity.StringEntity("order=42"));
                req = p;
            }
            try (var r = c.execute(req)) {
                print("ok " + r.getStatusLine().getStatusCode());
            } catch (IOException e) {
                print("error " + e.getClass().getName());
            }
        }
    }

    static void okhttp(String warm, String method, String call, long idle) throws Exception {
        var c = new okhttp3.OkHttpClient.Builder().connectTimeout(Duration.ofSeconds(1)).readTimeout(Duration.ofSeconds(1)).build();
        try (var r = c.newCall(new okhttp3.Request.Builder().url(warm).build()).execute()) { r.body().string(); }
        Thread.sleep(idle);
        var b = new okhttp3.Request.Builder().url(call);
        if (!method.equals("GET")) b.method(method, okhttp3.RequestBody.create(okhttp3.MediaType.get("text/plain"), "order=42"));
        try (var r = c.newCall(b.build()).execute()) {
            print("ok " + r.code());
        } catch (IOException e) {
            print("error " + e.getClass().getName());
        }
        c.dispatcher().executorService().shutdown();
        c.connectionPool().evictAll();
    }
}
