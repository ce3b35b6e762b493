// FollowUpsOkHttp runs exp-d's okhttp cases with real OkHttp 3: for each argument
// "id|METHOD|URL|flags" it makes one call with a new client and prints "id|STATUS", or
// "id|!Exception: message" when the call throws. The first argument is the fake server's CA
// certificate (PEM), trusted for https. Flags: noretry (retryOnConnectionFailure(false)),
// noredirects (followRedirects(false)), nossl (followSslRedirects(false)), auth (an
// authenticator that always answers), oneshot (an UnrepeatableRequestBody).
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import okhttp3.Credentials;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.internal.http.UnrepeatableRequestBody;
import okio.BufferedSink;

public class FollowUpsOkHttp {
    static final MediaType FORM = MediaType.parse("application/x-www-form-urlencoded");

    public static void main(String[] args) throws Exception {
        X509TrustManager tm = (X509TrustManager) PreFirstLab.trust(args[0]).getTrustManagers()[0];
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, new TrustManager[] {tm}, null);
        for (int i = 1; i < args.length; i++) {
            String[] f = args[i].split("\\|", -1);
            String id = f[0], method = f[1], url = f[2], flags = f[3];
            OkHttpClient.Builder b = new OkHttpClient.Builder()
                    .sslSocketFactory(tls.getSocketFactory(), tm)
                    .callTimeout(20, TimeUnit.SECONDS)
                    .retryOnConnectionFailure(!flags.contains("noretry"))
                    .followRedirects(!flags.contains("noredirects"))
                    .followSslRedirects(!flags.contains("nossl"));
            if (flags.contains("auth")) {
                b.authenticator((route, resp) -> resp.request().newBuilder()
                        .header("Authorization", Credentials.basic("labrun", "labrun")).build());
            }
            OkHttpClient c = b.build();
            RequestBody body = null;
            if (method.equals("POST")) {
                body = flags.contains("oneshot") ? new OneShot() : RequestBody.create(FORM, "order=42");
            }
            Request req = new Request.Builder().url(url).method(method, body).build();
            try (Response r = c.newCall(req).execute()) {
                r.body().string();
                System.out.println(id + "|" + r.code());
            } catch (IOException e) {
                System.out.println(id + "|!" + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            c.dispatcher().executorService().shutdown();
            c.connectionPool().evictAll();
        }
    }

    // OneShot is a body OkHttp 3 must not send twice.
    static class OneShot extends RequestBody implements UnrepeatableRequestBody {
        @Override public MediaType contentType() { return FORM; }
        @Override public void writeTo(BufferedSink sink) throws IOException { sink.writeUtf8("order=42"); }
    }
}
