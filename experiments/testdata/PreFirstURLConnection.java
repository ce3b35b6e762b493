// PreFirstURLConnection runs exp-k's rows with the JDK's HttpsURLConnection, through
// PreFirstLab. Flags: connect=MS (setConnectTimeout), read=MS (setReadTimeout).
import java.io.InputStream;
import java.net.URL;
import javax.net.ssl.HttpsURLConnection;

public class PreFirstURLConnection {
    public static void main(String[] args) throws Exception {
        PreFirstLab.run(args, (url, flags) -> {
            HttpsURLConnection c = (HttpsURLConnection) new URL(url).openConnection();
            c.setSSLSocketFactory(PreFirstLab.tls.getSocketFactory());
            if (flags.containsKey("connect")) {
                c.setConnectTimeout(flags.get("connect").intValue());
            }
            if (flags.containsKey("read")) {
                c.setReadTimeout(flags.get("read").intValue());
            }
            try (InputStream in = c.getInputStream()) {
                in.readAllBytes();
            }
            return c.getResponseCode();
        });
    }
}
