package experiments

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

// jvmLibrary is a profile held to a real library, and Killed.java's name for the library.
type jvmLibrary struct {
	profile string
	name    string
}

// jvmLibraries are the profiles the JVM tests hold to a library on this machine.
func jvmLibraries() []jvmLibrary {
	return []jvmLibrary{
		{ProfileOkHttp, "okhttp"},
		{ProfileJDK, "jdk"},
		{ProfileURLConnection, "urlconnection"},
		{ProfileHC4, "hc4"},
	}
}

// TestKilledRowsMatchRealLibraries holds exp-g's killed-connection rows of the okhttp, jdk,
// urlconnection and hc4 profiles to OkHttp 3.13.1, the JDK's HttpClient and HttpURLConnection
// and HttpClient 4.5.14: for each row, the real library makes the warm-up and the call on a
// server of its own, and the server's count of executions and new connections, and whether the
// call succeeded, must be the model's (which the experiment holds labrun's client to). One JVM
// per library runs all its rows.
func TestKilledRowsMatchRealLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM per library")
	}
	p := NewPooled()
	for _, l := range jvmLibraries() {
		t.Run(l.profile, func(t *testing.T) {
			// One source compiles against every library: all are on its classpath.
			libs := []jvm.Library{jvm.OkHttp3, jvm.HttpClient4}
			rt := jvm.Require(t, libs...)
			var cases []pooledCase
			var srvs []*fakesrv.Server
			args := []string{l.name}
			for _, c := range p.cases() {
				if c.profile != l.profile || c.kill == model.KillNone {
					continue
				}
				srv, err := newServer()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
				cases, srvs = append(cases, c), append(srvs, srv)
				args = append(args, c.method, srv.URL+"/delay", srv.URL+p.behaviour(c).Path())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := rt.Run(ctx, jvm.Program{Source: "testdata/Killed.java", Libs: libs}, args...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(cases) {
				t.Fatalf("got %d result lines, want %d: %s", len(lines), len(cases), out)
			}
			for i, c := range cases {
				b, err := build(c.profile, c.s)
				if err != nil {
					t.Fatal(err)
				}
				b.c.Close()
				pred := model.Predict(p.downstream(c), b.limits, false, 0)
				log := settled(ctx, srvs[i], 2)
				gotOK, wantOK := strings.HasPrefix(lines[i], "ok "), pred.Outcome == vocab.OK
				execs, conns := len(log)-1, srvs[i].ConnsAccepted()-1
				if gotOK != wantOK || execs != pred.Executions || conns != pred.Connects {
					t.Errorf("%s: the real library: %s, %d executions, %d new connections; the model: %s, %d, %d",
						c.name, lines[i], execs, conns, pred.Outcome, pred.Executions, pred.Connects)
				}
			}
		})
	}
}
