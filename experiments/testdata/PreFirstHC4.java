// PreFirstHC4 runs exp-k's rows with real Apache HttpClient 4.5 (HttpClients.custom(): its
// DefaultHttpRequestRetryHandler on, as labrun's hc4 profile), through PreFirstLab. Flags:
// connect=MS (RequestConfig connectTimeout), socket=MS (RequestConfig socketTimeout), so=MS
// (SocketConfig soTimeout).
import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.config.SocketConfig;
import org.apache.http.conn.ssl.SSLConnectionSocketFactory;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.util.EntityUtils;

public class PreFirstHC4 {
    public static void main(String[] args) throws Exception {
        PreFirstLab.run(args, (url, flags) -> {
            RequestConfig.Builder rc = RequestConfig.custom();
            if (flags.containsKey("connect")) {
                rc.setConnectTimeout(flags.get("connect").intValue());
            }
            if (flags.containsKey("socket")) {
                rc.setSocketTimeout(flags.get("socket").intValue());
            }
            SocketConfig.Builder sc = SocketConfig.custom();
            if (flags.containsKey("so")) {
                sc.setSoTimeout(flags.get("so").intValue());
            }
            try (CloseableHttpClient c = HttpClients.custom().setSSLSocketFactory(new SSLConnectionSocketFactory(PreFirstLab.tls))
                    .setDefaultSocketConfig(sc.build()).setDefaultRequestConfig(rc.build()).build();
                 CloseableHttpResponse r = c.execute(new HttpGet(url))) {
                EntityUtils.consume(r.getEntity());
                return r.getStatusLine().getStatusCode();
            }
        });
    }
}
