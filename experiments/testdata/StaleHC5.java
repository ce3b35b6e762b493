// StaleHC5 holds HttpClient 5's stale check (ConnectionConfig.setValidateAfterInactivity) to
// the hc5 profile's rules: its arguments are pairs VALIDATE_MS URL. For each, on a new client
// with automatic retries disabled, it makes one GET on URL, waits IDLE_MS (the first argument)
// so that the server closes the pooled connection, then one GET more, and prints that call's
// outcome: "ok STATUS" or "error EXCEPTION-CLASS". Timeouts are 1 s so that nothing hangs.
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

public class StaleHC5 {
    public static void main(String[] a) throws Exception {
        long idle = Long.parseLong(a[0]);
        for (int i = 1; i + 1 < a.length; i += 2) {
            long validate = Long.parseLong(a[i]);
            String url = a[i + 1];
            var cm = new PoolingHttpClientConnectionManager();
            cm.setDefaultConnectionConfig(ConnectionConfig.custom()
                .setConnectTimeout(Timeout.ofSeconds(1))
                .setSocketTimeout(Timeout.ofSeconds(1))
                .setValidateAfterInactivity(TimeValue.ofMilliseconds(validate)).build());
            try (CloseableHttpClient c = HttpClients.custom().setConnectionManager(cm).disableAutomaticRetries()
                    .setDefaultRequestConfig(RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(1)).build()).build()) {
                get(c, url);
                Thread.sleep(idle);
                try {
                    System.out.println("ok " + get(c, url));
                } catch (Exception e) {
                    System.out.println("error " + e.getClass().getName());
                }
            }
        }
    }

    static int get(CloseableHttpClient c, String url) throws Exception {
        return c.execute(new HttpGet(url), r -> { EntityUtils.consume(r.getEntity()); return r.getCode(); });
    }
}
