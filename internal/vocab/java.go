package vocab

// The JDK's clients' and Apache HttpClient 4.5's own re-sends, shared by labrun's client and its
// model. HttpClient 5's are HC5Idempotent and HC5MaxRetries.

// JDKResends reports whether the JDK's HttpClient sends a request of this method again after
// its connection ended before any response byte: an EOF or a reset, which Http1AsyncReceiver
// turns into a ConnectionExpiredException on a pooled connection or a new one alike, since
// Http1Exchange.sendHeadersAsync sets retryOnError for every exchange. MultiExchange.
// canRetryRequest: GET and HEAD (isIdempotentRequest), every method with
// -Djdk.httpclient.enableAllMethodRetry; it re-sends once per call (retriedOnce). JDK 17 and 25.
func JDKResends(method string) bool { return method == "" || method == "GET" || method == "HEAD" }

// HC4RetryCount is Apache HttpClient 4.5's DefaultHttpRequestRetryHandler.retryCount: 3
// re-sends (the no-argument constructor is this(3, false); httpclient 4.5.14).
const HC4RetryCount = 3

// HC4Idempotent is DefaultHttpRequestRetryHandler.handleAsIdempotent: the request is not an
// HttpEntityEnclosingRequest, which among httpclient 4.5's methods is every one but POST, PUT
// and PATCH. A request with an entity is re-sent only if it was not sent yet
// (requestSentRetryEnabled false).
func HC4Idempotent(method string) bool {
	switch method {
	case "POST", "PUT", "PATCH":
		return false
	}
	return true
}
