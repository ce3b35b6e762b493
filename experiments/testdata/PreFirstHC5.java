// PreFirstHC5 runs exp-k's rows with real Apache HttpClient 5 (automatic retries disabled, as
// labrun's hc5 profile), through PreFirstLab. Flags: connect=MS (RequestConfig
// connectTimeout), response=MS (responseTimeout), so=MS (SocketConfig soTimeout),
// handshake=MS (TlsConfig handshakeTimeout).
import java.util.concurrent.TimeUnit;
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
        PreFirstLab.run(args, (url, flags) -> {
            PoolingHttpClientConnectionManagerBuilder cm = PoolingHttpClientConnectionManagerBuilder.create()
                    .setSSLSocketFactory(SSLConnectionSocketFactoryBuilder.create().setSslContext(PreFirstLab.tls).build());
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
            try (CloseableHttpClient c = HttpClients.custom().setConnectionManager(cm.build())
                    .setDefaultRequestConfig(rc.build()).disableAutomaticRetries().build();
                 CloseableHttpResponse r = c.execute(new HttpGet(url))) {
                EntityUtils.consume(r.getEntity());
                return r.getCode();
            }
        });
    }
}
