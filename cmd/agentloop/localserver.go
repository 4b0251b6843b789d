package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// localDialTimeout bounds the look at a model server on this machine.
const localDialTimeout = time.Second

// checkLocalServer looks, before a run starts, whether a model server the
// run expects on this machine (Ollama's 127.0.0.1:11434, a llama.cpp or
// vLLM server at a localhost --base-url) is listening. Nothing listening
// on a loopback port is not a failure that passes by waiting a few
// seconds, as a remote network error may: it is said at once, with how to
// start the server, instead of after three retries of "connection
// refused". A remote base URL is not looked at.
func checkLocalServer(info llm.ModelInfo) error {
	u, err := url.Parse(info.BaseURL)
	if err != nil || u.Host == "" {
		return nil
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	if !isLoopbackHost(host) {
		return nil
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), localDialTimeout)
	if err == nil {
		c.Close()
		return nil
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return nil // let the run meet it and retry as usual
	}
	start := "start it"
	if info.Provider == "ollama" {
		start = "start Ollama (`ollama serve`, or its app)"
	}
	return fmt.Errorf("no model server is running at %s for %s/%s: %s, or point --base-url at the address it listens on",
		u.Scheme+"://"+u.Host, info.Provider, info.ID, start)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
