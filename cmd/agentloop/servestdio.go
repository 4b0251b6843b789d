package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/gateway"
)

// stdioFlagsError refuses the flags of a listener beside --stdio: with
// stdio there is no listener, and the process boundary is the only
// authentication.
func stdioFlagsError(f *serveFlags) error {
	switch {
	case f.listen != defaultListen:
		return errors.New("--stdio and --listen: choose one (--stdio speaks on stdin and stdout, and listens on nothing)")
	case f.tokenFile != "":
		return errors.New("--stdio takes no --token-file: the process that started agentloop is the only client, with every scope")
	case len(f.allowOrigins) > 0:
		return errors.New("--stdio takes no --allow-origin: no browser reaches stdin")
	}
	return nil
}

// serveStdio is agentloop serve --stdio: the gateway's JSON-RPC on stdin
// and stdout until stdin ends (the parent closed it) or a signal; then the
// runs in progress get serveShutdown to finish, as in agentloop serve.
func serveStdio(ctx context.Context, env *cliEnv, gw *gateway.Server) error {
	fmt.Fprintln(env.stderr, "agentloop serve: JSON-RPC on stdin/stdout (docs/gateway.md)")
	err := gw.ServeStdio(ctx, env.stdin, env.stdout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdown)
	defer cancel()
	if serr := gw.Shutdown(sctx); serr != nil {
		fmt.Fprintln(env.stderr, "agentloop serve: runs still going at shutdown were aborted")
	}
	if err != nil && ctx.Err() == nil {
		return exitError{code: exitFailed, msg: "serve --stdio: " + err.Error()}
	}
	return nil
}
