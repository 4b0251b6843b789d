package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// routes registers every path of the API.
func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /v1/readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.stopping() {
			writeError(w, errorf(CodeUnavailable, "the server is shutting down"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	})
	s.handle(mux, "POST /v1/sessions", ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		var req CreateSessionRequest
		if e := s.decode(w, r, &req); e != nil {
			return nil, e
		}
		v, e := s.CreateSession(r.Context(), req)
		if e == nil {
			w.WriteHeader(http.StatusCreated)
		}
		return v, e
	})
	s.handle(mux, "GET /v1/sessions", ScopeRead, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		q := r.URL.Query()
		limit, e := intParam(q.Get("limit"), "limit")
		if e != nil {
			return nil, e
		}
		return s.ListSessions(r.Context(), q.Get("cwd"), limit, q.Get("cursor"))
	})
	s.handle(mux, "GET /v1/sessions/{id}", ScopeRead, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		q := r.URL.Query()
		if !q.Has("limit") && !q.Has("cursor") { // the Session alone, as always
			return s.GetSession(r.Context(), r.PathValue("id"))
		}
		limit, e := intParam(q.Get("limit"), "limit")
		if e != nil {
			return nil, e
		}
		return s.GetSessionPage(r.Context(), r.PathValue("id"), q.Get("cursor"), limit)
	})
	s.handle(mux, "DELETE /v1/sessions/{id}", ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		if e := s.DeleteSession(r.Context(), r.PathValue("id")); e != nil {
			return nil, e
		}
		return map[string]any{"deleted": true}, nil
	})
	s.handle(mux, "POST /v1/sessions/{id}/fork", ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		var req struct {
			LeafID string `json:"leafId"`
		}
		if e := s.decodeOptional(w, r, &req); e != nil {
			return nil, e
		}
		v, e := s.ForkSession(r.Context(), r.PathValue("id"), req.LeafID)
		if e == nil {
			w.WriteHeader(http.StatusCreated)
		}
		return v, e
	})
	s.handle(mux, "GET /v1/sessions/{id}/messages", ScopeRead, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		q := r.URL.Query()
		limit, e := intParam(q.Get("limit"), "limit")
		if e != nil {
			return nil, e
		}
		return s.Messages(r.Context(), r.PathValue("id"), q.Get("after"), limit)
	})
	s.handle(mux, "GET /v1/sessions/{id}/children", ScopeRead, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		return s.Children(r.Context(), r.PathValue("id"))
	})
	s.handle(mux, "POST /v1/sessions/{id}/runs", ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		var req StartRunRequest
		if e := s.decode(w, r, &req); e != nil {
			return nil, e
		}
		v, e := s.StartRun(r.Context(), r.PathValue("id"), req)
		if e == nil {
			w.WriteHeader(http.StatusAccepted)
		}
		return v, e
	})
	s.handle(mux, "POST /v1/sessions/{id}/command", ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		var req CommandRequest
		if e := s.decode(w, r, &req); e != nil {
			return nil, e
		}
		return s.Command(r.Context(), r.PathValue("id"), req)
	})
	s.handle(mux, "GET /v1/runs/{id}", ScopeRead, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		return s.GetRun(r.Context(), r.PathValue("id"))
	})
	s.handle(mux, "GET /v1/runs/{id}/pending", ScopeRead, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		p, e := s.Pending(r.Context(), r.PathValue("id"))
		return map[string]any{"pending": p}, e
	})
	for path, follow := range map[string]bool{"steer": false, "follow-up": true} {
		s.handle(mux, "POST /v1/runs/{id}/"+path, ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
			var req Inject
			if e := s.decode(w, r, &req); e != nil {
				return nil, e
			}
			return s.Steer(r.Context(), r.PathValue("id"), req.Text, follow)
		})
	}
	s.handle(mux, "POST /v1/runs/{id}/abort", ScopeWrite, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		if e := s.AbortRun(r.Context(), r.PathValue("id")); e != nil {
			return nil, e
		}
		w.WriteHeader(http.StatusAccepted)
		return map[string]any{"aborting": true}, nil
	})
	s.handle(mux, "POST /v1/approvals/{id}", ScopeApprove, func(w http.ResponseWriter, r *http.Request) (any, *Error) {
		var req ApprovalAnswer
		if e := s.decode(w, r, &req); e != nil {
			return nil, e
		}
		if e := s.Respond(r.Context(), r.PathValue("id"), req); e != nil {
			return nil, e
		}
		return map[string]any{"resolved": true}, nil
	})
	mux.Handle("GET /v1/sessions/{id}/events", s.authorize(ScopeRead, http.HandlerFunc(s.serveSessionEvents)))
	mux.Handle("GET /v1/runs/{id}/events", s.authorize(ScopeRead, http.HandlerFunc(s.serveRunEvents)))
	mux.Handle("GET /v1/ws", http.HandlerFunc(s.serveWS))
	mux.Handle("GET /{$}", http.HandlerFunc(s.serveWeb))
	mux.Handle("GET /assets/", http.HandlerFunc(s.serveWeb))
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(CodeNotFound, "no such path: %s %s", r.Method, r.URL.Path))
	})
}

