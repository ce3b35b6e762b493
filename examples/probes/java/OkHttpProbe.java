import java.util.concurrent.TimeUnit;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

/**
 * A labrun probe for OkHttp 3 (synchronous execute, one client for every call: it pools
 * connections). Configure by environment, seconds: PROBE_CONNECT_TIMEOUT, PROBE_READ_TIMEOUT
 * (per read), PROBE_CALL_TIMEOUT (callTimeout, a deadline, 3.12+); PROBE_RETRY=false
 * (retryOnConnectionFailure(false)), PROBE_FOLLOW=0 (followRedirects(false)).
 */
public class OkHttpProbe {
    public static void main(String[] args) throws Exception {
        Protocol.trustLabCA();
        OkHttpClient.Builder b = new OkHttpClient.Builder();
        long connect = Protocol.millis("PROBE_CONNECT_TIMEOUT", -1);
        if (connect >= 0) {
            b.connectTimeout(connect, TimeUnit.MILLISECONDS);
        }
        long read = Protocol.millis("PROBE_READ_TIMEOUT", -1);
        if (read >= 0) {
            b.readTimeout(read, TimeUnit.MILLISECONDS);
        }
        long call = Protocol.millis("PROBE_CALL_TIMEOUT", -1);
        if (call >= 0) {
            b.callTimeout(call, TimeUnit.MILLISECONDS);
        }
        if (Protocol.env("PROBE_RETRY", "").equals("false")) {
            b.retryOnConnectionFailure(false);
        }
        if (Protocol.env("PROBE_FOLLOW", "").equals("0")) {
            b.followRedirects(false);
        }
        OkHttpClient client = b.build();
        Protocol.run((url, method) -> {
            RequestBody body = method.equals("POST") ? RequestBody.create(MediaType.get("text/plain"), "labrun") : null;
            Request req = new Request.Builder().url(url).method(method, body).build();
            try (Response resp = client.newCall(req).execute()) {
                resp.body().bytes();
                return resp.code();
            }
        });
    }
}
