import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * A labrun probe for the JDK's java.net.http.HttpClient (synchronous send, one client for
 * every call: it pools connections). Configure by environment, seconds:
 * PROBE_CONNECT_TIMEOUT (connectTimeout), PROBE_TIMEOUT (HttpRequest.timeout: until the
 * response head), PROBE_FOLLOW=1 (Redirect.NORMAL; the default is NEVER).
 */
public class JdkProbe {
    public static void main(String[] args) throws Exception {
        Protocol.trustLabCA();
        HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1);
        long connect = Protocol.millis("PROBE_CONNECT_TIMEOUT", 0);
        if (connect > 0) {
            b.connectTimeout(Duration.ofMillis(connect));
        }
        if (Protocol.env("PROBE_FOLLOW", "").equals("1")) {
            b.followRedirects(HttpClient.Redirect.NORMAL);
        }
        HttpClient client = b.build();
        long timeout = Protocol.millis("PROBE_TIMEOUT", 0);
        Protocol.run((url, method) -> {
            HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(url));
            if (timeout > 0) {
                r.timeout(Duration.ofMillis(timeout));
            }
            if (method.equals("POST")) {
                r.POST(HttpRequest.BodyPublishers.ofString("labrun"));
            } else {
                r.method(method, HttpRequest.BodyPublishers.noBody());
            }
            return client.send(r.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        });
    }
}
