// PreFirstOkHttp runs exp-k's rows with real OkHttp 3 (its defaults, retryOnConnectionFailure
// on, as labrun's okhttp profile), through PreFirstLab. Flags: connect=MS (connectTimeout),
// read=MS (readTimeout), call=MS (callTimeout).
import java.util.concurrent.TimeUnit;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

public class PreFirstOkHttp {
    public static void main(String[] args) throws Exception {
        PreFirstLab.run(args, (url, flags) -> {
            OkHttpClient.Builder b = new OkHttpClient.Builder()
                    .sslSocketFactory(PreFirstLab.tls.getSocketFactory(), PreFirstLab.trustManager);
            if (flags.containsKey("connect")) {
                b.connectTimeout(flags.get("connect"), TimeUnit.MILLISECONDS);
            }
            if (flags.containsKey("read")) {
                b.readTimeout(flags.get("read"), TimeUnit.MILLISECONDS);
            }
            if (flags.containsKey("call")) {
                b.callTimeout(flags.get("call"), TimeUnit.MILLISECONDS);
            }
            OkHttpClient c = b.build();
            try (Response r = c.newCall(new Request.Builder().url(url).build()).execute()) {
                r.body().bytes();
                return r.code();
            } finally {
                c.connectionPool().evictAll();
                c.dispatcher().executorService().shutdown();
            }
        });
    }
}
