package gateway

import "net/http"

// serveWS is GET /v1/ws, the WebSocket JSON-RPC. Not served yet.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	writeError(w, &Error{Code: "not_implemented", Message: "the WebSocket JSON-RPC is not served yet; use the REST API and SSE", Status: http.StatusNotImplemented})
}
