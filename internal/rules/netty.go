package rules

import "time"

func init() {
	Register(Preset{Name: "netty", Client: "Reactor Netty (predicted only: no profile, it cannot be run here)", Rank: 9, FitRank: 10,
		// Its own rules are not read: HttpClient 5's stand in.
		Rules: hc5Of, Flags: []Flag{FlagHC5Retries}, PreFirstUnread: true,
		Limits: Limits{Lease: 45 * time.Second, Connect: 30 * time.Second},
		Card: Card{Lease: "45 s", Connect: "30 s", Read: "none",
			Pool: "max(2 x cores, 16) per address, queue 2x", Call: ".timeout() operator",
			Source: "reactor-netty ConnectionProvider (pendingAcquireTimeout 45 s, maxConnections max(2 x cores, 16)), CONNECT_TIMEOUT_MILLIS 30 s; predicted only: Reactor Netty cannot be run on this lab's machine"},
	})
}
