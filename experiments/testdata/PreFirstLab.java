// PreFirstLab is what exp-k's Java programs share (PreFirstHC5, PreFirstHC4, PreFirstOkHttp,
// PreFirstJDK, PreFirstURLConnection): the trust store, the arguments and the output. exp-d's
// FollowUpsHC5 and FollowUpsOkHttp use its trust store too. The
// first argument is the CA certificate (PEM) to trust; each other is "id|URL|flags" (flags
// comma-separated NAME=MS, each program's own, and cap=MS: a call still running after MS
// prints "id|MS|hang" and ends the program, so a capped row comes last). For each, run makes
// one call with a new client and prints "id|MS|STATUS", or "id|MS|!Exception" (the simple
// class name of the exception thrown, then "/" and that of its root cause when it has one),
// MS being the call's time in milliseconds. Names resolve through -Djdk.net.hosts.file.
import java.io.FileInputStream;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.HashMap;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

public class PreFirstLab {
    // Call is one program's call: it returns the response's status code.
    interface Call {
        int call(String url, Map<String, Long> flags) throws Exception;
    }

    // tls trusts the CA alone; trustManager is its trust manager (OkHttp wants both).
    static SSLContext tls;
    static X509TrustManager trustManager;

    static void run(String[] args, Call call) throws Exception {
        TrustManagerFactory tmf = trust(args[0]);
        trustManager = (X509TrustManager) tmf.getTrustManagers()[0];
        tls = SSLContext.getInstance("TLS");
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
            Thread watchdog = cap(id, flags.get("cap"));
            long start = System.nanoTime();
            String answer;
            try {
                answer = Integer.toString(call.call(url, flags));
            } catch (Exception e) {
                answer = "!" + name(e);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            if (watchdog != null) {
                watchdog.interrupt();
            }
            System.out.println(id + "|" + ms + "|" + answer);
        }
    }

    // name is e's simple class name, and its root cause's after "/".
    static String name(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String n = e.getClass().getSimpleName();
        return root == e ? n : n + "/" + root.getClass().getSimpleName();
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

    // cap is the lab's cap on a call that nothing else ends (null: none).
    static Thread cap(String id, Long ms) {
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
}