// handle registers a JSON endpoint that needs scope.
func (s *Server) handle(mux *http.ServeMux, pattern string, scope Scope, f func(http.ResponseWriter, *http.Request) (any, *Error)) {
	mux.Handle(pattern, s.authorize(scope, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The cap on requests in flight counts these; event streams and
		// WebSockets are bounded by their queues instead.
		select {
		case s.inflight <- struct{}{}:
			defer func() { <-s.inflight }()
		default:
			e := errorf(CodeOverloaded, "the server has %d requests in flight; retry later", s.cfg.MaxInflight)
			e.RetryAfter = time.Second
			writeError(w, e)
			return
		}
		rw := &statusWriter{ResponseWriter: w}
		v, e := f(rw, r)
		if e != nil {
			writeError(w, e)
			return
		}
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		writeJSON(w, status, v)
	})))
}

// statusWriter holds back a WriteHeader so the handler's result is
// written with it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code }

// guard is the front of every request: the Origin check and the body
// limit.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !originAllowed(r, s.cfg.AllowOrigins) {
			writeError(w, errorf(CodeForbidden, "requests from origin %q are not allowed (agentloop serve --allow-origin)", r.Header.Get("Origin")))
			return
		}
		if s.auth.open && !hostAllowed(r, s.cfg.AllowOrigins) {
			writeError(w, errorf(CodeForbidden, "requests for host %q are not allowed: a server without --token-file answers only to localhost or an IP address (a name may be a DNS-rebinding page); use --token-file, or --allow-origin for that name", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && corsHeaders(w, r, o) {
			return // a preflight, answered
		}
		// A body declared over the limit is refused before any of it is
		// read; one that only turns out so is cut by MaxBytesReader
		// (decode answers the same 413).
		if r.ContentLength > s.cfg.MaxBody {
			w.Header().Set("Connection", "close") // its body is not read
			writeError(w, tooLarge(s.cfg.MaxBody))
			return
		}
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			s.bodyDeadline(w)
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		next.ServeHTTP(w, r)
	})
}

// bodyDeadline gives the reading of a request's body Config.BodyTimeout:
// a read deadline on the connection. net/http lifts it once the body has
// been read to its end (its background read, which notices a client that
// goes, starts without one), so a request whose work takes longer (a
// compact, a delete waiting for its run) is not cut.
func (s *Server) bodyDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
}

// corsHeaders lets a page of an allowed origin read the answer (the
// origin was checked), and answers its CORS preflight, which carries no
// token; it reports whether r was a preflight.
func corsHeaders(w http.ResponseWriter, r *http.Request, origin string) bool {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// authorize checks the bearer token and its scope.
func (s *Server) authorize(scope Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.auth.check(bearer(r))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentloop"`)
			writeError(w, errorf(CodeUnauthorized, "a valid bearer token is required (Authorization: Bearer <token>)"))
			return
		}
		if !p.can(scope) {
			writeError(w, errorf(CodeForbidden, "this token lacks the %s scope", scope))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decode reads a JSON body strictly into v.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *Error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return tooLarge(mbe.Limit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close") // the rest of the body is not read
			return errorf(CodeRequestTimeout, "the request body did not arrive within %s (gateway.Config.BodyTimeout)", s.cfg.BodyTimeout)
		case errors.Is(err, io.EOF):
			return errorf(CodeInvalidRequest, "a JSON body is required")
		}
		return errorf(CodeInvalidRequest, "the body is not the JSON expected: %v", err)
	}
	if dec.More() {
		return errorf(CodeInvalidRequest, "the body has more than one JSON value")
	}
	return nil
}

// tooLarge is the 413 of a body over limit bytes, naming the limit.
func tooLarge(limit int64) *Error {
	e := errorf(CodeTooLarge, "the request body is over the server's limit of %s (%d bytes; gateway.Config.MaxBody)", sizeString(limit), limit)
	e.Details = map[string]any{"limitBytes": limit}
	return e
}

// sizeString writes n bytes as KiB or MiB when it is a whole number of
// them.
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// decodeOptional is decode for a body that may be empty.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) *Error {
	if r.ContentLength == 0 {
		return nil
	}
	e := s.decode(w, r, v)
	if e != nil && r.ContentLength < 0 && strings.Contains(e.Message, "a JSON body is required") {
		return nil
	}
	return e
}

func intParam(v, name string) (int, *Error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errorf(CodeInvalidRequest, "%s=%q is not a number", name, v)
	}
	return n, nil
}

// writeJSON writes v as the JSON response, with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := llm.MarshalJSON(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"the response could not be encoded","retryable":false}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
