package experiments

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

// TestFollowUpsRealLibraries holds exp-d's okhttp and hc5 rows to OkHttp 3.13.1 and
// HttpClient 5.2.1: one Java program per library runs every row of its profile against the
// fake servers, and for each the requests the servers received (methods, bodies) and the
// call's outcome must be the model's, as they are for labrun's client in exp-d. The go rows
// are net/http itself.
func TestFollowUpsRealLibraries(t *testing.T) {
	for _, lib := range []struct {
		profile string
		source  string
		lib     jvm.Library
	}{
		{ProfileOkHttp, "testdata/FollowUpsOkHttp.java", jvm.OkHttp3},
		{ProfileHC5, "testdata/FollowUpsHC5.java", jvm.HttpClient5},
	} {
		t.Run(lib.profile, func(t *testing.T) {
			rt := jvm.Require(t, lib.lib)
			srv, err := newFollowServers()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			ca := filepath.Join(t.TempDir(), "ca.pem")
			if err := os.WriteFile(ca, srv.tls.CACertPEM(), 0o600); err != nil {
				t.Fatal(err)
			}
			rows := map[string]followUp{}
			args := []string{ca}
			for i, r := range append(followUps(), followUpsJVMOnly()...) {
				if r.profile != lib.profile {
					continue
				}
				id := strconv.Itoa(i)
				rows[id] = r
				args = append(args, strings.Join([]string{id, r.method, srv.url(r, id), javaFlags(r)}, "|"))
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			out, err := rt.Run(ctx, jvm.Program{Source: lib.source, With: []string{"testdata/PreFirstLab.java"}, Libs: []jvm.Library{lib.lib}}, args...)
			if err != nil {
				t.Fatal(err)
			}
			sent := sentByCall(srv.received())
			seen := 0
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				id, answer, _ := strings.Cut(line, "|")
				r, ok := rows[id]
				if !ok {
					t.Errorf("unexpected line %q", line)
					continue
				}
				seen++
				p, _ := LookupProfile(r.profile)
				want := model.FollowUps(p.Rules(r.s), r.rules(model.Limits{Rules: p.Rules(r.s)}), r.call())
				if got := sent[id]; !reflect.DeepEqual(got, want.Sent) {
					t.Errorf("%s: the server got %s, want %s", r.name, model.DescribeSent(got), model.DescribeSent(want.Sent))
				}
				if msg, failed := strings.CutPrefix(answer, "!"); failed {
					if want.Outcome != vocab.Failed || !strings.Contains(msg, want.Err) {
						t.Errorf("%s: the call threw %q, want %s %d %q", r.name, msg, want.Outcome, want.Status, want.Err)
					}
				} else if want.Outcome != vocab.OK || answer != strconv.Itoa(want.Status) {
					t.Errorf("%s: got status %s, want %s %d %q", r.name, answer, want.Outcome, want.Status, want.Err)
				}
			}
			if seen != len(rows) {
				t.Errorf("the program answered %d of %d cases", seen, len(rows))
			}
			if t.Failed() {
				t.Logf("%s printed:\n%s", lib.source, out)
			}
		})
	}
}

// followUpsJVMOnly are cases the real libraries answer beside exp-d's rows: a redirect to a
// URL that redirects to itself. HttpClient 5.2.1's RedirectLocations holds that URL from the
// first redirect, so the second throws CircularRedirectException after 2 requests (the model
// once counted only a loop on the first URL, and said 3).
func followUpsJVMOnly() []followUp {
	back := []model.Answer{{Status: 302, Location: model.NewURL}, {Status: 302, Location: model.SameURL}}
	return []followUp{
		{"hc5: redirected to a URL that redirects to itself", ProfileHC5, lab.Spec{}, "GET", false, false, "/moved/302?to=/redirect-loop", back, hc5Src, 2},
		{"okhttp: redirected to a URL that redirects to itself", ProfileOkHttp, lab.Spec{}, "GET", false, false, "/moved/302?to=/redirect-loop", back, okBoth, 21},
	}
}

// javaFlags are the Java programs' names for r's settings.
func javaFlags(r followUp) string {
	var f []string
	for _, x := range []struct {
		on   bool
		name string
	}{
		{r.s.NoRouteRetry, "noretry"}, {r.s.Follow.NoRedirects, "noredirects"}, {r.s.Follow.NoSslRedirects, "nossl"},
		{r.s.Follow.Authenticate, "auth"}, {r.oneShot, "oneshot"},
	} {
		if x.on {
			f = append(f, x.name)
		}
	}
	return strings.Join(f, ",")
}

// sentByCall groups the requests the servers received by their call tag.
func sentByCall(log []fakesrv.Request) map[string][]model.Sent {
	out := map[string][]model.Sent{}
	for _, r := range log {
		u, err := url.ParseRequestURI(r.Path)
		if err != nil {
			continue
		}
		id := u.Query().Get("call")
		out[id] = append(out[id], model.Sent{Method: r.Method, Body: r.BodyBytes > 0})
	}
	return out
}
