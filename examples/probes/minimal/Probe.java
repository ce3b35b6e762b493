// A ten-line labrun probe: the JDK's HttpClient, a 1 s timeout up to the head; java Probe.java
import java.net.URI;
import java.net.http.*;
public class Probe {
    public static void main(String[] args) throws Exception {
        var client = HttpClient.newHttpClient();
        var req = HttpRequest.newBuilder(URI.create(System.getenv("LABRUN_URL"))).timeout(java.time.Duration.ofSeconds(1))
            .method(System.getenv("LABRUN_METHOD"), HttpRequest.BodyPublishers.noBody()).build();
        int failed = 0;
        for (int i = 0; i < Integer.parseInt(System.getenv("LABRUN_CALLS")); i++) {
            try { failed += client.send(req, HttpResponse.BodyHandlers.discarding()).statusCode() / 100 == 2 ? 0 : 1; }
            catch (java.io.IOException e) { failed++; }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
