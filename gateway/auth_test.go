package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
)

func TestParseTokens(t *testing.T) {
	ts, err := ParseTokens(strings.NewReader("# comment\n\nread,write,approve admin-token\nread viewer\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ts["admin-token"] != ScopeAll || ts["viewer"] != ScopeRead || len(ts) != 2 {
		t.Fatalf("%v", ts)
	}
	for _, bad := range []string{"", "read\n", "read,admin tok\n", "read a b\n", "read a\nwrite a\n"} {
		if _, err := ParseTokens(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// No token 401, a wrong token 401, a token without the scope 403, an
// Origin not allowed 403; the right token passes, and so does a request
// from the server's own address (the web chat) and from an allowed origin.
func TestAuth(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) {
		c.Tokens = TokenSet{"r-token": ScopeRead, "rw-token": ScopeRead | ScopeWrite, "all-token": ScopeAll}
		c.AllowOrigins = []string{"https://chat.example"}
	})
	code := func(token, method, path string, body any, hdr http.Header) (int, string) {
		t.Helper()
		tsv.token = token
		resp := tsv.request(method, path, body, hdr)
		defer resp.Body.Close()
		var e wireError
		_ = jsonDecode(resp.Body, &e)
		return resp.StatusCode, e.Error.Code
	}
	create := CreateSessionRequest{Cwd: tsv.cwd}
	cases := []struct {
		name, token, method, path string
		body                      any
		hdr                       http.Header
		want                      int
		wantCode                  string
	}{
		{"no token", "", "GET", "/v1/sessions", nil, nil, 401, CodeUnauthorized},
		{"wrong token", "nope", "GET", "/v1/sessions", nil, nil, 401, CodeUnauthorized},
		{"no token, events", "", "GET", "/v1/sessions/x/events", nil, nil, 401, CodeUnauthorized},
		{"read may list", "r-token", "GET", "/v1/sessions", nil, nil, 200, ""},
		{"read may not create", "r-token", "POST", "/v1/sessions", create, nil, 403, CodeForbidden},
		{"write may not approve", "rw-token", "POST", "/v1/approvals/ap_x", ApprovalAnswer{Decision: "deny"}, nil, 403, CodeForbidden},
		{"approve may approve", "all-token", "POST", "/v1/approvals/ap_x", ApprovalAnswer{Decision: "deny"}, nil, 404, CodeNotFound},
		{"bad origin", "all-token", "GET", "/v1/sessions", nil, http.Header{"Origin": {"https://evil.example"}}, 403, CodeForbidden},
		{"bad origin, no token", "", "GET", "/v1/sessions", nil, http.Header{"Origin": {"https://evil.example"}}, 403, CodeForbidden},
		{"allowed origin", "all-token", "GET", "/v1/sessions", nil, http.Header{"Origin": {"https://chat.example"}}, 200, ""},
		{"own address", "all-token", "GET", "/v1/sessions", nil, http.Header{"Origin": {tsv.ts.URL}}, 200, ""},
		{"health needs no token", "", "GET", "/v1/healthz", nil, nil, 200, ""},
	}
	for _, c := range cases {
		got, gotCode := code(c.token, c.method, c.path, c.body, c.hdr)
		if got != c.want || gotCode != c.wantCode {
			t.Errorf("%s: %d %q, want %d %q", c.name, got, gotCode, c.want, c.wantCode)
		}
	}
	// DNS rebinding: a page of a name re-pointed at us is same-origin by
	// name, and still refused.
	tsv.token = "all-token"
	req, _ := http.NewRequest("GET", tsv.ts.URL+"/v1/sessions", nil)
	req.Host = "rebound.example"
	req.Header.Set("Origin", "http://rebound.example")
	req.Header.Set("Authorization", "Bearer all-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("rebound name: %d", resp.StatusCode)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7420": true, "[::1]:7420": true, "localhost:7420": true, "unix:///tmp/a.sock": true,
		"0.0.0.0:7420": false, ":7420": false, "192.168.1.2:7420": false, "example.com:80": false,
	} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}

// DNS rebinding against a server without tokens: the attacker's page, at a
// name re-pointed at 127.0.0.1, reads the API with same-origin GETs, which
// browsers send without an Origin header. Only the Host header shows it.
// The same requests by address, by localhost, from curl (no Origin) and
// under an --allow-origin host still work.
func TestOpenServerRefusesReboundHost(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) {
		c.AllowOrigins = []string{"http://chat.internal:7420"}
	})
	sess := tsv.newSession()
	_, port, _ := strings.Cut(strings.TrimPrefix(tsv.ts.URL, "http://"), ":")
	get := func(host, path string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", tsv.ts.URL+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e wireError
		_ = jsonDecode(resp.Body, &e)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden && e.Error.Code != CodeForbidden {
			t.Errorf("%s %s: 403 with code %q", host, path, e.Error.Code)
		}
		return resp.StatusCode
	}
	for _, host := range []string{"rebound.example:" + port, "rebound.example", "127.0.0.1.nip.io:" + port} {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/" + sess.ID + "/messages", "/v1/sessions/" + sess.ID} {
			if st := get(host, path); st != http.StatusForbidden {
				t.Errorf("Host %s, GET %s: %d, want 403", host, path, st)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "localhost", "chat.internal:7420"} {
		if st := get(host, "/v1/sessions"); st != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, st)
		}
	}
}

// With tokens the Host is not checked: a rebinding page has no token, and
// a server behind a name (a reverse proxy) must answer under that name.
func TestTokenServerAnswersAnyHost(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) {
		c.Tokens = TokenSet{"tok": ScopeAll}
	})
	req, _ := http.NewRequest("GET", tsv.ts.URL+"/v1/sessions", nil)
	req.Host = "gateway.example.com"
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("named host with a token: %d", resp.StatusCode)
	}
}

// A browser app on an --allow-origin origin can use the API: its CORS
// preflight (no token: browsers send none) is answered, and the answers
// carry Access-Control-Allow-Origin, so the page may read them. An origin
// not allowed gets neither.
func TestCORSForAllowedOrigins(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) {
		c.Tokens = TokenSet{"tok": ScopeAll}
		c.AllowOrigins = []string{"https://chat.example"}
	})
	preflight := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("OPTIONS", tsv.ts.URL+"/v1/sessions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://chat.example")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://chat.example" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Fatalf("preflight from an allowed origin: %d %v", resp.StatusCode, h)
	}
	if resp := preflight("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
	tsv.token = "tok"
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{{"POST", "/v1/sessions", CreateSessionRequest{Cwd: tsv.cwd}, http.StatusCreated}, {"GET", "/v1/sessions/nope", nil, http.StatusNotFound}} {
		resp := tsv.request(c.method, c.path, c.body, http.Header{"Origin": {"https://chat.example"}})
		resp.Body.Close()
		if resp.StatusCode != c.want || resp.Header.Get("Access-Control-Allow-Origin") != "https://chat.example" {
			t.Errorf("%s %s from an allowed origin: %d %v", c.method, c.path, resp.StatusCode, resp.Header)
		}
	}
	resp = tsv.request("GET", "/v1/sessions", nil, nil)
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no Origin, yet %v", resp.Header)
	}
}
