package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// APIError is the body of every error response.
type APIError struct {
	Error string `json:"error"`
}

// WriteJSON writes v as the JSON body of a response with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError writes an APIError response with status code.
func WriteError(w http.ResponseWriter, code int, format string, args ...any) {
	WriteJSON(w, code, APIError{Error: fmt.Sprintf(format, args...)})
}
