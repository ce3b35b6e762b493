// PreFirstHC5 runs exp-k's rows with real Apache HttpClient 5 (automatic retries disabled, as
// labrun's hc5 profile): for each argument "id|URL|flags" it makes one GET with a new client and
// prints "id|MS|STATUS", or "id|MS|!Exception" (the exception thrown, simple class name), MS
// being the call's time in milliseconds. Flags, comma-separated: connect=MS
// (RequestConfig connectTimeout), response=MS (responseTimeout), so=MS (SocketConfig
// soTimeout), handshake=MS (TlsConfig handshakeTimeout), cap=MS: a call still running after
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
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.config.TlsConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.CloseableHttpResponse;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.ssl.SSLConnectionSocketFactoryBuilder;
import org.apache.hc.core5.http.io.SocketConfig;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.util.Timeout;

public class PreFirstHC5 {
    public static void main(String[] args) throws Exception {
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, trust(args[0]).getTrustManagers(), null);
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
            PoolingHttpClientConnectionManagerBuilder cm = PoolingHttpClientConnectionManagerBuilder.create()
                    .setSSLSocketFactory(SSLConnectionSocketFactoryBuilder.create().setSslContext(tls).build());
            if (flags.containsKey("so")) {
                cm.setDefaultSocketConfig(SocketConfig.custom().setSoTimeout(Timeout.ofMilliseconds(flags.get("so"))).build());
            }
            if (flags.containsKey("handshake")) {
                cm.setDefaultTlsConfig(TlsConfig.custom().setHandshakeTimeout(flags.get("handshake"), TimeUnit.MILLISECONDS).build());
            }
            RequestConfig.Builder rc = RequestConfig.custom();
            if (flags.containsKey("connect")) {
                rc.setConnectTimeout(Timeout.ofMilliseconds(flags.get("connect")));
            }
            if (flags.containsKey("response")) {
                rc.setResponseTimeout(Timeout.ofMilliseconds(flags.get("response")));
            }
            Thread watchdog = Cap.start(id, flags.get("cap"));
            long start = System.nanoTime();
            String answer;
            try (CloseableHttpClient c = HttpClients.custom().setConnectionManager(cm.build())
                    .setDefaultRequestConfig(rc.build()).disableAutomaticRetries().build();
                 CloseableHttpResponse r = c.execute(new HttpGet(url))) {
                EntityUtils.consume(r.getEntity());
                answer = Integer.toString(r.getCode());
            } catch (Exception e) {
                answer = "!" + e.getClass().getSimpleName();
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            Cap.stop(watchdog);
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
