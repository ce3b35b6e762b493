import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.RequestBuilder;
import org.apache.http.entity.StringEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.util.EntityUtils;

/**
 * A labrun probe for Apache HttpClient 4.5 (one client and pool for every call). Configure by
 * environment, seconds unless said: PROBE_CONNECT_TIMEOUT, PROBE_SOCKET_TIMEOUT (per read),
 * PROBE_LEASE_TIMEOUT (connectionRequestTimeout), PROBE_POOL (maxPerRoute, a count),
 * PROBE_RETRIES=none (disableAutomaticRetries), PROBE_FOLLOW=0 (disableRedirectHandling).
 */
public class Hc4Probe {
    public static void main(String[] args) throws Exception {
        Protocol.trustLabCA();
        PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
        String max = Protocol.env("PROBE_POOL", "");
        if (!max.isEmpty()) {
            pool.setDefaultMaxPerRoute(Integer.parseInt(max));
            pool.setMaxTotal(Math.max(20, Integer.parseInt(max)));
        }
        RequestConfig.Builder rc = RequestConfig.custom();
        long connect = Protocol.millis("PROBE_CONNECT_TIMEOUT", -1);
        if (connect >= 0) {
            rc.setConnectTimeout((int) connect);
        }
        long socket = Protocol.millis("PROBE_SOCKET_TIMEOUT", -1);
        if (socket >= 0) {
            rc.setSocketTimeout((int) socket);
        }
        long lease = Protocol.millis("PROBE_LEASE_TIMEOUT", -1);
        if (lease >= 0) {
            rc.setConnectionRequestTimeout((int) lease);
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
            RequestBuilder req = RequestBuilder.create(method).setUri(url);
            if (method.equals("POST")) {
                req.setEntity(new StringEntity("labrun"));
            }
            return client.execute(req.build(), resp -> {
                EntityUtils.consume(resp.getEntity());
                return resp.getStatusLine().getStatusCode();
            });
        });
    }
}
