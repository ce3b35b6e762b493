package results

// ClientDefaults is one client library's default limits, as text, with where they come from.
// It is what labrun defaults prints, one per client, in the order of labrun predict's
// --defaults presets, Go's net/http last. The values are the library's own words ("0 = infinite", "3 min"), not
// durations: several defaults are not a time at all ("2 per route, 20 total", "n/a").
type ClientDefaults struct {
	Name    string `json:"name"`   // the --defaults preset name, e.g. "hc5"
	Client  string `json:"client"` // e.g. "Apache HttpClient 5.6"
	Lease   string `json:"lease"`  // lease (pool) wait
	Connect string `json:"connect"`
	Read    string `json:"read"`
	Pool    string `json:"pool"`
	Call    string `json:"call"` // whole-call limit
	Source  string `json:"source"`
	// Reuse says how the library finds out, by default, that a pooled connection died before
	// reusing it, and when it closes idle ones; Resend says what it sends again by itself when
	// a reused connection fails. Empty where labrun has not read the
	// library's source.
	Reuse  string `json:"reuse"`
	Resend string `json:"resend"`
	// Handshake says what bounds the TLS handshake of a new connection, and Lookup what bounds
	// the name lookup, each with the library's source (labrun exp-k measures them). Empty
	// where labrun has not read the library's source.
	Handshake string `json:"handshake"`
	Lookup    string `json:"lookup"`
}
