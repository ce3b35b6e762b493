import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;

/**
 * A labrun probe for the JDK's HttpURLConnection (its keep-alive cache pools connections).
 * Configure by environment: PROBE_CONNECT_TIMEOUT and PROBE_READ_TIMEOUT (seconds,
 * setConnectTimeout and setReadTimeout), PROBE_RETRY_POST=false (sun.net.http.retryPost),
 * PROBE_FOLLOW=0 (setInstanceFollowRedirects(false); the default follows).
 */
public class UrlConnectionProbe {
    public static void main(String[] args) throws Exception {
        Protocol.trustLabCA();
        String retryPost = Protocol.env("PROBE_RETRY_POST", "");
        if (!retryPost.isEmpty()) {
            System.setProperty("sun.net.http.retryPost", retryPost); // read once, when the class loads
        }
        int connect = (int) Protocol.millis("PROBE_CONNECT_TIMEOUT", 0);
        int read = (int) Protocol.millis("PROBE_READ_TIMEOUT", 0);
        boolean follow = !Protocol.env("PROBE_FOLLOW", "").equals("0");
        Protocol.run((url, method) -> {
            HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
            c.setConnectTimeout(connect);
            c.setReadTimeout(read);
            c.setInstanceFollowRedirects(follow);
            c.setRequestMethod(method);
            if (method.equals("POST")) {
                c.setDoOutput(true);
                try (OutputStream out = c.getOutputStream()) {
                    out.write("labrun".getBytes());
                }
            }
            int status = c.getResponseCode();
            // Reading the body to its end returns the connection to the keep-alive cache.
            try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
                if (in != null) {
                    in.readAllBytes();
                }
            }
            return status;
        });
    }
}
