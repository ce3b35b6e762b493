package predict

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/results"
)

// A question before the first byte (exp-k's): the name lookup is slow or fails (--dns-fault),
// or the TLS handshake stalls, is answered byte by byte (--handshake-gap, --handshake-bytes)
// or fails on the certificate or the protocol (--tls-fault), on --routes addresses of which
// the first --bad-routes have the fault. It is answered by model.PredictPreFirst with the
// rules of the preset's library.

// tlsFaults and dnsFaults are the values --tls-fault and --dns-fault take, with the model's
// fault for each.
var (
	tlsFaults = map[string]model.PreFirstFault{"stall": model.HandshakeStall, "slow": model.SlowHandshake,
		"bad-certificate": model.BadCertificate, "protocol": model.ProtocolFailure}
	dnsFaults = map[string]model.PreFirstFault{"slow": model.SlowLookup, "nxdomain": model.NXDomain, "servfail": model.ServFail}
)

// preFirst reports whether the question is one before the first byte.
func (p *Predictor) preFirst() bool {
	return p.TLSFault != "" || p.DNSFault != "" || p.LookupDelay > 0 || p.HandshakeTimeout > 0 || p.HandshakeGap > 0 ||
		p.HandshakeBytes > 0 || p.Routes > 0 || p.BadRoutes > 0
}

// preFirstRule returns the rules before the first byte of the preset called name, false when
// labrun has not read its library's.
func preFirstRule(name string) (model.PreFirstRule, bool) {
	pre, ok := model.PresetNamed(name)
	if !ok || preset(name).PreFirstUnread {
		return model.PreFirstRule{}, false
	}
	return model.PreFirstRuleOf(pre.Limits), true
}

// preFirstDefaults fills in what bounds the handshake and the lookup of the preset called
// name, with the library's source, for labrun defaults; nothing where labrun has not read it.
func preFirstDefaults(name string, limits model.Limits, d *results.ClientDefaults) {
	r, ok := preFirstRule(name)
	if !ok {
		return
	}
	h, l := r.Handshake(limits), r.Lookup(limits)
	d.Handshake = h.Name + ": not set, nothing bounds it"
	if h.Limit > 0 {
		d.Handshake = fmt.Sprintf("%s: %v", h.Name, h.Limit)
	}
	d.Handshake += " (" + r.HandshakeSource + ")"
	d.Lookup = l.Name
	if l.Limit > 0 {
		d.Lookup = fmt.Sprintf("%s: %v", l.Name, l.Limit)
	}
	d.Lookup += " (" + r.LookupSource + ")"
}

// checkPreFirst reports a question before the first byte that makes no sense, naming the flags.
func (p *Predictor) checkPreFirst() error {
	if _, ok := preFirstRule(p.Defaults); !ok {
		var read []string
		for _, pre := range model.Presets() {
			if _, ok := preFirstRule(pre.Name); ok {
				read = append(read, pre.Name)
			}
		}
		return fmt.Errorf("--tls-fault and --dns-fault need --defaults %s: the libraries whose rules before the first byte labrun has read",
			strings.Join(read, ", "))
	}
	switch {
	case (p.TLSFault == "") == (p.DNSFault == ""):
		return fmt.Errorf("--handshake-timeout, --lookup-delay, --routes and --bad-routes need one of --tls-fault and --dns-fault")
	case p.Stall || p.HostDown || p.Dropped || p.KillAfterRead != "" || p.Bytes > 0 || p.Delay > 0 || p.Queue > 0 || p.Status != 0:
		return fmt.Errorf("--tls-fault and --dns-fault exclude the server's faults (--delay, --stall, --bytes, --host-down, --dropped, --kill-after-read, --queue, --status): the call fails before its first byte")
	case p.Retries > 0 && !rulesOfPreset(p.Defaults, p).Retry.On:
		return fmt.Errorf("--tls-fault and --dns-fault model --retries of a retry layer only (%s): ask about one attempt",
			strings.Join(layerPresets(), ", "))
	case (p.DNSFault == "slow") != (p.LookupDelay > 0):
		return fmt.Errorf("--dns-fault slow and --lookup-delay go together")
	case p.DNSFault != "" && (p.Routes > 0 || p.BadRoutes > 0 || p.HandshakeTimeout > 0):
		return fmt.Errorf("--routes, --bad-routes and --handshake-timeout are about --tls-fault")
	case p.BadRoutes > p.Routes && p.Routes > 0 || p.BadRoutes > 1 && p.Routes == 0:
		return fmt.Errorf("--bad-routes %d exceeds --routes", p.BadRoutes)
	case (p.TLSFault == "slow") != (p.HandshakeGap > 0 && p.HandshakeBytes > 0):
		return fmt.Errorf("--tls-fault slow, --handshake-gap and --handshake-bytes go together")
	case p.HandshakeTimeout > 0 && preset(p.Defaults).HandshakeBy != "":
		return fmt.Errorf("--handshake-timeout is HttpClient's and net/http's: %s", preset(p.Defaults).HandshakeBy)
	}
	return nil
}

