package gateway

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
)

// Scope is a set of what a token may do.
type Scope uint8

// The scopes: read gets events and history, write starts, steers and
// aborts runs and changes sessions, approve answers approvals.
const (
	ScopeRead Scope = 1 << iota
	ScopeWrite
	ScopeApprove
)

func (s Scope) String() string {
	var names []string
	for _, n := range []struct {
		s    Scope
		name string
	}{{ScopeRead, "read"}, {ScopeWrite, "write"}, {ScopeApprove, "approve"}} {
		if s&n.s != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// ScopeAll is every scope: what a request gets when the server has no
// tokens (a loopback listener without a token file).
const ScopeAll = ScopeRead | ScopeWrite | ScopeApprove

// TokenSet maps bearer tokens to their scopes. A nil or empty TokenSet
// lets every request in with every scope.
type TokenSet map[string]Scope

// ParseTokens reads a token file: one token a line, "scopes token", scopes
// comma-separated (read, write, approve); blank lines and lines starting
// with # are skipped.
func ParseTokens(r io.Reader) (TokenSet, error) {
	ts := TokenSet{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		scopes, token, ok := strings.Cut(line, " ")
		token = strings.TrimSpace(token)
		if !ok || token == "" || strings.ContainsAny(token, " \t") {
			return nil, fmt.Errorf("line %d: want \"read,write,approve <token>\"", n)
		}
		var s Scope
		for name := range strings.SplitSeq(scopes, ",") {
			switch strings.TrimSpace(name) {
			case "read":
				s |= ScopeRead
			case "write":
				s |= ScopeWrite
			case "approve":
				s |= ScopeApprove
			default:
				return nil, fmt.Errorf("line %d: unknown scope %q (use read, write, approve)", n, name)
			}
		}
		if _, dup := ts[token]; dup {
			return nil, fmt.Errorf("line %d: the token is listed twice", n)
		}
		ts[token] = s
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no tokens")
	}
	return ts, nil
}

// LoadTokens reads the token file at path (ParseTokens). A file that
// users other than its owner may read or write is refused.
func LoadTokens(path string) (TokenSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	// Like ssh with a private key: a file others may read or write gives
	// every local user the server's tokens.
	if fi, err := f.Stat(); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o066 != 0 {
		return nil, fmt.Errorf("token file %s can be read or written by other users (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	ts, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return ts, nil
}

// authenticator checks bearer tokens in constant time: each presented
// token is hashed and compared with every known token's hash, so neither
// the length nor the position of a match shows in the timing.
type authenticator struct {
	open   bool
	hashes [][sha256.Size]byte
	scopes []Scope
}

func newAuthenticator(ts TokenSet) *authenticator {
	a := &authenticator{open: len(ts) == 0}
	for tok, s := range ts {
		a.hashes = append(a.hashes, sha256.Sum256([]byte(tok)))
		a.scopes = append(a.scopes, s)
	}
	return a
}

// principal is who made a request: the scopes of its token.
type principal struct {
	Scopes Scope
}

func (p principal) can(s Scope) bool { return p.Scopes&s == s }

// check returns the principal of a bearer token.
func (a *authenticator) check(token string) (principal, bool) {
	if a.open {
		return principal{Scopes: ScopeAll}, true
	}
	if token == "" {
		return principal{}, false
	}
	h := sha256.Sum256([]byte(token))
	var found Scope
	ok := 0
	for i := range a.hashes {
		m := subtle.ConstantTimeCompare(h[:], a.hashes[i][:])
		ok |= m
		found |= a.scopes[i] & Scope(-m)
	}
	return principal{Scopes: found}, ok == 1
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// originAllowed reports whether a request may come from its Origin: no
// Origin (not a browser), the server's own host (the web chat), or one of
// allowed ("*" allows any).
func originAllowed(r *http.Request, allowed []string) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimRight(a, "/"), o) {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	// Same origin counts only for a host named by address or as
	// localhost: a page of a domain that an attacker re-pointed at this
	// machine (DNS rebinding) is same-origin too, and must be refused.
	host := u.Hostname()
	return host == "localhost" || net.ParseIP(host) != nil
}

// hostAllowed reports whether a request to a server without tokens names
// this machine in its Host: localhost, an IP address, or the host of an
// allowed origin. A browser page at a name that an attacker re-pointed at
// 127.0.0.1 (DNS rebinding) sends its same-origin GETs with no Origin
// header, but with its own name as Host. A Unix socket is not reachable
// from a browser: any Host goes.
func hostAllowed(r *http.Request, allowed []string) bool {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la.Network() == "unix" {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil {
		return true
	}
	for _, a := range allowed {
		if u, err := url.Parse(a); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
			return true
		}
	}
	return false
}

// IsLoopback reports whether a listen address (host:port, or unix:///path)
// only accepts connections from this machine. A Unix socket counts as
// loopback: its file permissions guard it.
func IsLoopback(addr string) bool {
	if strings.HasPrefix(addr, "unix://") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
