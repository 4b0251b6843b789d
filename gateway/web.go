package gateway

import "net/http"

// serveWeb is GET / and /assets/, the web chat. Not served yet.
func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request) {
	writeError(w, &Error{Code: CodeNotFound, Message: "the web chat is not served yet; use the REST API (docs/gateway.md)", Status: http.StatusNotFound})
}
