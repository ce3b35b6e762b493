import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The labrun probe protocol for the JVM probes: it reads LABRUN_URL, LABRUN_METHOD,
 * LABRUN_CALLS, LABRUN_CONCURRENCY and LABRUN_PAUSE, runs LABRUN_CONCURRENCY threads that
 * each make LABRUN_CALLS calls in sequence (with LABRUN_RATE, LABRUN_CALLS calls open loop at
 * that rate, call n's URL with call=n in its query), prints a report line per call and exits 0 when
 * every call got a 2xx answer. Each probe gives it one call. Each probe calls trustLabCA first,
 * before it builds its client.
 */
final class Protocol {
    /** One call of the client under test: it returns the final status code. */
    interface Call {
        int call(String url, String method) throws Exception;
    }

    static String env(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    /** A duration in seconds from the environment, in milliseconds; def when unset. */
    static long millis(String name, long def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : Math.round(Double.parseDouble(v) * 1000);
    }

    /**
     * When LABRUN_CA names a PEM file, makes its certificates the JVM's trust store instead of
     * the system's: a PKCS12 file in the temporary directory named by javax.net.ssl.trustStore,
     * which every client here reads through the default TrustManagerFactory (the JDK's
     * HttpClient and HttpURLConnection through SSLContext.getDefault, OkHttp's platform trust
     * manager, HttpClient 4.5's and 5's SSLContexts.createDefault).
     */
    static void trustLabCA() throws Exception {
        String pem = env("LABRUN_CA", "");
        if (pem.isEmpty()) {
            return;
        }
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        try (InputStream in = new FileInputStream(pem)) {
            int i = 0;
            for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("labrun-" + i++, cert);
            }
        }
        Path store = Files.createTempFile("labrun-trust", ".p12");
        store.toFile().deleteOnExit();
        try (OutputStream out = new FileOutputStream(store.toFile())) {
            ks.store(out, "labrun".toCharArray());
        }
        System.setProperty("javax.net.ssl.trustStore", store.toString());
        System.setProperty("javax.net.ssl.trustStorePassword", "labrun");
        System.setProperty("javax.net.ssl.trustStoreType", "PKCS12");
    }

    static void run(Call c) throws InterruptedException {
        String url = env("LABRUN_URL", "");
        String method = env("LABRUN_METHOD", "GET");
        int calls = Integer.parseInt(env("LABRUN_CALLS", "1"));
        int concurrency = Integer.parseInt(env("LABRUN_CONCURRENCY", "1"));
        long pause = Math.round(Double.parseDouble(env("LABRUN_PAUSE", "0")) * 1000);
        AtomicInteger failed = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        double rate = Double.parseDouble(env("LABRUN_RATE", "0"));
        if (rate > 0) {
            // Open loop: call n starts at (n-1)/rate whatever the calls before it do.
            long begin = System.nanoTime();
            String sep = url.contains("?") ? "&" : "?";
            for (int i = 0; i < calls; i++) {
                long wait = begin + Math.round(i * 1e9 / rate) - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                int n = i + 1;
                Thread t = new Thread(() -> one(c, url + sep + "call=" + n, method, n, failed));
                threads.add(t);
                t.start();
            }
            for (Thread t : threads) {
                t.join();
            }
            System.exit(failed.get() > 0 ? 1 : 0);
        }
        for (int w = 0; w < concurrency; w++) {
            int worker = w;
            Thread t = new Thread(() -> {
                for (int i = 0; i < calls; i++) {
                    if (i > 0 && pause > 0) {
                        try {
                            Thread.sleep(pause);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                    one(c, url, method, worker * calls + i + 1, failed);
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        System.exit(failed.get() > 0 ? 1 : 0);
    }

    /** Makes call n to url and prints its report line. */
    static void one(Call c, String url, String method, int n, AtomicInteger failed) {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            int status = c.call(url, method);
            ok = status >= 200 && status < 300;
        } catch (Exception e) {
            System.err.println("call " + n + ": " + e);
        }
        if (!ok) {
            failed.incrementAndGet();
        }
        synchronized (Protocol.class) {
            System.out.printf("LABRUN call=%d ms=%.1f outcome=%s%n", n, (System.nanoTime() - start) / 1e6, ok ? "ok" : "error");
            System.out.flush();
        }
    }

    private Protocol() {}
}
