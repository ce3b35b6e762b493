// PreFirstJDK runs exp-k's rows with the JDK's java.net.http.HttpClient (HTTP/1.1, as labrun's
// jdk profile), through PreFirstLab. Flags: connect=MS (HttpClient.Builder.connectTimeout),
// request=MS (HttpRequest.Builder.timeout).
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

public class PreFirstJDK {
    public static void main(String[] args) throws Exception {
        PreFirstLab.run(args, (url, flags) -> {
            HttpClient.Builder b = HttpClient.newBuilder().sslContext(PreFirstLab.tls).version(HttpClient.Version.HTTP_1_1);
            if (flags.containsKey("connect")) {
                b.connectTimeout(Duration.ofMillis(flags.get("connect")));
            }
            HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(url));
            if (flags.containsKey("request")) {
                rb.timeout(Duration.ofMillis(flags.get("request")));
            }
            return b.build().send(rb.build(), HttpResponse.BodyHandlers.ofString()).statusCode();
        });
    }
}
