// FollowUpsHC5 runs exp-d's hc5 cases with real Apache HttpClient 5 (automatic retries
// disabled, as labrun's hc5 profile): for each argument "id|METHOD|URL|flags" it makes one
// call with a new client and prints "id|STATUS", or "id|!Exception: message" with the root
// cause when the call throws. The first argument is the fake server's CA certificate (PEM),
// trusted for https. Flags: noredirects (disableRedirectHandling()), oneshot (an
// InputStreamEntity, not repeatable).
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.SSLContext;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.CloseableHttpResponse;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.ssl.SSLConnectionSocketFactoryBuilder;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.InputStreamEntity;
import org.apache.hc.core5.http.io.entity.StringEntity;

public class FollowUpsHC5 {
    public static void main(String[] args) throws Exception {
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, PreFirstLab.trust(args[0]).getTrustManagers(), null);
        byte[] order = "order=42".getBytes(StandardCharsets.US_ASCII);
        for (int i = 1; i < args.length; i++) {
            String[] f = args[i].split("\\|", -1);
            String id = f[0], method = f[1], url = f[2], flags = f[3];
            HttpClientBuilder b = HttpClients.custom()
                    .setConnectionManager(PoolingHttpClientConnectionManagerBuilder.create()
                            .setSSLSocketFactory(SSLConnectionSocketFactoryBuilder.create().setSslContext(tls).build())
                            .build())
                    .disableAutomaticRetries();
            if (flags.contains("noredirects")) {
                b.disableRedirectHandling();
            }
            HttpUriRequestBase req = new HttpUriRequestBase(method, URI.create(url));
            if (method.equals("POST")) {
                req.setEntity(flags.contains("oneshot")
                        ? new InputStreamEntity(new ByteArrayInputStream(order), -1, ContentType.APPLICATION_FORM_URLENCODED)
                        : new StringEntity("order=42", ContentType.APPLICATION_FORM_URLENCODED));
            }
            try (CloseableHttpClient c = b.build(); CloseableHttpResponse r = c.execute(req)) {
                EntityUtils.consume(r.getEntity());
                System.out.println(id + "|" + r.getCode());
            } catch (IOException e) {
                Throwable t = e;
                while (t.getCause() != null) {
                    t = t.getCause();
                }
                System.out.println(id + "|!" + t.getClass().getSimpleName() + ": " + t.getMessage());
            }
        }
    }
}
