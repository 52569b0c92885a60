package main

import (
	"log/slog"
	"net/http"
)

// logActions logs each request to h that may change something (any
// method but GET and HEAD: the dashboard's actions are POSTs) once h has
// answered it: its path (requeue, requeue-all, cancel, enqueue, pause,
// resume), the message's ID and the list's filter if the form had them,
// the status (303: done), the remote address and the user (see
// credentials.userOf; auth is nil without -auth-file).
func logActions(log *slog.Logger, auth *credentials, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		// The dashboard parsed the form into r (durableweb checks every
		// action's form), unless it refused the request first.
		attrs := []any{"action", r.URL.Path, "status", sw.code, "remote", r.RemoteAddr, "user", auth.userOf(r)}
		if id := r.PostForm.Get("id"); id != "" {
			attrs = append(attrs, "id", id)
		}
		if prefix := r.PostForm.Get("prefix"); prefix != "" {
			attrs = append(attrs, "prefix", prefix)
		}
		if sw.code == http.StatusSeeOther {
			log.Info("twq serve: action done", attrs...)
		} else {
			log.Warn("twq serve: action refused or failed", attrs...)
		}
	})
}

// A statusWriter records the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
