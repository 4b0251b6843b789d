package mcp

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "EMPTY": ""}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name    string
		json    string
		want    map[string]ServerConfig
		wantErr string
	}{
		{
			name: "stdio and http",
			json: `{"mcpServers":{
				"fs":{"command":"npx","args":["-y","@scope/server","${HOME_DIR:-/home/me}"],"env":{"KEY":"${TOKEN}"}},
				"gh":{"type":"http","url":"https://api.example.com/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}}}`,
			want: map[string]ServerConfig{
				"fs": {Command: "npx", Args: []string{"-y", "@scope/server", "/home/me"}, Env: map[string]string{"KEY": "s3cret"}},
				"gh": {Type: "http", URL: "https://api.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
			},
		},
		{
			name: "empty value takes the default",
			json: `{"mcpServers":{"a":{"command":"x${EMPTY:-y}","args":["$HOME","${EMPTY}"]}}}`,
			want: map[string]ServerConfig{"a": {Command: "xy", Args: []string{"$HOME", ""}}},
		},
		{name: "unset variable", json: `{"mcpServers":{"a":{"command":"${NOPE}"}}}`, wantErr: "NOPE is not set"},
		{name: "unclosed variable", json: `{"mcpServers":{"a":{"command":"${NOPE"}}}`, wantErr: "unclosed"},
		{name: "not JSON", json: `{"mcpServers":`, wantErr: "not a valid MCP configuration"},
		{name: "double underscore in a name", json: `{"mcpServers":{"a__b":{"command":"x"}}}`, wantErr: `must not contain "__"`},
		{name: "no servers", json: `{}`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.json), getenv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Servers); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerConfigTransport(t *testing.T) {
	tests := []struct {
		cfg     ServerConfig
		want    string
		wantErr string
	}{
		{ServerConfig{Command: "x"}, TransportStdio, ""},
		{ServerConfig{Type: "stdio"}, TransportStdio, `needs a "command"`},
		{ServerConfig{URL: "http://h/mcp"}, TransportHTTP, ""},
		{ServerConfig{Type: "http", URL: "ftp://h"}, TransportHTTP, "not an http"},
		{ServerConfig{Type: "streamable-http", URL: "https://h"}, TransportHTTP, ""},
		{ServerConfig{Type: "sse"}, TransportSSE, `needs a "url"`},
		{ServerConfig{Type: "websocket", URL: "ws://h"}, "websocket", "unknown"},
	}
	for _, tt := range tests {
		if got := tt.cfg.Transport(); got != tt.want {
			t.Errorf("%+v: transport %q, want %q", tt.cfg, got, tt.want)
		}
		err := tt.cfg.validate()
		if (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%+v: validate %v, want %q", tt.cfg, err, tt.wantErr)
		}
	}
}

func TestLoad(t *testing.T) {
	home, ws, dir := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(path, body string) string {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(filepath.Join(home, "mcp.json"), `{"mcpServers":{"a":{"command":"user-a"},"b":{"command":"user-b"}}}`)
	write(filepath.Join(ws, ".mcp.json"), `{"mcpServers":{"b":{"command":"ws-b"},"c":{"command":"ws-c"}}}`)
	explicit := write(filepath.Join(dir, "extra.json"), `{"mcpServers":{"c":{"command":"explicit-c"}}}`)

	commands := func(c Config) map[string]string {
		out := map[string]string{}
		for n, s := range c.Servers {
			out[n] = s.Command
		}
		return out
	}
	tests := []struct {
		name string
		opts LoadOptions
		want map[string]string
	}{
		{"untrusted workspace is ignored", LoadOptions{Home: home, Workspace: ws}, map[string]string{"a": "user-a", "b": "user-b"}},
		{"trusted workspace overrides the user", LoadOptions{Home: home, Workspace: ws, TrustWorkspace: true},
			map[string]string{"a": "user-a", "b": "ws-b", "c": "ws-c"}},
		{"explicit file comes last", LoadOptions{Home: home, Workspace: ws, TrustWorkspace: true, Files: []string{explicit}},
			map[string]string{"a": "user-a", "b": "ws-b", "c": "explicit-c"}},
		{"missing user and workspace files are fine", LoadOptions{Home: t.TempDir(), Workspace: t.TempDir(), TrustWorkspace: true}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, commands(c)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	c, _ := Load(LoadOptions{Home: home, Files: []string{explicit}})
	if got := c.Servers["c"].Source; got != explicit {
		t.Errorf("source %q, want %q", got, explicit)
	}
	if _, err := Load(LoadOptions{Files: []string{filepath.Join(dir, "missing.json")}}); err == nil {
		t.Error("a missing explicit file must be an error")
	}
	bad := write(filepath.Join(dir, "bad.json"), `{"mcpServers":[]}`)
	if _, err := Load(LoadOptions{Files: []string{bad}}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("error %v, want one naming %s", err, bad)
	}
}

func TestServerStatusJSON(t *testing.T) {
	st := ServerStatus{Name: "gh", Transport: TransportHTTP, State: StateFailed, Err: errors.New("start: 401"), Source: "/x/.mcp.json"}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"gh","transport":"http","state":"failed","source":"/x/.mcp.json","error":"start: 401"}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}
