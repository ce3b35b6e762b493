package results

// ClientDefaults is one library's default limits, as text in the library's own words (several
// are not times), with sources: what labrun defaults prints.
type ClientDefaults struct {
	Name    string `json:"name"`   // the --defaults preset name, e.g. "hc5"
	Client  string `json:"client"` // e.g. "Apache HttpClient 5.6"
	Lease   string `json:"lease"`
	Connect string `json:"connect"`
	Read    string `json:"read"`
	Pool    string `json:"pool"`
	Call    string `json:"call"`
	Source  string `json:"source"`
	// Reuse says how the library detects a dead pooled connection and closes idle ones; Resend
	// what it re-sends by itself. Empty where labrun has not read the source.
	Reuse  string `json:"reuse"`
	Resend string `json:"resend"`
	// Handshake and Lookup say what bounds the TLS handshake and the name lookup (exp-k).
	Handshake string `json:"handshake"`
	Lookup    string `json:"lookup"`
}
