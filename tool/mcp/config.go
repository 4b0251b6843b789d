package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Transport kinds of a server.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// ServerConfig defines one MCP server: a command that speaks MCP on its
// stdin and stdout, or the URL of a server that speaks it over HTTP. It is
// one entry of "mcpServers" in a .mcp.json file.
type ServerConfig struct {
	// Type is "stdio" (the default when Command is set), "http"
	// (streamable HTTP; the default when only URL is set) or "sse".
	Type string `json:"type,omitempty"`
	// Command, Args and Env start a stdio server. Env is added to
	// agentloop's environment.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL and Headers reach an HTTP or SSE server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds each tool call on this server, in milliseconds (as
	// in Gemini CLI's settings); zero means Options.CallTimeout.
	Timeout int64 `json:"timeout,omitempty"`

	// Source is the file the definition came from; it is not read from
	// JSON.
	Source string `json:"-"`
}

// Transport returns the server's transport kind: Type, or the one its
// fields imply.
func (c ServerConfig) Transport() string {
	switch strings.ToLower(c.Type) {
	case "", "stdio":
		if c.Type == "" && c.Command == "" && c.URL != "" {
			return TransportHTTP
		}
		return TransportStdio
	case "http", "streamable-http", "streamablehttp":
		return TransportHTTP
	case "sse":
		return TransportSSE
	}
	return c.Type
}

// validate says what is wrong with the definition, if anything.
func (c ServerConfig) validate() error {
	switch t := c.Transport(); t {
	case TransportStdio:
		if c.Command == "" {
			return errors.New(`a stdio server needs a "command"`)
		}
	case TransportHTTP, TransportSSE:
		if c.URL == "" {
			return fmt.Errorf(`a %s server needs a "url"`, t)
		}
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			return fmt.Errorf("url %q is not an http:// or https:// URL", c.URL)
		}
	default:
		return fmt.Errorf(`unknown "type" %q: use "stdio", "http" or "sse"`, c.Type)
	}
	return nil
}

// Config is a set of MCP servers by name, as in the "mcpServers" object of
// a .mcp.json file.
type Config struct {
	Servers map[string]ServerConfig `json:"mcpServers"`
}

// Names returns the server names, sorted.
func (c Config) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Parse reads a .mcp.json document. ${VAR} and ${VAR:-default} in
// commands, arguments, environment values, URLs and headers are replaced
// from getenv (nil means os.LookupEnv). A variable that is unset and has
// no default is an error, so a missing token is caught at load, not as an
// obscure failure of the server.
func Parse(data []byte, getenv func(string) (string, bool)) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("not a valid MCP configuration (want {\"mcpServers\": {...}}): %w", err)
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	for name, s := range c.Servers {
		if name == "" || strings.Contains(name, "__") {
			return Config{}, fmt.Errorf("server name %q: names must be non-empty and must not contain \"__\"", name)
		}
		var err error
		x := func(v string) string {
			out, e := expandVars(v, getenv)
			if e != nil && err == nil {
				err = e
			}
			return out
		}
		s.Command = x(s.Command)
		s.URL = x(s.URL)
		if s.Args != nil {
			args := make([]string, len(s.Args))
			for i, a := range s.Args {
				args[i] = x(a)
			}
			s.Args = args
		}
		s.Env = expandMap(s.Env, x)
		s.Headers = expandMap(s.Headers, x)
		if err != nil {
			return Config{}, fmt.Errorf("server %q: %w", name, err)
		}
		c.Servers[name] = s
	}
	return c, nil
}

func expandMap(m map[string]string, x func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = x(v)
	}
	return out
}

// expandVars replaces ${VAR} and ${VAR:-default}. A lone $ is kept.
func expandVars(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var sb strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			sb.WriteString(s)
			return sb.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		sb.WriteString(s[:i])
		expr := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(expr, ":-")
		if v, ok := getenv(name); ok && (v != "" || !hasDef) {
			sb.WriteString(v)
		} else if hasDef {
			sb.WriteString(def)
		} else {
			return "", fmt.Errorf("environment variable %s is not set (used as ${%s}); set it or write ${%s:-default}", name, expr, name)
		}
		s = s[i+j+1:]
	}
}

// ReadFile reads and parses one .mcp.json file, expanding variables from
// the environment.
func ReadFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := Parse(data, nil)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	for n, s := range c.Servers {
		s.Source = path
		c.Servers[n] = s
	}
	return c, nil
}

// LoadOptions says which files Load reads.
type LoadOptions struct {
	// Home is agentloop's home directory ($AGENTLOOP_HOME); its mcp.json
	// is read when it exists.
	Home string
	// Workspace is the workspace directory. Its .mcp.json is read only
	// when TrustWorkspace is set: a cloned repository must not be able to
	// start programs on its own.
	Workspace      string
	TrustWorkspace bool
	// Files are explicit configuration files (--mcp-config), read last
	// and in order. Each must exist.
	Files []string
}

// Load merges the configuration files opts names: the user's, then the
// trusted workspace's, then the explicit ones. A server defined in a later
// file replaces one of the same name from an earlier file. Missing user or
// workspace files are not an error.
func Load(opts LoadOptions) (Config, error) {
	merged := Config{Servers: map[string]ServerConfig{}}
	add := func(path string, mustExist bool) error {
		c, err := ReadFile(path)
		if err != nil {
			if !mustExist && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("mcp: read configuration: %w", err)
		}
		for n, s := range c.Servers {
			merged.Servers[n] = s
		}
		return nil
	}
	if opts.Home != "" {
		if err := add(filepath.Join(opts.Home, "mcp.json"), false); err != nil {
			return Config{}, err
		}
	}
	if opts.Workspace != "" && opts.TrustWorkspace {
		if err := add(filepath.Join(opts.Workspace, ".mcp.json"), false); err != nil {
			return Config{}, err
		}
	}
	for _, f := range opts.Files {
		if err := add(f, true); err != nil {
			return Config{}, err
		}
	}
	return merged, nil
}
