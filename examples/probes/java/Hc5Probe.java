import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

/**
 * A labrun probe for Apache HttpClient 5 (classic, one client and pool for every call).
 * Configure by environment, seconds unless said: PROBE_CONNECT_TIMEOUT, PROBE_RESPONSE_TIMEOUT
 * (per read), PROBE_LEASE_TIMEOUT (connectionRequestTimeout), PROBE_VALIDATE_AFTER_INACTIVITY,
 * PROBE_POOL (maxPerRoute, a count), PROBE_RETRIES=none (disableAutomaticRetries),
 * PROBE_FOLLOW=0 (disableRedirectHandling).
 */
public class Hc5Probe {
    public static void main(String[] args) throws Exception {
        Protocol.trustLabCA();
        ConnectionConfig.Builder cc = ConnectionConfig.custom();
        long connect = Protocol.millis("PROBE_CONNECT_TIMEOUT", -1);
        if (connect >= 0) {
            cc.setConnectTimeout(Timeout.ofMilliseconds(connect));
        }
        long validate = Protocol.millis("PROBE_VALIDATE_AFTER_INACTIVITY", -1);
        if (validate >= 0) {
            cc.setValidateAfterInactivity(TimeValue.ofMilliseconds(validate));
        }
        PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
        pool.setDefaultConnectionConfig(cc.build());
        String max = Protocol.env("PROBE_POOL", "");
        if (!max.isEmpty()) {
            pool.setDefaultMaxPerRoute(Integer.parseInt(max));
            pool.setMaxTotal(Math.max(25, Integer.parseInt(max)));
        }
        RequestConfig.Builder rc = RequestConfig.custom();
        long response = Protocol.millis("PROBE_RESPONSE_TIMEOUT", -1);
        if (response >= 0) {
            rc.setResponseTimeout(Timeout.ofMilliseconds(response));
        }
        long lease = Protocol.millis("PROBE_LEASE_TIMEOUT", -1);
        if (lease >= 0) {
            rc.setConnectionRequestTimeout(Timeout.ofMilliseconds(lease));
        }
        HttpClientBuilder b = HttpClientBuilder.create().setConnectionManager(pool).setDefaultRequestConfig(rc.build());
        if (Protocol.env("PROBE_RETRIES", "").equals("none")) {
            b.disableAutomaticRetries();
        }
        if (Protocol.env("PROBE_FOLLOW", "").equals("0")) {
            b.disableRedirectHandling();
        }
        CloseableHttpClient client = b.build();
        Protocol.run((url, method) -> {
            HttpUriRequestBase req = new HttpUriRequestBase(method, java.net.URI.create(url));
            if (method.equals("POST")) {
                req.setEntity(new StringEntity("labrun"));
            }
            return client.execute(req, resp -> {
                EntityUtils.consume(resp.getEntity());
                return resp.getCode();
            });
        });
    }
}
