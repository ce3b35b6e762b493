// PreFirstOkHttp runs exp-k's rows with real OkHttp 3 (its defaults, retryOnConnectionFailure
// on, as labrun's okhttp profile): for each argument "id|URL|flags" it makes one GET with a new client and
// prints "id|MS|STATUS", or "id|MS|!Exception" (the exception thrown, simple class name), MS
// being the call's time in milliseconds. Flags, comma-separated: connect=MS (connectTimeout),
// read=MS (readTimeout), call=MS (callTimeout), cap=MS: a call still running after
// MS prints "id|MS|hang" and ends the program (a capped row comes last). The first argument is
// the CA certificate (PEM) to trust. Names resolve through -Djdk.net.hosts.file.
import java.io.FileInputStream;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

public class PreFirstOkHttp {
    public static void main(String[] args) throws Exception {
        TrustManagerFactory tmf = trust(args[0]);
        X509TrustManager tm = (X509TrustManager) tmf.getTrustManagers()[0];
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, tmf.getTrustManagers(), null);
        for (int i = 1; i < args.length; i++) {
            String[] f = args[i].split("\\|", -1);
            String id = f[0], url = f[1];
            Map<String, Long> flags = new HashMap<>();
            for (String kv : f[2].split(",")) {
                if (!kv.isEmpty()) {
                    String[] p = kv.split("=");
                    flags.put(p[0], Long.parseLong(p[1]));
                }
            }
            OkHttpClient.Builder b = new OkHttpClient.Builder().sslSocketFactory(tls.getSocketFactory(), tm);
            if (flags.containsKey("connect")) {
                b.connectTimeout(flags.get("connect"), TimeUnit.MILLISECONDS);
            }
            if (flags.containsKey("read")) {
                b.readTimeout(flags.get("read"), TimeUnit.MILLISECONDS);
            }
            if (flags.containsKey("call")) {
                b.callTimeout(flags.get("call"), TimeUnit.MILLISECONDS);
            }
            OkHttpClient c = b.build();
            Thread watchdog = Cap.start(id, flags.get("cap"));
            long start = System.nanoTime();
            String answer;
            try (Response r = c.newCall(new Request.Builder().url(url).build()).execute()) {
                r.body().bytes();
                answer = Integer.toString(r.code());
            } catch (Exception e) {
                answer = "!" + e.getClass().getSimpleName();
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            Cap.stop(watchdog);
            c.connectionPool().evictAll();
            c.dispatcher().executorService().shutdown();
            System.out.println(id + "|" + ms + "|" + answer);
        }
    }

    static TrustManagerFactory trust(String pemFile) throws Exception {
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        ks.load(null, null);
        try (FileInputStream in = new FileInputStream(pemFile)) {
            int n = 0;
            for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("ca" + n++, cert);
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        return tmf;
    }

    // Cap is the lab's cap on a call that nothing else ends.
    static class Cap {
        static Thread start(String id, Long ms) {
            if (ms == null) {
                return null;
            }
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(ms);
                } catch (InterruptedException e) {
                    return;
                }
                System.out.println(id + "|" + ms + "|hang");
                System.out.flush();
                Runtime.getRuntime().halt(0);
            });
            t.setDaemon(true);
            t.start();
            return t;
        }

        static void stop(Thread t) {
            if (t != null) {
                t.interrupt();
            }
        }
    }
}
