package gateway

import (
	"embed"
	"io/fs"
	"net/http"
)

// The web chat: plain HTML, CSS and JavaScript embedded in the binary (no
// build step, nothing fetched from elsewhere). It speaks only the public API:
// REST for actions, the session's SSE stream for events.
//
//go:embed web/index.html web/style.css web/app.js
var webFiles embed.FS

// serveWeb serves the chat page at / and its assets under /assets/.
func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(webFiles, "web")
	h := w.Header()
	// The page loads only its own files and talks only to this server.
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	switch r.URL.Path {
	case "/":
		http.ServeFileFS(w, r, sub, "index.html")
	case "/assets/style.css", "/assets/app.js":
		http.ServeFileFS(w, r, sub, r.URL.Path[len("/assets/"):])
	default:
		http.NotFound(w, r)
	}
}