// predictPreFirst answers a question before the first byte.
func (p *Predictor) predictPreFirst() results.Prediction {
	f := model.PreFirst{Fault: tlsFaults[p.TLSFault], Routes: p.Routes, Bad: p.BadRoutes, LookupDelay: p.LookupDelay,
		ByteGap: p.HandshakeGap, Bytes: p.HandshakeBytes}
	if p.DNSFault != "" {
		f.Fault = dnsFaults[p.DNSFault]
	}
	l := p.Limits()
	l.TLSHandshakeTimeout = p.HandshakeTimeout
	rule := model.PreFirstRuleOf(l)
	pred, _ := model.PredictPreFirst(f, l) // every fault it is given is known
	out := results.Prediction{
		Scenario:         scenario(p.Params()),
		Outcome:          pred.Outcome,
		TotalMs:          modelMs(pred.Total),
		TotalMaxMs:       bandMs(pred.Total, pred.TotalMax),
		ServerExecutions: pred.Executions,
		Attempts:         attempts(pred),
	}
	var why string
	switch f.Fault {
	case model.HandshakeStall, model.SlowHandshake:
		b := rule.Handshake(l)
		why = "The server never answers the ClientHello."
		if f.Fault == model.SlowHandshake {
			why = fmt.Sprintf("The server answers one byte every %v, %d bytes (%v).", p.HandshakeGap, p.HandshakeBytes,
				time.Duration(p.HandshakeBytes)*p.HandshakeGap)
		}
		why += fmt.Sprintf(" What bounds the handshake: %s", b.Name)
		switch {
		case b.Limit == 0:
			why += ", not set"
		case b.PerRead:
			why += fmt.Sprintf(", %v per read; after it: %s", b.Limit, rule.AfterHandshakeTimeout)
		default:
			why += fmt.Sprintf(", %v, a deadline; after it: %s", b.Limit, rule.AfterHandshakeTimeout)
		}
		why += " (" + rule.HandshakeSource + ")."
	case model.BadCertificate:
		why = fmt.Sprintf("The certificate fails at once; after it: %s (%s).", rule.AfterCertificate, rule.RetrySource)
	case model.ProtocolFailure:
		why = fmt.Sprintf("The handshake fails at once on the protocol; after it: %s (%s).", rule.AfterProtocol, rule.RetrySource)
	case model.SlowLookup:
		b := rule.Lookup(l)
		why = fmt.Sprintf("The lookup takes %v. What bounds it: %s", p.LookupDelay, b.Name)
		if b.Limit > 0 {
			why += fmt.Sprintf(", %v", b.Limit)
		}
		if b.Late && b.Limit > 0 && b.Limit < p.LookupDelay {
			why += ", which fires during the lookup and ends the call when it returns"
		}
		why += " (" + rule.LookupSource + ")."
	default:
		why = fmt.Sprintf("The lookup fails; after it: %s (%s).", rule.AfterDNSError, rule.RetrySource)
	}
	out.Explanation = []string{why, fmt.Sprintf("The call opens %d connections and ends %s.", pred.Connects, pred.Outcome)}
	return out
}
